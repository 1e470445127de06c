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
	"svc/internal/platform/config"
	"svc/store"
)

type keyJSON struct {
	ID        string    `json:"id"`
	Prefix    string    `json:"prefix"`
	Label     string    `json:"label,omitempty"`
	Scopes    []string  `json:"scopes,omitempty"`
	Owner     string    `json:"owner"`
	CreatedBy string    `json:"createdBy,omitempty"`
	CreatedAt time.Time `json:"createdAt"`
}

type createdKeyJSON struct {
	APIKey string `json:"apiKey"`
	keyJSON
}

// createKey creates a key as the holder of key and returns it.
func (e *testEnv) createKey(t testing.TB, key, body string) createdKeyJSON {
	t.Helper()
	res := e.do(t, http.MethodPost, "/keys", body, bearer(key))
	want(t, res, http.StatusCreated, "POST /keys "+body)
	return decode[createdKeyJSON](t, res)
}

func (e *testEnv) listKeys(t testing.TB, key string) []keyJSON {
	t.Helper()
	res := e.do(t, http.MethodGet, "/keys", "", bearer(key))
	want(t, res, http.StatusOK, "GET /keys")
	return decode[[]keyJSON](t, res)
}

func init() {
	registerCrossTenant("DELETE /keys/:id", crossTenantFixture{
		Setup: func(t *testing.T, e *testEnv, a tenant) map[string]string {
			k := e.createKey(t, a.key, `{"label":"victim"}`)
			return map[string]string{"id": k.ID}
		},
		Snapshot: func(t *testing.T, e *testEnv, a tenant, _ map[string]string) any {
			return e.listKeys(t, a.key)
		},
		ForeignNoop: true, // spec §4.10
	})
}

func TestCreateKey(t *testing.T) {
	e := newEnv(t)
	a := e.tenant(t, "keys")
	start := e.clock.Now()
	tests := []struct {
		body       string
		wantLabel  string
		wantScopes []string
	}{
		{`{}`, "", nil},
		{`{"label":"ci runner"}`, "ci runner", nil},
		{`{"scopes":["admin","read","read"]}`, "", []string{"read", "admin"}},
		{`{"scopes":[]}`, "", nil},
	}
	for _, tt := range tests {
		k := e.createKey(t, a.key, tt.body)
		if !strings.HasPrefix(k.APIKey, "ak_") || !strings.HasPrefix(k.APIKey, k.Prefix) || len(k.Prefix) >= len(k.APIKey) {
			t.Errorf("%s: apiKey %q, prefix %q: want an ak_ key that starts with a shorter prefix", tt.body, k.APIKey, k.Prefix)
		}
		if k.Label != tt.wantLabel || !cmp.Equal(k.Scopes, tt.wantScopes) || !k.CreatedAt.Equal(start) {
			t.Errorf("%s: got label %q scopes %v createdAt %v, want %q %v %v", tt.body, k.Label, k.Scopes, k.CreatedAt, tt.wantLabel, tt.wantScopes, start)
		}
		// The new key works, as its creator's subject (the tenant key's own
		// subject) in the same workspace.
		res := e.do(t, http.MethodGet, "/me", "", bearer(k.APIKey))
		want(t, res, http.StatusOK, "GET /me with the new key")
		if me := decode[principalJSON](t, res); me.Workspace != a.ws || me.Subject != "key:"+a.id {
			t.Errorf("new key: %+v, want subject key:%s in %s", me, a.id, a.ws)
		}
		if k.Owner != "key:"+a.id {
			t.Errorf("new key: owner %q, want key:%s", k.Owner, a.id)
		}
	}

	bad := []struct{ body, mention string }{
		{`{"scopes":["root"]}`, "read, write or admin"},
		{`{"label":"` + strings.Repeat("x", 101) + `"}`, "limit is 100"},
		{`{"label":"a\nb"}`, "control characters"},
		{`{"roles":["admin"]}`, `unknown field "roles"`},
		{`[]`, "JSON object"},
	}
	for _, tt := range bad {
		res := e.do(t, http.MethodPost, "/keys", tt.body, bearer(a.key))
		want(t, res, http.StatusBadRequest, "POST /keys "+tt.body)
		if msg := res.ErrorInfo(t).Message; !strings.Contains(msg, tt.mention) {
			t.Errorf("POST /keys %s: message %q does not mention %q", tt.body, msg, tt.mention)
		}
	}
}

