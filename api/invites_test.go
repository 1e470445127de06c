package api_test

import (
	"bytes"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"svc/auth"
)

type inviteJSON struct {
	ID            string    `json:"id"`
	Role          string    `json:"role"`
	ExpiresAt     time.Time `json:"expiresAt"`
	AcceptedCount int       `json:"acceptedCount"`
}

type createdInviteJSON struct {
	inviteJSON
	Token string `json:"token"`
}

type acceptedJSON struct {
	Workspace string `json:"workspace"`
	Role      string `json:"role"`
}

func (e *testEnv) createInvite(t testing.TB, key, body string) createdInviteJSON {
	t.Helper()
	res := e.do(t, http.MethodPost, "/invites", body, bearer(key))
	want(t, res, http.StatusCreated, "POST /invites "+body)
	return decode[createdInviteJSON](t, res)
}

func (e *testEnv) listInvites(t testing.TB, key string) []inviteJSON {
	t.Helper()
	res := e.do(t, http.MethodGet, "/invites", "", bearer(key))
	want(t, res, http.StatusOK, "GET /invites")
	return decode[[]inviteJSON](t, res)
}

func (e *testEnv) accept(t testing.TB, token, inviteToken string, status int) acceptedJSON {
	t.Helper()
	res := e.do(t, http.MethodPost, "/invites/accept", fmt.Sprintf(`{"token":%q}`, inviteToken), bearer(token))
	want(t, res, status, "POST /invites/accept")
	if status != http.StatusOK {
		return acceptedJSON{}
	}
	return decode[acceptedJSON](t, res)
}

func init() {
	registerCrossTenant("DELETE /invites/:id", crossTenantFixture{
		Setup: func(t *testing.T, e *testEnv, a tenant) map[string]string {
			return map[string]string{"id": e.createInvite(t, a.key, `{"role":"member"}`).ID}
		},
		Snapshot: func(t *testing.T, e *testEnv, a tenant, _ map[string]string) any {
			return e.listInvites(t, a.key)
		},
	})
}

func TestInvites(t *testing.T) {
	e := newEnv(t, withOIDC())
	a := e.tenant(t, "inv")
	now := e.clock.Now()

	inv := e.createInvite(t, a.key, `{"role":"member"}`)
	if !strings.HasPrefix(inv.Token, "inv_") || inv.Role != "member" || inv.AcceptedCount != 0 || !inv.ExpiresAt.Equal(now.Add(168*time.Hour)) {
		t.Fatalf("POST /invites = %+v; want an inv_ token, role member, 0 accepted, expiring in 168h", inv)
	}
	e.clock.Advance(time.Second) // invites list oldest first
	short := e.createInvite(t, a.key, `{"role":"viewer","expiresInHours":1}`)
	if exp := now.Add(time.Second + time.Hour); !short.ExpiresAt.Equal(exp) {
		t.Errorf("expiresInHours 1: expiresAt %v, want %v", short.ExpiresAt, exp)
	}

	// The list shows both, without tokens.
	res := e.do(t, http.MethodGet, "/invites", "", bearer(a.key))
	want(t, res, http.StatusOK, "GET /invites")
	if bytes.Contains(res.Body, []byte(inv.Token)) || bytes.Contains(res.Body, []byte("inv_")) {
		t.Fatalf("GET /invites shows a token: %s", res.Body)
	}
	if diff := cmp.Diff([]inviteJSON{inv.inviteJSON, short.inviteJSON}, decode[[]inviteJSON](t, res)); diff != "" {
		t.Errorf("GET /invites (-want +got):\n%s", diff)
	}

	// Reusable: two people accept the same link.
	for _, who := range []string{"carol", "dave"} {
		got := e.accept(t, e.person(t, who, nil), inv.Token, http.StatusOK)
		if got != (acceptedJSON{Workspace: a.ws, Role: "member"}) {
			t.Errorf("%s accepting: %+v", who, got)
		}
	}
	// Accepting again changes nothing and does not count.
	e.accept(t, e.person(t, "carol", nil), inv.Token, http.StatusOK)
	if diff := cmp.Diff(map[string]string{"carol": "member", "dave": "member"}, roles(e.listMembers(t, a.key))); diff != "" {
		t.Errorf("members (-want +got):\n%s", diff)
	}
	if got := e.listInvites(t, a.key)[0].AcceptedCount; got != 2 {
		t.Errorf("acceptedCount = %d, want 2", got)
	}
	// carol can now act in the workspace she joined.
	res = e.do(t, http.MethodGet, "/me", "", bearer(e.person(t, "carol", nil)), selectWorkspace(a.ws))
	if me := decode[principalJSON](t, res); me.Workspace != a.ws || !cmp.Equal(me.Roles, []string{"member"}) {
		t.Errorf("carol after joining: %+v", me)
	}

	// Expiry: the short invite stops working and leaves the list.
	e.clock.Advance(time.Hour)
	e.accept(t, e.person(t, "erin", nil), short.Token, http.StatusNotFound)
	if got := e.listInvites(t, a.key); len(got) != 1 || got[0].ID != inv.ID {
		t.Errorf("GET /invites after expiry = %+v, want only %s", got, inv.ID)
	}

	// Revocation: 204, then the token is 404 and the list is empty; a second
	// revoke or an unknown id is 404.
	want(t, e.do(t, http.MethodDelete, "/invites/"+inv.ID, "", bearer(a.key)), http.StatusNoContent, "revoking")
	e.accept(t, e.person(t, "frank", nil), inv.Token, http.StatusNotFound)
	if got := e.listInvites(t, a.key); len(got) != 0 {
		t.Errorf("GET /invites after revoking = %+v", got)
	}
	want(t, e.do(t, http.MethodDelete, "/invites/invite_unknown", "", bearer(a.key)), http.StatusNotFound, "revoking an unknown invite")
	if _, isMember := roles(e.listMembers(t, a.key))["frank"]; isMember {
		t.Error("frank joined through a revoked invite")
	}
}

