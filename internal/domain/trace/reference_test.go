package trace

// The door's flatten and normalise steps exactly as they were before they
// were made fast: the reference the differential tests (fastpath_test.go)
// hold FlattenSpans, FlattenSpansCompact, Normalize and AppendSpanEvent
// to. Do not optimise this file.

import (
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"

	"svc/internal/domain/eval"
)

func refSpanKey(sp *tracepb.Span) string {
	return hex.EncodeToString(sp.GetTraceId()) + "/" + hex.EncodeToString(sp.GetSpanId())
}

func refFlattenSpans(req *coltracepb.ExportTraceServiceRequest) ([]Span, []SpanProblem) {
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
						attrs[refText(k)] = refAnyValue(kv.GetValue(), 0, &budget)
					}
				}
				s := Span{
					TraceID: hex.EncodeToString(sp.GetTraceId()), SpanID: hex.EncodeToString(sp.GetSpanId()),
					Key:  refSpanKey(sp),
					Name: clip(refText(sp.GetName()), maxAttrKeyText), Attributes: attrs,
					Error:         sp.GetStatus().GetCode() == tracepb.Status_STATUS_CODE_ERROR,
					StatusMessage: clip(refText(sp.GetStatus().GetMessage()), 4096),
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
							s.ExceptionMessage = clip(refText(kv.GetValue().GetStringValue()), 4096)
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

// refAnyValue is an OTLP attribute value as a JSON value.
// budget is what is left of the span's maxSpanAttrBytes for strings.
func refAnyValue(v *commonpb.AnyValue, depth int, budget *int) any {
	if v == nil {
		return nil
	}
	if depth >= maxAttrDepth {
		return "…"
	}
	switch x := v.GetValue().(type) {
	case *commonpb.AnyValue_StringValue:
		return refClipAttr(x.StringValue, budget)
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
		return refClipAttr(base64.StdEncoding.EncodeToString(x.BytesValue), budget)
	case *commonpb.AnyValue_ArrayValue:
		out := make([]any, 0, len(x.ArrayValue.GetValues()))
		for _, e := range x.ArrayValue.GetValues() {
			out = append(out, refAnyValue(e, depth+1, budget))
		}
		return out
	case *commonpb.AnyValue_KvlistValue:
		out := map[string]any{}
		for _, kv := range x.KvlistValue.GetValues() {
			out[refText(kv.GetKey())] = refAnyValue(kv.GetValue(), depth+1, budget)
		}
		return out
	}
	return nil
}

// refClipAttr is an attribute's string as kept: refText, at most maxAttrString
// bytes, and within what is left of the span's budget.
func refClipAttr(s string, budget *int) string {
	s = refText(s)
	n := min(maxAttrString, max(*budget, 0))
	if len(s) > n {
		s = clip(s, n)
	}
	*budget -= len(s)
	return s
}

// refText is s as a trajectory can hold it: valid UTF-8 without NUL
// characters, which neither PostgreSQL nor JSON documents keep.
func refText(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	if strings.IndexByte(s, 0) >= 0 {
		s = strings.ReplaceAll(s, "\x00", "")
	}
	return s
}

var refConventionKeys = map[string][]string{
	"model":        {"gen_ai.response.model", "gen_ai.request.model", "llm.model_name"},
	"inputTokens":  {"gen_ai.usage.input_tokens", "gen_ai.usage.prompt_tokens", "llm.token_count.prompt"},
	"outputTokens": {"gen_ai.usage.output_tokens", "gen_ai.usage.completion_tokens", "llm.token_count.completion"},
	"costUsd":      {"gen_ai.usage.cost", "gen_ai.usage.cost_usd", "llm.cost.total"},
	"toolName":     {"gen_ai.tool.name", "tool.name"},
	"input":        {"gen_ai.input.messages", "gen_ai.prompt", "gen_ai.tool.call.arguments", "input.value", "tool.parameters"},
	"output":       {"gen_ai.output.messages", "gen_ai.completion", "gen_ai.tool.call.result", "output.value"},
}

// GenAI operations that are model calls.
var refGenAILLMOps = []string{"chat", "text_completion", "generate_content", "completion", "embeddings"}

func refNormalize(s Span, m SpanAttrMapping) eval.TraceEvent {
	kind := m.SpanKinds[s.Name]
	if kind == "" {
		kind = refConventionKind(s)
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
		e.Model = clip(refField(s, m, "model"), 200)
		e.InputTokens = refIntField(s, m, "inputTokens")
		e.OutputTokens = refIntField(s, m, "outputTokens")
		e.CostUSD = refFloatField(s, m, "costUsd")
		e.Input, e.Output = refRawField(s, m, "input"), refRawField(s, m, "output")
	case eval.EventToolCall:
		if t := refField(s, m, "toolName"); strings.TrimSpace(t) != "" {
			e.Name = clip(t, 200)
		}
		e.Input, e.Output = refRawField(s, m, "input"), refRawField(s, m, "output")
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

// refConventionKind is the kind the span's attributes and status say.
func refConventionKind(s Span) string {
	if s.Error {
		return eval.EventError
	}
	op, _ := s.Attributes["gen_ai.operation.name"].(string)
	switch {
	case op == "execute_tool":
		return eval.EventToolCall
	case slices.Contains(refGenAILLMOps, op):
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

// refLookup is the first attribute present among the mapping's keys for f,
// then the conventions'.
func refLookup(s Span, m SpanAttrMapping, f string) (any, bool) {
	for _, keys := range [][]string{m.Fields[f], refConventionKeys[f]} {
		for _, k := range keys {
			if v, ok := s.Attributes[k]; ok && v != nil {
				return v, true
			}
		}
	}
	return nil, false
}

func refField(s Span, m SpanAttrMapping, f string) string {
	v, ok := refLookup(s, m, f)
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

func refNumber(s Span, m SpanAttrMapping, f string) float64 {
	v, ok := refLookup(s, m, f)
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

func refIntField(s Span, m SpanAttrMapping, f string) int64 {
	n := refNumber(s, m, f)
	if n > math.MaxInt64/2 {
		return 0
	}
	return int64(n)
}

func refFloatField(s Span, m SpanAttrMapping, f string) float64 { return refNumber(s, m, f) }

// refRawField is the attribute as a JSON value: a string holding JSON is
// that JSON, any other string is a JSON string.
func refRawField(s Span, m SpanAttrMapping, f string) json.RawMessage {
	v, ok := refLookup(s, m, f)
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
