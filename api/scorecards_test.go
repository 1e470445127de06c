package api_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"svc/api"
	"svc/api/apitest"
	"svc/internal/domain/eval"
	"svc/internal/domain/flows"
	"svc/internal/domain/manifest"
	"svc/internal/domain/registry"
	"svc/internal/domain/scoring"
	"svc/internal/platform/config"
	"svc/internal/platform/derrors"
	"svc/internal/service/runs"
	"svc/internal/service/scorecards"
	"svc/store"
	"svc/store/records"
)

// The batch routes' workflows run on Temporal and are tested end to end in
// package workflows. Here: validation, reads, paging, cancel, re-score and
// manifest verification on batches seeded in the store as Submit and a
// finished workflow leave them; and, with a fake orchestrator, what the
// routes ask of it.

// scorecardOpt changes a seeded batch before it is stored.
type scorecardOpt func(*eval.Scorecard)

func batchStatus(s eval.Status) scorecardOpt {
	return func(sc *eval.Scorecard) {
		sc.Status = s
		if eval.ScorecardTerminal(s) {
			at := sc.CreatedAt
			sc.FinishedAt = &at
		}
	}
}

func experiment() scorecardOpt { return func(sc *eval.Scorecard) { sc.Kind = eval.KindExperiment } }

func batchCreatedAt(at time.Time) scorecardOpt {
	return func(sc *eval.Scorecard) { sc.CreatedAt, sc.UpdatedAt = at, at }
}

// seedScorecard stores a queued batch of ws over ds@1.0.0 (cases c1 and
// c2, one trial each) and h@1.0.0, as Submit records it.
func (e *testEnv) seedScorecard(t testing.TB, ws string, opts ...scorecardOpt) eval.Scorecard {
	t.Helper()
	now := e.clock.Now()
	stamp := scoring.Stamp(scoring.DefaultPolicy())
	sc := eval.Scorecard{
		ID: eval.NewID("sc"), Tenant: ws, Kind: eval.KindScorecard,
		Dataset: registry.Ref{ID: "ds", Version: "1.0.0"}, Harness: registry.Ref{ID: "h", Version: "1.0.0"},
		Status: eval.ScorecardQueued, CreatedBy: "operator", CreatedAt: now, UpdatedAt: now,
		VerdictPolicy: &stamp,
		Orchestration: &eval.Orchestration{DatasetOwner: ws, CaseIDs: []string{"c1", "c2"}},
		Publication:   &eval.Publication{State: "pending", Artifacts: []string{}, Exports: []string{}},
		Origin:        &eval.Origin{Source: "api"}, JudgeModels: []string{},
		Concurrency: 4, Trials: 1, Progress: eval.Progress{Total: 2},
	}
	for _, o := range opts {
		o(&sc)
	}
	row, err := records.ScorecardRow(sc, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.store.CreateScorecard(t.Context(), row); err != nil {
		t.Fatalf("CreateScorecard: %v", err)
	}
	return sc
}

// childRun is the canonical child run of (caseID, trial) of batch sc,
// succeeded, with one grader score that passes or not.
func (e *testEnv) childRun(sc eval.Scorecard, caseID string, trial int, pass bool) eval.Run {
	now := e.clock.Now()
	canonical := true
	value := 0.0
	if pass {
		value = 1
	}
	return eval.Run{
		ID: eval.ChildRunID(sc.Tenant, sc.ID, caseID, trial), Tenant: sc.Tenant, Harness: sc.Harness, CaseID: caseID,
		Status: eval.StatusSucceeded, Kind: eval.KindEval, Trigger: eval.TriggerScorecard, CreatedBy: sc.CreatedBy,
		ParentScorecardID: sc.ID, Trial: trial, Canonical: &canonical, CreatedAt: now, UpdatedAt: now,
		Result: &eval.CaseResult{Harness: sc.Harness.String(), CaseID: caseID, Trace: []eval.TraceEvent{},
			Scores: []eval.Score{{GraderID: "exact", Metric: "exact", Value: value, Pass: &pass}},
			Pass:   pass, TraceSealed: true, EvidenceVersion: eval.EvidenceVersion},
	}
}

// storeRun writes run to the store.
func (e *testEnv) storeRun(t testing.TB, run eval.Run) {
	t.Helper()
	row, err := records.Row(run)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.store.CreateRun(t.Context(), row); err != nil {
		t.Fatalf("CreateRun: %v", err)
	}
}

// seedChild stores the canonical child run of (caseID, trial) of sc.
func (e *testEnv) seedChild(t testing.TB, sc eval.Scorecard, caseID string, trial int, pass bool) eval.Run {
	t.Helper()
	run := e.childRun(sc, caseID, trial, pass)
	e.storeRun(t, run)
	return run
}

// storedScorecard reads a batch straight from the store.
func (e *testEnv) storedScorecard(t testing.TB, ws, id string) eval.Scorecard {
	t.Helper()
	sc, _, err := records.LoadScorecardFull(t.Context(), e.store, ws, id)
	if err != nil {
		t.Fatalf("LoadScorecardFull: %v", err)
	}
	return sc
}

// fakeOrchestrator stands in for Temporal: it records what the routes ask
// and knows the workflows it was asked to start.
type fakeOrchestrator struct {
	mu        sync.Mutex
	startErr  error
	started   []flows.ScorecardInput
	scores    []flows.ScoreInput
	cancelled []string
	known     map[string]bool
}

func newFakeOrchestrator() *fakeOrchestrator { return &fakeOrchestrator{known: map[string]bool{}} }

func (f *fakeOrchestrator) StartScorecard(_ context.Context, in flows.ScorecardInput) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.startErr != nil {
		return f.startErr
	}
	f.started = append(f.started, in)
	f.known[in.ScorecardID] = true
	return nil
}

