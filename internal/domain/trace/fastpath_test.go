package trace

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"

	"svc/internal/domain/eval"
	"svc/internal/domain/registry"
)

// The door's fast paths (FlattenSpans without copies, Normalize and
// AppendSpanEvent through the writer's event) are held here to the code
// they replaced (reference_test.go) and to the generic canonical path, on
// the inputs where a fast path could go wrong.

// TestMaxEventText pins maxEventText to eval's bound of an event's text.
func TestMaxEventText(t *testing.T) {
	for _, n := range []int{maxEventText, maxEventText + 1} {
		e := eval.TraceEvent{Kind: eval.EventLLMCall, Content: strings.Repeat("x", n)}
		if err := e.Validate(); (err == nil) != (n <= maxEventText) {
			t.Errorf("Validate of %d bytes of content = %v; maxEventText is %d", n, err, maxEventText)
		}
	}
}

// TestEventValidMirrorsValidate: event.valid says what Validate says.
func TestEventValidMirrorsValidate(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 7))
	kinds := append(slicesClone(eval.EventKinds), "", "bogus", " span")
	texts := []string{"", " ", "\t\n", "x", " x ", "\u00a0", strings.Repeat("y", maxEventText+1)}
	for range 20000 {
		e := randomEvent(r, nil)
		e.Kind = kinds[r.IntN(len(kinds))]
		e.Name, e.Message, e.Role = texts[r.IntN(len(texts))], texts[r.IntN(len(texts))], texts[r.IntN(len(texts))]
		if r.IntN(8) == 0 {
			e.Content = texts[r.IntN(len(texts))]
		}
		if r.IntN(8) == 0 {
			e.Input = json.RawMessage(`"` + strings.Repeat("z", maxEventText-1+r.IntN(3)) + `"`)
		}
		switch r.IntN(6) {
		case 0:
			e.InputTokens = -1
		case 1:
			e.CostUSD = math.Copysign(0, -1)
		case 2:
			e.DurationMs = -0.5
		case 3:
			e.CostUSD = math.NaN()
		}
		ev := eventOf(&e)
		if got, want := ev.valid(), e.Validate() == nil; got != want {
			t.Fatalf("valid() = %v, Validate() = %v for kind %q name %q message %q role %q", got, e.Validate(), e.Kind, e.Name, e.Message, e.Role)
		}
	}
}

func slicesClone(s []string) []string { return append([]string(nil), s...) }

// tricky is a generator of OTLP requests with what the fast paths must
// get right: invalid UTF-8, NULs, keys repeated across resource, scope and
// span, nested arrays and kvlists, NaN and infinite doubles, bytes,
// strings over the budgets, raw JSON in strings, and spans that are
// refused.
type tricky struct {
	r  *rand.Rand
	in *trickyInput // the fuzzer's values, or nil
}

type trickyInput struct {
	s   string
	b   []byte
	n   int64
	x   float64
	raw string
}

var trickyKeys = []string{
	"gen_ai.operation.name", "gen_ai.request.model", "gen_ai.response.model", "gen_ai.system", "gen_ai.usage.input_tokens",
	"gen_ai.usage.output_tokens", "gen_ai.usage.cost", "gen_ai.tool.name", "gen_ai.input.messages", "gen_ai.output.messages",
	"gen_ai.prompt", "input.value", "output.value", "openinference.span.kind", "llm.model_name", "tool.name",
	RunIDAttribute, "a", "b", "", "nul\x00key", "bad\xffkey", "é", strings.Repeat("k", maxAttrKeyText), strings.Repeat("k", maxAttrKeyText+1),
}

