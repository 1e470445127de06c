package api_test

import (
	"net/http"
	"strings"
	"testing"

	"svc/internal/domain/eval"
	"svc/internal/domain/trace"
	"svc/internal/platform/config"
	"svc/store/records"
)

// POST /scorecards/ingest (spec §4.5, issue 16 point 5): what the route
// answers, refuses and records at submit. The batch's grading and its
// diff against a managed batch run end to end in
// workflows/ingest_integration_test.go.

const ingestOK = `{"dataset":{"id":"ds","version":"latest"},"harness":{"id":"h","version":"latest"},"traces":[
	{"caseId":"a","trace":[{"kind":"tool_call","name":"lookup"},{"kind":"message","role":"assistant","content":"right"}]},
	{"caseId":"nope","trace":[{"kind":"message","role":"assistant","content":"x"}]}]}`

func TestIngestRecordsSealedTracesAndSkips(t *testing.T) {
	orch := newFakeOrchestrator()
	e := newEnv(t, withOrchestrator(orch))
	a := e.tenant(t, "ingest-ok")
	e.registerBatchInputs(t, a)
	res := e.do(t, http.MethodPost, "/scorecards/ingest", ingestOK, bearer(a.key))
	want(t, res, http.StatusAccepted, "POST /scorecards/ingest")
	sc := decode[eval.Scorecard](t, res)
	if sc.Status != eval.ScorecardQueued || sc.Dataset.String() != "ds@1.0.0" || sc.Harness.String() != "h@1.0.0" || sc.Progress.Total != 1 {
		t.Errorf("record = status %s, dataset %s, harness %s, total %d; want queued, ds@1.0.0, h@1.0.0, 1", sc.Status, sc.Dataset, sc.Harness, sc.Progress.Total)
	}
	if sc.Subset == nil || sc.Subset.Total != 2 || sc.Subset.Selected != 1 {
		t.Errorf("subset = %+v, want 1 of 2 cases", sc.Subset)
	}
	if started := orch.startedBatches(); len(started) != 1 || started[0].ScorecardID != sc.ID || started[0].Total != 1 {
		t.Errorf("workflows started: %+v, want the ingest's, of 1 item", started)
	}
	// The trace is in the ledger, source import, under the child run,
	// which exists queued with origin import: the workflow grades that copy.
	runID := eval.ChildRunID(a.ws, sc.ID, "a", 0)
	tr, err := e.store.GetTrajectory(t.Context(), a.ws, runID)
	if err != nil {
		t.Fatalf("the ingested trace is not sealed: %v", err)
	}
	if tr.Source != trace.SourceImport || tr.EventCount != 2 {
		t.Errorf("trajectory = source %q, %d events; want import, 2", tr.Source, tr.EventCount)
	}
	row, err := e.store.GetRun(t.Context(), a.ws, runID)
	if err != nil {
		t.Fatalf("the child run is not created: %v", err)
	}
	run, err := records.FromRow(row)
	if err != nil {
		t.Fatal(err)
	}
	if !trace.Imported(run) || run.Status != eval.StatusQueued || run.ParentScorecardID != sc.ID || run.Case == nil || run.Case.ID != "a" {
		t.Errorf("child run = origin %+v, status %s, parent %s, case %+v; want an imported queued child of case a", run.Origin, run.Status, run.ParentScorecardID, run.Case)
	}
	// The unknown caseId is in the steps.
	res = e.do(t, http.MethodGet, "/scorecards/"+sc.ID, "", bearer(a.key))
	want(t, res, http.StatusOK, "GET the ingest")
	detail := decode[eval.Scorecard](t, res)
	found := false
	for _, s := range detail.Steps {
		if s.Status == "skipped" && s.CaseID == "nope" {
			found = true
		}
	}
	if !found {
		t.Errorf("steps = %+v, want a skipped step for case nope", detail.Steps)
	}
}

func TestIngestWithoutDataset(t *testing.T) {
	orch := newFakeOrchestrator()
	e := newEnv(t, withOrchestrator(orch))
	a := e.tenant(t, "ingest-traces")
	res := e.do(t, http.MethodPost, "/scorecards/ingest", `{"traces":[{"caseId":"x","trace":[{"kind":"llm_call","model":"m","costUsd":0.5}]},{"trace":[{"kind":"span","name":"s"}]}]}`, bearer(a.key))
	want(t, res, http.StatusAccepted, "POST /scorecards/ingest without a dataset")
	sc := decode[eval.Scorecard](t, res)
	if sc.Dataset.ID != eval.IDTraces || sc.Harness.ID != eval.IDTraces || sc.Progress.Total != 2 {
		t.Errorf("record = dataset %s, harness %s, total %d; want _traces, _traces, 2", sc.Dataset, sc.Harness, sc.Progress.Total)
	}
	for _, id := range []string{"x", "trace-1"} {
		if _, err := e.store.GetTrajectory(t.Context(), a.ws, eval.ChildRunID(a.ws, sc.ID, id, 0)); err != nil {
			t.Errorf("case %s: the trace is not sealed: %v", id, err)
		}
	}
}