func (f *fakeOrchestrator) StartScore(_ context.Context, in flows.ScoreInput) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.startErr != nil {
		return f.startErr
	}
	f.scores = append(f.scores, in)
	f.known[in.Pass] = true
	return nil
}

func (f *fakeOrchestrator) Cancel(_ context.Context, id string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.cancelled = append(f.cancelled, id)
	return nil
}

func (f *fakeOrchestrator) Describe(_ context.Context, id string) (flows.DriverView, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.known[id] {
		return flows.DriverView{}, derrors.NotFoundf("no workflow %s", id)
	}
	status := "RUNNING"
	for _, c := range f.cancelled {
		if c == id {
			status = "CANCELED"
		}
	}
	beat := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	return flows.DriverView{WorkflowID: id, RunID: "wfrun-" + id, Type: "ScorecardWorkflow", Status: status,
		StartTime: &beat, HistoryLength: 12, HistorySizeBytes: 2048, TaskQueue: "svc",
		Pending: []flows.PendingActivity{{ActivityID: "5", Type: "RunCase", State: "SCHEDULED", Attempt: 3,
			MaxAttempts: 10, LastFailure: "driver: exit 1", LastHeartbeat: &beat, LastWorker: "w1"}}}, nil
}

// Accessors lock, so that tests read what the server's goroutines wrote
// without a data race.
func (f *fakeOrchestrator) fail(err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.startErr = err
}

func (f *fakeOrchestrator) know(id string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.known[id] = true
}

func (f *fakeOrchestrator) startedBatches() []flows.ScorecardInput {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.started)
}

func (f *fakeOrchestrator) startedPasses() []flows.ScoreInput {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.scores)
}

func (f *fakeOrchestrator) cancelledWorkflows() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.cancelled)
}

func withOrchestrator(o scorecards.Orchestrator) envOption {
	return withServerOptions(func(opts *api.Options) { opts.Orchestrator = o })
}

func init() {
	queued := func(t *testing.T, e *testEnv, a tenant) map[string]string {
		return map[string]string{"id": e.seedScorecard(t, a.ws).ID}
	}
	snapshot := func(t *testing.T, e *testEnv, a tenant, p map[string]string) any {
		res := e.do(t, http.MethodGet, "/scorecards/"+p["id"], "", bearer(a.key))
		want(t, res, http.StatusOK, "GET /scorecards/:id")
		return string(res.Body)
	}
	registerCrossTenant("GET /scorecards/:id", crossTenantFixture{Setup: queued, Snapshot: snapshot})
	registerCrossTenant("POST /scorecards/:id/cancel", crossTenantFixture{Setup: queued, Snapshot: snapshot, OwnStatus: http.StatusOK})
	// A queued batch cannot be scored: A's own request is 409, which still
	// proves the route found A's record (an unknown one is 404).
	registerCrossTenant("POST /scorecards/:id/score", crossTenantFixture{Setup: queued, Snapshot: snapshot,
		Body: `{"judges":[{"id":"j"}]}`, OwnStatus: http.StatusConflict})
	registerCrossTenant("POST /scorecards/:id/verify-manifest", crossTenantFixture{Setup: queued, Snapshot: snapshot, OwnStatus: http.StatusOK})
}

// registerBatchInputs registers, in tn, the dataset ds@1.0.0 (cases a and
// b) and the harness h@1.0.0 and returns their specs as registered.
func (e *testEnv) registerBatchInputs(t testing.TB, tn tenant) (ds, h registry.Spec) {
	t.Helper()
	dsJSON, hJSON := datasetSpec("ds", "1.0.0", "a", "b"), harnessSpec("h", "1.0.0", "img:1")
	e.register(t, tn.key, "/datasets", dsJSON, http.StatusCreated)
	e.register(t, tn.key, "/harnesses", hJSON, http.StatusCreated)
	var err error
	if ds, err = registry.Parse(registry.Dataset, []byte(dsJSON), false); err != nil {
		t.Fatal(err)
	}
	if h, err = registry.Parse(registry.Harness, []byte(hJSON), false); err != nil {
		t.Fatal(err)
	}
	return ds, h
}

