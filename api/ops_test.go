package api_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"svc/auth"
	"svc/internal/domain/eval"
	"svc/internal/domain/flows"
)

// The driver-ops routes read Temporal directly. Without an orchestrator
// (every env but the ones built withOrchestrator) they answer 404, as the
// spec says; with the fake one, they read and cancel its workflows.

func init() {
	batch := func(t *testing.T, e *testEnv, a tenant) map[string]string {
		return map[string]string{"family": "batch", "id": e.seedScorecard(t, a.ws).ID}
	}
	snapshot := func(t *testing.T, e *testEnv, a tenant, p map[string]string) any {
		res := e.do(t, http.MethodGet, "/scorecards/"+p["id"], "", bearer(a.key))
		want(t, res, http.StatusOK, "GET /scorecards/:id")
		return string(res.Body)
	}
	// The cross-tenant env has no orchestrator, so A's own request is 404
	// too: that is the spec's answer without the durable orchestrator.
	// TestDriverOps covers A's reads with one.
	registerCrossTenant("GET /ops/driver/:family/:id", crossTenantFixture{Setup: batch, Snapshot: snapshot, OwnStatus: http.StatusNotFound})
	registerCrossTenant("POST /ops/driver/:family/:id/cancel", crossTenantFixture{Setup: batch, Snapshot: snapshot, OwnStatus: http.StatusNotFound})
}

func TestDriverOpsWithoutOrchestrator(t *testing.T) {
	e := newEnv(t)
	a := e.tenant(t, "ops-none")
	sc := e.seedScorecard(t, a.ws)
	for _, r := range []struct{ method, path string }{
		{http.MethodGet, "/ops/driver/batch/" + sc.ID},
		{http.MethodPost, "/ops/driver/batch/" + sc.ID + "/cancel"},
	} {
		res := e.do(t, r.method, r.path, "", bearer(a.key))
		want(t, res, http.StatusNotFound, r.method+" "+r.path)
		if info := res.ErrorInfo(t); !strings.Contains(info.Message, "TEMPORAL_ADDRESS") {
			t.Errorf("%s %s: message %q does not say what to configure", r.method, r.path, info.Message)
		}
	}
}

func TestDriverOps(t *testing.T) {
	orch := newFakeOrchestrator()
	e := newEnv(t, withOrchestrator(orch), withOIDC())
	a := e.tenant(t, "ops")
	sc := e.seedScorecard(t, a.ws, batchStatus(eval.ScorecardRunning))
	orch.know(sc.ID)
	unstarted := e.seedScorecard(t, a.ws)
	foreign := e.seedScorecard(t, e.tenant(t, "ops-other").ws)
	orch.know(foreign.ID)

	res := e.do(t, http.MethodGet, "/ops/driver/batch/"+sc.ID, "", bearer(a.key))
	want(t, res, http.StatusOK, "GET /ops/driver/batch/:id")
	view := decode[flows.DriverView](t, res)
	if view.WorkflowID != sc.ID || view.Status != "RUNNING" || len(view.Pending) != 1 || view.Pending[0].LastFailure == "" {
		t.Errorf("driver view = %+v, want the batch's running workflow with its pending activity", view)
	}
	for _, tc := range []struct{ name, path string }{
		{"unknown family", "/ops/driver/nope/" + sc.ID},
		{"no scoring pass", "/ops/driver/score/" + sc.ID},
		{"workflow never started", "/ops/driver/batch/" + unstarted.ID},
		{"unknown batch", "/ops/driver/batch/sc_nope"},
		{"another workspace's batch", "/ops/driver/batch/" + foreign.ID},
	} {
		want(t, e.do(t, http.MethodGet, tc.path, "", bearer(a.key)), http.StatusNotFound, tc.name)
		want(t, e.do(t, http.MethodPost, tc.path+"/cancel", "", bearer(a.key)), http.StatusNotFound, tc.name+" (cancel)")
	}
	if got := orch.cancelledWorkflows(); len(got) != 0 {
		t.Fatalf("refused cancels reached the orchestrator: %v", got)
	}

	// Cancel is admin only; a member reads but cannot cancel.
	member := e.join(t, a, "mel", auth.RoleMember)
	want(t, e.do(t, http.MethodGet, "/ops/driver/batch/"+sc.ID, "", bearer(member), selectWorkspace(a.ws)), http.StatusOK, "a member reads the driver")
	want(t, e.do(t, http.MethodPost, "/ops/driver/batch/"+sc.ID+"/cancel", "", bearer(member), selectWorkspace(a.ws)), http.StatusForbidden, "a member cancels the driver")

	res = e.do(t, http.MethodPost, "/ops/driver/batch/"+sc.ID+"/cancel", "", bearer(a.key))
	want(t, res, http.StatusOK, "POST /ops/driver/batch/:id/cancel")
	if got := decode[flows.DriverView](t, res); got.Status != "CANCELED" {
		t.Errorf("after cancel: status %q, want CANCELED", got.Status)
	}
	if diff := cmp.Diff([]string{sc.ID}, orch.cancelledWorkflows()); diff != "" {
		t.Errorf("cancelled workflows (-want +got):\n%s", diff)
	}
}
