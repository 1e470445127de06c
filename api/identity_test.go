package api_test

import (
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"svc/api"
	"svc/api/apitest"
	"svc/auth"
	"svc/auth/authtest"
	"svc/internal/app/probers"
	"svc/internal/platform/config"
	"svc/store/sqlite"
)

// testEnv is a Server on a real SQLite store in t.TempDir, served on
// loopback, with the operator token set and, when asked, a real OIDC issuer.
type testEnv struct {
	srv    *api.Server
	client *apitest.Client
	store  *sqlite.Store
	issuer *authtest.Issuer // nil unless withOIDC
	clock  *testClock
	cfg    config.Config
}

// internalToken is the operator token of every test env.
const internalToken = "operator-secret-for-tests"

type envOption func(*config.Config, *envSettings)

type envSettings struct {
	oidc bool
	opts []func(*api.Options)
}

func withOIDC() envOption { return func(_ *config.Config, s *envSettings) { s.oidc = true } }
func withRequireAuth() envOption {
	return func(c *config.Config, _ *envSettings) { c.RequireAuth = true }
}
func withFailLimit(n int) envOption {
	return func(c *config.Config, _ *envSettings) { c.AuthFailLimit = n }
}
func withServerOptions(f func(*api.Options)) envOption {
	return func(_ *config.Config, s *envSettings) { s.opts = append(s.opts, f) }
}
func withConfig(f func(*config.Config)) envOption {
	return func(c *config.Config, _ *envSettings) { f(c) }
}

// testClock is the server's clock in tests; Advance moves it, so expiry is
// tested without sleeping.
type testClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *testClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *testClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// openStore opens and migrates a SQLite store in a fresh temporary folder.
func openStore(t testing.TB) *sqlite.Store {
	t.Helper()
	st, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "svc.db"))
	if err != nil {
		t.Fatalf("opening the store: %v", err)
	}
	t.Cleanup(func() { st.Close() })
	if _, err := st.Migrate(t.Context()); err != nil {
		t.Fatalf("migrating the store: %v", err)
	}
	return st
}

// newEnv builds a test env. The failure limiter is off unless withFailLimit.
func newEnv(t testing.TB, opts ...envOption) *testEnv {
	t.Helper()
	cfg := config.Defaults()
	cfg.InternalToken = internalToken
	cfg.AuthFailLimit = 0
	cfg.SecretKey = testSecretKey // the secrets routes work; withConfig may unset it
	var set envSettings
	for _, o := range opts {
		o(&cfg, &set)
	}
	e := &testEnv{store: openStore(t), clock: &testClock{t: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}}
	if set.oidc {
		e.issuer = authtest.NewIssuer(t)
		cfg.OIDCIssuer = e.issuer.URL
	}
	e.cfg = cfg
	logger, _ := apitest.NewLogger()
	o := api.Options{Store: e.store, Config: cfg, Logger: logger, Version: "test", Now: e.clock.Now, Probers: probers.Drivers()}
	for _, f := range set.opts {
		f(&o)
	}
	srv, err := api.NewServer(o)
	if err != nil {
		t.Fatalf("api.NewServer: %v", err)
	}
	e.srv = srv
	e.client = apitest.NewClient(t, srv.Handler())
	return e
}

// header is one request header.
type header struct{ name, value string }

func bearer(token string) header       { return header{"Authorization", "Bearer " + token} }
func selectWorkspace(ws string) header { return header{auth.WorkspaceHeader, ws} }

// do sends a request with an optional JSON body ("" for none).
func (e *testEnv) do(t testing.TB, method, path, body string, hs ...header) *apitest.Response {
	t.Helper()
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	req := e.client.NewRequest(t, method, path, r)
	for _, h := range hs {
		req.Header.Set(h.name, h.value)
	}
	return e.client.Do(t, req)
}

// want fails t unless res has status; for an error it also checks the code.
func want(t testing.TB, res *apitest.Response, status int, what string) {
	t.Helper()
	if res.Status != status {
		t.Fatalf("%s: status %d, want %d; body %s", what, res.Status, status, res.Body)
	}
	if status >= 400 {
		info := res.ErrorInfo(t)
		if info.Code != codeFor(status) {
			t.Fatalf("%s: code %q, want %q", what, info.Code, codeFor(status))
		}
	}
}

