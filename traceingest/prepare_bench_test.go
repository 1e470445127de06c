package traceingest

import (
	"testing"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"

	"svc/traces"
)

// BenchmarkPrepare times the CPU-only steps of Export between decoding
// and the store, for an export of 1,000 GenAI spans: FlattenSpans, and
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
			traces.FlattenSpans(req)
		}
	})
	flat, _ := traces.FlattenSpans(req)
	b.Run("prepare", func(b *testing.B) {
		for b.Loop() {
			prepareEvents(flat, traces.SpanAttrMapping{})
		}
	})
}
