package api_test

import (
	"net/http"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"svc/auth"
)

func (e *testEnv) listMembers(t testing.TB, key string) []memberJSON {
	t.Helper()
	res := e.do(t, http.MethodGet, "/members", "", bearer(key))
	want(t, res, http.StatusOK, "GET /members")
	return decode[[]memberJSON](t, res)
}

// roles maps each member's subject to its role.
func roles(ms []memberJSON) map[string]string {
	out := map[string]string{}
	for _, m := range ms {
		out[m.Subject] = m.Role
	}
	return out
}

func init() {
	// A member of A: the foreign caller must not learn of them, change
	// their role or remove them.
	setup := func(t *testing.T, e *testEnv, a tenant) map[string]string {
		e.join(t, a, "member-of-"+a.ws, auth.RoleMember)
		return map[string]string{"subject": "member-of-" + a.ws}
	}
	snapshot := func(t *testing.T, e *testEnv, a tenant, _ map[string]string) any {
		return e.listMembers(t, a.key)
	}
	registerCrossTenant("GET /members/:subject", crossTenantFixture{Setup: setup, Snapshot: snapshot})
	registerCrossTenant("PATCH /members/:subject", crossTenantFixture{Setup: setup, Snapshot: snapshot, Body: `{"role":"viewer"}`})
	registerCrossTenant("DELETE /members/:subject", crossTenantFixture{Setup: setup, Snapshot: snapshot, ForeignNoop: true}) // spec §4.10: idempotent
}

func TestMembers(t *testing.T) {
	e := newEnv(t, withOIDC())
	a := e.tenant(t, "team")
	alice := e.join(t, a, "alice", auth.RoleAdmin)
	e.join(t, a, "bob", auth.RoleViewer)

	if diff := cmp.Diff(map[string]string{"alice": "admin", "bob": "viewer"}, roles(e.listMembers(t, a.key))); diff != "" {
		t.Errorf("GET /members (-want +got):\n%s", diff)
	}
	res := e.do(t, http.MethodGet, "/members/bob", "", bearer(a.key))
	want(t, res, http.StatusOK, "GET /members/bob")
	if m := decode[memberJSON](t, res); m.Role != "viewer" || m.Email != "bob@example.com" || m.AddedAt.IsZero() {
		t.Errorf("GET /members/bob = %+v", m)
	}
	want(t, e.do(t, http.MethodGet, "/members/nobody", "", bearer(a.key)), http.StatusNotFound, "GET a non-member")

	// Viewers may read the member list but not change it.
	asBob := e.person(t, "bob", nil)
	want(t, e.do(t, http.MethodGet, "/members", "", bearer(asBob), selectWorkspace(a.ws)), http.StatusOK, "bob listing members")
	want(t, e.do(t, http.MethodPatch, "/members/bob", `{"role":"admin"}`, bearer(asBob), selectWorkspace(a.ws)), http.StatusForbidden, "bob promoting himself")

	// PATCH: 204, 404 for a non-member, 400 for a bad role.
	want(t, e.do(t, http.MethodPatch, "/members/bob", `{"role":"member"}`, bearer(alice), selectWorkspace(a.ws)), http.StatusNoContent, "alice promoting bob")
	want(t, e.do(t, http.MethodPatch, "/members/nobody", `{"role":"member"}`, bearer(a.key)), http.StatusNotFound, "PATCH a non-member")
	for _, body := range []string{`{"role":"owner"}`, `{}`, `{"role":"admin","x":1}`} {
		want(t, e.do(t, http.MethodPatch, "/members/bob", body, bearer(a.key)), http.StatusBadRequest, "PATCH "+body)
	}
	if got := roles(e.listMembers(t, a.key))["bob"]; got != "member" {
		t.Errorf("bob's role = %q, want member", got)
	}

	// The last admin can be neither demoted nor removed.
	want(t, e.do(t, http.MethodPatch, "/members/alice", `{"role":"member"}`, bearer(a.key)), http.StatusConflict, "demoting the last admin")
	want(t, e.do(t, http.MethodDelete, "/members/alice", "", bearer(a.key)), http.StatusConflict, "removing the last admin")
	want(t, e.do(t, http.MethodPatch, "/members/alice", `{"role":"admin"}`, bearer(a.key)), http.StatusNoContent, "a no-op PATCH of the last admin")

	// Removing is idempotent.
	for range 2 {
		want(t, e.do(t, http.MethodDelete, "/members/bob", "", bearer(a.key)), http.StatusNoContent, "DELETE /members/bob")
	}
	if diff := cmp.Diff(map[string]string{"alice": "admin"}, roles(e.listMembers(t, a.key))); diff != "" {
		t.Errorf("after removing bob (-want +got):\n%s", diff)
	}
}

// TestLastAdminRace: two admins demote each other at once. The check runs
// in the transaction that writes, so exactly one succeeds and the workspace
// keeps an admin.
func TestLastAdminRace(t *testing.T) {
	e := newEnv(t, withOIDC())
	for i := range 10 {
		a := e.tenant(t, "race")
		tokens := map[string]string{
			"alice": e.join(t, a, "alice", auth.RoleAdmin),
			"bob":   e.join(t, a, "bob", auth.RoleAdmin),
		}
		var wg sync.WaitGroup
		statuses := make(chan int, 2)
		for self, other := range map[string]string{"alice": "bob", "bob": "alice"} {
			wg.Go(func() {
				res := e.do(t, http.MethodPatch, "/members/"+other, `{"role":"viewer"}`, bearer(tokens[self]), selectWorkspace(a.ws))
				statuses <- res.Status
			})
		}
		wg.Wait()
		close(statuses)
		ok := 0
		for s := range statuses {
			switch s {
			case http.StatusNoContent:
				ok++
			case http.StatusConflict, http.StatusForbidden: // refused, or already demoted when it authenticated
			default:
				t.Errorf("round %d: status %d", i, s)
			}
		}
		admins := 0
		for _, r := range roles(e.listMembers(t, a.key)) {
			if r == "admin" {
				admins++
			}
		}
		if ok != 1 || admins != 1 {
			t.Fatalf("round %d: %d demotions succeeded and %d admins remain; want 1 and 1", i, ok, admins)
		}
	}
}