var trickyStrings = []string{
	"", " ", "chat", "execute_tool", "LLM", "tool", "CHAIN", "gpt-4o", "a\x00b\x00", "bad \xff\xfe utf8 \xe2\x82", "\u2028<&>\"\\",
	`[{"role":"user","content":"what is the OTLP door?"}]`, ` {"q": "x", "n": [1, 2.50, -0, 1e2, 0.000]} `, `{"a":1,"a":2}`,
	`{"esc":"line\nbreak \"quoted\" \u00e9"}`, `[1,]`, `[1e400]`, `[01]`, `{"deep":` + strings.Repeat("[", 70) + strings.Repeat("]", 70) + `}`,
	"\u00a0[1]\u00a0", `[1e+-5]`, `["\ud800"]`, "[\"\xff\"]", `12`, `"text"`, "run_1", "7", " 12.5 ", "-3", "NaN",
}

func (g *tricky) str() string {
	if g.in != nil && g.r.IntN(3) == 0 {
		if g.r.IntN(2) == 0 {
			return g.in.raw
		}
		return g.in.s
	}
	switch g.r.IntN(40) {
	case 0:
		return strings.Repeat("é", 20<<10+g.r.IntN(20000)) // over maxAttrString, clipped within a rune
	case 1:
		return strings.Repeat("x", 60<<10) // a few of these exhaust maxSpanAttrBytes
	}
	return trickyStrings[g.r.IntN(len(trickyStrings))]
}

func (g *tricky) key() string {
	if g.in != nil && g.r.IntN(8) == 0 {
		return g.in.s
	}
	return trickyKeys[g.r.IntN(len(trickyKeys))]
}

func (g *tricky) value(depth int) *commonpb.AnyValue {
	switch k := g.r.IntN(12); {
	case k == 0:
		return nil
	case k == 1:
		return &commonpb.AnyValue{} // no value set
	case k < 5 || depth > 20:
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: g.str()}}
	case k == 5:
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_BoolValue{BoolValue: g.r.IntN(2) == 0}}
	case k == 6:
		ns := []int64{0, 1, -1, 812, 1 << 53, 1<<53 + 1, -1<<53 - 3, math.MaxInt64, math.MinInt64}
		n := ns[g.r.IntN(len(ns))]
		if g.in != nil && g.r.IntN(2) == 0 {
			n = g.in.n
		}
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_IntValue{IntValue: n}}
	case k == 7:
		xs := []float64{0, math.Copysign(0, -1), 0.25, 1e-7, 1e21, 1.5e300, math.NaN(), math.Inf(1), math.Inf(-1), 123456789.125}
		x := xs[g.r.IntN(len(xs))]
		if g.in != nil && g.r.IntN(2) == 0 {
			x = g.in.x
		}
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_DoubleValue{DoubleValue: x}}
	case k == 8:
		b := []byte("\x00\xff bytes")
		if g.in != nil && g.r.IntN(2) == 0 {
			b = g.in.b
		}
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_BytesValue{BytesValue: b}}
	case k == 9 || k == 10 && depth > 14:
		a := &commonpb.ArrayValue{}
		for range g.r.IntN(4) {
			a.Values = append(a.Values, g.value(depth+1))
		}
		if g.r.IntN(4) == 0 {
			a.Values = append(a.Values, g.deep(depth))
		}
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_ArrayValue{ArrayValue: a}}
	default:
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_KvlistValue{KvlistValue: &commonpb.KeyValueList{Values: g.attrs(depth+1, 4)}}}
	}
}

// deep is a value nested past maxAttrDepth.
func (g *tricky) deep(depth int) *commonpb.AnyValue {
	v := &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: "bottom"}}
	for range maxAttrDepth + 2 - depth {
		v = &commonpb.AnyValue{Value: &commonpb.AnyValue_ArrayValue{ArrayValue: &commonpb.ArrayValue{Values: []*commonpb.AnyValue{v}}}}
	}
	return v
}

func (g *tricky) attrs(depth, most int) []*commonpb.KeyValue {
	var kvs []*commonpb.KeyValue
	for range g.r.IntN(most + 1) {
		kvs = append(kvs, &commonpb.KeyValue{Key: g.key(), Value: g.value(depth)})
	}
	return kvs
}

