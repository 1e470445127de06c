package api_test

import (
	"net/http"
	"strings"
	"testing"

	"svc/internal/domain/eval"
	"svc/store"
)

// Experiments (groups) share the batch machinery; their reads and scoring
// are tested in scorecards_test.go, through both route families.

func init() {
	queued := func(t *testing.T, e *testEnv, a tenant) map[string]string {
		return map[string]string{"id": e.seedScorecard(t, a.ws, experiment()).ID}
	}
	snapshot := func(t *testing.T, e *testEnv, a tenant, p map[string]string) any {
		res := e.do(t, http.MethodGet, "/groups/"+p["id"], "", bearer(a.key))
		want(t, res, http.StatusOK, "GET /groups/:id")
		return string(res.Body)
	}
	registerCrossTenant("GET /groups/:id", crossTenantFixture{Setup: queued, Snapshot: snapshot})
	// A queued experiment cannot be scored yet: A's own request is 409.
	registerCrossTenant("POST /groups/:id/score", crossTenantFixture{Setup: queued, Snapshot: snapshot,
		Body: `{"judges":[{"id":"j"}]}`, OwnStatus: http.StatusConflict})
}

func TestSubmitGroupRefusals(t *testing.T) {
	e := newEnv(t)
	a := e.tenant(t, "groups")
	e.registerBatchInputs(t, a)
	const h = `"harness":{"id":"h","version":"1.0.0"}`
	for _, tc := range []struct {
		name, body string
		status     int
		mention    string
	}{
		{"neither dataset nor task", `{` + h + `}`, 400, "dataset"},
		{"both dataset and task", `{` + h + `,"dataset":{"id":"ds","version":"1.0.0"},"task":{"prompt":"hi"}}`, 400, "not both"},
		{"empty prompt", `{` + h + `,"task":{"prompt":"  "}}`, 400, "task.prompt"},
		{"no harness", `{"task":{"prompt":"hi"}}`, 400, "harness.id"},
		{"trials 101", `{` + h + `,"task":{"prompt":"hi"},"trials":101}`, 400, "trials"},
		{"concurrency 0", `{` + h + `,"task":{"prompt":"hi"},"concurrency":0}`, 400, "concurrency"},
		{"graders", `{` + h + `,"task":{"prompt":"hi"},"graders":[{"id":"g"}]}`, 400, "graders"},
		{"unknown dataset", `{` + h + `,"dataset":{"id":"nope","version":"latest"}}`, 404, "nope"},
		{"unknown harness", `{"harness":{"id":"ghost","version":"latest"},"task":{"prompt":"hi"}}`, 404, "ghost"},
		// Valid in every way: only the missing orchestrator refuses them.
		{"task, no orchestrator", `{` + h + `,"task":{"prompt":"hi"},"trials":2}`, 503, "orchestrator"},
		{"dataset, no orchestrator", `{` + h + `,"dataset":{"id":"ds","version":"latest"}}`, 503, "orchestrator"},
	} {
		res := e.do(t, http.MethodPost, "/groups", tc.body, bearer(a.key))
		if res.Status != tc.status || !strings.Contains(string(res.Body), tc.mention) {
			t.Errorf("%s: status %d, want %d mentioning %q; body %s", tc.name, res.Status, tc.status, tc.mention, res.Body)
		}
	}
	if got, err := e.store.ListScorecards(t.Context(), store.ScorecardFilter{Workspace: a.ws}); err != nil || len(got) != 0 {
		t.Errorf("refused submits left %d batches (err %v), want none", len(got), err)
	}
}

// TestSubmitGroup: with an orchestrator, a task makes an ungraded
// experiment of one case on the reserved _adhoc dataset.
func TestSubmitGroup(t *testing.T) {
	orch := newFakeOrchestrator()
	e := newEnv(t, withOrchestrator(orch))
	a := e.tenant(t, "groups-ok")
	e.registerBatchInputs(t, a)
	res := e.do(t, http.MethodPost, "/groups", `{"harness":{"id":"h","version":"latest"},"task":{"prompt":"say hi"},"trials":2}`, bearer(a.key))
	want(t, res, http.StatusAccepted, "POST /groups")
	sc := decode[eval.Scorecard](t, res)
	if loc := res.Header.Get("Location"); loc != "/groups/"+sc.ID {
		t.Errorf("Location = %q, want /groups/%s", loc, sc.ID)
	}
	if sc.Kind != eval.KindExperiment || sc.Dataset.ID != eval.DatasetAdhoc || sc.Progress.Total != 2 || sc.Orchestration == nil || !sc.Orchestration.Ungraded {
		t.Errorf("record = kind %s, dataset %s, total %d, orchestration %+v; want an ungraded experiment on _adhoc of 2 trials",
			sc.Kind, sc.Dataset, sc.Progress.Total, sc.Orchestration)
	}
	stored := e.storedScorecard(t, a.ws, sc.ID)
	if c := stored.Orchestration.AdhocCase; c == nil || c.Task != "say hi" {
		t.Errorf("stored ad-hoc case = %+v, want the task's prompt", c)
	}
	if started := orch.startedBatches(); len(started) != 1 || started[0].ScorecardID != sc.ID {
		t.Errorf("workflows started: %+v, want the experiment's", started)
	}

	res = e.do(t, http.MethodPost, "/groups", `{"harness":{"id":"h","version":"latest"},"dataset":{"id":"ds","version":"latest"}}`, bearer(a.key))
	want(t, res, http.StatusAccepted, "POST /groups with a dataset")
	if got := decode[eval.Scorecard](t, res); got.Dataset.String() != "ds@1.0.0" || got.Progress.Total != 2 || got.Subset != nil {
		t.Errorf("dataset experiment = dataset %s, total %d, subset %+v; want ds@1.0.0, every case", got.Dataset, got.Progress.Total, got.Subset)
	}
}
