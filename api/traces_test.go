package api_test

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"svc/internal/domain/eval"
	"svc/internal/domain/registry"
	"svc/internal/domain/trace"
	"svc/internal/service/traces"
	"svc/store"
	"svc/store/records"
)

// The OTLP door (POST /v1/traces) and the trace settings, on a real
// server: the OpenTelemetry Go SDK's own exporter sends the spans.

// runningRun stores a running run of ws on harness h@1.0.0, as dispatch
// leaves it while the harness runs.
func (e *testEnv) runningRun(t testing.TB, ws, createdBy, harness string) eval.Run {
	t.Helper()
	now := e.clock.Now()
	run := eval.Run{ID: eval.NewID("run"), Tenant: ws, Harness: registry.Ref{ID: harness, Version: "1.0.0"}, CaseID: "c1",
		Status: eval.StatusRunning, Kind: eval.KindEval, Trigger: eval.TriggerAPI, CreatedBy: createdBy, CreatedAt: now, UpdatedAt: now}
	row, err := records.Row(run)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.store.CreateRun(t.Context(), row); err != nil {
		t.Fatalf("CreateRun: %v", err)
	}
	return run
}

// exportWithSDK sends spans through otlptracehttp (protobuf, gzip) as key,
// under resource attribute svc.run_id=runID ("" for none), and returns
// what the SDK reported (a partial success arrives as an error there).
func (e *testEnv) exportWithSDK(t *testing.T, key, runID string) []error {
	t.Helper()
	ctx := t.Context()
	var reported []error
	otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) { reported = append(reported, err) }))
	t.Cleanup(func() { otel.SetErrorHandler(otel.ErrorHandlerFunc(func(error) {})) })
	exp, err := otlptracehttp.New(ctx,
		otlptracehttp.WithEndpointURL(e.client.URL+"/v1/traces"),
		otlptracehttp.WithHeaders(map[string]string{"Authorization": "Bearer " + key}),
		otlptracehttp.WithCompression(otlptracehttp.GzipCompression),
		otlptracehttp.WithRetry(otlptracehttp.RetryConfig{Enabled: false}))
	if err != nil {
		t.Fatal(err)
	}
	var attrs []attribute.KeyValue
	if runID != "" {
		attrs = append(attrs, attribute.String(trace.RunIDAttribute, runID))
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp), sdktrace.WithResource(resource.NewSchemaless(attrs...)))
	tr := tp.Tracer("agent")
	ctx, root := tr.Start(ctx, "invoke_agent")
	_, chat := tr.Start(ctx, "chat gpt-4o")
	chat.SetAttributes(attribute.String("gen_ai.operation.name", "chat"), attribute.String("gen_ai.request.model", "gpt-4o"),
		attribute.Int("gen_ai.usage.input_tokens", 120), attribute.Int("gen_ai.usage.output_tokens", 30))
	chat.End()
	_, tool := tr.Start(ctx, "execute_tool search")
	tool.SetAttributes(attribute.String("gen_ai.operation.name", "execute_tool"), attribute.String("gen_ai.tool.name", "search"),
		attribute.String("gen_ai.tool.call.arguments", `{"q":"otlp"}`))
	tool.End()
	_, failed := tr.Start(ctx, "read file")
	failed.SetStatus(codes.Error, "no such file")
	failed.End()
	root.End()
	if err := tp.Shutdown(t.Context()); err != nil {
		reported = append(reported, err)
	}
	return reported
}

func pendingKinds(t *testing.T, e *testEnv, ws, group string) []string {
	t.Helper()
	spans, err := e.store.ListPendingSpans(t.Context(), ws, group)
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, s := range spans {
		var ev eval.TraceEvent
		if err := json.Unmarshal(s.Event, &ev); err != nil {
			t.Fatal(err)
		}
		kinds = append(kinds, ev.Kind+":"+ev.Name)
	}
	return kinds
}