func (g *tricky) span() *tracepb.Span {
	ids := [][]byte{make([]byte, 16), bytes.Repeat([]byte{0xab}, 16)}
	sp := &tracepb.Span{TraceId: ids[g.r.IntN(2)], SpanId: []byte{0, 1, 2, 3, 4, 5, 6, byte(g.r.IntN(256))}, Name: g.str(),
		Attributes: g.attrs(0, 10)}
	switch g.r.IntN(10) {
	case 0:
		sp.TraceId = sp.TraceId[:15]
	case 1:
		sp.SpanId = nil
	}
	times := []uint64{0, 1, 1_700_000_000_000_000_000, 1_700_000_000_250_000_000, 1_700_000_000_250_000_123, math.MaxInt64, math.MaxInt64 + 1}
	sp.StartTimeUnixNano, sp.EndTimeUnixNano = times[g.r.IntN(len(times))], times[g.r.IntN(len(times))]
	if g.r.IntN(3) == 0 {
		sp.Status = &tracepb.Status{Code: tracepb.Status_StatusCode(g.r.IntN(3)), Message: g.str()}
	}
	if g.r.IntN(3) == 0 {
		sp.Events = []*tracepb.Span_Event{{Name: "log"}, {Name: "exception", Attributes: []*commonpb.KeyValue{
			{Key: "exception.message", Value: g.value(0)}, {Key: "exception.message", Value: g.value(0)}}}}
	}
	if g.r.IntN(4) == 0 {
		// Keys repeated across resource, scope and span: later wins.
		sp.Attributes = append(sp.Attributes, &commonpb.KeyValue{Key: "gen_ai.operation.name", Value: g.value(0)})
	}
	if g.r.IntN(10) == 0 {
		// More than the stack holds in order, fewer than maxSpanAttrs.
		for i := range maxOrdered + 8 {
			sp.Attributes = append(sp.Attributes, num(fmt.Sprintf("own.%d", i%(maxOrdered+3)), int64(i)))
		}
	}
	if g.r.IntN(20) == 0 {
		for i := range maxSpanAttrs + 10 {
			sp.Attributes = append(sp.Attributes, num("many."+string(rune('a'+i%26))+strings.Repeat("x", i/26), int64(i)))
		}
	}
	return sp
}

func (g *tricky) request() *coltracepb.ExportTraceServiceRequest {
	req := &coltracepb.ExportTraceServiceRequest{}
	for range 1 + g.r.IntN(2) {
		rs := &tracepb.ResourceSpans{}
		if g.r.IntN(4) != 0 {
			rs.Resource = &resourcepb.Resource{Attributes: g.attrs(0, 4)}
		}
		for range 1 + g.r.IntN(2) {
			ss := &tracepb.ScopeSpans{}
			if g.r.IntN(2) == 0 {
				ss.Scope = &commonpb.InstrumentationScope{Name: "s", Attributes: g.attrs(0, 3)}
			}
			for range g.r.IntN(4) {
				sp := g.span()
				if n := len(ss.Spans); n > 0 && g.r.IntN(2) == 0 {
					// The keys of the previous span in the same order,
					// as an SDK's spans have them, with other values.
					sp.Attributes = nil
					for _, kv := range ss.Spans[n-1].Attributes {
						sp.Attributes = append(sp.Attributes, &commonpb.KeyValue{Key: kv.Key, Value: g.value(0)})
					}
				}
				ss.Spans = append(ss.Spans, sp)
			}
			rs.ScopeSpans = append(rs.ScopeSpans, ss)
		}
		req.ResourceSpans = append(req.ResourceSpans, rs)
	}
	return req
}

// trickyMappings are mappings that move fields to unusual keys and force
// every kind, Validate's refusals included.
var trickyMappings = []SpanAttrMapping{
	{},
	{Fields: map[string][]string{"model": {"a", "gen_ai.system"}, "inputTokens": {"b"}, "costUsd": {"a"},
		"input": {"b", "a"}, "output": {"gen_ai.operation.name"}, "toolName": {"b"}}},
	{SpanKinds: map[string]string{"chat": eval.EventToolCall, " ": eval.EventSpan, "": eval.EventLLMCall, "gpt-4o": eval.EventError,
		"execute_tool": eval.EventMessage, "LLM": "bogus", "tool": eval.EventArtifact}},
}

