package traces_test

import (
	"encoding/json"
	"math"
	"testing"
	"time"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"

	"svc/auth"
	"svc/internal/domain/eval"
	"svc/internal/domain/registry"
	"svc/internal/domain/trace"
	"svc/internal/service/traces"
	"svc/store"
)

// pinExport is a fixed export whose sealed trajectory is pinned: GenAI
// chat and tool spans, plain spans, error spans, spans without a start
// (sealed last), equal starts, and attributes of every OTLP kind,
// including integers a float64 cannot hold and doubles written with an
// exponent, HTML characters, U+2028 and JSON held in strings.
func pinExport() *coltracepb.ExportTraceServiceRequest {
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
	bl := func(v bool) *commonpb.AnyValue {
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_BoolValue{BoolValue: v}}
	}
	arr := func(vs ...*commonpb.AnyValue) *commonpb.AnyValue {
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_ArrayValue{ArrayValue: &commonpb.ArrayValue{Values: vs}}}
	}
	kvl := func(kvs ...*commonpb.KeyValue) *commonpb.AnyValue {
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_KvlistValue{KvlistValue: &commonpb.KeyValueList{Values: kvs}}}
	}
	base := uint64(time.Date(2026, 5, 1, 9, 0, 0, 0, time.UTC).UnixNano())
	var spans []*tracepb.Span
	for i := range 40 {
		sp := &tracepb.Span{
			TraceId: []byte("0123456789abcdef"), SpanId: []byte{9, 8, 7, 6, 5, 4, byte(i), 1},
			StartTimeUnixNano: base + uint64((i*7919)%23)*1_000_123, EndTimeUnixNano: base + uint64((i*7919)%23)*1_000_123 + uint64(i)*333_333,
		}
		switch i % 5 {
		case 0:
			sp.Name = "chat gpt-4o"
			sp.Attributes = []*commonpb.KeyValue{kv("gen_ai.operation.name", s("chat")), kv("gen_ai.request.model", s("gpt-4o")),
				kv("gen_ai.usage.input_tokens", n(int64(800+i))), kv("gen_ai.usage.output_tokens", n(64)), kv("gen_ai.usage.cost", f(0.0031*float64(i))),
				kv("gen_ai.input.messages", s(`[{"role":"user","content":"<b>x</b> & y","n":1.50,"e":15e-1,"z":-0,"a":{"b":2,"a":1}}]`)),
				kv("gen_ai.output.messages", s(`"plain text, not JSON structure"`))}
		case 1:
			sp.Name = "execute_tool search"
			sp.Attributes = []*commonpb.KeyValue{kv("gen_ai.operation.name", s("execute_tool")), kv("gen_ai.tool.name", s("search")),
				kv("gen_ai.tool.call.arguments", s(`{"q":"otlp","q2":"dup","limit":10}`)), kv("gen_ai.tool.call.result", n(42))}
		case 2:
			sp.Name = "retrieve"
			sp.Attributes = []*commonpb.KeyValue{kv("big", n(math.MaxInt64)), kv("big2", n(9007199254740993)), kv("neg", n(-12345678901234567)),
				kv("tiny", f(1e-9)), kv("huge", f(1.5e300)), kv("nan", f(math.NaN())), kv("ok", bl(true)),
				kv("list", arr(s("a"), n(1), f(2.5), arr(), kvl())), kv("map", kvl(kv("z", s("\u2028<>&\"\\\t")), kv("a", n(-1)))),
				kv("bytes", &commonpb.AnyValue{Value: &commonpb.AnyValue_BytesValue{BytesValue: []byte{0, 1, 2, 255}}}),
				kv("empty", &commonpb.AnyValue{})}
		case 3:
			sp.Name = "failing step"
			sp.Status = &tracepb.Status{Code: tracepb.Status_STATUS_CODE_ERROR, Message: "boom é \x01"}
		case 4:
			sp.Name = "no start"
			sp.StartTimeUnixNano, sp.EndTimeUnixNano = 0, 0
			sp.Attributes = []*commonpb.KeyValue{kv("i", n(int64(i)))}
		}
		spans = append(spans, sp)
	}
	return &coltracepb.ExportTraceServiceRequest{ResourceSpans: []*tracepb.ResourceSpans{{
		Resource:   &resourcepb.Resource{Attributes: []*commonpb.KeyValue{kv(trace.RunIDAttribute, s("pinned-run")), kv("service.name", s("agent"))}},
		ScopeSpans: []*tracepb.ScopeSpans{{Spans: spans}},
	}}}
}

