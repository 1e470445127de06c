package trace

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"

	"svc/internal/domain/eval"
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

	// attrs are the attributes of a span of FlattenSpansCompact, sorted by
	// key, in place of Attributes (nil); they are read only while
	// Attributes is nil.
	attrs []attr
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
	return flatten(req, false)
}

// FlattenSpansCompact is FlattenSpans for the door's ingest, whose spans'
// attributes are read only by Normalize and AppendSpanEvent: each span
// keeps them in a compact form instead of Attributes, which is nil. The
// spans' events are the same; building them costs no map and no boxed
// value per span, and the attributes of all spans take one allocation.
func FlattenSpansCompact(req *coltracepb.ExportTraceServiceRequest) ([]Span, []SpanProblem) {
	return flatten(req, true)
}

// flatten is FlattenSpans, or FlattenSpansCompact when compact.
func flatten(req *coltracepb.ExportTraceServiceRequest, compact bool) ([]Span, []SpanProblem) {
	n, nattrs := 0, 0
	for _, rs := range req.GetResourceSpans() {
		res := len(rs.GetResource().GetAttributes())
		for _, ss := range rs.GetScopeSpans() {
			spans := ss.GetSpans()
			n += len(spans)
			nattrs += len(spans) * (res + len(ss.GetScope().GetAttributes()))
			for _, sp := range spans {
				nattrs += len(sp.GetAttributes())
			}
		}
	}
	out := make([]Span, 0, n)
	// Every span's Key is written into one string, which Key, TraceID and
	// SpanID slice: one allocation for the export rather than five a span.
	var ids strings.Builder
	ids.Grow(n * keyLen)
	var slab []attr // the compact attributes of all spans
	if compact {
		slab = make([]attr, 0, nattrs)
	}
	var bad []SpanProblem
	i := -1
	for _, rs := range req.GetResourceSpans() {
		resAttrs := rs.GetResource().GetAttributes()
		for _, ss := range rs.GetScopeSpans() {
			scopeAttrs := ss.GetScope().GetAttributes()
			var prefix scopePrefix
			if compact && len(ss.GetSpans()) > 0 {
				prefix = newScopePrefix(resAttrs, scopeAttrs)
			}
			var order attrOrder
			for _, sp := range ss.GetSpans() {
				i++
				if len(sp.GetTraceId()) != 16 || len(sp.GetSpanId()) != 8 {
					bad = append(bad, SpanProblem{i, fmt.Sprintf("span %q has no valid trace id (16 bytes) and span id (8 bytes)", clip(sp.GetName(), 100))})
					continue
				}
				levels := [...][]*commonpb.KeyValue{resAttrs, scopeAttrs, sp.GetAttributes()}
				s := Span{
					Name:          clip(text(sp.GetName()), maxAttrKeyText),
					Error:         sp.GetStatus().GetCode() == tracepb.Status_STATUS_CODE_ERROR,
					StatusMessage: clip(text(sp.GetStatus().GetMessage()), 4096),
				}
				if compact {
					start := len(slab)
					slab = appendSpanAttrs(slab, &prefix, &order, levels)
					s.attrs = slab[start:len(slab):len(slab)]
				} else {
					s.Attributes = spanAttrMap(levels)
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
				if v, ok := s.attr(RunIDAttribute); ok {
					if v.kind != kindString || strings.TrimSpace(v.s) == "" {
						bad = append(bad, SpanProblem{i, fmt.Sprintf("span %q: %s must be a non-empty string", clip(s.Name, 100), RunIDAttribute)})
						continue
					}
					s.RunID = v.s
				}
				var key [keyLen]byte
				appendSpanKey(key[:0], sp)
				ids.Write(key[:])
				out = append(out, s)
			}
		}
	}
	if len(out) == 0 {
		return nil, bad // as before, no spans is nil
	}
	all := ids.String()
	for i := range out {
		key := all[i*keyLen : (i+1)*keyLen]
		out[i].Key, out[i].TraceID, out[i].SpanID = key, key[:32], key[33:]
	}
	return out, bad
}

// spanAttrMap is a span's attributes from its resource's, scope's and own
// (levels, later wins), within the span's limits.
func spanAttrMap(levels [3][]*commonpb.KeyValue) map[string]any {
	attrs := make(map[string]any, min(len(levels[0])+len(levels[1])+len(levels[2]), maxSpanAttrs))
	budget := maxSpanAttrBytes
	for _, kvs := range levels {
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
	return attrs
}

// scopePrefix is what the attributes of a resource and a scope make of
// every span of the scope, computed once for them all: the attributes,
// sorted by key, each key once, and what is left of the string budget.
type scopePrefix struct {
	attrs  []attr
	budget int
}

func newScopePrefix(resAttrs, scopeAttrs []*commonpb.KeyValue) scopePrefix {
	p := scopePrefix{budget: maxSpanAttrBytes}
	if len(resAttrs)+len(scopeAttrs) > maxSpanAttrs {
		return p // not used: the spans take spanAttrMap's path
	}
	for _, kvs := range [...][]*commonpb.KeyValue{resAttrs, scopeAttrs} {
		p.attrs = appendAttrs(p.attrs, kvs, &p.budget)
	}
	p.attrs = dedupAttrs(p.attrs)
	return p
}

// appendSpanAttrs appends spanAttrMap(levels) in compact form: sorted by
// key, each key once. prefix is that of levels[0] and levels[1]; last is
// the order of the previous span's own attributes.
func appendSpanAttrs(slab []attr, prefix *scopePrefix, last *attrOrder, levels [3][]*commonpb.KeyValue) []attr {
	if len(levels[0])+len(levels[1])+len(levels[2]) > maxSpanAttrs {
		// maxSpanAttrs may cut the attributes short, and where depends
		// on which keys repeat: the map says.
		start := len(slab)
		for k, v := range spanAttrMap(levels) {
			slab = append(slab, attr{key: k, val: valueOf(v)})
		}
		sortAttrs(slab[start:])
		return slab
	}
	// Fewer attributes than maxSpanAttrs: all are kept, and the last of
	// each key wins. The span's own are read onto the stack, where no
	// write barrier slows them, ordered by an index (the previous span's,
	// when its keys came in the same order, as an SDK's spans mostly do),
	// then merged with the prefix, the span's winning.
	var local [maxOrdered]attr
	budget := prefix.budget
	own := appendAttrs(local[:0], levels[2], &budget)
	if len(own) > maxOrdered {
		own = dedupAttrs(own)
		return mergeAttrs(slab, prefix.attrs, own, nil)
	}
	return mergeAttrs(slab, prefix.attrs, own, last.of(own))
}

// maxOrdered bounds the attributes a span's own order indexes.
const maxOrdered = 32

// attrOrder is the order of a span's own attributes: idx, indexes of
// them sorted by key, the last of each key only; keys, them as they came.
type attrOrder struct {
	keys [maxOrdered]string
	n    int
	idx  [maxOrdered]uint8
	nidx int
}

// of is the order of own, at most maxOrdered attributes: o's if own has
// the same keys in the same order, else computed and kept in o.
func (o *attrOrder) of(own []attr) []uint8 {
	same := len(own) == o.n
	for i := 0; same && i < len(own); i++ {
		same = own[i].key == o.keys[i]
	}
	if same {
		return o.idx[:o.nidx]
	}
	o.n = len(own)
	for i := range own {
		o.keys[i] = own[i].key
		o.idx[i] = uint8(i)
	}
	idx := o.idx[:len(own)]
	// Stable, so that of a key's attributes the last stays last.
	for i := 1; i < len(idx); i++ {
		for j := i; j > 0 && own[idx[j]].key < own[idx[j-1]].key; j-- {
			idx[j], idx[j-1] = idx[j-1], idx[j]
		}
	}
	kept := idx[:0]
	for i := range idx {
		if i+1 < len(idx) && own[idx[i+1]].key == own[idx[i]].key {
			continue
		}
		kept = append(kept, idx[i])
	}
	o.nidx = len(kept)
	return kept
}

// mergeAttrs appends the union of pre and own, both sorted by key (own
// through idx, unless nil), own's winning where a key is in both.
func mergeAttrs(slab, pre, own []attr, idx []uint8) []attr {
	n := len(own)
	if idx != nil {
		n = len(idx)
	}
	at := func(i int) *attr {
		if idx != nil {
			return &own[idx[i]]
		}
		return &own[i]
	}
	i := 0
	for len(pre) > 0 && i < n {
		switch a := at(i); {
		case pre[0].key < a.key:
			slab = append(slab, pre[0])
			pre = pre[1:]
		case a.key < pre[0].key:
			slab = append(slab, *a)
			i++
		default:
			slab = append(slab, *a)
			pre = pre[1:]
			i++
		}
	}
	slab = append(slab, pre...)
	for ; i < n; i++ {
		slab = append(slab, *at(i))
	}
	return slab
}

// appendAttrs appends the attributes kvs, in order, spending budget on
// their strings as spanAttrMap does.
func appendAttrs(a []attr, kvs []*commonpb.KeyValue, budget *int) []attr {
	for _, kv := range kvs {
		k := kv.GetKey()
		if k == "" || len(k) > maxAttrKeyText {
			continue
		}
		plain := plainASCII(k)
		if !plain {
			k = text(k)
		}
		v := attrValueOf(kv.GetValue(), budget)
		v.plainKey = plain
		a = append(a, attr{key: k, val: v})
	}
	return a
}

// dedupAttrs sorts attributes by key and keeps, of each key, the last.
func dedupAttrs(a []attr) []attr {
	sortAttrs(a)
	kept := a[:0]
	for i := range a {
		if i+1 < len(a) && a[i+1].key == a[i].key {
			continue
		}
		kept = append(kept, a[i])
	}
	clear(a[len(kept):])
	return kept
}

// sortAttrs sorts attributes by key, stably: by insertion for a span's
// usual few.
func sortAttrs(a []attr) {
	if len(a) > 12 {
		slices.SortStableFunc(a, func(x, y attr) int { return strings.Compare(x.key, y.key) })
		return
	}
	for i := 1; i < len(a); i++ {
		for j := i; j > 0 && a[j].key < a[j-1].key; j-- {
			a[j], a[j-1] = a[j-1], a[j]
		}
	}
}

// attr is an attribute of a compact span (FlattenSpansCompact).
type attr struct {
	key string
	val attrValue // val.plainKey tells of key, in val's padding
}

// attrKind says which field of an attrValue holds the value.
type attrKind uint8

const (
	kindOther attrKind = iota // x: nil, an array, a kvlist, or another value of a map
	// The scalars, in n or s; x holds them too when they came boxed.
	kindString // s
	kindInt    // n, an int64's bits
	kindFloat  // n, a float64's bits
	kindBool   // n, 0 or 1
)

// attrValue is an attribute value as a JSON value (anyValue's), without
// boxing the scalars a span's attributes nearly always are.
type attrValue struct {
	x        any
	s        string
	n        uint64
	kind     attrKind
	plain    bool // s is plainASCII
	plainKey bool // the key of the attr holding the value is plainASCII
}

// attrValueOf is anyValue(v, 0, budget) as an attrValue.
func attrValueOf(v *commonpb.AnyValue, budget *int) attrValue {
	switch x := v.GetValue().(type) {
	case *commonpb.AnyValue_StringValue:
		if s := x.StringValue; plainASCII(s) && len(s) <= min(maxAttrString, max(*budget, 0)) {
			*budget -= len(s) // clipAttr's, for text that stays as it is
			return attrValue{kind: kindString, s: s, plain: true}
		}
		return attrValue{kind: kindString, s: clipAttr(x.StringValue, budget)}
	case *commonpb.AnyValue_BoolValue:
		var n uint64
		if x.BoolValue {
			n = 1
		}
		return attrValue{kind: kindBool, n: n}
	case *commonpb.AnyValue_IntValue:
		return attrValue{kind: kindInt, n: uint64(x.IntValue)}
	case *commonpb.AnyValue_DoubleValue:
		if math.IsNaN(x.DoubleValue) || math.IsInf(x.DoubleValue, 0) {
			return attrValue{kind: kindString, s: strconv.FormatFloat(x.DoubleValue, 'g', -1, 64)}
		}
		return attrValue{kind: kindFloat, n: math.Float64bits(x.DoubleValue)}
	}
	return valueOf(anyValue(v, 0, budget))
}

// valueOf is v, a value of an Attributes map, as an attrValue, which
// keeps v to give it back as it is.
func valueOf(v any) attrValue {
	switch x := v.(type) {
	case string:
		return attrValue{kind: kindString, s: x, x: v}
	case int64:
		return attrValue{kind: kindInt, n: uint64(x), x: v}
	case float64:
		return attrValue{kind: kindFloat, n: math.Float64bits(x), x: v}
	case bool:
		if x {
			return attrValue{kind: kindBool, n: 1, x: v}
		}
		return attrValue{kind: kindBool, x: v}
	}
	return attrValue{x: v}
}

// value is v as a value of an Attributes map.
func (v attrValue) value() any {
	if v.x != nil {
		return v.x
	}
	switch v.kind {
	case kindString:
		return v.s
	case kindInt:
		return int64(v.n)
	case kindFloat:
		return math.Float64frombits(v.n)
	case kindBool:
		return v.n == 1
	}
	return v.x
}

// isNil reports whether v is JSON null.
func (v attrValue) isNil() bool { return v.kind == kindOther && v.x == nil }

// attr is the span's attribute k.
func (s *Span) attr(k string) (attrValue, bool) {
	if s.Attributes != nil || s.attrs == nil {
		v, ok := s.Attributes[k]
		if !ok {
			return attrValue{}, false
		}
		return valueOf(v), true
	}
	a := s.attrs
	if len(a) <= 16 {
		// Comparing for equality, most keys differ by length: cheaper
		// than the ordered comparisons of a binary search.
		for i := range a {
			if a[i].key == k {
				return a[i].val, true
			}
		}
		return attrValue{}, false
	}
	lo, hi := 0, len(a)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if a[m].key < k {
			lo = m + 1
		} else {
			hi = m
		}
	}
	if lo < len(a) && a[lo].key == k {
		return a[lo].val, true
	}
	return attrValue{}, false
}

// attributes is the span's Attributes, or its compact attributes as a
// map.
func (s *Span) attributes() map[string]any {
	if s.Attributes != nil || s.attrs == nil {
		return s.Attributes
	}
	m := make(map[string]any, len(s.attrs))
	for _, a := range s.attrs {
		m[a.key] = a.val.value()
	}
	return m
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
		out := make(map[string]any, len(x.KvlistValue.GetValues()))
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
// characters, which neither PostgreSQL nor JSON documents keep. Text that
// is already so, nearly all of it, is returned as it is without a copy.
func text(s string) string {
	if plainASCII(s) {
		return s
	}
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, "\uFFFD")
	}
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

// Event fields a mapping or the conventions read from attributes, in the
// order of MappingFields.
const (
	fieldModel = iota
	fieldInputTokens
	fieldOutputTokens
	fieldCostUSD
	fieldToolName
	fieldInput
	fieldOutput
	numFields
)

// fieldNames are the fields' names in a mapping (MappingFields).
var fieldNames = [numFields]string{"model", "inputTokens", "outputTokens", "costUsd", "toolName", "input", "output"}

// The attribute keys each field is read from when no mapping says
// otherwise: the OpenTelemetry GenAI semantic conventions first, then
// OpenInference (Phoenix).
var conventionKeys = [numFields][]string{
	fieldModel:        {"gen_ai.response.model", "gen_ai.request.model", "llm.model_name"},
	fieldInputTokens:  {"gen_ai.usage.input_tokens", "gen_ai.usage.prompt_tokens", "llm.token_count.prompt"},
	fieldOutputTokens: {"gen_ai.usage.output_tokens", "gen_ai.usage.completion_tokens", "llm.token_count.completion"},
	fieldCostUSD:      {"gen_ai.usage.cost", "gen_ai.usage.cost_usd", "llm.cost.total"},
	fieldToolName:     {"gen_ai.tool.name", "tool.name"},
	fieldInput:        {"gen_ai.input.messages", "gen_ai.prompt", "gen_ai.tool.call.arguments", "input.value", "tool.parameters"},
	fieldOutput:       {"gen_ai.output.messages", "gen_ai.completion", "gen_ai.tool.call.result", "output.value"},
}

// GenAI operations that are model calls.
var genAILLMOps = []string{"chat", "text_completion", "generate_content", "completion", "embeddings"}

// Normalize turns a span into the TraceEvent of the trajectory: an
// llm_call (GenAI chat or completion, OpenInference LLM), a tool_call
// (GenAI execute_tool, OpenInference TOOL), an error (status ERROR) or a
// span with its attributes. A mapping's SpanKinds wins over all of these,
// and its Fields are read before the conventions' keys.
func Normalize(s Span, m SpanAttrMapping) eval.TraceEvent {
	var e event
	normalize(&e, &s, m, false)
	return e.traceEvent()
}

// maxLazyRaw bounds the attribute strings an event written straight from
// its span (lazy) keeps as they are for Input and Output: rawValue of a
// string is at most 6 bytes a byte and 2 quotes, so such an event's raw
// fields are within maxEventText whatever the string holds.
const maxLazyRaw = (maxEventText - 2) / 6

// normalize is Normalize into e. lazy keeps Input and Output of a string
// attribute as the string (inText, outText): the writer then canonicalises
// it without the copy and the second parse of json.RawMessage.
func normalize(e *event, s *Span, m SpanAttrMapping, lazy bool) {
	kind := m.SpanKinds[s.Name]
	if kind == "" {
		kind = conventionKind(s)
	}
	name := s.Name
	if strings.TrimSpace(name) == "" {
		name = "span"
	}
	e.Kind, e.Name, e.Attributes = kind, name, s.Attributes
	if s.Attributes == nil && s.attrs != nil {
		e.attrs, e.compact = s.attrs, true
	}
	if !s.Start.IsZero() {
		e.ts, e.hasTS = s.Start, true
		if !s.End.IsZero() && !s.End.Before(s.Start) {
			e.DurationMs = float64(s.End.Sub(s.Start).Microseconds()) / 1000
		}
	}
	raw := func() {
		e.Input, e.inText, e.inLazy = rawField(s, m, fieldInput, lazy)
		e.Output, e.outText, e.outLazy = rawField(s, m, fieldOutput, lazy)
	}
	switch kind {
	case eval.EventLLMCall:
		e.Model = clip(field(s, m, fieldModel), 200)
		e.InputTokens = intField(s, m, fieldInputTokens)
		e.OutputTokens = intField(s, m, fieldOutputTokens)
		e.CostUSD = floatField(s, m, fieldCostUSD)
		raw()
	case eval.EventToolCall:
		if t := field(s, m, fieldToolName); strings.TrimSpace(t) != "" {
			e.Name = clip(t, 200)
		}
		raw()
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
			e.startTime, e.hasStart, e.hasTS = s.Start, true, false
		}
		if !s.End.IsZero() {
			e.endTime, e.hasEnd = s.End, true
		}
		e.DurationMs = 0
	}
}

