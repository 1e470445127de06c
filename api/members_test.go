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

// TestRemovedMemberStaysRemoved: a person whose token names the workspace is
// promoted to a member on first use (spec §5.6); once an admin removes them,
// their next request does not promote them again: they silently fall back
// to no active workspace, as a non-member selection does. Accepting an
// invite restores them.
func TestRemovedMemberStaysRemoved(t *testing.T) {
	e := newEnv(t, withOIDC())
	a := e.tenant(t, "removed")
	carol := e.person(t, "carol", map[string]any{"workspace": a.ws, "roles": []string{"member"}})
	me := func(what string, hs ...header) principalJSON {
		t.Helper()
		res := e.do(t, http.MethodGet, "/me", "", append([]header{bearer(carol)}, hs...)...)
		want(t, res, http.StatusOK, what)
		return decode[principalJSON](t, res)
	}
	if got := me("carol's first request"); got.Workspace != a.ws {
		t.Fatalf("carol's first request: workspace %q, want %s", got.Workspace, a.ws)
	}
	if got := roles(e.listMembers(t, a.key))["carol"]; got != "member" {
		t.Fatalf("after carol's first request her role is %q, want member (lazy promotion)", got)
	}

	want(t, e.do(t, http.MethodDelete, "/members/carol", "", bearer(a.key)), http.StatusNoContent, "removing carol")
	for range 2 {
		if got := me("carol after removal", selectWorkspace(a.ws)); got.Workspace != "" || len(got.Roles) != 0 {
			t.Errorf("carol after removal: workspace %q roles %v, want none", got.Workspace, got.Roles)
		}
		want(t, e.do(t, http.MethodGet, "/members", "", bearer(carol)), http.StatusForbidden, "carol listing members after removal")
		want(t, e.do(t, http.MethodGet, "/members", "", bearer(carol), selectWorkspace(a.ws)), http.StatusForbidden, "carol selecting the workspace after removal")
	}
	if got, ok := roles(e.listMembers(t, a.key))["carol"]; ok {
		t.Fatalf("carol is a member again (%s) after her next request", got)
	}

	inv := e.createInvite(t, a.key, `{"role":"viewer"}`)
	if got := e.accept(t, carol, inv.Token, http.StatusOK); got.Workspace != a.ws || got.Role != "viewer" {
		t.Errorf("accept = %+v, want %s as viewer", got, a.ws)
	}
	// Back in: the token's workspace applies again, with the token's roles
	// (the identity provider stays in charge of them, docs/decisions.md).
	if got := me("carol after accepting an invite"); got.Workspace != a.ws {
		t.Errorf("carol after accepting: workspace %q, want %s", got.Workspace, a.ws)
	}
	want(t, e.do(t, http.MethodGet, "/members", "", bearer(carol)), http.StatusOK, "carol listing members after rejoining")
	if got := roles(e.listMembers(t, a.key))["carol"]; got != "viewer" {
		t.Errorf("carol's role after rejoining = %q, want viewer", got)
	}
}