// TestKeyMetadataHidesSecrets: the list shows neither plaintext nor hash.
func TestKeyMetadataHidesSecrets(t *testing.T) {
	e := newEnv(t)
	a := e.tenant(t, "meta")
	e.clock.Advance(time.Second) // keys list oldest first
	k := e.createKey(t, a.key, `{"label":"one"}`)
	res := e.do(t, http.MethodGet, "/keys", "", bearer(a.key))
	want(t, res, http.StatusOK, "GET /keys")
	if bytes.Contains(res.Body, []byte(k.APIKey)) || bytes.Contains(res.Body, []byte(a.key)) {
		t.Fatalf("GET /keys shows a plaintext key: %s", res.Body)
	}
	if bytes.Contains(bytes.ToLower(res.Body), []byte("hash")) {
		t.Fatalf("GET /keys mentions a hash: %s", res.Body)
	}
	keys := decode[[]keyJSON](t, res) // strict: any other field fails
	if len(keys) != 2 || keys[0].Label != "tenant key" || !cmp.Equal(keys[1], k.keyJSON) {
		t.Errorf("GET /keys = %+v, want the tenant key then %+v", keys, k.keyJSON)
	}
}

func TestDeleteKey(t *testing.T) {
	e := newEnv(t)
	a := e.tenant(t, "del")
	k := e.createKey(t, a.key, `{}`)
	want(t, e.do(t, http.MethodGet, "/me", "", bearer(k.APIKey)), http.StatusOK, "before revoking")
	for range 2 { // idempotent
		want(t, e.do(t, http.MethodDelete, "/keys/"+k.ID, "", bearer(a.key)), http.StatusNoContent, "DELETE /keys/:id")
	}
	want(t, e.do(t, http.MethodGet, "/me", "", bearer(k.APIKey)), http.StatusUnauthorized, "a revoked key")
	want(t, e.do(t, http.MethodDelete, "/keys/key_unknown", "", bearer(a.key)), http.StatusNoContent, "unknown id")
	if keys := e.listKeys(t, a.key); len(keys) != 1 {
		t.Errorf("after revoking: %d keys, want only the tenant key", len(keys))
	}
}

// TestScopedKeyCannotMintKeys: keys:* need scope admin, so a narrower key
// never creates a wider one.
func TestScopedKeyCannotMintKeys(t *testing.T) {
	e := newEnv(t)
	a := e.tenant(t, "scoped")
	for _, sc := range []string{"read", "write"} {
		k := e.createKey(t, a.key, fmt.Sprintf(`{"scopes":[%q]}`, sc))
		want(t, e.do(t, http.MethodPost, "/keys", `{}`, bearer(k.APIKey)), http.StatusForbidden, sc+" key creating a key")
		want(t, e.do(t, http.MethodGet, "/keys", "", bearer(k.APIKey)), http.StatusForbidden, sc+" key listing keys")
	}
	admin := e.createKey(t, a.key, `{"scopes":["admin"]}`)
	e.createKey(t, admin.APIKey, `{}`)
}