func TestSubmitScorecardRefusals(t *testing.T) {
	e := newEnv(t)
	a := e.tenant(t, "submit-sc")
	e.registerBatchInputs(t, a)
	const h = `"harness":{"id":"h","version":"1.0.0"}`
	const ds = `"dataset":{"id":"ds","version":"latest"}`
	for _, tc := range []struct {
		name, body string
		status     int
		mention    string
	}{
		{"no dataset", `{` + h + `}`, 400, "dataset.id"},
		{"no dataset version", `{"dataset":{"id":"ds"},` + h + `}`, 400, "dataset.version"},
		{"unknown dataset", `{"dataset":{"id":"nope","version":"latest"},` + h + `}`, 404, "nope"},
		{"concurrency 0", `{` + ds + `,` + h + `,"concurrency":0}`, 400, "concurrency"},
		{"concurrency 65", `{` + ds + `,` + h + `,"concurrency":65}`, 400, "concurrency"},
		{"concurrency 4.5", `{` + ds + `,` + h + `,"concurrency":4.5}`, 400, "concurrency"},
		{"trials 0", `{` + ds + `,` + h + `,"trials":0}`, 400, "trials"},
		{"unknown case id", `{` + ds + `,` + h + `,"cases":{"ids":["a","zzz"]}}`, 400, "zzz"},
		{"empty selection", `{` + ds + `,` + h + `,"cases":{"tags":["none"]}}`, 400, "selection is empty"},
		{"unknown harness", `{` + ds + `,"harness":{"id":"ghost","version":"latest"}}`, 404, "ghost"},
		{"unknown judge", `{` + ds + `,` + h + `,"judges":[{"id":"nobody"}]}`, 404, "nobody"},
		{"judge twice", `{` + ds + `,` + h + `,"judges":[{"id":"j"},{"id":"j"}]}`, 400, "twice"},
		{"unknown field", `{` + ds + `,` + h + `,"extra":1}`, 400, "extra"},
		// Valid in every way: only the missing orchestrator refuses it.
		{"no orchestrator", `{` + ds + `,` + h + `,"cases":{"ids":["b"]},"concurrency":2,"trials":3}`, 503, "orchestrator"},
	} {
		res := e.do(t, http.MethodPost, "/scorecards", tc.body, bearer(a.key))
		if res.Status != tc.status || !strings.Contains(strings.ToLower(string(res.Body)), strings.ToLower(tc.mention)) {
			t.Errorf("%s: status %d, want %d mentioning %q; body %s", tc.name, res.Status, tc.status, tc.mention, res.Body)
		}
	}
	if got, err := e.store.ListScorecards(t.Context(), store.ScorecardFilter{Workspace: a.ws}); err != nil || len(got) != 0 {
		t.Errorf("refused submits left %d batches (err %v), want none", len(got), err)
	}
}

// TestSubmitScorecard: with an orchestrator, a submit records the batch
// queued, sealed and stamped, and starts its workflow with the plan.
func TestSubmitScorecard(t *testing.T) {
	orch := newFakeOrchestrator()
	e := newEnv(t, withOrchestrator(orch))
	a := e.tenant(t, "submit-ok")
	e.registerBatchInputs(t, a)
	res := e.do(t, http.MethodPost, "/scorecards", `{"dataset":{"id":"ds","version":"latest"},"harness":{"id":"h","version":"latest"},
		"cases":{"ids":["b"]},"concurrency":2,"trials":3,"criticalCases":[{"prefix":"b"}]}`, bearer(a.key))
	want(t, res, http.StatusAccepted, "POST /scorecards")
	sc := decode[eval.Scorecard](t, res)
	if loc := res.Header.Get("Location"); loc != "/scorecards/"+sc.ID {
		t.Errorf("Location = %q, want /scorecards/%s", loc, sc.ID)
	}
	if sc.Status != eval.ScorecardQueued || sc.Kind != eval.KindScorecard || sc.Dataset.String() != "ds@1.0.0" || sc.Harness.String() != "h@1.0.0" {
		t.Errorf("record = %s %s %s %s, want queued scorecard over ds@1.0.0 and h@1.0.0", sc.Status, sc.Kind, sc.Dataset, sc.Harness)
	}
	if sc.Progress.Total != 3 || sc.Concurrency != 2 || sc.Trials != 3 {
		t.Errorf("plan = total %d, concurrency %d, trials %d; want 3, 2, 3", sc.Progress.Total, sc.Concurrency, sc.Trials)
	}
	if diff := cmp.Diff(&eval.Subset{Total: 2, Selected: 1, IDs: []string{"b"}}, sc.Subset); diff != "" {
		t.Errorf("subset (-want +got):\n%s", diff)
	}
	if sc.Manifest == nil || sc.Manifest.Cases != nil || sc.Manifest.Policy == nil || len(sc.Manifest.Policy.CriticalCases) != 1 {
		t.Errorf("manifest = %+v, want the composed policy and no per-case digests (a summary view)", sc.Manifest)
	}
	if stored := e.storedScorecard(t, a.ws, sc.ID); stored.Manifest == nil || len(stored.Manifest.Cases) != 1 {
		t.Errorf("stored manifest = %+v, want one case", stored.Manifest)
	}
	if sc.Orchestration == nil || sc.Orchestration.CaseIDs != nil {
		t.Errorf("the submit's answer is a summary view: orchestration %+v should have no caseIds", sc.Orchestration)
	}
	wantIn := []flows.ScorecardInput{{Workspace: a.ws, ScorecardID: sc.ID, Total: 3, Trials: 3, Concurrency: 2}}
	if diff := cmp.Diff(wantIn, orch.startedBatches()); diff != "" {
		t.Errorf("workflow started with (-want +got):\n%s", diff)
	}
	if stored := e.storedScorecard(t, a.ws, sc.ID); stored.Orchestration == nil || !cmp.Equal(stored.Orchestration.CaseIDs, []string{"b"}) {
		t.Errorf("stored orchestration = %+v, want caseIds [b]", stored.Orchestration)
	}

	// A workflow that cannot start leaves the batch failed, not queued.
	orch.fail(errors.New("temporal is down"))
	res = e.do(t, http.MethodPost, "/scorecards", `{"dataset":{"id":"ds","version":"1.0.0"},"harness":{"id":"h","version":"1.0.0"}}`, bearer(a.key))
	if res.Status != http.StatusServiceUnavailable {
		t.Fatalf("POST /scorecards with the orchestrator down: status %d, want 503; body %s", res.Status, res.Body)
	}
	rows, err := e.store.ListScorecards(t.Context(), store.ScorecardFilter{Workspace: a.ws, Statuses: []string{string(eval.ScorecardFailed)}})
	if err != nil || len(rows) != 1 {
		t.Fatalf("failed batches = %d (err %v), want 1", len(rows), err)
	}
	if failed := e.storedScorecard(t, a.ws, rows[0].ID); failed.Error == nil || failed.Error.Phase != eval.PhaseDispatch {
		t.Errorf("the unstarted batch's error = %+v, want phase dispatch", failed.Error)
	}
}

