package api_test

import (
	"net/http"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestCreateWorkspace(t *testing.T) {
	e := newEnv(t, withOIDC())
	lee := e.person(t, "lee", nil)

	res := e.do(t, http.MethodPost, "/workspaces", `{"id":"labs","name":"Research Labs"}`, bearer(lee))
	want(t, res, http.StatusCreated, "POST /workspaces")
	created := decode[workspaceJSON](t, res)
	wantWS := workspaceJSON{ID: "labs", Name: "Research Labs", Role: "admin", CreatedAt: e.clock.Now()}
	if diff := cmp.Diff(wantWS, created); diff != "" {
		t.Errorf("POST /workspaces (-want +got):\n%s", diff)
	}
	want(t, e.do(t, http.MethodPost, "/workspaces", `{"id":"solo"}`, bearer(lee)), http.StatusCreated, "a second workspace")

	// The creator is its admin and can act there.
	res = e.do(t, http.MethodGet, "/workspaces", "", bearer(lee))
	want(t, res, http.StatusOK, "GET /workspaces")
	got := decode[[]workspaceJSON](t, res)
	if len(got) != 2 || got[0].ID != "labs" || got[0].Role != "admin" || got[1].ID != "solo" || got[1].Name != "solo" {
		t.Errorf("GET /workspaces = %+v, want labs and solo (named after its id), both admin", got)
	}
	res = e.do(t, http.MethodGet, "/members", "", bearer(lee), selectWorkspace("labs"))
	if ms := decode[[]memberJSON](t, res); len(ms) != 1 || ms[0].Subject != "lee" || ms[0].Role != "admin" || ms[0].Email != "lee@example.com" {
		t.Errorf("members of labs = %+v, want lee as admin", ms)
	}
	res = e.do(t, http.MethodGet, "/workspaces", "", bearer(lee), selectWorkspace("labs"))
	if got := decode[[]workspaceJSON](t, res); !got[0].Active || got[1].Active {
		t.Errorf("with x-svc-workspace labs, active = %v %v, want labs only", got[0].Active, got[1].Active)
	}

	// An id is global: taken is 409, even for someone else.
	res = e.do(t, http.MethodPost, "/workspaces", `{"id":"labs"}`, bearer(e.person(t, "max", nil)))
	want(t, res, http.StatusConflict, "a taken id")
	for _, body := range []string{`{}`, `{"id":"_shared"}`, `{"id":"has space"}`, `{"id":"x","owner":"me"}`} {
		want(t, e.do(t, http.MethodPost, "/workspaces", body, bearer(lee)), http.StatusBadRequest, "POST /workspaces "+body)
	}
	// An API key is bound to its workspace and may not found others.
	a := e.tenant(t, "bound")
	want(t, e.do(t, http.MethodPost, "/workspaces", `{"id":"keymade"}`, bearer(a.key)), http.StatusForbidden, "an API key creating a workspace")
}

// TestListWorkspacesForKey: a key sees only its own workspace, even when its
// subject belongs to others.
func TestListWorkspacesForKey(t *testing.T) {
	e := newEnv(t)
	// dev is an admin of default and of other; a key dev makes in default
	// must not reveal other.
	want(t, e.do(t, http.MethodGet, "/me", "", header{"x-svc-tenant", "other"}), http.StatusOK, "dev in other")
	res := e.do(t, http.MethodPost, "/keys", `{}`)
	want(t, res, http.StatusCreated, "dev creating a key")
	k := decode[createdKeyJSON](t, res)
	res = e.do(t, http.MethodGet, "/workspaces", "", bearer(k.APIKey))
	want(t, res, http.StatusOK, "GET /workspaces with the key")
	if got := decode[[]workspaceJSON](t, res); len(got) != 1 || got[0].ID != "default" || !got[0].Active {
		t.Errorf("GET /workspaces with dev's key = %+v, want only default", got)
	}
	res = e.do(t, http.MethodGet, "/workspaces", "")
	if got := decode[[]workspaceJSON](t, res); len(got) != 2 {
		t.Errorf("GET /workspaces as dev = %+v, want default and other", got)
	}
}