func TestTenantKeys(t *testing.T) {
	e := newEnv(t)
	post := func(body string, hs ...header) int {
		return e.do(t, http.MethodPost, "/internal/tenant-keys", body, hs...).Status
	}
	tests := []struct {
		name string
		hs   []header
		want int
	}{
		{"no token", nil, http.StatusUnauthorized},
		{"wrong token", []header{{auth.InternalTokenHeader, internalToken + "x"}}, http.StatusUnauthorized},
		{"a bearer key is not the operator token", []header{bearer(e.tenant(t, "x").key)}, http.StatusUnauthorized},
		{"right token", []header{{auth.InternalTokenHeader, internalToken}}, http.StatusCreated},
	}
	for _, tt := range tests {
		if got := post(`{"workspace":"fresh"}`, tt.hs...); got != tt.want {
			t.Errorf("%s: status %d, want %d", tt.name, got, tt.want)
		}
	}
	op := header{auth.InternalTokenHeader, internalToken}
	e.clock.Advance(time.Second) // keys list oldest first
	// A second key for the same tenant is fine; the workspace stays one.
	res := e.do(t, http.MethodPost, "/internal/tenant-keys", `{"workspace":"fresh","label":"second"}`, op)
	want(t, res, http.StatusCreated, "second tenant key")
	var k struct{ APIKey, Workspace, ID string }
	res.JSON(t, &k)
	res = e.do(t, http.MethodGet, "/workspaces", "", bearer(k.APIKey))
	ws := decode[[]workspaceJSON](t, res)
	if len(ws) != 1 || ws[0].ID != "fresh" || ws[0].Role != "admin" {
		t.Errorf("GET /workspaces with the tenant key = %+v, want fresh as admin", ws)
	}
	if keys := e.listKeys(t, k.APIKey); len(keys) != 2 || keys[1].Label != "second" {
		t.Errorf("GET /keys = %+v, want two keys, the second labelled second", keys)
	}
	for _, body := range []string{`{}`, `{"workspace":"_shared"}`, `{"workspace":"a b"}`, `{"workspace":"x","extra":1}`} {
		want(t, e.do(t, http.MethodPost, "/internal/tenant-keys", body, op), http.StatusBadRequest, body)
	}
}

// TestTenantKeysDisabled: with no SVC_INTERNAL_TOKEN every call is refused,
// even one that sends an empty token.
func TestTenantKeysDisabled(t *testing.T) {
	e := newEnv(t, withConfig(func(c *config.Config) { c.InternalToken = "" }))
	for _, hs := range [][]header{nil, {{auth.InternalTokenHeader, ""}}, {{auth.InternalTokenHeader, "anything"}}} {
		res := e.do(t, http.MethodPost, "/internal/tenant-keys", `{"workspace":"w"}`, hs...)
		want(t, res, http.StatusUnauthorized, "tenant key with the route disabled")
	}
}

// TestListKeysShowsOwner: GET /keys says whom each key acts as: a tenant key
// is its own subject, a person's key is the person.
func TestListKeysShowsOwner(t *testing.T) {
	e := newEnv(t, withOIDC())
	a := e.tenant(t, "owners")
	alice := e.join(t, a, "alice", auth.RoleAdmin)
	e.clock.Advance(time.Second) // keys list oldest first
	res := e.do(t, http.MethodPost, "/keys", `{"label":"alice's"}`, bearer(alice), selectWorkspace(a.ws))
	want(t, res, http.StatusCreated, "alice creating a key")
	keys := e.listKeys(t, a.key)
	got := make([][2]string, 0, len(keys))
	for _, k := range keys {
		got = append(got, [2]string{k.Owner, k.CreatedBy})
	}
	wantOwners := [][2]string{{"key:" + a.id, "operator"}, {"alice", "alice"}}
	if diff := cmp.Diff(wantOwners, got); diff != "" {
		t.Errorf("GET /keys owner and createdBy (-want +got):\n%s", diff)
	}
}