func TestGetScorecardDetail(t *testing.T) {
	e := newEnv(t)
	a := e.tenant(t, "detail")
	sc := e.seedScorecard(t, a.ws, batchStatus(eval.ScorecardSucceeded), func(sc *eval.Scorecard) {
		sc.Trials, sc.Progress.Total = 2, 4
	})
	var ids []string
	for _, c := range []struct {
		caseID string
		trial  int
		pass   bool
	}{{"c1", 0, true}, {"c1", 1, true}, {"c2", 0, true}, {"c2", 1, false}} {
		ids = append(ids, e.seedChild(t, sc, c.caseID, c.trial, c.pass).ID)
	}
	// A retried attempt's run is not canonical: the detail read ignores it.
	stale := e.childRun(sc, "c2", 1, true)
	stale.ID, stale.Canonical = "run_stale", new(bool)
	e.storeRun(t, stale)
	if err := e.store.AppendScorecardSteps(t.Context(), []store.ScorecardStep{{Workspace: a.ws, ScorecardID: sc.ID, Key: "submit",
		TS: e.clock.Now(), Phase: "submit", Status: "succeeded", Message: "2 cases x 2 trials, concurrency 4"}}); err != nil {
		t.Fatal(err)
	}

	for _, path := range []string{"/scorecards/", "/groups/"} {
		res := e.do(t, http.MethodGet, path+sc.ID, "", bearer(a.key))
		want(t, res, http.StatusOK, "GET "+path+":id")
		got := decode[eval.Scorecard](t, res)
		wantRuns := map[string]string{"c1#0": ids[0], "c1#1": ids[1], "c2#0": ids[2], "c2#1": ids[3]}
		if diff := cmp.Diff(wantRuns, got.CaseRuns); diff != "" {
			t.Errorf("%s: caseRuns (-want +got):\n%s", path, diff)
		}
		if diff := cmp.Diff(eval.Progress{Total: 4, Done: 4, Passed: 3, Failed: 1}, got.Progress); diff != "" {
			t.Errorf("%s: progress (-want +got):\n%s", path, diff)
		}
		if diff := cmp.Diff(&eval.PolicyResolution{Status: scoring.PolicyResolved}, got.PolicyResolution); diff != "" {
			t.Errorf("%s: policyResolution (-want +got):\n%s", path, diff)
		}
		type rowView struct {
			Case    string
			Trial   int
			Verdict string
			Basis   string
			Pass    bool
		}
		var rows []rowView
		for _, r := range got.Scorecard {
			rows = append(rows, rowView{r.CaseID, r.Trial, r.Verdict, r.VerdictBasis, r.CasePass})
			if _, ok := r.Outcomes["exact"]; !ok || r.EvidenceStatus == nil {
				t.Errorf("%s: row %s#%d lacks its outcome or evidence status: %+v", path, r.CaseID, r.Trial, r)
			}
		}
		// In order: by case, then trial.
		wantRows := []rowView{
			{"c1", 0, "pass", "graders", true}, {"c1", 1, "pass", "graders", true},
			{"c2", 0, "pass", "graders", true}, {"c2", 1, "fail", "graders", false},
		}
		if diff := cmp.Diff(wantRows, rows); diff != "" {
			t.Errorf("%s: per-case table (-want +got):\n%s", path, diff)
		}
		if s, ok := got.Summary["exact"]; !ok || s.Count != 4 || s.PassRate == nil || *s.PassRate != 0.75 {
			t.Errorf("%s: summary = %+v, want exact over 4 with pass rate 0.75", path, got.Summary)
		}
		if len(got.Steps) != 1 || got.Steps[0].Phase != "submit" {
			t.Errorf("%s: steps = %+v, want the submit step", path, got.Steps)
		}
	}
	want(t, e.do(t, http.MethodGet, "/scorecards/sc_nope", "", bearer(a.key)), http.StatusNotFound, "GET an unknown scorecard")

	// The light read: no table, no caseRuns; the rest as the detail.
	res := e.do(t, http.MethodGet, "/scorecards/"+sc.ID+"?view=summary", "", bearer(a.key))
	want(t, res, http.StatusOK, "GET ?view=summary")
	var light map[string]json.RawMessage
	if err := json.Unmarshal(res.Body, &light); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"scorecard", "caseRuns"} {
		if _, ok := light[k]; ok {
			t.Errorf("?view=summary has %s", k)
		}
	}
	if got := string(light["failedCases"]); got != `["c2"]` {
		t.Errorf("?view=summary failedCases = %s, want [\"c2\"]", got)
	}
	for _, k := range []string{"progress", "summary", "steps", "policyResolution"} {
		if _, ok := light[k]; !ok {
			t.Errorf("?view=summary lacks %s", k)
		}
	}
	res = e.do(t, http.MethodGet, "/scorecards/"+sc.ID+"?view=everything", "", bearer(a.key))
	want(t, res, http.StatusBadRequest, "GET ?view=everything")
	want(t, e.do(t, http.MethodGet, "/scorecards/sc_nope?view=summary", "", bearer(a.key)), http.StatusNotFound, "GET ?view=summary of an unknown scorecard")

	// Every child names its trial, 0 included.
	res = e.do(t, http.MethodGet, "/runs?scorecardId="+sc.ID, "", bearer(a.key))
	want(t, res, http.StatusOK, "GET /runs?scorecardId=")
	var listed []map[string]json.RawMessage
	if err := json.Unmarshal(res.Body, &listed); err != nil {
		t.Fatal(err)
	}
	if len(listed) == 0 {
		t.Fatal("GET /runs?scorecardId= listed no run")
	}
	for _, r := range listed {
		if _, ok := r["trial"]; !ok {
			t.Errorf("child run %s has no trial", r["id"])
		}
	}
}

