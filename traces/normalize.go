package traces

import (
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"

	"svc/eval"
)

// RunIDAttribute is the span or resource attribute that names the run a
// span belongs to (spec §4.2); a span's own attribute wins over its
// resource's.
const RunIDAttribute = "svc.run_id"

// Span is one decoded span, flattened: its group, its identity, its times
// and its attributes (resource, then scope, then span: later wins).
type Span struct {
	// RunID is the span's svc.run_id, or "" when it has none.
	RunID string
	// TraceID and SpanID are hex; Key is TraceID/SpanID.
	TraceID, SpanID, Key string
	Name                 string
	Start, End           time.Time // zero when the span gives none
	Error                bool      // status code ERROR
	StatusMessage        string
	Attributes           map[string]any
	// ExceptionMessage is the exception.message of the span's first
	// "exception" event, if any.
	ExceptionMessage string
}

// Limits of one span's attributes as kept in a trajectory.
const (
	maxAttrDepth  = 16
	maxAttrString = 64 << 10
	// maxSpanAttrBytes bounds the strings of all a span's attributes.
	maxSpanAttrBytes = 256 << 10
	maxSpanAttrs     = 256
	maxAttrKeyText   = 256
)

// SpanProblem is a span the door rejects, and why (for partial_success).
type SpanProblem struct {
	Index   int // position in the request, from 0
	Message string
}

// FlattenSpans returns the spans of req in request order, and the ones it
// cannot accept (no valid trace or span id, an svc.run_id that is not
// text).
func FlattenSpans(req *coltracepb.ExportTraceServiceRequest) ([]Span, []SpanProblem) {
	var out []Span
	var bad []SpanProblem
	i := -1
	for _, rs := range req.GetResourceSpans() {
		resAttrs := rs.GetResource().GetAttributes()
		for _, ss := range rs.GetScopeSpans() {
			scopeAttrs := ss.GetScope().GetAttributes()
			for _, sp := range ss.GetSpans() {
				i++
				if len(sp.GetTraceId()) != 16 || len(sp.GetSpanId()) != 8 {
					bad = append(bad, SpanProblem{i, fmt.Sprintf("span %q has no valid trace id (16 bytes) and span id (8 bytes)", clip(sp.GetName(), 100))})
					continue
				}
				attrs := map[string]any{}
				budget := maxSpanAttrBytes
				for _, kvs := range [][]*commonpb.KeyValue{resAttrs, scopeAttrs, sp.GetAttributes()} {
					for _, kv := range kvs {
						if len(attrs) >= maxSpanAttrs {
							break
						}
						k := kv.GetKey()
						if k == "" || len(k) > maxAttrKeyText {
							continue
						}
						attrs[text(k)] = anyValue(kv.GetValue(), 0, &budget)
					}
				}
				s := Span{
					TraceID: hex.EncodeToString(sp.GetTraceId()), SpanID: hex.EncodeToString(sp.GetSpanId()),
					Key:  spanKey(sp),
					Name: clip(text(sp.GetName()), maxAttrKeyText), Attributes: attrs,
					Error:         sp.GetStatus().GetCode() == tracepb.Status_STATUS_CODE_ERROR,
					StatusMessage: clip(text(sp.GetStatus().GetMessage()), 4096),
				}
				if ns := sp.GetStartTimeUnixNano(); ns > 0 && ns <= math.MaxInt64 {
					s.Start = time.Unix(0, int64(ns)).UTC()
				}
				if ns := sp.GetEndTimeUnixNano(); ns > 0 && ns <= math.MaxInt64 {
					s.End = time.Unix(0, int64(ns)).UTC()
				}
				for _, ev := range sp.GetEvents() {
					if ev.GetName() != "exception" {
						continue
					}
					for _, kv := range ev.GetAttributes() {
						if kv.GetKey() == "exception.message" {
							s.ExceptionMessage = clip(text(kv.GetValue().GetStringValue()), 4096)
						}
					}
					break
				}
				if v, ok := attrs[RunIDAttribute]; ok {
					id, ok := v.(string)
					if !ok || strings.TrimSpace(id) == "" {
						bad = append(bad, SpanProblem{i, fmt.Sprintf("span %q: %s must be a non-empty string", clip(s.Name, 100), RunIDAttribute)})
						continue
					}
					s.RunID = id
				}
				out = append(out, s)
			}
		}
	}
	return out, bad
}