// conventionKind is the kind the span's attributes and status say.
func conventionKind(s *Span) string {
	if s.Error {
		return eval.EventError
	}
	var op string
	if v, _ := s.attr("gen_ai.operation.name"); v.kind == kindString {
		op = v.s
	}
	switch {
	case op == "execute_tool":
		return eval.EventToolCall
	case slices.Contains(genAILLMOps, op):
		return eval.EventLLMCall
	}
	var oiKind string
	if v, _ := s.attr("openinference.span.kind"); v.kind == kindString {
		oiKind = v.s
	}
	switch strings.ToUpper(oiKind) {
	case "LLM":
		return eval.EventLLMCall
	case "TOOL":
		return eval.EventToolCall
	case "":
	default:
		return eval.EventSpan
	}
	if op == "" {
		for _, k := range [...]string{"gen_ai.request.model", "gen_ai.system", "gen_ai.provider.name", "llm.model_name"} {
			if _, ok := s.attr(k); ok {
				return eval.EventLLMCall
			}
		}
	}
	return eval.EventSpan
}

// lookup is the first attribute present, and not null, among the
// mapping's keys for f, then the conventions'.
func lookup(s *Span, m SpanAttrMapping, f int) (attrValue, bool) {
	if len(m.Fields) > 0 {
		for _, k := range m.Fields[fieldNames[f]] {
			if v, ok := s.attr(k); ok && !v.isNil() {
				return v, true
			}
		}
	}
	for _, k := range conventionKeys[f] {
		if v, ok := s.attr(k); ok && !v.isNil() {
			return v, true
		}
	}
	return attrValue{}, false
}

