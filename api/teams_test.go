package api_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"svc/auth"
)

type teamJSON struct {
	ID        string    `json:"id"`
	Name      string    `json:"name"`
	Private   bool      `json:"private"`
	CreatedBy string    `json:"createdBy,omitempty"`
	CreatedAt time.Time `json:"createdAt"`
}

type teamMemberJSON struct {
	TeamID  string    `json:"teamId"`
	Subject string    `json:"subject"`
	AddedAt time.Time `json:"addedAt"`
}

func (e *testEnv) createTeam(t testing.TB, key, body string) teamJSON {
	t.Helper()
	res := e.do(t, http.MethodPost, "/teams", body, bearer(key))
	want(t, res, http.StatusCreated, "POST /teams "+body)
	return decode[teamJSON](t, res)
}

func (e *testEnv) teamMembers(t testing.TB, key, team string, hs ...header) []string {
	t.Helper()
	res := e.do(t, http.MethodGet, "/teams/"+team+"/members", "", append(hs, bearer(key))...)
	want(t, res, http.StatusOK, "GET /teams/"+team+"/members")
	var out []string
	for _, m := range decode[[]teamMemberJSON](t, res) {
		out = append(out, m.Subject)
	}
	return out
}

// teamState is what a team route can change: the team and its members.
type teamState struct {
	Team    teamJSON
	Members []string
}

func init() {
	// A team of A with one member, and another member of A who is not in
	// it (for PUT).
	setup := func(t *testing.T, e *testEnv, a tenant) map[string]string {
		e.createTeam(t, a.key, `{"id":"platform","name":"Platform","private":true}`)
		e.join(t, a, "in-team-"+a.ws, auth.RoleMember)
		e.join(t, a, "outside-"+a.ws, auth.RoleMember)
		want(t, e.do(t, http.MethodPut, "/teams/platform/members/in-team-"+a.ws, "", bearer(a.key)), http.StatusNoContent, "adding a team member")
		return map[string]string{"id": "platform", "subject": "in-team-" + a.ws}
	}
	snapshot := func(t *testing.T, e *testEnv, a tenant, _ map[string]string) any {
		res := e.do(t, http.MethodGet, "/teams/platform", "", bearer(a.key))
		if res.Status == http.StatusNotFound {
			return teamState{}
		}
		want(t, res, http.StatusOK, "GET /teams/platform")
		return teamState{Team: decode[teamJSON](t, res), Members: e.teamMembers(t, a.key, "platform")}
	}
	f := crossTenantFixture{Setup: setup, Snapshot: snapshot}
	registerCrossTenant("GET /teams/:id", f)
	registerCrossTenant("GET /teams/:id/members", f)
	registerCrossTenant("DELETE /teams/:id", f)
	registerCrossTenant("DELETE /teams/:id/members/:subject", f)
	patch := f
	patch.Body = `{"name":"Renamed","private":false}`
	registerCrossTenant("PATCH /teams/:id", patch)
	// PUT adds a member of A who is not yet in the team: from B the team is
	// unknown, so A's team must not gain them.
	put := f
	put.Setup = func(t *testing.T, e *testEnv, a tenant) map[string]string {
		p := setup(t, e, a)
		p["subject"] = "outside-" + a.ws
		return p
	}
	registerCrossTenant("PUT /teams/:id/members/:subject", put)
}

