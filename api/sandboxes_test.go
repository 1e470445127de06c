package api_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"svc/auth"
	"svc/internal/domain/eval"
	"svc/store/records"
)

// seedSession writes a running sandbox session of member createdBy in ws
// straight into the store (no workflow: the routes' refusals come first).
func (e *testEnv) seedSession(t testing.TB, ws, createdBy string) eval.Run {
	t.Helper()
	now := e.clock.Now().UTC()
	run := eval.Run{
		ID: eval.NewID("sbx"), Tenant: ws, Status: eval.StatusRunning, Kind: eval.KindSandbox, Lifetime: eval.LifetimeSession,
		Trigger: eval.TriggerAPI, CreatedBy: createdBy, Origin: &eval.Origin{Actor: createdBy, Source: "api"},
		CreatedAt: now, UpdatedAt: now, Placement: &eval.RunPlacement{Where: eval.WhereLocal},
		Session: &eval.Session{ExpiresAt: now.Add(time.Hour), TTLSeconds: 3600, Snapshots: []eval.SessionSnapshot{}, Image: "/images/busybox"},
	}
	row, err := records.Row(run)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.store.CreateRun(t.Context(), row); err != nil {
		t.Fatalf("CreateRun: %v", err)
	}
	return run
}

func init() {
	seeded := func(t *testing.T, e *testEnv, a tenant) map[string]string {
		return map[string]string{"id": e.seedSession(t, a.ws, e.subjectOf(t, bearer(a.key))).ID}
	}
	snapshot := func(t *testing.T, e *testEnv, a tenant, p map[string]string) any {
		res := e.do(t, http.MethodGet, "/sandboxes/"+p["id"], "", bearer(a.key))
		want(t, res, http.StatusOK, "GET /sandboxes/:id")
		v := decode[map[string]any](t, res)
		delete(v, "live") // secondsLeft moves with the clock
		return v
	}
	registerCrossTenant("GET /sandboxes/:id", crossTenantFixture{Setup: seeded, Snapshot: snapshot})
	// The test API has no orchestrator: A's own exec, touch and close get
	// past every tenancy check and stop at 503.
	registerCrossTenant("POST /sandboxes/:id/exec", crossTenantFixture{Setup: seeded, Snapshot: snapshot,
		Body: `{"command":"true"}`, OwnStatus: http.StatusServiceUnavailable})
	registerCrossTenant("POST /sandboxes/:id/touch", crossTenantFixture{Setup: seeded, Snapshot: snapshot,
		Body: `{"ttl":60}`, OwnStatus: http.StatusServiceUnavailable})
	registerCrossTenant("POST /sandboxes/:id/close", crossTenantFixture{Setup: seeded, Snapshot: snapshot,
		Body: `{}`, OwnStatus: http.StatusServiceUnavailable})
}

// TestSandboxesArePersonal: a session is its member's alone (spec §2.2's
// audience rule, §4.8): another member of the same workspace, an admin
// included, gets 404 on every session route and does not see it listed.
func TestSandboxesArePersonal(t *testing.T) {
	e := newEnv(t, withOIDC())
	a := e.tenant(t, "sbx")
	owner := e.join(t, a, "sbx-owner", auth.RoleMember)
	other := e.join(t, a, "sbx-other", auth.RoleAdmin)
	run := e.seedSession(t, a.ws, "sbx-owner")

	got := decode[map[string]any](t, e.do(t, http.MethodGet, "/sandboxes/"+run.ID, "", bearer(owner), selectWorkspace(a.ws)))
	if got["id"] != run.ID || got["live"] == nil || got["session"] == nil {
		t.Errorf("GET /sandboxes/:id as its member = %v, want the session with its live meta", got)
	}
	if l := decode[[]map[string]any](t, e.do(t, http.MethodGet, "/sandboxes", "", bearer(owner), selectWorkspace(a.ws))); len(l) != 1 || l[0]["id"] != run.ID {
		t.Errorf("GET /sandboxes as its member = %v, want the one session", l)
	}
	for _, c := range []struct{ method, path, body string }{
		{http.MethodGet, "/sandboxes/" + run.ID, ""},
		{http.MethodPost, "/sandboxes/" + run.ID + "/exec", `{"command":"id"}`},
		{http.MethodPost, "/sandboxes/" + run.ID + "/touch", `{}`},
		{http.MethodPost, "/sandboxes/" + run.ID + "/close", `{}`},
		{http.MethodGet, "/runs/" + run.ID, ""},
	} {
		res := e.do(t, c.method, c.path, c.body, bearer(other), selectWorkspace(a.ws))
		want(t, res, http.StatusNotFound, c.method+" "+c.path+" as another member (an admin)")
	}
	if l := decode[[]map[string]any](t, e.do(t, http.MethodGet, "/sandboxes", "", bearer(other), selectWorkspace(a.ws))); len(l) != 0 {
		t.Errorf("GET /sandboxes as another member = %v, want none", l)
	}
}

// TestCreateSandboxRefusals: what a create refuses before any container
// (spec §4.8, §7): the unsupported sources, a bad ttl, an image path the
// operator does not allow, an unknown runtime (404 naming it), a runtime
// with no session mode (400).
func TestCreateSandboxRefusals(t *testing.T) {
	e := newEnv(t)
	a := e.tenant(t, "sbxc")
	e.register(t, a.key, "/runtimes", `{"id":"cluster","version":"1.0.0","kind":"nomad","addr":"http://127.0.0.1:4646","image":"alpine"}`, http.StatusCreated)
	for _, c := range []struct {
		body   string
		status int
		says   string
	}{
		{`{}`, http.StatusBadRequest, "image is required"},
		{`{"harness":{"id":"h","version":"1"}}`, http.StatusNotFound, "no harness h@1"},
		{`{"capability":{"id":"env","version":"1"}}`, http.StatusBadRequest, "SVC_IMAGE_STORE"},
		{`{"capability":{"id":"env"},"image":"busybox:1"}`, http.StatusBadRequest, "one source"},
		{`{"capability":{"id":"env","version":"x"},"hibernate":true}`, http.StatusBadRequest, "cannot hibernate"},
		{`{"image":"/tmp/x","repo":{"git":"https://example.com/r.git"}}`, http.StatusBadRequest, "repo"},
		{`{"image":"/tmp/x","ttl":-1}`, http.StatusBadRequest, "ttl"},
		{`{"image":"/tmp/x","ttl":99999999}`, http.StatusBadRequest, "SVC_SANDBOX_MAX_TTL"},
		{`{"image":"/tmp/x"}`, http.StatusBadRequest, "SVC_SANDBOX_IMAGE_DIRS"},
		{`{"image":"/tmp/x","runtime":"nope"}`, http.StatusNotFound, `nope`},
		{`{"image":"/tmp/x","runtime":"cluster"}`, http.StatusBadRequest, "no session mode"},
		{`{"image":"busybox:1"}`, http.StatusBadRequest, "SVC_IMAGE_STORE"},
	} {
		res := e.do(t, http.MethodPost, "/sandboxes", c.body, bearer(a.key))
		if res.Status != c.status || !strings.Contains(string(res.Body), c.says) {
			t.Errorf("POST /sandboxes %s = %d %s, want %d saying %q", c.body, res.Status, res.Body, c.status, c.says)
		}
	}
}