func TestListScorecards(t *testing.T) {
	e := newEnv(t)
	a := e.tenant(t, "list-sc")
	base := e.clock.Now()
	var newestFirst []string
	for i := range 5 {
		opts := []scorecardOpt{batchCreatedAt(base.Add(time.Duration(i) * time.Second))}
		if i == 4 {
			opts = append(opts, experiment(), batchStatus(eval.ScorecardSucceeded))
		}
		newestFirst = append([]string{e.seedScorecard(t, a.ws, opts...).ID}, newestFirst...)
	}
	e.seedScorecard(t, e.tenant(t, "other").ws) // another workspace's batch is never listed

	var got []string
	cursor, pages := "", 0
	for {
		path := "/scorecards?limit=2"
		if cursor != "" {
			path += "&cursor=" + cursor
		}
		res := e.do(t, http.MethodGet, path, "", bearer(a.key))
		want(t, res, http.StatusOK, "GET "+path)
		for _, sc := range decode[[]eval.Scorecard](t, res) {
			got = append(got, sc.ID)
			if sc.Scorecard != nil || sc.CaseRuns != nil || sc.Steps != nil || sc.PolicyResolution != nil {
				t.Errorf("list item %s carries detail-read fields: %+v", sc.ID, sc)
			}
			if sc.Orchestration == nil || sc.Orchestration.CaseIDs != nil {
				t.Errorf("list item %s: orchestration %+v, want it without caseIds", sc.ID, sc.Orchestration)
			}
		}
		pages++
		if cursor = res.Header.Get("X-Svc-Next-Cursor"); cursor == "" {
			break
		}
	}
	if diff := cmp.Diff(newestFirst, got); diff != "" || pages != 3 {
		t.Errorf("paged GET /scorecards in %d pages, want 3 (-want +got):\n%s", pages, diff)
	}
	for q, wantIDs := range map[string][]string{
		"kind=experiment":          newestFirst[:1],
		"status=queued":            newestFirst[1:],
		"status=succeeded,running": newestFirst[:1],
		"datasetId=other":          nil,
	} {
		var ids []string
		for _, sc := range decode[[]eval.Scorecard](t, e.do(t, http.MethodGet, "/scorecards?"+q, "", bearer(a.key))) {
			ids = append(ids, sc.ID)
		}
		if diff := cmp.Diff(wantIDs, ids); diff != "" {
			t.Errorf("GET /scorecards?%s (-want +got):\n%s", q, diff)
		}
	}
	for _, q := range []string{"limit=0", "limit=501", "cursor=!!!", "cursor=bm9wZQ"} {
		want(t, e.do(t, http.MethodGet, "/scorecards?"+q, "", bearer(a.key)), http.StatusBadRequest, "GET /scorecards?"+q)
	}
}

