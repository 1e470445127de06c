package traces_test

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"

	"svc/auth"
	"svc/internal/domain/trace"
	"svc/internal/service/traces"
	"svc/internal/testing/otlpgen"
	"svc/store"
	"svc/store/pgtest"
	"svc/store/postgres"
	"svc/store/sqlite"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// benchSpans is the number of spans of one export, as an SDK's batch
// processor sends them (its default batch is 512).
const benchSpans = 1000

// benchTraceID is the trace id of the benchmark's spans; each iteration
// replaces it in the encoded body, so no span is a retry of another.
var benchTraceID = bytes.Repeat([]byte{0x5b}, 16)

// benchExport is an export of benchSpans GenAI spans (chat and tool
// calls, eight attributes each) of one external trajectory, encoded as
// protobuf. With SVC_BENCH_VARIED=1 each span's input message is text of
// its own (otlpgen.GenAIVaried), which compresses as text does rather
// than as one message repeated.
func benchExport(b *testing.B) []byte {
	req := otlpgen.GenAI(benchSpans, "bench-run-0000000", benchTraceID)
	if os.Getenv("SVC_BENCH_VARIED") == "1" {
		req = otlpgen.GenAIVaried(benchSpans, "bench-run-0000000", benchTraceID, 1)
	}
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
		b.Run(backend+"/concurrent/ingest+seal", func(b *testing.B) { benchConcurrent(b, openBench(b, backend), body) })
	}
}

// benchClients is how many clients export at once in the concurrent
// variant: two a processor, so one's database round trip overlaps
// another's decoding.
func benchClients() int { return 2 * runtime.GOMAXPROCS(0) }

// benchBody is body with a fresh trace id and run id for export i.
func benchBody(body []byte, i int) []byte {
	id := []byte(fmt.Sprintf("%016x", i)) // a fresh trace id (16 bytes) and run id per export
	this := bytes.ReplaceAll(body, benchTraceID, id)
	return bytes.Replace(this, []byte("bench-run-0000000"), []byte(fmt.Sprintf("bench-%011d", i)), 1) // the same length
}

// benchConcurrent is the door as a service is loaded: benchClients
// clients send exports at once while the trace sweep seals, concurrently,
// every trajectory whose export has been stored (the sweeper's clock is
// past the idle window of them all). The time is until all b.N exports
// are sealed.
func benchConcurrent(b *testing.B, st store.Store, body []byte) {
	now := time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC)
	ingest := traces.New(traces.Options{Store: st, Now: func() time.Time { return now }, IdleWindow: time.Minute})
	sweeper := traces.New(traces.Options{Store: st, Now: func() time.Time { return now.Add(2 * time.Minute) }, IdleWindow: time.Minute})
	p := auth.Principal{Subject: "bench", Workspace: "bench", Roles: []auth.Role{auth.RoleAdmin}}
	bodies := make([][]byte, b.N)
	for i := range bodies {
		bodies[i] = benchBody(body, i)
	}
	b.SetBytes(int64(len(body)))
	b.ResetTimer()
	var next atomic.Int64
	errs := make(chan error, benchClients()+1)
	var wg sync.WaitGroup
	for range benchClients() {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= b.N {
					return
				}
				data, err := trace.ReadOTLPBody(bytes.NewReader(bodies[i]), "")
				if err != nil {
					errs <- err
					return
				}
				req, err := trace.DecodeOTLP(data, trace.EncodingProtobuf)
				if err != nil {
					errs <- err
					return
				}
				resp, err := ingest.Export(b.Context(), p, req)
				if err != nil || resp.GetPartialSuccess() != nil {
					errs <- fmt.Errorf("Export = %v, %v", resp, err)
					return
				}
			}
		})
	}
	wg.Go(func() {
		sealed := 0
		for sealed < b.N {
			if len(errs) > 0 {
				return
			}
			rep, err := sweeper.Sweep(b.Context())
			if err != nil {
				errs <- fmt.Errorf("Sweep = %+v, %v", rep, err)
				return
			}
			sealed += rep.Sealed
			if rep.Sealed == 0 {
				time.Sleep(time.Millisecond) // nothing stored yet
			}
		}
	})
	wg.Wait()
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}
	b.ReportMetric(float64(b.N*benchSpans)/b.Elapsed().Seconds(), "spans/s")
}

func openBench(b testing.TB, backend string) store.Store {
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
	svc := traces.New(traces.Options{Store: st, Now: clock, IdleWindow: time.Minute})
	p := auth.Principal{Subject: "bench", Workspace: "bench", Roles: []auth.Role{auth.RoleAdmin}}
	b.SetBytes(int64(len(body)))
	b.ResetTimer()
	var decode, export, sweep time.Duration
	for i := range b.N {
		b.StopTimer()
		this := benchBody(body, i)
		b.StartTimer()
		t0 := time.Now()
		data, err := trace.ReadOTLPBody(bytes.NewReader(this), "")
		if err != nil {
			b.Fatal(err)
		}
		req, err := trace.DecodeOTLP(data, trace.EncodingProtobuf)
		if err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		resp, err := svc.Export(b.Context(), p, req)
		if err != nil || resp.GetPartialSuccess() != nil {
			b.Fatalf("Export = %v, %v", resp, err)
		}
		t2 := time.Now()
		decode, export = decode+t1.Sub(t0), export+t2.Sub(t1)
		if seal {
			now = now.Add(2 * time.Minute)
			rep, err := svc.Sweep(b.Context())
			if err != nil || rep.Sealed != 1 {
				b.Fatalf("Sweep = %+v, %v", rep, err)
			}
			sweep += time.Since(t2)
		}
	}
	b.ReportMetric(float64(b.N*benchSpans)/b.Elapsed().Seconds(), "spans/s")
	// Where an export's time goes: decoding, Export (normalise and store)
	// and the sweep that seals it.
	b.ReportMetric(float64(decode.Milliseconds())/float64(b.N), "decode-ms/op")
	b.ReportMetric(float64(export.Milliseconds())/float64(b.N), "export-ms/op")
	if seal {
		b.ReportMetric(float64(sweep.Milliseconds())/float64(b.N), "seal-ms/op")
	}
}