func codeFor(status int) string {
	return map[int]string{400: api.CodeBadRequest, 401: api.CodeUnauthenticated, 403: api.CodeForbidden,
		404: api.CodeNotFound, 409: api.CodeConflict, 402: api.CodeBudgetExceeded, 429: api.CodeRateLimited}[status]
}

// decode decodes a response body strictly into a fresh T.
func decode[T any](t testing.TB, res *apitest.Response) T {
	t.Helper()
	var v T
	res.JSON(t, &v)
	return v
}

// tenant is a workspace made through /internal/tenant-keys with its admin key.
type tenant struct {
	ws  string
	key string
	id  string // the key's id; the key acts as subject "key:"+id
}

var tenantSeq atomic.Int64

// tenant creates a fresh workspace named after prefix and returns its admin key.
func (e *testEnv) tenant(t testing.TB, prefix string) tenant {
	t.Helper()
	ws := fmt.Sprintf("%s-%d", prefix, tenantSeq.Add(1))
	res := e.do(t, http.MethodPost, "/internal/tenant-keys", fmt.Sprintf(`{"workspace":%q}`, ws), header{auth.InternalTokenHeader, internalToken})
	want(t, res, http.StatusCreated, "POST /internal/tenant-keys")
	var k struct{ APIKey, Workspace, ID string }
	res.JSON(t, &k)
	return tenant{ws: ws, key: k.APIKey, id: k.ID}
}

// person mints an OIDC token for subject with extra claims (workspace, roles).
func (e *testEnv) person(t testing.TB, subject string, claims map[string]any) string {
	t.Helper()
	if e.issuer == nil {
		t.Fatal("person needs an env built withOIDC")
	}
	c := map[string]any{"sub": subject, "email": subject + "@example.com"}
	for k, v := range claims {
		c[k] = v
	}
	return e.issuer.Mint(c)
}

// join makes subject a member of tn with role, through an invite that the
// person accepts, and returns the person's token (which names no workspace:
// they act in tn by sending x-svc-workspace).
func (e *testEnv) join(t testing.TB, tn tenant, subject string, role auth.Role) string {
	t.Helper()
	res := e.do(t, http.MethodPost, "/invites", fmt.Sprintf(`{"role":%q}`, role), bearer(tn.key))
	want(t, res, http.StatusCreated, "POST /invites")
	var inv struct {
		ID, Role, Token string
		ExpiresAt       time.Time
		AcceptedCount   int
	}
	res.JSON(t, &inv)
	tok := e.person(t, subject, nil)
	res = e.do(t, http.MethodPost, "/invites/accept", fmt.Sprintf(`{"token":%q}`, inv.Token), bearer(tok))
	want(t, res, http.StatusOK, "POST /invites/accept")
	return tok
}

// principalJSON is GET /me's body.
type principalJSON struct {
	Subject   string   `json:"subject"`
	Workspace string   `json:"workspace"`
	Roles     []string `json:"roles"`
	Via       string   `json:"via"`
	Email     string   `json:"email,omitempty"`
	Name      string   `json:"name,omitempty"`
	Scopes    []string `json:"scopes,omitempty"`
}

type workspaceJSON struct {
	ID        string    `json:"id"`
	Name      string    `json:"name"`
	Role      string    `json:"role"`
	Active    bool      `json:"active"`
	CreatedAt time.Time `json:"createdAt"`
}

type memberJSON struct {
	Subject string    `json:"subject"`
	Role    string    `json:"role"`
	Email   string    `json:"email,omitempty"`
	AddedAt time.Time `json:"addedAt"`
}

func TestMeDev(t *testing.T) {
	e := newEnv(t)
	tests := []struct {
		name string
		hs   []header
		want principalJSON
	}{
		{"default workspace", nil, principalJSON{Subject: "dev", Workspace: "default", Roles: []string{"admin"}, Via: "dev"}},
		{"x-svc-tenant", []header{{auth.TenantHeader, "acme"}}, principalJSON{Subject: "dev", Workspace: "acme", Roles: []string{"admin"}, Via: "dev"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := e.do(t, http.MethodGet, "/me", "", tt.hs...)
			want(t, res, http.StatusOK, "GET /me")
			if diff := cmp.Diff(tt.want, decode[principalJSON](t, res)); diff != "" {
				t.Errorf("GET /me (-want +got):\n%s", diff)
			}
		})
	}
	res := e.do(t, http.MethodGet, "/me", "", header{auth.TenantHeader, "_shared"})
	want(t, res, http.StatusBadRequest, "GET /me with x-svc-tenant _shared")
}