// pinnedDigest is the digest the sealing of pinExport had before issue
// 16 changed how pending spans are stored and sealed; stored digests must
// not change.
const pinnedDigest = "sha256:1e879591206036d7a6eaa901a4f1b71abd23d6d3f750ddb4f6a6cb51b1583bcd"

// TestSealPinned: the trajectory sealed from a fixed export has the bytes
// and digest it had before the ingest path was optimised: those of the
// former path, which stored each event as encoding/json wrote it, read it
// back into a TraceEvent, sorted the events and canonicalised the array.
func TestSealPinned(t *testing.T) {
	for _, backend := range []string{"sqlite", "postgres"} {
		t.Run(backend, func(t *testing.T) { testSealPinned(t, openBench(t, backend)) })
	}
}

func testSealPinned(t *testing.T, st store.Store) {
	now := time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC)
	svc := traces.New(traces.Options{Store: st, Now: func() time.Time { return now }, IdleWindow: time.Minute})
	p := auth.Principal{Subject: "alice", Workspace: "acme", Roles: []auth.Role{auth.RoleAdmin}}
	req := pinExport()
	resp, err := svc.Export(t.Context(), p, req)
	if err != nil || resp.GetPartialSuccess() != nil {
		t.Fatalf("Export = %v, %v", resp, err)
	}
	now = now.Add(2 * time.Minute)
	if rep, err := svc.Sweep(t.Context()); err != nil || rep.Sealed != 1 {
		t.Fatalf("Sweep = %+v, %v", rep, err)
	}
	tr, err := st.GetTrajectory(t.Context(), "acme", "pinned-run")
	if err != nil {
		t.Fatal(err)
	}
	want := formerSeal(t, req)
	if string(tr.Events) != string(want) {
		t.Errorf("sealed events differ from the former path's:\n got %s\nwant %s", tr.Events, want)
	}
	if got := registry.Digest(tr.Events); tr.Digest != got || got != pinnedDigest {
		t.Errorf("digest = %s (stored %s), want %s", got, tr.Digest, pinnedDigest)
	}
	if tr.EventCount != 40 {
		t.Errorf("EventCount = %d, want 40", tr.EventCount)
	}
}

// formerSeal is the sealed trajectory of req as the path before issue 16
// computed it.
func formerSeal(t *testing.T, req *coltracepb.ExportTraceServiceRequest) []byte {
	t.Helper()
	spans, bad := trace.FlattenSpans(req)
	if len(bad) > 0 {
		t.Fatalf("FlattenSpans refused %v", bad)
	}
	type row struct {
		start int64
		key   string
		event []byte
	}
	var rows []row
	for _, sp := range spans {
		raw, err := json.Marshal(trace.Normalize(sp, trace.SpanAttrMapping{}))
		if err != nil {
			t.Fatal(err)
		}
		var start int64
		if !sp.Start.IsZero() {
			start = sp.Start.UnixNano()
		}
		rows = append(rows, row{start, sp.Key, raw})
	}
	// ListPendingSpans' order: start_unix_nano, span_key.
	for i := range rows {
		for j := i + 1; j < len(rows); j++ {
			if rows[j].start < rows[i].start || (rows[j].start == rows[i].start && rows[j].key < rows[i].key) {
				rows[i], rows[j] = rows[j], rows[i]
			}
		}
	}
	var events []eval.TraceEvent
	for _, r := range rows {
		var e eval.TraceEvent
		if err := json.Unmarshal(r.event, &e); err != nil {
			t.Fatal(err)
		}
		events = append(events, e)
	}
	trace.SortEvents(events)
	canonical, err := registry.CanonicalJSON(events)
	if err != nil {
		t.Fatal(err)
	}
	return canonical
}