// anyValue is an OTLP attribute value as a JSON value.
// budget is what is left of the span's maxSpanAttrBytes for strings.
func anyValue(v *commonpb.AnyValue, depth int, budget *int) any {
	if v == nil {
		return nil
	}
	if depth >= maxAttrDepth {
		return "…"
	}
	switch x := v.GetValue().(type) {
	case *commonpb.AnyValue_StringValue:
		return clipAttr(x.StringValue, budget)
	case *commonpb.AnyValue_BoolValue:
		return x.BoolValue
	case *commonpb.AnyValue_IntValue:
		return x.IntValue
	case *commonpb.AnyValue_DoubleValue:
		if math.IsNaN(x.DoubleValue) || math.IsInf(x.DoubleValue, 0) {
			return strconv.FormatFloat(x.DoubleValue, 'g', -1, 64) // JSON has no NaN or Inf
		}
		return x.DoubleValue
	case *commonpb.AnyValue_BytesValue:
		return clipAttr(base64.StdEncoding.EncodeToString(x.BytesValue), budget)
	case *commonpb.AnyValue_ArrayValue:
		out := make([]any, 0, len(x.ArrayValue.GetValues()))
		for _, e := range x.ArrayValue.GetValues() {
			out = append(out, anyValue(e, depth+1, budget))
		}
		return out
	case *commonpb.AnyValue_KvlistValue:
		out := map[string]any{}
		for _, kv := range x.KvlistValue.GetValues() {
			out[text(kv.GetKey())] = anyValue(kv.GetValue(), depth+1, budget)
		}
		return out
	}
	return nil
}

// clipAttr is an attribute's string as kept: text, at most maxAttrString
// bytes, and within what is left of the span's budget.
func clipAttr(s string, budget *int) string {
	s = text(s)
	n := min(maxAttrString, max(*budget, 0))
	if len(s) > n {
		s = clip(s, n)
	}
	*budget -= len(s)
	return s
}

// text is s as a trajectory can hold it: valid UTF-8 without NUL
// characters, which neither PostgreSQL nor JSON documents keep.
func text(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	if strings.IndexByte(s, 0) >= 0 {
		s = strings.ReplaceAll(s, "\x00", "")
	}
	return s
}

// SpanAttrMapping tells normalisation where a harness's spans keep what a
// TraceEvent needs (spec §4.2). It is read from the harness spec's
// meta.spanAttrMapping and overlaid by PUT /harnesses/:id/span-attr-mapping.
type SpanAttrMapping struct {
	// Fields maps an event field (see MappingFields) to the attribute
	// keys to read it from, first present wins; they are tried before the
	// GenAI and OpenInference conventions.
	Fields map[string][]string `json:"fields,omitempty"`
	// SpanKinds maps a span name to the event kind it becomes (llm_call,
	// tool_call, error or span), whatever its attributes say.
	SpanKinds map[string]string `json:"spanKinds,omitempty"`
}

// MappingFields are the event fields a SpanAttrMapping may map.
var MappingFields = []string{"model", "inputTokens", "outputTokens", "costUsd", "toolName", "input", "output"}

// mappingKinds are the kinds SpanKinds may name.
var mappingKinds = []string{eval.EventLLMCall, eval.EventToolCall, eval.EventError, eval.EventSpan}

// Limits of a mapping.
const (
	maxMappingKeys  = 16
	maxMappingKinds = 256
)

// Validate checks m; the error names the field to fix.
func (m SpanAttrMapping) Validate() error {
	for f, keys := range m.Fields {
		if !slices.Contains(MappingFields, f) {
			return fmt.Errorf("fields.%s: not a mappable field; use one of %s", clip(f, 60), strings.Join(MappingFields, ", "))
		}
		if len(keys) > maxMappingKeys {
			return fmt.Errorf("fields.%s: at most %d attribute keys, not %d", f, maxMappingKeys, len(keys))
		}
		for i, k := range keys {
			if strings.TrimSpace(k) == "" || len(k) > maxAttrKeyText {
				return fmt.Errorf("fields.%s[%d]: an attribute key of 1 to %d bytes", f, i, maxAttrKeyText)
			}
		}
	}
	if len(m.SpanKinds) > maxMappingKinds {
		return fmt.Errorf("spanKinds: at most %d span names, not %d", maxMappingKinds, len(m.SpanKinds))
	}
	for name, kind := range m.SpanKinds {
		if strings.TrimSpace(name) == "" || len(name) > maxAttrKeyText {
			return fmt.Errorf("spanKinds: a span name of 1 to %d bytes", maxAttrKeyText)
		}
		if !slices.Contains(mappingKinds, kind) {
			return fmt.Errorf("spanKinds.%s: %q is not one of %s", clip(name, 60), clip(kind, 60), strings.Join(mappingKinds, ", "))
		}
	}
	return nil
}