// TestDevWorkspaceIsReal: the dev principal's workspace exists as a record
// and dev is its admin, so `svc dev` lists something sensible.
func TestDevWorkspaceIsReal(t *testing.T) {
	e := newEnv(t)
	for range 2 { // the second request must not add anything
		res := e.do(t, http.MethodGet, "/workspaces", "")
		want(t, res, http.StatusOK, "GET /workspaces")
		got := decode[[]workspaceJSON](t, res)
		if len(got) != 1 || got[0].ID != "default" || got[0].Role != "admin" || !got[0].Active {
			t.Fatalf("GET /workspaces = %+v, want only default, admin, active", got)
		}
	}
	res := e.do(t, http.MethodGet, "/members", "")
	want(t, res, http.StatusOK, "GET /members")
	members := decode[[]memberJSON](t, res)
	if len(members) != 1 || members[0].Subject != "dev" || members[0].Role != "admin" {
		t.Fatalf("GET /members = %+v, want dev as admin", members)
	}
	// Another tenant header makes a second workspace; the dev principal
	// belongs to both, and x-svc-workspace can switch between them.
	want(t, e.do(t, http.MethodGet, "/me", "", header{auth.TenantHeader, "other"}), http.StatusOK, "GET /me as other")
	res = e.do(t, http.MethodGet, "/me", "", selectWorkspace("other"))
	if got := decode[principalJSON](t, res); got.Workspace != "other" {
		t.Errorf("dev selecting other: workspace %q, want other", got.Workspace)
	}
	res = e.do(t, http.MethodGet, "/workspaces", "")
	if got := decode[[]workspaceJSON](t, res); len(got) != 2 {
		t.Errorf("GET /workspaces = %+v, want default and other", got)
	}
}

func TestMeAPIKey(t *testing.T) {
	e := newEnv(t)
	a := e.tenant(t, "acme")
	res := e.do(t, http.MethodGet, "/me", "", bearer(a.key), selectWorkspace("default"))
	want(t, res, http.StatusOK, "GET /me")
	wantMe := principalJSON{Subject: "key:" + a.id, Workspace: a.ws, Roles: []string{"admin"}, Via: "api-key"}
	if diff := cmp.Diff(wantMe, decode[principalJSON](t, res)); diff != "" {
		t.Errorf("GET /me with a tenant key; an API key ignores x-svc-workspace (-want +got):\n%s", diff)
	}

	res = e.do(t, http.MethodPost, "/keys", `{"label":"ci","scopes":["write","read","write"]}`, bearer(a.key))
	want(t, res, http.StatusCreated, "POST /keys")
	var k struct {
		APIKey, ID, Prefix, Label, Owner, CreatedBy string
		Scopes                                      []string
		CreatedAt                                   time.Time
	}
	res.JSON(t, &k)
	res = e.do(t, http.MethodGet, "/me", "", bearer(k.APIKey))
	wantMe = principalJSON{Subject: "key:" + a.id, Workspace: a.ws, Roles: []string{"admin"}, Via: "api-key", Scopes: []string{"read", "write"}}
	if diff := cmp.Diff(wantMe, decode[principalJSON](t, res)); diff != "" {
		t.Errorf("GET /me with a scoped key (-want +got):\n%s", diff)
	}
}