func field(s *Span, m SpanAttrMapping, f int) string {
	v, ok := lookup(s, m, f)
	if !ok {
		return ""
	}
	switch v.kind {
	case kindString:
		return v.s
	case kindInt:
		return strconv.FormatInt(int64(v.n), 10)
	case kindFloat:
		return strconv.FormatFloat(math.Float64frombits(v.n), 'g', -1, 64)
	case kindBool:
		return strconv.FormatBool(v.n == 1)
	}
	return ""
}

func number(s *Span, m SpanAttrMapping, f int) float64 {
	v, ok := lookup(s, m, f)
	if !ok {
		return 0
	}
	var n float64
	switch v.kind {
	case kindInt:
		n = float64(int64(v.n))
	case kindFloat:
		n = math.Float64frombits(v.n)
	case kindString:
		n, _ = strconv.ParseFloat(strings.TrimSpace(v.s), 64)
	}
	if math.IsNaN(n) || math.IsInf(n, 0) || n < 0 {
		return 0 // a TraceEvent's usage is never negative
	}
	return n
}

func intField(s *Span, m SpanAttrMapping, f int) int64 {
	n := number(s, m, f)
	if n > math.MaxInt64/2 {
		return 0
	}
	return int64(n)
}

func floatField(s *Span, m SpanAttrMapping, f int) float64 { return number(s, m, f) }

// rawField is the attribute of f as a JSON value (rawValue); lazily, a
// string attribute of at most maxLazyRaw bytes is returned as it is, with
// ok, for the writer to canonicalise as rawValue would have written it.
func rawField(s *Span, m SpanAttrMapping, f int, lazy bool) (raw json.RawMessage, str string, ok bool) {
	v, found := lookup(s, m, f)
	if !found {
		return nil, "", false
	}
	if v.kind == kindString && lazy && len(v.s) <= maxLazyRaw {
		return nil, v.s, true
	}
	return rawValue(v.value()), "", false
}

// rawValue is an attribute as a JSON value: a string holding a JSON
// object or array is that JSON, any other string is a JSON string.
func rawValue(v any) json.RawMessage {
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
