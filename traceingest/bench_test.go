package traceingest_test

import (
	"bytes"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"

	"svc/auth"
	"svc/store"
	"svc/store/pgtest"
	"svc/store/postgres"
	"svc/store/sqlite"
	"svc/traceingest"
	"svc/traces"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// benchSpans is the number of spans of one export, as an SDK's batch
// processor sends them (its default batch is 512).
const benchSpans = 1000

// benchTraceID is the trace id of the benchmark's spans; each iteration
// replaces it in the encoded body, so no span is a retry of another.
var benchTraceID = bytes.Repeat([]byte{0x5b}, 16)

// benchExport is an export of benchSpans GenAI spans (chat and tool calls,
// eight attributes each) of one external trajectory, encoded as protobuf.
func benchExport(b *testing.B) []byte {
	kv := func(k string, v *commonpb.AnyValue) *commonpb.KeyValue { return &commonpb.KeyValue{Key: k, Value: v} }
	s := func(v string) *commonpb.AnyValue {
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: v}}
	}
	n := func(v int64) *commonpb.AnyValue {
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_IntValue{IntValue: v}}
	}
	spans := make([]*tracepb.Span, benchSpans)
	for i := range spans {
		op, name := "chat", "chat gpt-4o"
		if i%3 == 2 {
			op, name = "execute_tool", "execute_tool search"
		}
		spans[i] = &tracepb.Span{
			TraceId: benchTraceID, SpanId: []byte{0, 0, 0, 0, byte(i >> 16), byte(i >> 8), byte(i), 1}, Name: name,
			StartTimeUnixNano: uint64(1_700_000_000_000_000_000 + i*1_000_000), EndTimeUnixNano: uint64(1_700_000_000_000_000_000 + i*1_000_000 + 500_000),
			Attributes: []*commonpb.KeyValue{
				kv("gen_ai.operation.name", s(op)), kv("gen_ai.request.model", s("gpt-4o")), kv("gen_ai.system", s("openai")),
				kv("gen_ai.usage.input_tokens", n(812)), kv("gen_ai.usage.output_tokens", n(64)), kv("gen_ai.tool.name", s("search")),
				kv("gen_ai.input.messages", s(`[{"role":"user","content":"what is the OTLP door?"}]`)), kv("http.status_code", n(200)),
			},
		}
	}
	req := &coltracepb.ExportTraceServiceRequest{ResourceSpans: []*tracepb.ResourceSpans{{
		Resource:   &resourcepb.Resource{Attributes: []*commonpb.KeyValue{kv(traces.RunIDAttribute, s("bench-run-0000000")), kv("service.name", s("agent"))}},
		ScopeSpans: []*tracepb.ScopeSpans{{Spans: spans}},
	}}}
	body, err := proto.Marshal(req)
	if err != nil {
		b.Fatal(err)
	}
	return body
}

// BenchmarkOTLPIngest compares, in one run, the official decoder alone
// (proto.Unmarshal of the export) with the door's whole path on each
// backend: decode, flatten, normalise and store the spans durably under
// the quota (ingest), and the same followed by the sweep sealing them into
// a trajectory (ingest+seal). spans/s is over the whole benchmark time.
//
//	go test -run '^$' -bench OTLPIngest -benchtime 20x ./traceingest/
func BenchmarkOTLPIngest(b *testing.B) {
	body := benchExport(b)
	b.Run("decode-only", func(b *testing.B) {
		b.SetBytes(int64(len(body)))
		for b.Loop() {
			req := &coltracepb.ExportTraceServiceRequest{}
			if err := proto.Unmarshal(body, req); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.N*benchSpans)/b.Elapsed().Seconds(), "spans/s")
	})
	for _, backend := range []string{"sqlite", "postgres"} {
		for _, seal := range []bool{false, true} {
			name := backend + "/ingest"
			if seal {
				name += "+seal"
			}
			b.Run(name, func(b *testing.B) { benchIngest(b, openBench(b, backend), body, seal) })
		}
	}
}

func openBench(b *testing.B, backend string) store.Store {
	ctx := b.Context()
	switch backend {
	case "sqlite":
		s, err := sqlite.Open(ctx, filepath.Join(b.TempDir(), "svc.db"))
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { s.Close() })
		if _, err := s.Migrate(ctx); err != nil {
			b.Fatal(err)
		}
		return s
	default:
		s, err := postgres.Open(ctx, pgtest.URL(b))
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { s.Close() })
		if _, err := s.Migrate(ctx); err != nil {
			b.Fatal(err)
		}
		return s
	}
}

func benchIngest(b *testing.B, st store.Store, body []byte, seal bool) {
	now := time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	svc := traceingest.New(traceingest.Options{Store: st, Now: clock, IdleWindow: time.Minute})
	p := auth.Principal{Subject: "bench", Workspace: "bench", Roles: []auth.Role{auth.RoleAdmin}}
	b.SetBytes(int64(len(body)))
	b.ResetTimer()
	for i := range b.N {
		b.StopTimer()
		id := []byte(fmt.Sprintf("%016x", i)) // a fresh trace id (16 bytes) and run id per export
		this := bytes.ReplaceAll(body, benchTraceID, id)
		this = bytes.Replace(this, []byte("bench-run-0000000"), []byte(fmt.Sprintf("bench-%011d", i)), 1) // the same length
		b.StartTimer()
		data, err := traces.ReadOTLPBody(bytes.NewReader(this), "")
		if err != nil {
			b.Fatal(err)
		}
		req, err := traces.DecodeOTLP(data, traces.EncodingProtobuf)
		if err != nil {
			b.Fatal(err)
		}
		resp, err := svc.Export(b.Context(), p, req)
		if err != nil || resp.GetPartialSuccess() != nil {
			b.Fatalf("Export = %v, %v", resp, err)
		}
		if seal {
			now = now.Add(2 * time.Minute)
			rep, err := svc.Sweep(b.Context())
			if err != nil || rep.Sealed != 1 {
				b.Fatalf("Sweep = %+v, %v", rep, err)
			}
		}
	}
	b.ReportMetric(float64(b.N*benchSpans)/b.Elapsed().Seconds(), "spans/s")
}