func TestTeams(t *testing.T) {
	e := newEnv(t, withOIDC())
	a := e.tenant(t, "teams")
	start := e.clock.Now()

	got := e.createTeam(t, a.key, `{"id":"platform","name":"Platform Team"}`)
	if diff := cmp.Diff(teamJSON{ID: "platform", Name: "Platform Team", CreatedBy: "key:" + a.id, CreatedAt: start}, got); diff != "" {
		t.Errorf("POST /teams (-want +got):\n%s", diff)
	}
	if got := e.createTeam(t, a.key, `{"id":"secret","private":true}`); got.Name != "secret" || !got.Private {
		t.Errorf("POST /teams without a name: %+v, want the id as name, private", got)
	}
	want(t, e.do(t, http.MethodPost, "/teams", `{"id":"platform"}`, bearer(a.key)), http.StatusConflict, "a taken team id")
	for _, body := range []string{`{}`, `{"id":"Upper"}`, `{"id":"-x"}`, `{"id":"a/b"}`, `{"id":"ok","private":"yes"}`} {
		want(t, e.do(t, http.MethodPost, "/teams", body, bearer(a.key)), http.StatusBadRequest, "POST /teams "+body)
	}

	// PATCH changes only what is sent.
	res := e.do(t, http.MethodPatch, "/teams/platform", `{"private":true}`, bearer(a.key))
	want(t, res, http.StatusOK, "PATCH private")
	if got := decode[teamJSON](t, res); got.Name != "Platform Team" || !got.Private {
		t.Errorf("after PATCH private: %+v", got)
	}
	res = e.do(t, http.MethodPatch, "/teams/platform", `{"name":"Platform"}`, bearer(a.key))
	if got := decode[teamJSON](t, res); got.Name != "Platform" || !got.Private {
		t.Errorf("after PATCH name: %+v", got)
	}
	for _, body := range []string{`{}`, `{"name":""}`, `{"id":"x"}`} {
		want(t, e.do(t, http.MethodPatch, "/teams/platform", body, bearer(a.key)), http.StatusBadRequest, "PATCH "+body)
	}
	want(t, e.do(t, http.MethodPatch, "/teams/nope", `{"name":"x"}`, bearer(a.key)), http.StatusNotFound, "PATCH an unknown team")

	// Members: only workspace members can join; PUT is idempotent.
	e.join(t, a, "jo", auth.RoleViewer)
	kim := e.join(t, a, "kim", auth.RoleViewer)
	for range 2 {
		want(t, e.do(t, http.MethodPut, "/teams/platform/members/jo", "", bearer(a.key)), http.StatusNoContent, "PUT jo")
	}
	want(t, e.do(t, http.MethodPut, "/teams/platform/members/stranger", "", bearer(a.key)), http.StatusNotFound, "PUT a non-member")
	want(t, e.do(t, http.MethodPut, "/teams/nope/members/jo", "", bearer(a.key)), http.StatusNotFound, "PUT into an unknown team")
	if got := e.teamMembers(t, a.key, "platform"); !cmp.Equal(got, []string{"jo"}) {
		t.Errorf("team members = %v, want [jo]", got)
	}

	// A private team is invisible to a viewer outside it, visible inside.
	jo := e.person(t, "jo", nil)
	inWS := selectWorkspace(a.ws)
	listed := func(token string) []string {
		res := e.do(t, http.MethodGet, "/teams", "", bearer(token), inWS)
		want(t, res, http.StatusOK, "GET /teams")
		var ids []string
		for _, tm := range decode[[]teamJSON](t, res) {
			ids = append(ids, tm.ID)
		}
		return ids
	}
	if got := listed(kim); len(got) != 0 {
		t.Errorf("kim (in no team) sees %v, want no private team", got)
	}
	want(t, e.do(t, http.MethodGet, "/teams/platform", "", bearer(kim), inWS), http.StatusNotFound, "kim reading a private team")
	want(t, e.do(t, http.MethodGet, "/teams/platform/members", "", bearer(kim), inWS), http.StatusNotFound, "kim listing a private team")
	if got := listed(jo); !cmp.Equal(got, []string{"platform"}) {
		t.Errorf("jo (in platform) sees %v, want [platform]", got)
	}
	want(t, e.do(t, http.MethodGet, "/teams/platform", "", bearer(jo), inWS), http.StatusOK, "jo reading his team")
	// Viewers cannot manage teams.
	want(t, e.do(t, http.MethodPost, "/teams", `{"id":"mine"}`, bearer(jo), inWS), http.StatusForbidden, "a viewer creating a team")

	// Removing: idempotent for the member; 404 for an unknown team.
	for range 2 {
		want(t, e.do(t, http.MethodDelete, "/teams/platform/members/jo", "", bearer(a.key)), http.StatusNoContent, "DELETE jo")
	}
	want(t, e.do(t, http.MethodDelete, "/teams/nope/members/jo", "", bearer(a.key)), http.StatusNotFound, "DELETE from an unknown team")

	// Removing a workspace member removes them from its teams.
	want(t, e.do(t, http.MethodPut, "/teams/platform/members/kim", "", bearer(a.key)), http.StatusNoContent, "PUT kim")
	want(t, e.do(t, http.MethodDelete, "/members/kim", "", bearer(a.key)), http.StatusNoContent, "removing kim from the workspace")
	if got := e.teamMembers(t, a.key, "platform"); len(got) != 0 {
		t.Errorf("team members after kim left the workspace = %v", got)
	}

	// Deleting a team: 204, then 404.
	want(t, e.do(t, http.MethodDelete, "/teams/platform", "", bearer(a.key)), http.StatusNoContent, "DELETE the team")
	want(t, e.do(t, http.MethodDelete, "/teams/platform", "", bearer(a.key)), http.StatusNotFound, "DELETE it again")
	res = e.do(t, http.MethodGet, "/teams", "", bearer(a.key))
	if diff := cmp.Diff([]teamJSON{{ID: "secret", Name: "secret", Private: true, CreatedBy: "key:" + a.id}}, decode[[]teamJSON](t, res),
		cmpopts.IgnoreFields(teamJSON{}, "CreatedAt")); diff != "" {
		t.Errorf("GET /teams after deleting platform (-want +got):\n%s", diff)
	}
}
