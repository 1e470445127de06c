package api_test

import (
	"net/http"
	"strings"
	"testing"

	"svc/internal/domain/eval"
	"svc/store/records"
)

// seedWorldSession writes a running world session of member createdBy in
// ws, with a host queue, straight into the store: the snapshot route's
// refusals all come before the orchestrator, which the test API lacks.
func (e *testEnv) seedWorldSession(t testing.TB, ws, createdBy string) eval.Run {
	t.Helper()
	run := e.seedSession(t, ws, createdBy)
	row, err := e.store.GetRun(t.Context(), ws, run.ID)
	if err != nil {
		t.Fatal(err)
	}
	run, err = records.FromRow(row)
	if err != nil {
		t.Fatal(err)
	}
	run.Session.World = &eval.SessionWorld{ID: "shop"}
	run.Session.Hibernate = true
	run.Session.HostQueue = "svc@sandbox-host:test"
	nrow, err := records.Row(run)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.store.PutRun(t.Context(), nrow); err != nil {
		t.Fatalf("PutRun: %v", err)
	}
	return run
}

func init() {
	// A's own snapshot gets past every tenancy check and stops at 503
	// (no orchestrator in the test API).
	registerCrossTenant("POST /sandboxes/:id/snapshot", crossTenantFixture{
		Setup: func(t *testing.T, e *testEnv, a tenant) map[string]string {
			return map[string]string{"id": e.seedWorldSession(t, a.ws, e.subjectOf(t, bearer(a.key))).ID}
		},
		Snapshot: func(t *testing.T, e *testEnv, a tenant, p map[string]string) any {
			res := e.do(t, http.MethodGet, "/sandboxes/"+p["id"], "", bearer(a.key))
			want(t, res, http.StatusOK, "GET /sandboxes/:id")
			v := decode[map[string]any](t, res)
			delete(v, "live")
			return v
		},
		Body: `{}`, OwnStatus: http.StatusServiceUnavailable,
	})
}

// TestSandboxSnapshotRefusals (spec §4.8): the snapshot route is the
// session's member's (404 for anyone else), needs a world (400 naming
// world), and an ended session is 409.
func TestSandboxSnapshotRefusals(t *testing.T) {
	e := newEnv(t)
	a := e.tenant(t, "snap")
	me := e.subjectOf(t, bearer(a.key))
	plain := e.seedSession(t, a.ws, me)
	res := e.do(t, http.MethodPost, "/sandboxes/"+plain.ID+"/snapshot", "", bearer(a.key))
	want(t, res, http.StatusBadRequest, "a session without a world")
	if msg := res.ErrorInfo(t).Message; !strings.Contains(msg, "world {id}") {
		t.Errorf("refusal %q, want it to say to create the session with world {id}", msg)
	}
	want(t, e.do(t, http.MethodPost, "/sandboxes/sbx_none/snapshot", "", bearer(a.key)), http.StatusNotFound, "an unknown session")

	ended := e.seedWorldSession(t, a.ws, me)
	row, err := e.store.GetRun(t.Context(), a.ws, ended.ID)
	if err != nil {
		t.Fatal(err)
	}
	run, _ := records.FromRow(row)
	run.Status = eval.StatusSucceeded
	run.Session.ClosedReason = eval.ClosedByRequest
	nrow, _ := records.Row(run)
	if _, err := e.store.PutRun(t.Context(), nrow); err != nil {
		t.Fatal(err)
	}
	want(t, e.do(t, http.MethodPost, "/sandboxes/"+ended.ID+"/snapshot", `{}`, bearer(a.key)), http.StatusConflict, "an ended session")
}

// TestWorldSessionRefusedWithoutImageStore (spec §4.8): where the
// deployment cannot snapshot (no image store), a world session is refused
// at create with 400 naming the setting, and no session is recorded.
func TestWorldSessionRefusedWithoutImageStore(t *testing.T) {
	e := newEnv(t)
	a := e.tenant(t, "noworld")
	for _, body := range []string{
		`{"world":{"id":"shop"}}`,
		`{"image":"/images/busybox","world":{"id":"shop"}}`,
		`{"world":{"id":"shop","version":2}}`,
	} {
		res := e.do(t, http.MethodPost, "/sandboxes", body, bearer(a.key))
		want(t, res, http.StatusBadRequest, "a world session without an image store: "+body)
		if msg := res.ErrorInfo(t).Message; !strings.Contains(msg, "SVC_IMAGE_STORE") {
			t.Errorf("%s: refusal %q, want it to name SVC_IMAGE_STORE", body, msg)
		}
	}
	if l := decode[[]map[string]any](t, e.do(t, http.MethodGet, "/sandboxes", "", bearer(a.key))); len(l) != 0 {
		t.Errorf("%d sessions recorded after the refusals, want none", len(l))
	}
}