// TestSealFormerPendingSpans: spans stored by the former Export (as
// encoding/json wrote their events) seal, mixed with spans stored as
// canonical JSON, into the bytes the former path sealed.
func TestSealFormerPendingSpans(t *testing.T) {
	st := openBench(t, "sqlite")
	now := time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC)
	req := pinExport()
	spans, _ := trace.FlattenSpans(req)
	var pending []store.PendingSpan
	for i, sp := range spans {
		e := trace.Normalize(sp, trace.SpanAttrMapping{})
		var raw []byte
		var err error
		if i%2 == 0 {
			raw, err = json.Marshal(e)
		} else {
			raw, err = trace.AppendCanonicalStoredEvent(nil, &e)
		}
		if err != nil {
			t.Fatal(err)
		}
		var start int64
		if !sp.Start.IsZero() {
			start = sp.Start.UnixNano()
		}
		pending = append(pending, store.PendingSpan{Workspace: "acme", Group: "pinned-run", External: true, Key: sp.Key,
			StartUnixNano: start, Event: raw, ReceivedAt: now})
	}
	if _, err := st.AddPendingSpans(t.Context(), pending); err != nil {
		t.Fatal(err)
	}
	svc := traces.New(traces.Options{Store: st, Now: func() time.Time { return now.Add(2 * time.Minute) }, IdleWindow: time.Minute})
	if rep, err := svc.Sweep(t.Context()); err != nil || rep.Sealed != 1 {
		t.Fatalf("Sweep = %+v, %v", rep, err)
	}
	tr, err := st.GetTrajectory(t.Context(), "acme", "pinned-run")
	if err != nil {
		t.Fatal(err)
	}
	if want := formerSeal(t, req); string(tr.Events) != string(want) || tr.Digest != pinnedDigest {
		t.Errorf("sealed %s (%s), want %s (%s)", tr.Events, tr.Digest, want, pinnedDigest)
	}
}

// TestSealInStoreMatchesSealInGo: an external trajectory of one export of
// timed spans, sealed inside the store (store.TraceIngest.SealPendingGroup,
// the sweep's common case), has the bytes and digest of the same spans
// sealed by reading them out (two exports, so two pending rows), which is
// the former path's (formerSeal).
func TestSealInStoreMatchesSealInGo(t *testing.T) {
	for _, backend := range []string{"sqlite", "postgres"} {
		t.Run(backend, func(t *testing.T) {
			st := openBench(t, backend)
			now := time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC)
			svc := traces.New(traces.Options{Store: st, Now: func() time.Time { return now }, IdleWindow: time.Minute})
			p := auth.Principal{Subject: "alice", Workspace: "acme", Roles: []auth.Role{auth.RoleAdmin}}
			// pinExport's spans with a start, under a run id.
			export := func(runID string, part func(i int) bool) *coltracepb.ExportTraceServiceRequest {
				req := pinExport()
				rs := req.ResourceSpans[0]
				rs.Resource.Attributes[0].Value = &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: runID}}
				var kept []*tracepb.Span
				for i, sp := range rs.ScopeSpans[0].Spans {
					if sp.StartTimeUnixNano != 0 && part(i) {
						kept = append(kept, sp)
					}
				}
				rs.ScopeSpans[0].Spans = kept
				return req
			}
			for _, req := range []*coltracepb.ExportTraceServiceRequest{export("in-store", func(int) bool { return true }),
				export("in-go", func(i int) bool { return i%2 == 0 }), export("in-go", func(i int) bool { return i%2 == 1 })} {
				if resp, err := svc.Export(t.Context(), p, req); err != nil || resp.GetPartialSuccess() != nil {
					t.Fatalf("Export = %v, %v", resp, err)
				}
			}
			if _, sealed, err := st.SealPendingGroup(t.Context(), store.Trajectory{Workspace: "acme", RunID: "in-store", Source: traces.SourceOTel, SealedAt: now}, eval.MaxTraceEvents); err != nil || !sealed {
				t.Fatalf("SealPendingGroup(in-store) = %v, %v; want it sealed in the store", sealed, err)
			}
			now = now.Add(2 * time.Minute)
			if rep, err := svc.Sweep(t.Context()); err != nil || rep.Sealed != 1 {
				t.Fatalf("Sweep = %+v, %v", rep, err)
			}
			inStore, err := st.GetTrajectory(t.Context(), "acme", "in-store")
			if err != nil {
				t.Fatal(err)
			}
			inGo, err := st.GetTrajectory(t.Context(), "acme", "in-go")
			if err != nil {
				t.Fatal(err)
			}
			// Each as the former path sealed it (their spans differ only in
			// svc.run_id, which every event keeps among its attributes).
			all := func(int) bool { return true }
			for _, c := range []struct {
				tr  store.Trajectory
				run string
			}{{inStore, "in-store"}, {inGo, "in-go"}} {
				want := formerSeal(t, export(c.run, all))
				if string(c.tr.Events) != string(want) || c.tr.Digest != registry.Digest(want) || c.tr.EventCount != 32 {
					t.Errorf("%s sealed %d events %s (%s), want 32 %s (%s)", c.run, c.tr.EventCount, c.tr.Events, c.tr.Digest, want, registry.Digest(want))
				}
			}
		})
	}
}
