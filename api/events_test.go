package api_test

import (
	"net/http"
	"strings"
	"testing"

	"svc/auth"
)

// TestEventsRefusals: GET /events is an admin's read (events:read): a member
// of the workspace gets 403; another workspace's admin, even selecting the
// workspace, reads only its own log (spec §1: never another workspace's
// record); a bad type, since or cursor is 400 naming it.
func TestEventsRefusals(t *testing.T) {
	e := newEnv(t, withOIDC())
	a, b := e.tenant(t, "a"), e.tenant(t, "b")
	ds := `{"id":"ev-ds","version":"1.0.0","cases":[{"id":"c","task":"t","graders":[{"id":"g","kind":"exit_code"}]}]}`
	want(t, e.do(t, http.MethodPost, "/datasets", ds, bearer(a.key)), http.StatusCreated, "POST /datasets as A")

	res := e.do(t, http.MethodGet, "/events?type=dataset.registered", "", bearer(a.key))
	want(t, res, http.StatusOK, "GET /events as A's admin")
	if !strings.Contains(string(res.Body), "dataset:ev-ds@1.0.0") {
		t.Errorf("A's events = %s, want dataset:ev-ds@1.0.0", res.Body)
	}

	member := e.join(t, a, "mia", auth.RoleMember)
	want(t, e.do(t, http.MethodGet, "/events", "", bearer(member), selectWorkspace(a.ws)), http.StatusForbidden, "GET /events as A's member")

	bAdmin := e.person(t, "admin-of-"+b.ws, map[string]any{"workspace": b.ws, "roles": []string{"admin"}})
	for _, c := range []struct {
		name string
		hs   []header
	}{
		{"B's admin key", []header{bearer(b.key)}},
		{"B's admin key selecting A", []header{bearer(b.key), selectWorkspace(a.ws)}},
		{"B's admin person selecting A", []header{bearer(bAdmin), selectWorkspace(a.ws)}},
	} {
		res := e.do(t, http.MethodGet, "/events", "", c.hs...)
		if res.Status != http.StatusOK || strings.Contains(string(res.Body), "ev-ds") || strings.Contains(string(res.Body), `"workspace":"`+a.ws+`"`) {
			t.Errorf("GET /events as %s = %d %s, want 200 without A's events", c.name, res.Status, res.Body)
		}
	}

	for _, q := range []string{"?type=a%20b", "?since=yesterday", "?cursor=nope", "?limit=201"} {
		res := e.do(t, http.MethodGet, "/events"+q, "", bearer(a.key))
		want(t, res, http.StatusBadRequest, "GET /events"+q)
		name := strings.SplitN(strings.TrimPrefix(q, "?"), "=", 2)[0]
		if !strings.Contains(string(res.Body), name) {
			t.Errorf("GET /events%s = %s, want a message naming %s", q, res.Body, name)
		}
	}
}

// TestMeShowsTheDeclaredAgent: the X-Svc-Agent-* headers make the
// principal's agent, bound to the key's subject (declaring is no privilege).
func TestMeShowsTheDeclaredAgent(t *testing.T) {
	e := newEnv(t)
	a := e.tenant(t, "a")
	res := e.do(t, http.MethodGet, "/me", "", bearer(a.key),
		header{auth.AgentIDHeader, "bot"}, header{auth.AgentNameHeader, "Bot"}, header{auth.ConversationIDHeader, "c1"})
	want(t, res, http.StatusOK, "GET /me with agent headers")
	var me struct {
		Subject, Workspace, Via string
		Roles                   []string
		Agent                   struct{ ID, Name, Conversation string }
	}
	res.JSON(t, &me)
	if me.Agent.ID != "bot" || me.Agent.Name != "Bot" || me.Agent.Conversation != "c1" || me.Subject == "" || strings.HasPrefix(me.Subject, "bot") {
		t.Errorf("GET /me = %s, want the key's subject with agent bot/Bot/c1", res.Body)
	}
	res = e.do(t, http.MethodGet, "/me", "", bearer(a.key), header{auth.AgentIDHeader, "bad id"})
	want(t, res, http.StatusBadRequest, "GET /me with a bad agent id")
	if !strings.Contains(string(res.Body), auth.AgentIDHeader) {
		t.Errorf("refusal %s does not name %s", res.Body, auth.AgentIDHeader)
	}
}
