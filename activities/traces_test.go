package activities

import (
	"encoding/json"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.temporal.io/sdk/testsuite"

	"svc/api"
	"svc/auth"
	"svc/drivers/local"
	"svc/internal/domain/eval"
	"svc/internal/domain/registry"
	"svc/internal/platform/config"
	"svc/internal/service/registries"
	"svc/internal/service/traces"
	"svc/store"
	"svc/store/records"
	"svc/store/sqlite/sqlitetest"
)

// instrumentedHarness exports one OTLP/HTTP JSON span per step to the
// endpoint and resource attributes the driver gives it (as an
// OpenTelemetry SDK would, here with curl), then writes one event to
// SVC_TRACE_FILE and answers.
const instrumentedHarness = `
set -e
rid=$(printf %s "$OTEL_RESOURCE_ATTRIBUTES" | tr ',' '\n' | sed -n 's/^svc.run_id=//p')
now=$(date +%s)
body='{"resourceSpans":[{"resource":{"attributes":[{"key":"svc.run_id","value":{"stringValue":"'$rid'"}}]},"scopeSpans":[{"spans":[
 {"traceId":"5b8efff798038103d269b633813fc60c","spanId":"eee19b7ec3c1b174","name":"chat","startTimeUnixNano":"'$now'000000000","endTimeUnixNano":"'$now'500000000",
  "attributes":[{"key":"gen_ai.operation.name","value":{"stringValue":"chat"}},{"key":"gen_ai.request.model","value":{"stringValue":"m1"}},
  {"key":"gen_ai.usage.input_tokens","value":{"intValue":"40"}},{"key":"gen_ai.usage.output_tokens","value":{"intValue":"2"}}]},
 {"traceId":"5b8efff798038103d269b633813fc60c","spanId":"eee19b7ec3c1b175","name":"execute_tool","startTimeUnixNano":"'$now'600000000","endTimeUnixNano":"'$now'700000000",
  "attributes":[{"key":"gen_ai.operation.name","value":{"stringValue":"execute_tool"}},{"key":"gen_ai.tool.name","value":{"stringValue":"search"}}]}
]}]}]}'
curl -sS --fail -X POST -H 'Content-Type: application/json' -H "x-svc-tenant: acme" --data "$body" "$OTEL_EXPORTER_OTLP_ENDPOINT/v1/traces" >/dev/null
printf '{"kind":"message","role":"assistant","content":"done"}\n' >> "$SVC_TRACE_FILE"
echo done
`