func TestCancelScorecard(t *testing.T) {
	e := newEnv(t)
	a := e.tenant(t, "cancel")
	sc := e.seedScorecard(t, a.ws)
	e.clock.Advance(time.Minute)

	res := e.do(t, http.MethodPost, "/scorecards/"+sc.ID+"/cancel", "", bearer(a.key))
	want(t, res, http.StatusOK, "cancel a queued batch")
	got := decode[eval.Scorecard](t, res)
	if got.Status != eval.ScorecardCancelled || got.FinishedAt == nil || !got.FinishedAt.Equal(e.clock.Now()) {
		t.Errorf("cancelled record: status %s, finishedAt %v; want cancelled at %v", got.Status, got.FinishedAt, e.clock.Now())
	}
	res = e.do(t, http.MethodPost, "/scorecards/"+sc.ID+"/cancel", "", bearer(a.key))
	want(t, res, http.StatusConflict, "cancel a cancelled batch")
	if !strings.Contains(string(res.Body), "cancelled") {
		t.Errorf("the 409 does not say the batch is cancelled: %s", res.Body)
	}
	detail := decode[eval.Scorecard](t, e.do(t, http.MethodGet, "/scorecards/"+sc.ID, "", bearer(a.key)))
	if detail.Status != eval.ScorecardCancelled || len(detail.Steps) != 1 || detail.Steps[0].Phase != "cancel" {
		t.Errorf("after cancel: status %s, steps %+v; want cancelled with one cancel step", detail.Status, detail.Steps)
	}
	for _, s := range []eval.Status{eval.ScorecardSucceeded, eval.ScorecardFailed, eval.ScorecardSuperseded} {
		done := e.seedScorecard(t, a.ws, batchStatus(s))
		want(t, e.do(t, http.MethodPost, "/scorecards/"+done.ID+"/cancel", "", bearer(a.key)), http.StatusConflict, "cancel a "+string(s)+" batch")
	}
	want(t, e.do(t, http.MethodPost, "/scorecards/sc_nope/cancel", "", bearer(a.key)), http.StatusNotFound, "cancel an unknown batch")
}

// TestCancelScorecardStopsWorkflows: with an orchestrator, cancel also
// cancels the batch's workflow and the scoring pass in flight.
func TestCancelScorecardStopsWorkflows(t *testing.T) {
	orch := newFakeOrchestrator()
	e := newEnv(t, withOrchestrator(orch))
	a := e.tenant(t, "cancel-wf")
	sc := e.seedScorecard(t, a.ws, batchStatus(eval.ScorecardRunning), func(sc *eval.Scorecard) { sc.ScoringInFlight = "score_1" })
	want(t, e.do(t, http.MethodPost, "/scorecards/"+sc.ID+"/cancel", "", bearer(a.key)), http.StatusOK, "cancel a running batch")
	if diff := cmp.Diff([]string{sc.ID, "score_1"}, orch.cancelledWorkflows()); diff != "" {
		t.Errorf("cancelled workflows (-want +got):\n%s", diff)
	}
}

func TestScoreScorecard(t *testing.T) {
	e := newEnv(t)
	a := e.tenant(t, "score")
	e.register(t, a.key, "/judges", judgeSpec("j", "1"), http.StatusCreated)
	const body = `{"judges":[{"id":"j"}]}`

	queued := e.seedScorecard(t, a.ws)
	empty := e.seedScorecard(t, a.ws, batchStatus(eval.ScorecardSucceeded))
	judged := e.seedScorecard(t, a.ws, batchStatus(eval.ScorecardSucceeded), experiment())
	e.seedChild(t, judged, "c1", 0, true)
	e.seedChild(t, judged, "c2", 0, false)

	for _, base := range []string{"/scorecards/", "/groups/"} {
		for _, tc := range []struct {
			name, id, body string
			status         int
			mention        string
		}{
			{"queued", queued.ID, body, 409, "queued"},
			{"no results", empty.ID, body, 400, "no case results"},
			{"unknown judge", judged.ID, `{"judges":[{"id":"ghost"}]}`, 404, "ghost"},
			{"no judges", judged.ID, `{"judges":[]}`, 400, "judges"},
			{"judge twice", judged.ID, `{"judges":[{"id":"j"},{"id":"j","version":"1"}]}`, 400, "twice"},
			{"unknown batch", "sc_nope", body, 404, "sc_nope"},
			// Everything checks out; only the missing orchestrator refuses it.
			{"no orchestrator", judged.ID, body, 503, "orchestrator"},
		} {
			res := e.do(t, http.MethodPost, base+tc.id+"/score", tc.body, bearer(a.key))
			if res.Status != tc.status || !strings.Contains(string(res.Body), tc.mention) {
				t.Errorf("%s%s: status %d, want %d mentioning %q; body %s", base, tc.name, res.Status, tc.status, tc.mention, res.Body)
			}
		}
	}
	if got := e.storedScorecard(t, a.ws, judged.ID); got.ScoringInFlight != "" || got.Kind != eval.KindExperiment || got.Status != eval.ScorecardSucceeded {
		t.Errorf("refused passes changed the batch: scoringInFlight %q, kind %s, status %s", got.ScoringInFlight, got.Kind, got.Status)
	}
}