func TestAcceptInviteRefusals(t *testing.T) {
	e := newEnv(t, withOIDC())
	a := e.tenant(t, "refuse")
	inv := e.createInvite(t, a.key, `{"role":"admin"}`)
	person := e.person(t, "gina", nil)

	// Machines may not accept: an invite is for a person.
	e.accept(t, a.key, inv.Token, http.StatusForbidden)
	unknown, _ := auth.NewInviteToken()
	e.accept(t, person, unknown, http.StatusNotFound)
	for _, body := range []string{`{}`, `{"token":"inv_short"}`, `{"token":"ak_abc"}`, `{"token":1}`} {
		want(t, e.do(t, http.MethodPost, "/invites/accept", body, bearer(person)), http.StatusBadRequest, "accept "+body)
	}
	if len(e.listMembers(t, a.key)) != 0 {
		t.Error("a refused acceptance added a member")
	}

	bad := []string{`{}`, `{"role":"owner"}`, `{"role":"member","expiresInHours":0}`, `{"role":"member","expiresInHours":8761}`, `{"role":"member","expiresInHours":1.5}`}
	for _, body := range bad {
		want(t, e.do(t, http.MethodPost, "/invites", body, bearer(a.key)), http.StatusBadRequest, "POST /invites "+body)
	}
	e.createInvite(t, a.key, `{"role":"member","expiresInHours":8760}`)
}

// TestAcceptNeverDowngrades: an admin who accepts a viewer invite stays
// admin; a viewer who accepts an admin invite is raised.
func TestAcceptNeverDowngrades(t *testing.T) {
	e := newEnv(t, withOIDC())
	a := e.tenant(t, "down")
	hank := e.join(t, a, "hank", auth.RoleAdmin)
	ivy := e.join(t, a, "ivy", auth.RoleViewer)

	viewer := e.createInvite(t, a.key, `{"role":"viewer"}`)
	if got := e.accept(t, hank, viewer.Token, http.StatusOK); got.Role != "admin" {
		t.Errorf("admin accepting a viewer invite: role %q, want admin", got.Role)
	}
	admin := e.createInvite(t, a.key, `{"role":"admin"}`)
	if got := e.accept(t, ivy, admin.Token, http.StatusOK); got.Role != "admin" {
		t.Errorf("viewer accepting an admin invite: role %q, want admin", got.Role)
	}
	if diff := cmp.Diff(map[string]string{"hank": "admin", "ivy": "admin"}, roles(e.listMembers(t, a.key))); diff != "" {
		t.Errorf("members (-want +got):\n%s", diff)
	}
}

// TestAcceptIsNotWorkspaceGated: the dev principal and a token without any
// workspace can accept; the accepting principal's own workspace is irrelevant.
func TestAcceptIsNotWorkspaceGated(t *testing.T) {
	e := newEnv(t)
	a := e.tenant(t, "open")
	inv := e.createInvite(t, a.key, `{"role":"viewer"}`)
	res := e.do(t, http.MethodPost, "/invites/accept", fmt.Sprintf(`{"token":%q}`, inv.Token))
	want(t, res, http.StatusOK, "dev accepting")
	if got := roles(e.listMembers(t, a.key)); got["dev"] != "viewer" {
		t.Errorf("members = %v, want dev as viewer", got)
	}
}