func TestOTLPExporterSendsARunsSpans(t *testing.T) {
	e := newEnv(t)
	a := e.tenant(t, "a")
	run := e.runningRun(t, a.ws, e.subjectOf(t, bearer(a.key)), "h")
	if errs := e.exportWithSDK(t, a.key, run.ID); len(errs) > 0 {
		t.Fatalf("the exporter reported %v", errs)
	}
	wantKinds := []string{"span:invoke_agent", "llm_call:chat gpt-4o", "tool_call:search", "error:read file"}
	if diff := cmp.Diff(wantKinds, pendingKinds(t, e, a.ws, run.ID)); diff != "" {
		t.Errorf("the run's pending spans (-want +got):\n%s", diff)
	}
	// What dispatch merges when the run ends: the events, in start order.
	events, err := traces.RunSpanEvents(t.Context(), e.store, a.ws, run.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(events) != 4 || events[0].Kind != eval.EventSpan || events[1].InputTokens != 120 || events[1].Model != "gpt-4o" {
		t.Errorf("RunSpanEvents = %+v, want the root span first and the chat's usage", events)
	}
	// A retried export stores nothing twice and counts nothing twice.
	res := e.do(t, http.MethodGet, "/workspace/trace-ingestion", "", bearer(a.key))
	want(t, res, http.StatusOK, "GET /workspace/trace-ingestion")
	if got := decode[traces.Ingestion](t, res).UsageLastHour; got != 4 {
		t.Errorf("usageLastHour = %d, want 4", got)
	}
}

// otlpRequest is an export of spans named names in trace traceHex, under
// svc.run_id=runID ("" for none).
func otlpRequest(runID string, names ...string) *coltracepb.ExportTraceServiceRequest {
	var res []*commonpb.KeyValue
	if runID != "" {
		res = append(res, &commonpb.KeyValue{Key: trace.RunIDAttribute, Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: runID}}})
	}
	var spans []*tracepb.Span
	for i, n := range names {
		spans = append(spans, &tracepb.Span{
			TraceId: bytes.Repeat([]byte{0xab}, 16), SpanId: []byte{1, 2, 3, 4, 5, 6, 7, byte(i + 1)}, Name: n,
			StartTimeUnixNano: uint64(1_700_000_000_000_000_000 + i), EndTimeUnixNano: uint64(1_700_000_001_000_000_000 + i),
		})
	}
	return &coltracepb.ExportTraceServiceRequest{ResourceSpans: []*tracepb.ResourceSpans{{
		Resource: &resourcepb.Resource{Attributes: res}, ScopeSpans: []*tracepb.ScopeSpans{{Spans: spans}},
	}}}
}