// spanCmp lets cmp print spans, which have unexported fields.
var spanCmp = cmp.AllowUnexported(Span{}, attr{}, attrValue{})

// checkSpans holds FlattenSpans, Normalize and AppendSpanEvent to the
// reference on req.
func checkSpans(t *testing.T, req *coltracepb.ExportTraceServiceRequest) {
	t.Helper()
	spans, bad := FlattenSpans(req)
	wantSpans, wantBad := refFlattenSpans(req)
	// reflect.DeepEqual first: it is strict (nil is not empty) and much
	// faster than cmp on the large attribute values.
	if !reflect.DeepEqual(wantSpans, spans) {
		t.Fatalf("FlattenSpans (-reference +got):\n%s", cmp.Diff(wantSpans, spans, spanCmp))
	}
	if !reflect.DeepEqual(wantBad, bad) {
		t.Fatalf("FlattenSpans problems (-reference +got):\n%s", cmp.Diff(wantBad, bad))
	}
	// The compact spans are the same spans, their attributes aside, which
	// are the same attributes.
	compact, cbad := FlattenSpansCompact(req)
	if !reflect.DeepEqual(wantBad, cbad) {
		t.Fatalf("FlattenSpansCompact problems (-reference +got):\n%s", cmp.Diff(wantBad, cbad))
	}
	if len(compact) != len(spans) {
		t.Fatalf("FlattenSpansCompact: %d spans, want %d", len(compact), len(spans))
	}
	for i := range compact {
		c := compact[i]
		if c.Attributes != nil || c.attrs == nil {
			t.Fatalf("compact span %d: Attributes %v, attrs %v", i, c.Attributes, c.attrs)
		}
		if got := c.attributes(); !reflect.DeepEqual(wantSpans[i].Attributes, got) {
			t.Fatalf("compact attributes (-reference +got):\n%s", cmp.Diff(wantSpans[i].Attributes, got))
		}
		c.Attributes, c.attrs = wantSpans[i].Attributes, nil
		if !reflect.DeepEqual(wantSpans[i], c) {
			t.Fatalf("compact span (-reference +got):\n%s", cmp.Diff(wantSpans[i], c, spanCmp))
		}
	}
	for i := range spans {
		for _, m := range trickyMappings {
			want := refNormalize(wantSpans[i], m)
			if got := Normalize(spans[i], m); !reflect.DeepEqual(want, got) {
				t.Fatalf("Normalize (-reference +got):\n%s", cmp.Diff(want, got))
			}
			if got := Normalize(compact[i], m); !reflect.DeepEqual(want, got) {
				t.Fatalf("Normalize of the compact span (-reference +got):\n%s", cmp.Diff(want, got))
			}
			got, err := AppendSpanEvent([]byte("prefix"), &spans[i], m)
			cgot, cerr := AppendSpanEvent([]byte("prefix"), &compact[i], m)
			if !bytes.Equal(got, cgot) || fmt.Sprint(err) != fmt.Sprint(cerr) {
				t.Fatalf("AppendSpanEvent of the compact span = %s, %v; of the span %s, %v", cgot, cerr, got, err)
			}
			if !bytes.HasPrefix(got, []byte("prefix")) {
				t.Fatalf("AppendSpanEvent lost dst: %q", got)
			}
			got = got[len("prefix"):]
			if verr := want.Validate(); verr != nil {
				if err == nil || err.Error() != verr.Error() || len(got) != 0 {
					t.Fatalf("AppendSpanEvent = %s, %v; want Validate's %v", got, err, verr)
				}
				continue
			}
			ref, refErr := referenceCanonical(t, want, true)
			if (err != nil) != (refErr != nil) || !bytes.Equal(got, ref) {
				t.Fatalf("AppendSpanEvent = %s, %v\nreference %s, %v", got, err, ref, refErr)
			}
			stored, err := AppendCanonicalStoredEvent(nil, &want)
			if (err != nil) != (refErr != nil) || !bytes.Equal(stored, ref) {
				t.Fatalf("AppendCanonicalStoredEvent = %s, %v\nreference %s, %v", stored, err, ref, refErr)
			}
		}
	}
}