// TestInstrumentedHarnessSpansSealedWithItsRun: a harness run by the
// local driver exports its spans to the real OTLP door (the API on
// loopback) under the svc.run_id the driver gives it; when the run ends,
// its sealed trajectory holds the trace file's event and the spans, the
// tool_calls grader sees the tool span, a crossed threshold lands its
// event, and nothing is left pending.
func TestInstrumentedHarnessSpansSealedWithItsRun(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the local driver runs jobs on Linux only")
	}
	const ws = "acme"
	ctx := t.Context()
	st := sqlitetest.New(t)
	now := time.Now().UTC()
	clock := func() time.Time { return now }
	door := httptest.NewServer(api.New(api.Options{Store: st, Config: config.Defaults(), Version: "test"}).Handler())
	t.Cleanup(door.Close)

	regs := registries.New(st, nil, clock)
	spec, _ := json.Marshal(map[string]any{"id": "instrumented", "version": "1.0.0", "kind": "process",
		"command": []string{"/bin/sh", "-c", instrumentedHarness}})
	who := auth.Principal{Subject: "dev", Workspace: ws, Roles: []auth.Role{auth.RoleAdmin}}
	if _, err := regs.Register(ctx, who, registry.Harness, spec, nil); err != nil {
		t.Fatalf("registering the harness: %v", err)
	}
	maxTokens := int64(10)
	th, _ := json.Marshal(map[string]any{"maxTokens": maxTokens})
	if _, err := st.PutTraceSettings(ctx, store.TraceSettings{Workspace: ws, Thresholds: th}); err != nil {
		t.Fatal(err)
	}
	run := eval.Run{
		ID: "run_instrumented", Tenant: ws, Harness: registry.Ref{ID: "instrumented", Version: "1.0.0"}, CaseID: "c1",
		Status: eval.StatusQueued, Kind: eval.KindEval, Trigger: eval.TriggerAPI, CreatedBy: "dev", CreatedAt: now, UpdatedAt: now,
		Case: &registry.EvalCase{ID: "c1", Task: "search", TimeoutSec: 30, Graders: []registry.Grader{{ID: "tool_calls"}}},
	}
	row, err := records.Row(run)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.CreateRun(ctx, row); err != nil {
		t.Fatal(err)
	}
	a := &Activities{Store: st, Registries: regs, Host: "w1", Now: clock, OTLPEndpoint: door.URL,
		Driver: local.New(local.Options{Root: t.TempDir()}), TraceIngest: traces.New(traces.Options{Store: st, Registries: regs, Now: clock})}
	env := (&testsuite.WorkflowTestSuite{}).NewTestActivityEnvironment()
	env.RegisterActivity(a)
	val, err := env.ExecuteActivity(a.DispatchRun, RunRef{Workspace: ws, RunID: run.ID})
	if err != nil {
		t.Fatalf("DispatchRun: %v", err)
	}
	var status RunStatus
	if err := val.Get(&status); err != nil || status.Status != string(eval.StatusSucceeded) {
		stored, _ := st.GetRun(ctx, ws, run.ID)
		t.Fatalf("DispatchRun = %+v, %v; want succeeded\n%s", status, err, stored.Doc)
	}
	tr, err := st.GetTrajectory(ctx, ws, run.ID)
	if err != nil {
		t.Fatalf("GetTrajectory: %v", err)
	}
	var events []eval.TraceEvent
	if err := json.Unmarshal(tr.Events, &events); err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, e := range events {
		kinds = append(kinds, e.Kind+":"+e.Name)
	}
	if diff := cmp.Diff([]string{"message:", "llm_call:chat", "tool_call:search"}, kinds); diff != "" {
		t.Errorf("sealed trajectory (-want +got):\n%s", diff)
	}
	stored, err := st.GetRun(ctx, ws, run.ID)
	if err != nil {
		t.Fatal(err)
	}
	got, err := records.FromRow(stored)
	if err != nil {
		t.Fatal(err)
	}
	if got.Result == nil || got.Result.Usage == nil || got.Result.Usage.InputTokens != 40 || got.Result.Usage.ToolCalls != 1 {
		t.Errorf("result usage = %+v, want the spans' tokens and tool call", got.Result)
	}
	if pending, _ := st.ListPendingSpans(ctx, ws, run.ID); len(pending) != 0 {
		t.Errorf("%d spans still pending after the seal", len(pending))
	}
	crossed, err := st.ListEvents(ctx, store.EventFilter{Workspace: ws, Type: traces.ThresholdEvent})
	if err != nil {
		t.Fatal(err)
	}
	if len(crossed) != 1 {
		t.Errorf("threshold events = %+v, want one for maxTokens", crossed)
	}
}

// TestRunSpansMaskSecrets: a secret the harness put in a span's attributes
// is masked in the lines merged into its trajectory, as in its trace file.
func TestRunSpansMaskSecrets(t *testing.T) {
	const secret = "sk-live-Zq8Jm3Xv9TbW2yLp"
	st := sqlitetest.New(t)
	ev, _ := json.Marshal(eval.TraceEvent{Kind: eval.EventSpan, Name: "call", Attributes: map[string]any{"http.header.authorization": "Bearer " + secret}})
	if _, err := st.AddPendingSpans(t.Context(), []store.PendingSpan{{Workspace: "acme", Group: "run_1", Key: "t/s", Event: ev}}); err != nil {
		t.Fatal(err)
	}
	a := &Activities{Store: st}
	got, _, err := a.withRunSpans(t.Context(), eval.Run{ID: "run_1", Tenant: "acme"}, []byte(`{"kind":"message","role":"assistant","content":"x"}`), map[string]string{"API_TOKEN": secret})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(got), secret) || !strings.Contains(string(got), "Bearer ***") {
		t.Errorf("merged trace holds the secret or no mask:\n%s", got)
	}
	if n := strings.Count(string(got), "\n"); n != 2 {
		t.Errorf("merged trace has %d lines, want 2 (the file's event, then the span's):\n%s", n, got)
	}
}