// TestScoreScorecardStartsPass: with an orchestrator, a pass is started
// with the resolved judges and marked in flight; a second is 409.
func TestScoreScorecardStartsPass(t *testing.T) {
	orch := newFakeOrchestrator()
	e := newEnv(t, withOrchestrator(orch))
	a := e.tenant(t, "score-ok")
	e.register(t, a.key, "/judges", judgeSpec("j", "1.0.0"), http.StatusCreated)
	e.register(t, a.key, "/judges", judgeSpec("j", "1.2.0"), http.StatusCreated)
	sc := e.seedScorecard(t, a.ws, batchStatus(eval.ScorecardSucceeded), experiment())
	e.seedChild(t, sc, "c1", 0, true)

	res := e.do(t, http.MethodPost, "/groups/"+sc.ID+"/score", `{"judges":[{"id":"j"}]}`, bearer(a.key))
	want(t, res, http.StatusAccepted, "POST /groups/:id/score")
	got := decode[eval.Scorecard](t, res)
	passes := orch.startedPasses()
	if got.ScoringInFlight == "" || len(passes) != 1 || passes[0].Pass != got.ScoringInFlight {
		t.Fatalf("pass in flight %q, passes started %+v; want one, the same", got.ScoringInFlight, passes)
	}
	if diff := cmp.Diff([]flows.JudgeUse{{ID: "j", Version: "1.2.0"}}, passes[0].Judges); diff != "" {
		t.Errorf("judges of the pass, latest resolved (-want +got):\n%s", diff)
	}
	res = e.do(t, http.MethodPost, "/scorecards/"+sc.ID+"/score", `{"judges":[{"id":"j","version":"1.0.0"}]}`, bearer(a.key))
	want(t, res, http.StatusConflict, "a second pass while one is in flight")

	// The pass's workflow is what /ops/driver/score reads.
	view := decode[flows.DriverView](t, e.do(t, http.MethodGet, "/ops/driver/score/"+sc.ID, "", bearer(a.key)))
	if view.WorkflowID != got.ScoringInFlight {
		t.Errorf("driver view of the score family: workflow %q, want the pass %q", view.WorkflowID, got.ScoringInFlight)
	}
}

func TestVerifyManifest(t *testing.T) {
	e := newEnv(t)
	a := e.tenant(t, "verify")
	ds, h := e.registerBatchInputs(t, a)
	m, err := manifest.Seal(manifest.Input{Dataset: ds, Cases: ds.Dataset().Cases, Harness: h, Policy: scoring.DefaultPolicy()}, e.clock.Now())
	if err != nil {
		t.Fatal(err)
	}
	sc := e.seedScorecard(t, a.ws, batchStatus(eval.ScorecardSucceeded), func(sc *eval.Scorecard) {
		sc.Manifest = &m
		sc.Orchestration.CaseIDs = []string{"a", "b"}
	})
	verify := func(what string) manifest.Verification {
		t.Helper()
		res := e.do(t, http.MethodPost, "/scorecards/"+sc.ID+"/verify-manifest", "", bearer(a.key))
		want(t, res, http.StatusOK, what)
		return decode[manifest.Verification](t, res)
	}
	statuses := func(v manifest.Verification) map[string]string {
		out := map[string]string{}
		for _, f := range v.Facets {
			out[f.Facet] = f.Status
		}
		return out
	}
	allMatch := map[string]string{"dataset": "match", "case:a": "match", "case:b": "match", "harness": "match", "harness:model": "match",
		"grading": "match", "grading:a": "match", "grading:b": "match", "policy": "match"}

	v := verify("verify a fresh batch")
	if diff := cmp.Diff(allMatch, statuses(v)); diff != "" || !v.Verified || v.IdentityVersion != manifest.IdentityVersion {
		t.Errorf("fresh batch: verified %v, identity %d; facets (-want +got):\n%s", v.Verified, v.IdentityVersion, diff)
	}

	// Registered versions are immutable: new versions of the same ids, and
	// a refused rewrite of the sealed one, leave the seal verifying.
	e.register(t, a.key, "/datasets", datasetSpec("ds", "1.1.0", "a", "z"), http.StatusCreated)
	e.register(t, a.key, "/harnesses", harnessSpec("h", "2.0.0", "img:2"), http.StatusCreated)
	e.register(t, a.key, "/harnesses", harnessSpec("h", "1.0.0", "img:other"), http.StatusConflict)
	v = verify("verify after new versions")
	if diff := cmp.Diff(allMatch, statuses(v)); diff != "" || !v.Verified {
		t.Errorf("after new versions: verified %v; facets (-want +got):\n%s", v.Verified, diff)
	}

	// A hand-edited stamp no longer verifies.
	// (The per-case digests are the batch's selection, stored apart: the
	// edit writes the record read with it.)
	edited, row, err := records.LoadScorecardFull(t.Context(), e.store, a.ws, sc.ID)
	if err != nil {
		t.Fatal(err)
	}
	edited.Manifest.Cases["a"] = "sha256:" + strings.Repeat("0", 64)
	next, err := records.ScorecardRow(edited, row.Version)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.store.PutScorecard(t.Context(), next); err != nil {
		t.Fatal(err)
	}
	v = verify("verify an edited stamp")
	drifted := map[string]string{}
	for k, s := range allMatch {
		drifted[k] = s
	}
	drifted["case:a"] = "drifted"
	if diff := cmp.Diff(drifted, statuses(v)); diff != "" || v.Verified {
		t.Errorf("edited stamp: verified %v; facets (-want +got):\n%s", v.Verified, diff)
	}

	// A batch without a manifest is unverifiable, not an error.
	bare := e.seedScorecard(t, a.ws)
	res := e.do(t, http.MethodPost, "/scorecards/"+bare.ID+"/verify-manifest", "", bearer(a.key))
	want(t, res, http.StatusOK, "verify a batch without a manifest")
	if got := decode[manifest.Verification](t, res); got.Verified || len(got.Facets) != 1 || got.Facets[0].Status != manifest.FacetUnverifiable {
		t.Errorf("no manifest: %+v, want one unverifiable facet", got)
	}
	want(t, e.do(t, http.MethodPost, "/scorecards/sc_nope/verify-manifest", "", bearer(a.key)), http.StatusNotFound, "verify an unknown batch")
}