// TestOIDCEndToEnd drives a real issuer's tokens through the API.
func TestOIDCEndToEnd(t *testing.T) {
	e := newEnv(t, withOIDC(), withRequireAuth())
	alice := e.person(t, "alice", map[string]any{"workspace": "acme", "roles": []string{"member"}, "name": "Alice"})

	res := e.do(t, http.MethodGet, "/me", "", bearer(alice))
	want(t, res, http.StatusOK, "GET /me")
	wantMe := principalJSON{Subject: "alice", Workspace: "acme", Roles: []string{"member"}, Via: "oidc", Email: "alice@example.com", Name: "Alice"}
	if diff := cmp.Diff(wantMe, decode[principalJSON](t, res)); diff != "" {
		t.Errorf("GET /me (-want +got):\n%s", diff)
	}

	// The claim's workspace became a workspace record and a membership.
	res = e.do(t, http.MethodGet, "/workspaces", "", bearer(alice))
	ws := decode[[]workspaceJSON](t, res)
	if len(ws) != 1 || ws[0].ID != "acme" || ws[0].Role != "member" || !ws[0].Active {
		t.Fatalf("GET /workspaces = %+v, want acme as member", ws)
	}
	res = e.do(t, http.MethodGet, "/members", "", bearer(alice))
	want(t, res, http.StatusOK, "GET /members")
	members := decode[[]memberJSON](t, res)
	if len(members) != 1 || members[0].Subject != "alice" || members[0].Role != "member" {
		t.Fatalf("GET /members = %+v, want alice as member", members)
	}

	// Selecting a workspace alice is not a member of falls back silently.
	other := e.tenant(t, "other")
	res = e.do(t, http.MethodGet, "/me", "", bearer(alice), selectWorkspace(other.ws))
	want(t, res, http.StatusOK, "GET /me selecting a foreign workspace")
	if got := decode[principalJSON](t, res); got.Workspace != "acme" {
		t.Errorf("x-svc-workspace %s for a non-member: workspace %q, want the fallback acme", other.ws, got.Workspace)
	}
	// Once alice joins it, the same header switches her there with that role.
	res = e.do(t, http.MethodPost, "/invites", `{"role":"viewer"}`, bearer(other.key))
	token := decode[struct {
		ID, Role, Token string
		ExpiresAt       time.Time
		AcceptedCount   int
	}](t, res).Token
	want(t, e.do(t, http.MethodPost, "/invites/accept", fmt.Sprintf(`{"token":%q}`, token), bearer(alice)), http.StatusOK, "accept")
	res = e.do(t, http.MethodGet, "/me", "", bearer(alice), selectWorkspace(other.ws))
	if got := decode[principalJSON](t, res); got.Workspace != other.ws || !cmp.Equal(got.Roles, []string{"viewer"}) {
		t.Errorf("after joining: workspace %q roles %v, want %s [viewer]", got.Workspace, got.Roles, other.ws)
	}

	// Forged and expired tokens are 401.
	for name, tok := range map[string]string{
		"forged":  e.issuer.Mint(map[string]any{"sub": "alice"}, authtest.WithForeignKey()),
		"expired": e.issuer.Mint(map[string]any{"sub": "alice"}, authtest.Expired()),
		"alg":     e.issuer.Mint(map[string]any{"sub": "alice"}, authtest.WithAlgNone()),
	} {
		want(t, e.do(t, http.MethodGet, "/me", "", bearer(tok)), http.StatusUnauthorized, name+" token")
	}
}

// TestNewServerRefusesBadIssuer: a malformed OIDC_ISSUER stops start-up
// instead of silently disabling OIDC.
func TestNewServerRefusesBadIssuer(t *testing.T) {
	cfg := config.Defaults()
	cfg.OIDCIssuer = "not a url"
	if _, err := api.NewServer(api.Options{Config: cfg}); err == nil {
		t.Fatal("NewServer accepted OIDC_ISSUER=\"not a url\"")
	}
}

// TestPathParamEscaping: a subject with a reserved character reaches the
// handler unescaped, however the client encoded it.
func TestPathParamEscaping(t *testing.T) {
	e := newEnv(t, withOIDC())
	a := e.tenant(t, "esc")
	e.join(t, a, "idp|user/1", auth.RoleViewer)
	for _, path := range []string{"/members/idp%7Cuser%2F1", "/members/idp%7cuser%2f1"} {
		res := e.do(t, http.MethodGet, path, "", bearer(a.key))
		want(t, res, http.StatusOK, "GET "+path)
		if got := decode[memberJSON](t, res); got.Subject != "idp|user/1" {
			t.Errorf("GET %s: subject %q", path, got.Subject)
		}
	}
	want(t, e.do(t, http.MethodGet, "/members/%ff%2F", "", bearer(a.key)), http.StatusBadRequest, "invalid UTF-8 subject")
	want(t, e.do(t, http.MethodGet, "/members/a%00b", "", bearer(a.key)), http.StatusBadRequest, "NUL in subject")
}