// TestKeyNeverExceedsItsOwner: a key acts with the lower of its own roles
// and its owner's current role in the workspace (spec §5.4), so demoting a
// person demotes their keys, and removing them kills their keys.
func TestKeyNeverExceedsItsOwner(t *testing.T) {
	e := newEnv(t, withOIDC())
	a := e.tenant(t, "demote")
	alice := e.join(t, a, "alice", auth.RoleAdmin)
	e.join(t, a, "bob", auth.RoleAdmin) // so that alice is not the last admin
	res := e.do(t, http.MethodPost, "/keys", `{"label":"alice's"}`, bearer(alice), selectWorkspace(a.ws))
	want(t, res, http.StatusCreated, "alice creating a key")
	key := decode[createdKeyJSON](t, res).APIKey
	for _, path := range []string{"/keys", "/secrets"} {
		want(t, e.do(t, http.MethodGet, path, "", bearer(key)), http.StatusOK, "GET "+path+" with the key of an admin")
	}

	want(t, e.do(t, http.MethodPatch, "/members/alice", `{"role":"member"}`, bearer(a.key)), http.StatusNoContent, "demoting alice")
	for _, path := range []string{"/keys", "/secrets"} {
		want(t, e.do(t, http.MethodGet, path, "", bearer(key)), http.StatusForbidden, "GET "+path+" with the key of a demoted admin")
	}
	want(t, e.do(t, http.MethodPost, "/keys", `{}`, bearer(key)), http.StatusForbidden, "minting a key with the key of a demoted admin")
	res = e.do(t, http.MethodGet, "/me", "", bearer(key))
	want(t, res, http.StatusOK, "GET /me with the key of a demoted admin")
	if me := decode[principalJSON](t, res); !cmp.Equal(me.Roles, []string{"member"}) || me.Subject != "alice" {
		t.Errorf("GET /me = %+v, want alice with roles [member]", me)
	}
	want(t, e.do(t, http.MethodGet, "/members", "", bearer(key)), http.StatusOK, "a member's read with the key")

	// Promoting alice again restores the key up to its own roles.
	want(t, e.do(t, http.MethodPatch, "/members/alice", `{"role":"admin"}`, bearer(a.key)), http.StatusNoContent, "promoting alice")
	want(t, e.do(t, http.MethodGet, "/keys", "", bearer(key)), http.StatusOK, "GET /keys after promoting alice again")

	// A removed member's key is dead: 401, like an unknown key.
	want(t, e.do(t, http.MethodDelete, "/members/alice", "", bearer(a.key)), http.StatusNoContent, "removing alice")
	want(t, e.do(t, http.MethodGet, "/me", "", bearer(key)), http.StatusUnauthorized, "the key of a removed member")
}

// TestTenantKeySubjects: a tenant key acts as key:<its id>, a subject no
// person can take: an OIDC token naming it, or the legacy "operator", is
// refused, so nobody inherits creator rights over what tenant keys made.
func TestTenantKeySubjects(t *testing.T) {
	e := newEnv(t, withOIDC())
	a := e.tenant(t, "subjects")
	res := e.do(t, http.MethodGet, "/me", "", bearer(a.key))
	want(t, res, http.StatusOK, "GET /me with a tenant key")
	if me := decode[principalJSON](t, res); me.Subject != "key:"+a.id || me.Via != "api-key" {
		t.Fatalf("tenant key /me = %+v, want subject key:%s via api-key", me, a.id)
	}
	for _, sub := range []string{"operator", "key:" + a.id, "key:x", "KEY:x"} {
		tok := e.person(t, sub, map[string]any{"workspace": a.ws, "roles": []string{"admin"}})
		res := e.do(t, http.MethodGet, "/me", "", bearer(tok))
		switch sub {
		case "KEY:x": // subjects are case-sensitive; only the exact reserved forms are refused
			want(t, res, http.StatusOK, "an OIDC token with sub "+sub)
		default:
			want(t, res, http.StatusUnauthorized, "an OIDC token with sub "+sub)
		}
	}
	if ms := roles(e.listMembers(t, a.key)); ms["operator"] != "" || ms["key:"+a.id] != "" {
		t.Errorf("members = %v: a reserved subject became a member", ms)
	}
}

// TestKeySubjectPrefixAgrees: auth reads "key:<id>" subjects as keys and the
// store joins them to the owning key; the two must spell the prefix alike.
func TestKeySubjectPrefixAgrees(t *testing.T) {
	if auth.KeySubjectPrefix != store.KeySubjectPrefix {
		t.Fatalf("auth.KeySubjectPrefix %q != store.KeySubjectPrefix %q", auth.KeySubjectPrefix, store.KeySubjectPrefix)
	}
}