// TestBatchBudget: a batch spends the workspace's SVC_TENANT_RUNS budget
// with its case-trials at its submit, and one that does not fit is 402
// and creates nothing; runs and batches count against the same budget,
// per workspace.
func TestBatchBudget(t *testing.T) {
	orch := newFakeOrchestrator()
	e := newEnv(t, withOrchestrator(orch), withConfig(func(c *config.Config) { c.TenantRuns = 5 }))
	a, b := e.tenant(t, "budget-a"), e.tenant(t, "budget-b")
	e.registerBatchInputs(t, a)
	e.registerBatchInputs(t, b)
	submit := func(tn tenant, trials int) *apitest.Response {
		return e.do(t, http.MethodPost, "/scorecards", fmt.Sprintf(`{"dataset":{"id":"ds","version":"latest"},"harness":{"id":"h","version":"latest"},"trials":%d}`, trials), bearer(tn.key))
	}
	want(t, submit(a, 2), http.StatusAccepted, "a batch of 4 case-trials under a budget of 5")
	res := submit(a, 1)
	want(t, res, http.StatusPaymentRequired, "a batch of 2 more")
	body := string(res.Body)
	for _, s := range []string{"BUDGET_EXCEEDED", "SVC_TENANT_RUNS", "4 runs"} {
		if !strings.Contains(body, s) {
			t.Errorf("402 body %s: want %q in it", body, s)
		}
	}
	res = e.do(t, http.MethodPost, "/groups", `{"dataset":{"id":"ds","version":"latest"},"harness":{"id":"h","version":"latest"}}`, bearer(a.key))
	want(t, res, http.StatusPaymentRequired, "a group of 2 more")
	if n := len(orch.startedBatches()); n != 1 {
		t.Errorf("%d batches started, want 1 (the refused ones create nothing)", n)
	}
	// Another workspace's budget is its own.
	want(t, submit(b, 2), http.StatusAccepted, "workspace b's first batch")

	// What a workspace spent: its batches' case-trials, its runs, and the
	// cost its finished runs reported.
	now := e.clock.Now()
	row, err := records.Row(eval.Run{ID: "run_costed", Tenant: a.ws, Kind: eval.KindEval, Status: eval.StatusSucceeded,
		CaseID: "a", CreatedAt: now, UpdatedAt: now, Usage: &eval.Usage{CostUSD: 0.25, InputTokens: 10}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.store.CreateRun(t.Context(), row); err != nil {
		t.Fatal(err)
	}
	for _, window := range []string{"", "?window=24h", "?window=all"} {
		res = e.do(t, http.MethodGet, "/workspace/usage"+window, "", bearer(a.key))
		want(t, res, http.StatusOK, "GET /workspace/usage"+window)
		u := decode[runs.WorkspaceUsage](t, res)
		if u.Runs != 1 || u.BatchRuns != 4 || u.Used != 5 || u.CostUSD != 0.25 || u.Budget != 5 || u.Remaining == nil || *u.Remaining != 0 {
			t.Errorf("GET /workspace/usage%s = %+v (remaining %v), want 1 run, 4 batch runs, 5 used, $0.25, budget 5, 0 left", window, u, u.Remaining)
		}
	}
	want(t, e.do(t, http.MethodGet, "/workspace/usage?window=1y", "", bearer(a.key)), http.StatusBadRequest, "an unknown window")
	res = e.do(t, http.MethodGet, "/workspace/usage", "", bearer(b.key))
	want(t, res, http.StatusOK, "workspace b's usage")
	if u := decode[runs.WorkspaceUsage](t, res); u.Used != 4 || u.CostUSD != 0 {
		t.Errorf("workspace b's usage = %+v, want its own batch only", u)
	}
}

// TestQueueBound: past SVC_SCHEDULER_QUEUE_MAX waiting case-trials and
// runs, a submit is 429 RATE_LIMITED with Retry-After and creates nothing.
func TestQueueBound(t *testing.T) {
	orch := newFakeOrchestrator()
	e := newEnv(t, withOrchestrator(orch), withConfig(func(c *config.Config) { c.SchedulerQueueMax = 5 }))
	a := e.tenant(t, "queue")
	e.registerBatchInputs(t, a)
	submit := func(trials int) *apitest.Response {
		return e.do(t, http.MethodPost, "/scorecards", fmt.Sprintf(`{"dataset":{"id":"ds","version":"latest"},"harness":{"id":"h","version":"latest"},"trials":%d}`, trials), bearer(a.key))
	}
	want(t, submit(2), http.StatusAccepted, "4 case-trials under a queue of 5")
	res := submit(1)
	want(t, res, http.StatusTooManyRequests, "2 more")
	if ra := res.Header.Get("Retry-After"); ra != "30" {
		t.Errorf("Retry-After = %q, want 30", ra)
	}
	if body := string(res.Body); !strings.Contains(body, "SVC_SCHEDULER_QUEUE_MAX") || !strings.Contains(body, "4 runs and case-trials waiting") {
		t.Errorf("429 body %s: want what is waiting and the setting", body)
	}
	if n := len(orch.startedBatches()); n != 1 {
		t.Errorf("%d batches started, want 1", n)
	}
}
