// Package otlpgen builds the OTLP exports the ingest benchmarks send
// (traceingest's BenchmarkOTLPIngest, internal/cmd/otlpload): GenAI spans,
// chat and tool calls with eight attributes each, of one trajectory, as
// an SDK's batch processor sends them.
package otlpgen

import (
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
)

// StartUnixNano is the start of the first span of an export; each next
// span starts a millisecond later and lasts half of one.
const StartUnixNano = 1_700_000_000_000_000_000

// GenAI is an export of n spans of trace traceID (16 bytes), under the
// resource attribute svc.run_id = runID: two chat spans, then a tool
// call, over and over.
func GenAI(n int, runID string, traceID []byte) *coltracepb.ExportTraceServiceRequest {
	kv := func(k string, v *commonpb.AnyValue) *commonpb.KeyValue { return &commonpb.KeyValue{Key: k, Value: v} }
	s := func(v string) *commonpb.AnyValue {
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: v}}
	}
	num := func(v int64) *commonpb.AnyValue {
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_IntValue{IntValue: v}}
	}
	spans := make([]*tracepb.Span, n)
	for i := range spans {
		op, name := "chat", "chat gpt-4o"
		if i%3 == 2 {
			op, name = "execute_tool", "execute_tool search"
		}
		start := uint64(StartUnixNano + i*1_000_000)
		spans[i] = &tracepb.Span{
			TraceId: traceID, SpanId: []byte{0, 0, 0, 0, byte(i >> 16), byte(i >> 8), byte(i), 1}, Name: name,
			StartTimeUnixNano: start, EndTimeUnixNano: start + 500_000,
			Attributes: []*commonpb.KeyValue{
				kv("gen_ai.operation.name", s(op)), kv("gen_ai.request.model", s("gpt-4o")), kv("gen_ai.system", s("openai")),
				kv("gen_ai.usage.input_tokens", num(812)), kv("gen_ai.usage.output_tokens", num(64)), kv("gen_ai.tool.name", s("search")),
				kv("gen_ai.input.messages", s(`[{"role":"user","content":"what is the OTLP door?"}]`)), kv("http.status_code", num(200)),
			},
		}
	}
	return &coltracepb.ExportTraceServiceRequest{ResourceSpans: []*tracepb.ResourceSpans{{
		Resource:   &resourcepb.Resource{Attributes: []*commonpb.KeyValue{kv("svc.run_id", s(runID)), kv("service.name", s("agent"))}},
		ScopeSpans: []*tracepb.ScopeSpans{{Spans: spans}},
	}}}
}