// postOTLP sends req as key, as protobuf or JSON, gzip or not, without the
// API client's document check (a protobuf body is not JSON).
func (e *testEnv) postOTLP(t *testing.T, key string, body []byte, contentType, encoding string) (int, http.Header, []byte) {
	t.Helper()
	hreq, err := http.NewRequestWithContext(t.Context(), http.MethodPost, e.client.URL+"/v1/traces", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	hreq.Header.Set("Content-Type", contentType)
	if encoding != "" {
		hreq.Header.Set("Content-Encoding", encoding)
	}
	if key != "" {
		hreq.Header.Set("Authorization", "Bearer "+key)
	}
	res, err := e.client.HTTP.Do(hreq)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	out, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return res.StatusCode, res.Header, out
}

// exportProto sends req as protobuf and decodes the answer.
func (e *testEnv) exportProto(t *testing.T, key string, req *coltracepb.ExportTraceServiceRequest) (int, *coltracepb.ExportTraceServiceResponse, []byte) {
	t.Helper()
	body, err := proto.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	status, _, out := e.postOTLP(t, key, body, trace.EncodingProtobuf, "")
	resp := &coltracepb.ExportTraceServiceResponse{}
	if status == http.StatusOK {
		if err := proto.Unmarshal(out, resp); err != nil {
			t.Fatalf("the answer is not an ExportTraceServiceResponse: %v", err)
		}
	}
	return status, resp, out
}

func TestOTLPJSONDoorWithPartialSuccess(t *testing.T) {
	e := newEnv(t)
	a := e.tenant(t, "a")
	req := otlpRequest("ext-job-1", "step one", "step two")
	req.ResourceSpans[0].ScopeSpans[0].Spans[1].TraceId = nil // refused: no trace id
	body, err := protojson.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	// Through the API client: the JSON answer must match the document.
	res := e.do(t, http.MethodPost, "/v1/traces", string(body), bearer(a.key))
	if res.Status != http.StatusOK {
		t.Fatalf("status %d, body %s", res.Status, res.Body)
	}
	resp := &coltracepb.ExportTraceServiceResponse{}
	if err := protojson.Unmarshal(res.Body, resp); err != nil {
		t.Fatalf("answer %s: %v", res.Body, err)
	}
	if ps := resp.GetPartialSuccess(); ps.GetRejectedSpans() != 1 || !strings.Contains(ps.GetErrorMessage(), "trace id") {
		t.Errorf("partial_success = %v, want 1 span refused for its trace id", ps)
	}
	if got := pendingKinds(t, e, a.ws, "ext-job-1"); !cmp.Equal(got, []string{"span:step one"}) {
		t.Errorf("pending spans of ext-job-1 = %v", got)
	}
	// Hex ids, as OTLP JSON writes them (not protojson's base64).
	hexBody := `{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"5b8efff798038103d269b633813fc60c","spanId":"eee19b7ec3c1b174","name":"no run id"}]}]}]}`
	res = e.do(t, http.MethodPost, "/v1/traces", hexBody, bearer(a.key))
	if res.Status != http.StatusOK || strings.Contains(string(res.Body), "partialSuccess") {
		t.Fatalf("hex ids: status %d, body %s", res.Status, res.Body)
	}
	if got := pendingKinds(t, e, a.ws, "trace_5b8efff798038103d269b633813fc60c"); !cmp.Equal(got, []string{"span:no run id"}) {
		t.Errorf("spans without svc.run_id go to trace_<trace id>; got %v", got)
	}
}

func TestOTLPDoorRefusals(t *testing.T) {
	e := newEnv(t)
	a := e.tenant(t, "a")
	good, _ := proto.Marshal(otlpRequest("r1", "s"))
	var bomb bytes.Buffer
	zw := gzip.NewWriter(&bomb)
	if _, err := zw.Write(make([]byte, trace.MaxOTLPBytes+1<<20)); err != nil {
		t.Fatal(err)
	}
	zw.Close()
	for _, tt := range []struct {
		name, key, ct, ce string
		body              []byte
		status            int
	}{
		{"gzip bomb", a.key, trace.EncodingProtobuf, "gzip", bomb.Bytes(), http.StatusRequestEntityTooLarge},
		{"not protobuf", a.key, trace.EncodingProtobuf, "", []byte{0xff, 0xff, 0xff, 0xff}, http.StatusBadRequest},
		{"not JSON", a.key, trace.EncodingJSON, "", []byte(`{"resourceSpans":`), http.StatusBadRequest},
		{"not gzip", a.key, trace.EncodingProtobuf, "gzip", good, http.StatusBadRequest},
		{"other content type", a.key, "text/plain", "", good, http.StatusUnsupportedMediaType},
		{"other content encoding", a.key, trace.EncodingProtobuf, "br", good, http.StatusUnsupportedMediaType},
		{"forged key", "ak_forged", trace.EncodingProtobuf, "", good, http.StatusUnauthorized},
	} {
		t.Run(tt.name, func(t *testing.T) {
			status, h, body := e.postOTLP(t, tt.key, tt.body, tt.ct, tt.ce)
			if status != tt.status {
				t.Fatalf("status %d, want %d; body %s", status, tt.status, body)
			}
			var eb struct {
				Error struct{ Code, Message, RequestID string }
			}
			if err := json.Unmarshal(body, &eb); err != nil || eb.Error.Code == "" || eb.Error.RequestID != h.Get("X-Request-Id") {
				t.Errorf("body %s is not the JSON error shape (%v)", body, err)
			}
		})
	}
}

func TestOTLPLateSpansAndForeignRuns(t *testing.T) {
	e := newEnv(t)
	a, b := e.tenant(t, "a"), e.tenant(t, "b")
	live := e.runningRun(t, a.ws, e.subjectOf(t, bearer(a.key)), "h")
	ended := e.seedRun(t, a.ws, e.subjectOf(t, bearer(a.key)))

	// Late: a run that has ended refuses its spans, by partial_success.
	status, resp, body := e.exportProto(t, a.key, otlpRequest(ended.ID, "late"))
	if status != http.StatusOK || resp.GetPartialSuccess().GetRejectedSpans() != 1 || !strings.Contains(resp.GetPartialSuccess().GetErrorMessage(), "ended") {
		t.Fatalf("late span: status %d, partial_success %v (%s)", status, resp.GetPartialSuccess(), body)
	}

	// B's key names A's live run: it is an unknown id for B, answered
	// exactly as one, and A's run gets nothing.
	_, foreign, _ := e.exportProto(t, b.key, otlpRequest(live.ID, "intruder"))
	_, unknown, _ := e.exportProto(t, b.key, otlpRequest("run_never_existed", "intruder"))
	if !proto.Equal(foreign, unknown) {
		t.Errorf("answer for A's run id %v differs from an unknown id's %v: existence leaks", foreign, unknown)
	}
	if got := pendingKinds(t, e, a.ws, live.ID); len(got) != 0 {
		t.Errorf("B's spans reached A's run: %v", got)
	}
	if got := pendingKinds(t, e, b.ws, live.ID); !cmp.Equal(got, []string{"span:intruder"}) {
		t.Errorf("B's spans should wait as B's own external trajectory; got %v", got)
	}
	// B's key on A's ended run is not refused as late either.
	_, late, _ := e.exportProto(t, b.key, otlpRequest(ended.ID, "x"))
	if late.GetPartialSuccess() != nil {
		t.Errorf("B on A's ended run: partial_success %v, want none (an unknown id for B)", late.GetPartialSuccess())
	}
	// A's own key does reach its run.
	if status, resp, _ := e.exportProto(t, a.key, otlpRequest(live.ID, "mine")); status != http.StatusOK || resp.GetPartialSuccess() != nil {
		t.Fatalf("A's own span: status %d, %v", status, resp.GetPartialSuccess())
	}
	if got := pendingKinds(t, e, a.ws, live.ID); !cmp.Equal(got, []string{"span:mine"}) {
		t.Errorf("A's run's spans = %v", got)
	}
}

func TestOTLPQuotaThrottlesOncePerWindow(t *testing.T) {
	e := newEnv(t)
	a := e.tenant(t, "a")
	res := e.do(t, http.MethodPut, "/workspace/trace-ingestion", `{"maxEventsPerHour":3,"retentionDays":7}`, bearer(a.key))
	if res.Status != http.StatusOK {
		t.Fatalf("PUT: %d %s", res.Status, res.Body)
	}
	got := decode[traces.Ingestion](t, res)
	if got.MaxEventsPerHour != 3 || got.RetentionDays != 7 || got.UsageLastHour != 0 {
		t.Errorf("settings = %+v", got)
	}
	if status, _, body := e.exportProto(t, a.key, otlpRequest("job", "a", "b")); status != http.StatusOK {
		t.Fatalf("within the quota: %d %s", status, body)
	}
	for range 2 {
		body, _ := proto.Marshal(otlpRequest("job2", "c", "d"))
		status, h, out := e.postOTLP(t, a.key, body, trace.EncodingProtobuf, "")
		if status != http.StatusTooManyRequests || h.Get("Retry-After") == "" || !strings.Contains(string(out), "RATE_LIMITED") {
			t.Fatalf("past the quota: status %d, Retry-After %q, body %s", status, h.Get("Retry-After"), out)
		}
	}
	if evs := e.events(t, a.ws, traces.ThrottledEvent); len(evs) != 1 {
		t.Errorf("%d trace.ingestion_throttled events, want exactly 1 per window", len(evs))
	}
	res = e.do(t, http.MethodGet, "/workspace/trace-ingestion", "", bearer(a.key))
	if u := decode[traces.Ingestion](t, res).UsageLastHour; u != 2 {
		t.Errorf("usageLastHour = %d, want 2 (refused exports count nothing)", u)
	}
	// The next hour has room again.
	e.clock.Advance(time.Hour)
	if status, _, body := e.exportProto(t, a.key, otlpRequest("job2", "c", "d")); status != http.StatusOK {
		t.Fatalf("next hour: %d %s", status, body)
	}
	// A viewer-level read works; a bad update is 400.
	res = e.do(t, http.MethodPut, "/workspace/trace-ingestion", `{"maxEventsPerHour":-1}`, bearer(a.key))
	want(t, res, http.StatusBadRequest, "PUT negative quota")
	res = e.do(t, http.MethodPut, "/workspace/trace-ingestion", `{"quota":1}`, bearer(a.key))
	want(t, res, http.StatusBadRequest, "PUT unknown field")
}

func TestExternalTrajectorySealedAfterIdleWithThresholds(t *testing.T) {
	e := newEnv(t)
	a := e.tenant(t, "a")
	res := e.do(t, http.MethodPut, "/workspace/trace-thresholds", `{"maxEvents":1,"maxErrors":5}`, bearer(a.key))
	if res.Status != http.StatusOK {
		t.Fatalf("PUT thresholds: %d %s", res.Status, res.Body)
	}
	res = e.do(t, http.MethodGet, "/workspace/trace-thresholds", "", bearer(a.key))
	if got := decode[trace.Thresholds](t, res); got.MaxEvents == nil || *got.MaxEvents != 1 || got.MaxTokens != nil {
		t.Errorf("GET thresholds = %+v", got)
	}
	if status, _, body := e.exportProto(t, a.key, otlpRequest("ext-42", "a", "b")); status != http.StatusOK {
		t.Fatalf("export: %d %s", status, body)
	}
	sweeper := traces.New(traces.Options{Store: e.store, IdleWindow: 5 * time.Minute, Now: e.clock.Now})
	rep, err := sweeper.Sweep(t.Context())
	if err != nil || rep.Sealed != 0 {
		t.Fatalf("sweep before the idle window: %+v, %v; want nothing sealed", rep, err)
	}
	e.clock.Advance(6 * time.Minute)
	rep, err = sweeper.Sweep(t.Context())
	if err != nil || rep.Sealed != 1 || rep.Crossings != 1 {
		t.Fatalf("sweep after the idle window: %+v, %v; want 1 sealed, 1 crossing", rep, err)
	}
	res = e.do(t, http.MethodGet, "/trajectories/ext-42", "", bearer(a.key))
	if res.Status != http.StatusOK || !strings.Contains(string(res.Body), `"otel"`) {
		t.Fatalf("GET /trajectories/ext-42: %d %s", res.Status, res.Body)
	}
	evs := e.events(t, a.ws, traces.ThresholdEvent)
	if len(evs) != 1 || !strings.Contains(string(evs[0].Data), `"bound":"maxEvents"`) || !strings.Contains(string(evs[0].Data), `"runId":"ext-42"`) {
		t.Errorf("threshold events = %+v, want one naming ext-42 and maxEvents", evs)
	}
	// Late spans for the sealed external trajectory are refused.
	_, resp, _ := e.exportProto(t, a.key, otlpRequest("ext-42", "late"))
	if resp.GetPartialSuccess().GetRejectedSpans() != 1 {
		t.Errorf("late span for a sealed external trajectory: partial_success %v", resp.GetPartialSuccess())
	}
	// A second sweep seals nothing again; none pending is left.
	if rep, err := sweeper.Sweep(t.Context()); err != nil || rep.Sealed != 0 {
		t.Errorf("second sweep: %+v, %v", rep, err)
	}
	if gs, _ := e.store.ListPendingGroups(t.Context(), time.Time{}, 0); len(gs) != 0 {
		t.Errorf("pending groups left: %+v", gs)
	}
	// Retention: a TTL of 1 day deletes it a day and a bit later.
	e.do(t, http.MethodPut, "/workspace/trace-ingestion", `{"retentionDays":1}`, bearer(a.key))
	if _, err := e.store.CreateWorkspace(t.Context(), store.Workspace{ID: "unrelated"}); err != nil {
		t.Fatal(err)
	}
	e.clock.Advance(25 * time.Hour)
	rep, err = sweeper.Sweep(t.Context())
	if err != nil || rep.Expired != 1 {
		t.Fatalf("retention sweep: %+v, %v; want 1 expired", rep, err)
	}
	res = e.do(t, http.MethodGet, "/trajectories/ext-42", "", bearer(a.key))
	want(t, res, http.StatusNotFound, "GET an expired trajectory")
}

const mappedHarness = `{"id":"mapped","version":"1.0.0","kind":"process","command":["run"],
	"meta":{"spanAttrMapping":{"fields":{"model":["acme.model"]},"spanKinds":{"think":"span"}}}}`

func TestSpanAttrMapping(t *testing.T) {
	e := newEnv(t)
	a := e.tenant(t, "a")
	e.register(t, a.key, "/harnesses", mappedHarness, http.StatusCreated)
	res := e.do(t, http.MethodGet, "/harnesses/mapped/span-attr-mapping", "", bearer(a.key))
	if res.Status != http.StatusOK {
		t.Fatalf("GET: %d %s", res.Status, res.Body)
	}
	got := decode[traces.Mapping](t, res)
	if got.Overlay != nil || got.Effective.Fields["model"][0] != "acme.model" {
		t.Errorf("before any overlay: %+v", got)
	}
	res = e.do(t, http.MethodPut, "/harnesses/mapped/span-attr-mapping", `{"spanKinds":{"think":"llm_call"},"fields":{"inputTokens":["acme.in"]}}`, bearer(a.key))
	if res.Status != http.StatusOK {
		t.Fatalf("PUT: %d %s", res.Status, res.Body)
	}
	got = decode[traces.Mapping](t, res)
	wantEff := trace.SpanAttrMapping{Fields: map[string][]string{"model": {"acme.model"}, "inputTokens": {"acme.in"}}, SpanKinds: map[string]string{"think": "llm_call"}}
	if diff := cmp.Diff(wantEff, got.Effective); diff != "" {
		t.Errorf("effective mapping (-want +got):\n%s", diff)
	}
	// The run's spans are normalised with it.
	run := e.runningRun(t, a.ws, e.subjectOf(t, bearer(a.key)), "mapped")
	req := otlpRequest(run.ID, "think")
	req.ResourceSpans[0].ScopeSpans[0].Spans[0].Attributes = []*commonpb.KeyValue{
		{Key: "acme.model", Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: "m-7"}}},
		{Key: "acme.in", Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_IntValue{IntValue: 11}}},
	}
	if status, _, body := e.exportProto(t, a.key, req); status != http.StatusOK {
		t.Fatalf("export: %d %s", status, body)
	}
	events, err := traces.RunSpanEvents(t.Context(), e.store, a.ws, run.ID)
	if err != nil || len(events) != 1 || events[0].Kind != eval.EventLLMCall || events[0].Model != "m-7" || events[0].InputTokens != 11 {
		t.Errorf("mapped event = %+v, %v", events, err)
	}
	for _, tt := range []struct {
		path, body string
		status     int
	}{
		{"/harnesses/nope/span-attr-mapping", `{}`, http.StatusNotFound},
		{"/harnesses/mapped/span-attr-mapping", `{"fields":{"bogus":["x"]}}`, http.StatusBadRequest},
		{"/harnesses/mapped/span-attr-mapping", `{"spanKinds":{"x":"message"}}`, http.StatusBadRequest},
	} {
		res := e.do(t, http.MethodPut, tt.path, tt.body, bearer(a.key))
		want(t, res, tt.status, fmt.Sprintf("PUT %s %s", tt.path, tt.body))
	}
}