// Overlay is m with over's entries winning, field by field and span name
// by span name (the per-harness overlay beats the spec's mapping).
func (m SpanAttrMapping) Overlay(over SpanAttrMapping) SpanAttrMapping {
	out := SpanAttrMapping{}
	for _, src := range []SpanAttrMapping{m, over} {
		for f, keys := range src.Fields {
			if out.Fields == nil {
				out.Fields = map[string][]string{}
			}
			out.Fields[f] = slices.Clone(keys)
		}
		for n, k := range src.SpanKinds {
			if out.SpanKinds == nil {
				out.SpanKinds = map[string]string{}
			}
			out.SpanKinds[n] = k
		}
	}
	return out
}

// MappingMetaKey is the key of a harness spec's meta that holds its span
// attribute mapping.
const MappingMetaKey = "spanAttrMapping"

// MappingFromMeta reads the mapping of a harness spec's meta; none is the
// zero mapping.
func MappingFromMeta(meta map[string]any) (SpanAttrMapping, error) {
	v, ok := meta[MappingMetaKey]
	if !ok || v == nil {
		return SpanAttrMapping{}, nil
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return SpanAttrMapping{}, fmt.Errorf("meta.%s: %v", MappingMetaKey, err)
	}
	var m SpanAttrMapping
	if err := json.Unmarshal(raw, &m); err != nil {
		return SpanAttrMapping{}, fmt.Errorf("meta.%s: %v", MappingMetaKey, err)
	}
	if err := m.Validate(); err != nil {
		return SpanAttrMapping{}, fmt.Errorf("meta.%s.%v", MappingMetaKey, err)
	}
	return m, nil
}

// The attribute keys each field is read from when no mapping says
// otherwise: the OpenTelemetry GenAI semantic conventions first, then
// OpenInference (Phoenix).
var conventionKeys = map[string][]string{
	"model":        {"gen_ai.response.model", "gen_ai.request.model", "llm.model_name"},
	"inputTokens":  {"gen_ai.usage.input_tokens", "gen_ai.usage.prompt_tokens", "llm.token_count.prompt"},
	"outputTokens": {"gen_ai.usage.output_tokens", "gen_ai.usage.completion_tokens", "llm.token_count.completion"},
	"costUsd":      {"gen_ai.usage.cost", "gen_ai.usage.cost_usd", "llm.cost.total"},
	"toolName":     {"gen_ai.tool.name", "tool.name"},
	"input":        {"gen_ai.input.messages", "gen_ai.prompt", "gen_ai.tool.call.arguments", "input.value", "tool.parameters"},
	"output":       {"gen_ai.output.messages", "gen_ai.completion", "gen_ai.tool.call.result", "output.value"},
}

// GenAI operations that are model calls.
var genAILLMOps = []string{"chat", "text_completion", "generate_content", "completion", "embeddings"}

// Normalize turns a span into the TraceEvent of the trajectory: an
// llm_call (GenAI chat or completion, OpenInference LLM), a tool_call
// (GenAI execute_tool, OpenInference TOOL), an error (status ERROR) or a
// span with its attributes. A mapping's SpanKinds wins over all of these,
// and its Fields are read before the conventions' keys.
func Normalize(s Span, m SpanAttrMapping) eval.TraceEvent {
	kind := m.SpanKinds[s.Name]
	if kind == "" {
		kind = conventionKind(s)
	}
	name := s.Name
	if strings.TrimSpace(name) == "" {
		name = "span"
	}
	e := eval.TraceEvent{Kind: kind, Name: name, Attributes: s.Attributes}
	if !s.Start.IsZero() {
		start := s.Start
		e.TS = &start
		if !s.End.IsZero() && !s.End.Before(s.Start) {
			e.DurationMs = float64(s.End.Sub(s.Start).Microseconds()) / 1000
		}
	}
	switch kind {
	case eval.EventLLMCall:
		e.Model = clip(field(s, m, "model"), 200)
		e.InputTokens = intField(s, m, "inputTokens")
		e.OutputTokens = intField(s, m, "outputTokens")
		e.CostUSD = floatField(s, m, "costUsd")
		e.Input, e.Output = rawField(s, m, "input"), rawField(s, m, "output")
	case eval.EventToolCall:
		if t := field(s, m, "toolName"); strings.TrimSpace(t) != "" {
			e.Name = clip(t, 200)
		}
		e.Input, e.Output = rawField(s, m, "input"), rawField(s, m, "output")
	case eval.EventError:
		e.Code = "SPAN_ERROR"
		e.Message = s.StatusMessage
		if e.Message == "" {
			e.Message = s.ExceptionMessage
		}
		if e.Message == "" {
			e.Message = fmt.Sprintf("span %q ended with an error status", clip(name, 200))
		}
		e.Message = clip(e.Message, 2000)
	default:
		e.Kind = eval.EventSpan
		if !s.Start.IsZero() {
			start := s.Start
			e.StartTime, e.TS = &start, nil
		}
		if !s.End.IsZero() {
			end := s.End
			e.EndTime = &end
		}
		e.DurationMs = 0
	}
	return e
}