func TestIngestRefusals(t *testing.T) {
	orch := newFakeOrchestrator()
	e := newEnv(t, withOrchestrator(orch))
	a := e.tenant(t, "ingest-bad")
	e.registerBatchInputs(t, a)
	const ds = `"dataset":{"id":"ds","version":"latest"},`
	for _, tc := range []struct {
		name, body string
		status     int
		msg        string // a part of the error message
	}{
		{"no traces", `{` + ds + `"traces":[]}`, 400, "traces is required"},
		{"bad kind", `{` + ds + `"traces":[{"caseId":"a","trace":[{"kind":"tool_call","name":"t"},{"kind":"nope"}]}]}`, 400, "traces[0].trace[1].kind"},
		{"missing kind", `{"traces":[{"trace":[{"kind":"span","name":"s"}]},{"trace":[{"name":"t"}]}]}`, 400, "traces[1].trace[0].kind"},
		{"missing name", `{` + ds + `"traces":[{"caseId":"a","trace":[{"kind":"tool_call"}]}]}`, 400, "traces[0].trace[0].name"},
		{"wrong type", `{` + ds + `"traces":[{"caseId":"a","trace":[{"kind":"llm_call","inputTokens":"many"}]}]}`, 400, "traces[0].trace[0].inputTokens"},
		{"negative", `{` + ds + `"traces":[{"caseId":"a","trace":[{"kind":"llm_call","costUsd":-1}]}]}`, 400, "traces[0].trace[0].costUsd"},
		{"unknown member", `{` + ds + `"traces":[{"caseId":"a","trace":[{"kind":"llm_call","tokens":3}]}]}`, 400, "traces[0].trace[0].tokens"},
		{"not an object", `{` + ds + `"traces":[{"caseId":"a","trace":[3]}]}`, 400, "traces[0].trace[0]"},
		{"empty trace", `{` + ds + `"traces":[{"caseId":"a","trace":[]}]}`, 400, "traces[0].trace is empty"},
		{"no caseId with a dataset", `{` + ds + `"traces":[{"trace":[{"kind":"span","name":"s"}]}]}`, 400, "traces[0].caseId is required"},
		{"caseId twice", `{` + ds + `"traces":[{"caseId":"a","trace":[{"kind":"span","name":"s"}]},{"caseId":"a","trace":[{"kind":"span","name":"s"}]}]}`, 400, "send one trace per case"},
		{"every caseId unknown", `{` + ds + `"traces":[{"caseId":"zz","trace":[{"kind":"span","name":"s"}]}]}`, 400, "no trace's caseId"},
		{"unknown dataset", `{"dataset":{"id":"nods","version":"latest"},"traces":[{"caseId":"a","trace":[{"kind":"span","name":"s"}]}]}`, 404, ""},
		{"unknown harness", `{"harness":{"id":"noh","version":"latest"},"traces":[{"caseId":"a","trace":[{"kind":"span","name":"s"}]}]}`, 404, ""},
		{"unknown judge", `{"judges":[{"id":"noj"}],"traces":[{"caseId":"a","trace":[{"kind":"span","name":"s"}]}]}`, 404, ""},
		{"unknown top-level member", `{"trace":[]}`, 400, "trace"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := e.do(t, http.MethodPost, "/scorecards/ingest", tc.body, bearer(a.key))
			want(t, res, tc.status, tc.name)
			if !strings.Contains(string(res.Body), tc.msg) {
				t.Errorf("body %s does not say %q", res.Body, tc.msg)
			}
		})
	}
	if started := orch.startedBatches(); len(started) != 0 {
		t.Errorf("refused ingests started workflows: %+v", started)
	}
	if n := e.countScorecards(t, a); n != 0 {
		t.Errorf("refused ingests recorded %d batches, want none", n)
	}
}

// TestIngestAdmission: an ingest spends the budget as a submit does, all
// or nothing.
func TestIngestAdmission(t *testing.T) {
	orch := newFakeOrchestrator()
	e := newEnv(t, withOrchestrator(orch), withConfig(func(c *config.Config) { c.TenantRuns = 1 }))
	a := e.tenant(t, "ingest-budget")
	res := e.do(t, http.MethodPost, "/scorecards/ingest", `{"traces":[{"trace":[{"kind":"span","name":"s"}]},{"trace":[{"kind":"span","name":"s"}]}]}`, bearer(a.key))
	want(t, res, http.StatusPaymentRequired, "an ingest past the budget")
	if n := e.countScorecards(t, a); n != 0 {
		t.Errorf("a refused ingest recorded %d batches, want none", n)
	}
}

// TestIngestCrossTenant: a workspace cannot ingest against another's
// dataset or harness; it reads as unknown (404), and nothing is recorded.
func TestIngestCrossTenant(t *testing.T) {
	orch := newFakeOrchestrator()
	e := newEnv(t, withOrchestrator(orch))
	a, b := e.tenant(t, "ingest-a"), e.tenant(t, "ingest-b")
	e.registerBatchInputs(t, a)
	for _, body := range []string{
		`{"dataset":{"id":"ds","version":"1.0.0"},"traces":[{"caseId":"a","trace":[{"kind":"span","name":"s"}]}]}`,
		`{"harness":{"id":"h","version":"1.0.0"},"traces":[{"caseId":"a","trace":[{"kind":"span","name":"s"}]}]}`,
	} {
		res := e.do(t, http.MethodPost, "/scorecards/ingest", body, bearer(b.key))
		want(t, res, http.StatusNotFound, "B ingesting against A's registry")
		res = e.do(t, http.MethodPost, "/scorecards/ingest", body, bearer(b.key), selectWorkspace(a.ws))
		if res.Status < 400 || res.Status >= 500 {
			t.Errorf("B selecting A: status %d, want a refusal; body %s", res.Status, res.Body)
		}
	}
	if n := e.countScorecards(t, a) + e.countScorecards(t, b); n != 0 {
		t.Errorf("refused ingests recorded %d batches", n)
	}
}

// countScorecards counts tn's batches through the list route.
func (e *testEnv) countScorecards(t *testing.T, tn tenant) int {
	t.Helper()
	res := e.do(t, http.MethodGet, "/scorecards", "", bearer(tn.key))
	want(t, res, http.StatusOK, "GET /scorecards")
	return len(decode[[]eval.Scorecard](t, res))
}