// TestIdentityErrorBodies pins the error body of the identity routes'
// domain refusals: the message written for the client and its details, as
// the identity service words them and the one error shape carries them.
func TestIdentityErrorBodies(t *testing.T) {
	e := newEnv(t, withOIDC())
	a := e.tenant(t, "errs")
	alice := e.join(t, a, "alice", auth.RoleAdmin)
	asAlice := []header{bearer(alice), selectWorkspace(a.ws)}
	want(t, e.do(t, http.MethodPost, "/teams", `{"id":"core"}`, bearer(a.key)), http.StatusCreated, "POST /teams")
	want(t, e.do(t, http.MethodPost, "/workspaces", `{"id":"taken-ws"}`, bearer(alice)), http.StatusCreated, "POST /workspaces")

	tests := []struct {
		name, method, path, body string
		hs                       []header
		status                   int
		message                  string
		details                  map[string]any
	}{
		{"a non-member", http.MethodGet, "/members/nobody", "", []header{bearer(a.key)}, http.StatusNotFound,
			`"nobody" is not a member of this workspace; GET /members lists them`, map[string]any{"subject": "nobody"}},
		{"the last admin", http.MethodPatch, "/members/alice", `{"role":"viewer"}`, []header{bearer(a.key)}, http.StatusConflict,
			`"alice" is the workspace's last admin; make another member admin first`, map[string]any{"subject": "alice"}},
		{"an unknown invite", http.MethodDelete, "/invites/nope", "", []header{bearer(a.key)}, http.StatusNotFound,
			`no invite "nope" in this workspace; GET /invites lists the active ones`, map[string]any{"id": "nope"}},
		{"not an invite token", http.MethodPost, "/invites/accept", `{"token":"inv_short"}`, []header{bearer(alice)}, http.StatusBadRequest,
			"token is not an invite token; paste the whole inv_... token of the link", map[string]any{"field": "token"}},
		{"an existing team", http.MethodPost, "/teams", `{"id":"core"}`, []header{bearer(a.key)}, http.StatusConflict,
			`team "core" already exists in this workspace; choose another id or PATCH /teams/core`, map[string]any{"id": "core"}},
		{"an unknown team", http.MethodPatch, "/teams/nope", `{"private":true}`, []header{bearer(a.key)}, http.StatusNotFound,
			`no team "nope" in this workspace; GET /teams lists the ones you can see`, map[string]any{"id": "nope"}},
		{"a team member who is not a member", http.MethodPut, "/teams/core/members/olga", "", asAlice, http.StatusNotFound,
			`"olga" is not a member of this workspace; invite them first (POST /invites)`, map[string]any{"subject": "olga"}},
		{"an existing workspace", http.MethodPost, "/workspaces", `{"id":"taken-ws"}`, []header{bearer(alice)}, http.StatusConflict,
			`workspace "taken-ws" already exists; choose another id (ask its admin for an invite to join it)`, map[string]any{"id": "taken-ws"}},
		{"a key founding a workspace", http.MethodPost, "/workspaces", `not json`, []header{bearer(a.key)}, http.StatusForbidden,
			"forbidden: this route needs a person's credential, not an API key", nil},
		{"a key accepting an invite", http.MethodPost, "/invites/accept", `{}`, []header{bearer(a.key)}, http.StatusForbidden,
			"forbidden: this route needs a person's credential, not an API key", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := e.do(t, tt.method, tt.path, tt.body, tt.hs...)
			want(t, res, tt.status, tt.method+" "+tt.path)
			info := res.ErrorInfo(t)
			if info.Message != tt.message {
				t.Errorf("message = %q, want %q", info.Message, tt.message)
			}
			if diff := cmp.Diff(tt.details, info.Details); diff != "" {
				t.Errorf("details (-want +got):\n%s", diff)
			}
		})
	}
}