func TestFastPathsMatchReference(t *testing.T) {
	g := &tricky{r: rand.New(rand.NewPCG(16, 17))}
	for range 400 {
		checkSpans(t, g.request())
	}
}

// FuzzSpanEvent is the differential fuzz test of the door's fast paths
// against the code they replaced, on requests built from the input.
//
//	go test -run '^$' -fuzz FuzzSpanEvent ./traces/
func FuzzSpanEvent(f *testing.F) {
	f.Add(uint64(1), "chat", []byte("\x00\xff"), int64(812), 0.5, `[{"role":"user"}]`)
	f.Add(uint64(2), "a\x00\xffb", []byte{}, int64(1<<60), math.Inf(1), `{"a":1,"a":2}`)
	f.Add(uint64(3), "", []byte("x"), int64(-1), math.NaN(), ` [1e400] `)
	f.Add(uint64(4), "execute_tool", []byte(nil), int64(0), 1e21, `{"b":{"d":1E2,"c":[true,false,null,-0.0e5]},"a":"é"}`)
	f.Fuzz(func(t *testing.T, seed uint64, s string, b []byte, n int64, x float64, raw string) {
		g := &tricky{r: rand.New(rand.NewPCG(seed, seed>>3)), in: &trickyInput{s, b, n, x, raw}}
		checkSpans(t, g.request())
	})
}