func init() {
	setup := func(t *testing.T, e *testEnv, a tenant) map[string]string {
		e.register(t, a.key, "/harnesses", mappedHarness, http.StatusCreated)
		res := e.do(t, http.MethodPut, "/harnesses/mapped/span-attr-mapping", `{"fields":{"model":["a.model"]}}`, bearer(a.key))
		want(t, res, http.StatusOK, "PUT span-attr-mapping as A")
		return map[string]string{"id": "mapped"}
	}
	snapshot := func(t *testing.T, e *testEnv, a tenant, p map[string]string) any {
		res := e.do(t, http.MethodGet, "/harnesses/"+p["id"]+"/span-attr-mapping", "", bearer(a.key))
		want(t, res, http.StatusOK, "GET span-attr-mapping as A")
		return string(res.Body)
	}
	registerCrossTenant("GET /harnesses/:id/span-attr-mapping", crossTenantFixture{Setup: setup, Snapshot: snapshot})
	registerCrossTenant("PUT /harnesses/:id/span-attr-mapping", crossTenantFixture{Setup: setup, Snapshot: snapshot, Body: `{"fields":{"model":["b.model"]}}`})
}

// The agent tools mirror the door and the settings: an agent can export
// OTLP JSON spans and read the quota through MCP.
func TestMCPTraceTools(t *testing.T) {
	e := newEnv(t)
	a := e.tenant(t, "a")
	cs, err := connectMCP(t, e, bearerTransport{token: a.key})
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	body := map[string]any{"resourceSpans": []any{map[string]any{"scopeSpans": []any{map[string]any{"spans": []any{
		map[string]any{"traceId": "5b8efff798038103d269b633813fc60c", "spanId": "eee19b7ec3c1b174", "name": "from mcp"}}}}}}}
	toolOK[map[string]any](t, "export_traces", call(t, cs, "export_traces", map[string]any{"body": body}))
	if got := pendingKinds(t, e, a.ws, "trace_5b8efff798038103d269b633813fc60c"); !cmp.Equal(got, []string{"span:from mcp"}) {
		t.Errorf("pending spans after export_traces = %v", got)
	}
	got := toolOK[traces.Ingestion](t, "get_trace_ingestion", call(t, cs, "get_trace_ingestion", map[string]any{}))
	if got.UsageLastHour != 1 {
		t.Errorf("get_trace_ingestion usageLastHour = %d, want 1", got.UsageLastHour)
	}
}