// conventionKind is the kind the span's attributes and status say.
func conventionKind(s Span) string {
	if s.Error {
		return eval.EventError
	}
	op, _ := s.Attributes["gen_ai.operation.name"].(string)
	switch {
	case op == "execute_tool":
		return eval.EventToolCall
	case slices.Contains(genAILLMOps, op):
		return eval.EventLLMCall
	}
	switch k, _ := s.Attributes["openinference.span.kind"].(string); strings.ToUpper(k) {
	case "LLM":
		return eval.EventLLMCall
	case "TOOL":
		return eval.EventToolCall
	case "":
	default:
		return eval.EventSpan
	}
	if op == "" {
		for _, k := range []string{"gen_ai.request.model", "gen_ai.system", "gen_ai.provider.name", "llm.model_name"} {
			if _, ok := s.Attributes[k]; ok {
				return eval.EventLLMCall
			}
		}
	}
	return eval.EventSpan
}

// lookup is the first attribute present among the mapping's keys for f,
// then the conventions'.
func lookup(s Span, m SpanAttrMapping, f string) (any, bool) {
	for _, keys := range [][]string{m.Fields[f], conventionKeys[f]} {
		for _, k := range keys {
			if v, ok := s.Attributes[k]; ok && v != nil {
				return v, true
			}
		}
	}
	return nil, false
}

func field(s Span, m SpanAttrMapping, f string) string {
	v, ok := lookup(s, m, f)
	if !ok {
		return ""
	}
	switch x := v.(type) {
	case string:
		return x
	case int64:
		return strconv.FormatInt(x, 10)
	case float64:
		return strconv.FormatFloat(x, 'g', -1, 64)
	case bool:
		return strconv.FormatBool(x)
	}
	return ""
}

func number(s Span, m SpanAttrMapping, f string) float64 {
	v, ok := lookup(s, m, f)
	if !ok {
		return 0
	}
	var n float64
	switch x := v.(type) {
	case int64:
		n = float64(x)
	case float64:
		n = x
	case string:
		n, _ = strconv.ParseFloat(strings.TrimSpace(x), 64)
	}
	if math.IsNaN(n) || math.IsInf(n, 0) || n < 0 {
		return 0 // a TraceEvent's usage is never negative
	}
	return n
}

func intField(s Span, m SpanAttrMapping, f string) int64 {
	n := number(s, m, f)
	if n > math.MaxInt64/2 {
		return 0
	}
	return int64(n)
}

func floatField(s Span, m SpanAttrMapping, f string) float64 { return number(s, m, f) }

// rawField is the attribute as a JSON value: a string holding JSON is
// that JSON, any other string is a JSON string.
func rawField(s Span, m SpanAttrMapping, f string) json.RawMessage {
	v, ok := lookup(s, m, f)
	if !ok {
		return nil
	}
	if str, isStr := v.(string); isStr {
		if t := strings.TrimSpace(str); t != "" && json.Valid([]byte(t)) && (t[0] == '{' || t[0] == '[') {
			return json.RawMessage(t)
		}
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return nil
	}
	return raw
}

// SortEvents orders span events by start time (events without one keep
// their place at the end), stable, so a trajectory reads in the order
// the work happened whatever order the exports arrived in.
func SortEvents(events []eval.TraceEvent) {
	at := func(e eval.TraceEvent) (time.Time, bool) {
		switch {
		case e.TS != nil:
			return *e.TS, true
		case e.StartTime != nil:
			return *e.StartTime, true
		}
		return time.Time{}, false
	}
	sort.SliceStable(events, func(i, j int) bool {
		ti, oki := at(events[i])
		tj, okj := at(events[j])
		if oki != okj {
			return oki
		}
		return ti.Before(tj)
	})
}
