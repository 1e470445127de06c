package traces

import (
	"fmt"
	"math"
	"runtime"
	"testing"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"

	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"

	"svc/internal/domain/eval"
	"svc/internal/domain/trace"
)

// BenchmarkPrepare times the CPU-only steps of Export between decoding
// and the store, for an export of 1,000 GenAI spans: flattening
// (FlattenSpans, and FlattenSpansCompact, which Export uses), and
// prepareEvents (normalise and write canonical events).
func BenchmarkPrepare(b *testing.B) {
	kv := func(k, v string) *commonpb.KeyValue {
		return &commonpb.KeyValue{Key: k, Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: v}}}
	}
	n := func(k string, v int64) *commonpb.KeyValue {
		return &commonpb.KeyValue{Key: k, Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_IntValue{IntValue: v}}}
	}
	spans := make([]*tracepb.Span, 1000)
	for i := range spans {
		spans[i] = &tracepb.Span{TraceId: make([]byte, 16), SpanId: []byte{0, 0, 0, 0, 0, byte(i >> 8), byte(i), 1}, Name: "chat gpt-4o",
			StartTimeUnixNano: uint64(1_700_000_000_000_000_000 + i*1_000_000), EndTimeUnixNano: uint64(1_700_000_000_000_000_000 + i*1_000_000 + 500_000),
			Attributes: []*commonpb.KeyValue{kv("gen_ai.operation.name", "chat"), kv("gen_ai.request.model", "gpt-4o"), kv("gen_ai.system", "openai"),
				n("gen_ai.usage.input_tokens", 812), n("gen_ai.usage.output_tokens", 64), kv("gen_ai.tool.name", "search"),
				kv("gen_ai.input.messages", `[{"role":"user","content":"what is the OTLP door?"}]`), n("http.status_code", 200)}}
	}
	req := &coltracepb.ExportTraceServiceRequest{ResourceSpans: []*tracepb.ResourceSpans{{ScopeSpans: []*tracepb.ScopeSpans{{Spans: spans}}}}}
	b.Run("flatten", func(b *testing.B) {
		for b.Loop() {
			trace.FlattenSpans(req)
		}
	})
	b.Run("flatten-compact", func(b *testing.B) {
		for b.Loop() {
			trace.FlattenSpansCompact(req)
		}
	})
	compact, _ := trace.FlattenSpansCompact(req)
	b.Run("prepare", func(b *testing.B) {
		for b.Loop() {
			prepareEvents(compact, trace.SpanAttrMapping{})
		}
	})
}

// formerPrepare is what prepareEvents did before traces.AppendSpanEvent:
// Normalize, Validate and AppendCanonicalStoredEvent, span by span.
func formerPrepare(spans []trace.Span, mapping trace.SpanAttrMapping) []preparedEvent {
	out := make([]preparedEvent, len(spans))
	for i := range spans {
		e := trace.Normalize(spans[i], mapping)
		if err := e.Validate(); err != nil {
			out[i].problem = err
			continue
		}
		c, err := trace.AppendCanonicalStoredEvent(nil, &e)
		out[i].canonical, out[i].problem = c, err
	}
	return out
}

