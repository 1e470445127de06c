// Package otlpgen builds the OTLP exports the ingest benchmarks send
// (traceingest's BenchmarkOTLPIngest, internal/cmd/otlpload): GenAI spans,
// chat and tool calls with eight attributes each, of one trajectory, as
// an SDK's batch processor sends them.
package otlpgen

import (
	"encoding/json"
	"math/rand/v2"
	"strings"

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

// GenAIVaried is GenAI with each span's gen_ai.input.messages a message
// of its own: 20 to 60 words drawn from a vocabulary of some 200 by a
// generator seeded with seed, as prompts differ from span to span. The
// events it makes compress about as much as text does, not as the
// repetitions of GenAI do.
func GenAIVaried(n int, runID string, traceID []byte, seed uint64) *coltracepb.ExportTraceServiceRequest {
	req := GenAI(n, runID, traceID)
	r := rand.New(rand.NewPCG(seed, uint64(n)))
	var b strings.Builder
	for _, sp := range req.ResourceSpans[0].ScopeSpans[0].Spans {
		b.Reset()
		for i := range 20 + r.IntN(41) {
			if i > 0 {
				b.WriteByte(' ')
			}
			b.WriteString(vocabulary[r.IntN(len(vocabulary))])
		}
		msg, _ := json.Marshal([]map[string]string{{"role": "user", "content": b.String()}})
		for _, kv := range sp.Attributes {
			if kv.Key == "gen_ai.input.messages" {
				kv.Value = &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: string(msg)}}
			}
		}
	}
	return req
}

var vocabulary = strings.Fields(`the a an of to in for on with at by from into over after before under between
agent tool call search result answer question user assistant system model prompt token context window memory
file directory repository branch commit test build error warning retry timeout request response status code
find read write list open close parse format check compare sort filter merge split join count sum average
first last next previous every each some many few more less most least all none both either neither
please could would should might must can will may shall do does did done make made take took give gave
weather price order invoice customer account payment refund shipping address city country date time
report summary table chart figure value column row field key name id type kind version release
database query index schema migration backup restore cluster node pod service deploy rollback config
python go rust java javascript typescript shell bash sql json yaml html css markdown
because although while when where which who whom whose what why how if then else unless until
is are was were be been being has have had not no yes very quite rather also only just even still
quick slow large small new old good bad right wrong true false open closed ready pending failed passed
one two three four five six seven eight nine ten hundred thousand million percent`)