// FuzzRawParser: what rawParser accepts is valid JSON, written as the
// generic tree writes it, and its numbers are registry.CanonicalNumber's.
//
//	go test -run '^$' -fuzz FuzzRawParser ./traces/
func FuzzRawParser(f *testing.F) {
	for _, s := range []string{`[1,2.50,"x"]`, `{"b":1,"a":[{"y":2,"x":"é"}]}`, `-0.0`, `1e+-5`, `0.000100`, `[01]`, `1.`, `-`,
		`{"a":1,"a":2}`, ` [ true , false , null ] `, `[truefalse]`, `{"a" 1}`, `1E400`, `123456789012345678901234567890.5`,
		`["line\nbreak \"q\" \\ \/ \b\f\r\t \u00e9 \u0000 \u001F \u2028"]`, `["\ud83d\ude00", "\ud83d", "\ude00\ud83d", "\ud83d\u0041", "\ud83dx"]`,
		`["\'"]`, `["\u12"]`, `["\uZZZZ"]`, `{"k\n":1}`, "[\"\\n\xff\"]", `"a\`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		var w eventWriter
		got, ok := w.parseRaw([]byte("p"), raw)
		if ok {
			if !json.Valid(raw) {
				t.Fatalf("rawParser accepted %q, which is not JSON", raw)
			}
			want, err := appendRawTree([]byte("p"), raw)
			if err != nil || !bytes.Equal(got, want) {
				t.Fatalf("rawParser wrote %s for %q; the generic tree %s, %v", got, raw, want, err)
			}
		} else if string(got) != "p" {
			t.Fatalf("rawParser refused %q but kept %q", raw, got)
		}
		got, ok = appendNumber(nil, raw)
		want, err := registry.CanonicalNumber(string(raw))
		isNumber := json.Valid(raw) && len(raw) > 0 && len(bytes.TrimSpace(raw)) == len(raw) && (raw[0] == '-' || raw[0] >= '0' && raw[0] <= '9')
		switch {
		case ok && (!isNumber || err != nil || string(got) != want):
			t.Fatalf("appendNumber(%q) = %s; CanonicalNumber %q, %v; a JSON number: %v", raw, got, want, err, isNumber)
		case !ok && isNumber && err == nil:
			t.Fatalf("appendNumber refused %q; CanonicalNumber %q", raw, want)
		}
	})
}

// TestAppendTime: the writer's UTC times are time.Time's MarshalJSON.
func TestAppendTime(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 3))
	zones := []*time.Location{time.UTC, time.FixedZone("UTC", 0), time.FixedZone("x", 5*3600+30*60), time.FixedZone("y", 37)}
	for i := range 50000 {
		var tm time.Time
		switch i % 4 {
		case 0:
			tm = time.Unix(0, r.Int64N(math.MaxInt64)).UTC()
		case 1:
			tm = time.Date(r.IntN(10002)-1, time.Month(1+r.IntN(12)), 1+r.IntN(31), r.IntN(24), r.IntN(60), r.IntN(60),
				[]int{0, 1, 10, 500_000_000, 123_456_789, 999_999_999, 100_000}[r.IntN(7)], time.UTC)
		case 2:
			tm = time.Unix(r.Int64N(1<<34), int64(r.IntN(1000))*1000).In(zones[r.IntN(len(zones))])
		case 3:
			tm = time.Time{}
		}
		want, wantErr := tm.MarshalJSON()
		got, err := appendTime([]byte("p"), tm)
		if wantErr != nil {
			if err == nil {
				t.Fatalf("appendTime(%v) = %s; MarshalJSON refuses it: %v", tm, got, wantErr)
			}
			continue
		}
		if errors.Is(err, errSlowPath) {
			continue // the generic path writes it
		}
		if err != nil || string(got) != "p"+string(want) {
			t.Fatalf("appendTime(%v) = %s, %v; want %s", tm, got, err, want)
		}
	}
}

// TestPlainASCII: every byte at every position of a word and its tail.
func TestPlainASCII(t *testing.T) {
	for n := range 20 {
		for pos := range n {
			for c := range 256 {
				b := bytes.Repeat([]byte{'a'}, n)
				b[pos] = byte(c)
				want := c >= 0x20 && c < 0x80 && c != '"' && c != '\\'
				if got := plainASCII(string(b)); got != want {
					t.Fatalf("plainASCII(%q) = %v, want %v", b, got, want)
				}
			}
		}
	}
}

// BenchmarkStoredEventEscapes: a chat span whose messages hold escapes,
// as LLM text nearly always does (newlines, quotes), through Normalize and
// AppendCanonicalStoredEvent (the present calls), and through
// FlattenSpansCompact's span and AppendSpanEvent (the proposed ones).
func BenchmarkStoredEventEscapes(b *testing.B) {
	kv := func(k, v string) *commonpb.KeyValue {
		return &commonpb.KeyValue{Key: k, Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: v}}}
	}
	sp := &tracepb.Span{TraceId: make([]byte, 16), SpanId: make([]byte, 8), Name: "chat", StartTimeUnixNano: 1, EndTimeUnixNano: 2,
		Attributes: []*commonpb.KeyValue{kv("gen_ai.operation.name", "chat"), kv("gen_ai.request.model", "gpt-4o"),
			kv("gen_ai.input.messages", `[{"role":"system","content":"You are terse.\nAnswer in one line."},{"role":"user","content":"What does \"OTLP\" stand for?\n"}]`),
			kv("gen_ai.output.messages", `[{"role":"assistant","content":"OpenTelemetry Protocol.\n\nIt carries \"spans\"."}]`)}}
	req := &coltracepb.ExportTraceServiceRequest{ResourceSpans: []*tracepb.ResourceSpans{{ScopeSpans: []*tracepb.ScopeSpans{{Spans: []*tracepb.Span{sp}}}}}}
	spans, _ := FlattenSpans(req)
	compact, _ := FlattenSpansCompact(req)
	var buf []byte
	b.Run("normalize", func(b *testing.B) {
		for b.Loop() {
			e := Normalize(spans[0], SpanAttrMapping{})
			buf, _ = AppendCanonicalStoredEvent(buf[:0], &e)
		}
	})
	b.Run("span-event", func(b *testing.B) {
		for b.Loop() {
			buf, _ = AppendSpanEvent(buf[:0], &compact[0], SpanAttrMapping{})
		}
	})
}