// TestPrepareSpanEvents: Export's calls (FlattenSpansCompact, then
// prepareEvents) give every span of an export the event, or the refusal,
// of the former ones (FlattenSpans, then Normalize, Validate and
// AppendCanonicalStoredEvent), in chunks on every processor as on one.
func TestPrepareSpanEvents(t *testing.T) {
	kv := func(k string, v *commonpb.AnyValue) *commonpb.KeyValue { return &commonpb.KeyValue{Key: k, Value: v} }
	s := func(v string) *commonpb.AnyValue {
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: v}}
	}
	n := func(v int64) *commonpb.AnyValue {
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_IntValue{IntValue: v}}
	}
	f := func(v float64) *commonpb.AnyValue {
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_DoubleValue{DoubleValue: v}}
	}
	list := func(vs ...*commonpb.AnyValue) *commonpb.AnyValue {
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_ArrayValue{ArrayValue: &commonpb.ArrayValue{Values: vs}}}
	}
	templates := [][]*commonpb.KeyValue{
		{kv("gen_ai.operation.name", s("chat")), kv("gen_ai.request.model", s("gpt-4o")), kv("gen_ai.usage.input_tokens", n(812)),
			kv("gen_ai.usage.output_tokens", n(1<<60)), kv("gen_ai.usage.cost", f(0.0031)),
			kv("gen_ai.input.messages", s(`[{"role":"user","content":"line\nbreak \"quoted\" é"}]`)), kv("gen_ai.output.messages", s("plain <text>"))},
		{kv("gen_ai.operation.name", s("execute_tool")), kv("gen_ai.tool.name", s("search")), kv("gen_ai.tool.call.arguments", s(` {"q": [1, 2.50, -0]} `)),
			kv("gen_ai.tool.call.result", list(s("a"), n(2), f(math.NaN()))), kv("service.name", s("span wins"))},
		{kv("openinference.span.kind", s("LLM")), kv("llm.model_name", s("bad \xff utf8 \x00 nul")), kv("input.value", s("[1e400]")),
			kv("llm.token_count.prompt", s(" 7 ")), kv("bytes", &commonpb.AnyValue{Value: &commonpb.AnyValue_BytesValue{BytesValue: []byte{0, 0xff}}})},
		{kv("http.method", s("GET")), kv("a", s("first")), kv("a", s("second")), kv("inf", f(math.Inf(-1)))},
	}
	names := []string{"chat gpt-4o", "execute_tool search", "", "  ", "step"}
	spans := make([]*tracepb.Span, 600) // more than parallelSpans on each of two processors
	for i := range spans {
		spans[i] = &tracepb.Span{TraceId: make([]byte, 16), SpanId: []byte{0, 0, 0, 0, 0, byte(i >> 8), byte(i), 1}, Name: names[i%len(names)],
			StartTimeUnixNano: uint64(1_700_000_000_000_000_000 + i*1_000_000), EndTimeUnixNano: uint64(1_700_000_000_000_000_000 + i*999_999),
			Attributes: templates[i%len(templates)]}
		if i%7 == 3 {
			spans[i].Status = &tracepb.Status{Code: tracepb.Status_STATUS_CODE_ERROR, Message: fmt.Sprintf("boom %d", i)}
		}
	}
	req := &coltracepb.ExportTraceServiceRequest{ResourceSpans: []*tracepb.ResourceSpans{{
		Resource:   &resourcepb.Resource{Attributes: []*commonpb.KeyValue{kv("service.name", s("agent")), kv("host.name", s("h1"))}},
		ScopeSpans: []*tracepb.ScopeSpans{{Spans: spans}},
	}}}
	flat, bad := trace.FlattenSpans(req)
	compact, cbad := trace.FlattenSpansCompact(req)
	if len(flat) != len(spans) || len(compact) != len(spans) || len(bad)+len(cbad) != 0 {
		t.Fatalf("flattened %d and %d spans, refused %v and %v", len(flat), len(compact), bad, cbad)
	}
	for _, m := range []trace.SpanAttrMapping{
		{},
		{Fields: map[string][]string{"model": {"service.name"}, "input": {"a"}}},
		{SpanKinds: map[string]string{"chat gpt-4o": eval.EventMessage, "step": eval.EventArtifact}}, // Validate refuses messages without role
	} {
		for _, procs := range []int{1, 2} {
			old := runtime.GOMAXPROCS(procs)
			want, got := formerPrepare(flat, m), prepareEvents(compact, m)
			runtime.GOMAXPROCS(old)
			refused := 0
			for i := range want {
				if want[i].problem != nil {
					refused++
				}
				if string(got[i].canonical) != string(want[i].canonical) || fmt.Sprint(got[i].problem) != fmt.Sprint(want[i].problem) {
					t.Fatalf("span %d (mapping %+v, %d processors): %s, %v; want %s, %v",
						i, m, procs, got[i].canonical, got[i].problem, want[i].canonical, want[i].problem)
				}
			}
			if refused == 0 {
				t.Errorf("mapping %+v: no span refused; the spans whose input is [1e400] are", m)
			}
		}
	}
}
