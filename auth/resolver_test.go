package auth_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/google/go-cmp/cmp"

	"svc/auth"
	"svc/auth/authtest"
	"svc/internal/platform/derrors"
)

type header = map[string]string

func request(h header) *http.Request {
	r := httptest.NewRequest("GET", "/me", nil)
	r.RemoteAddr = "192.0.2.10:5555"
	for k, v := range h {
		r.Header.Set(k, v)
	}
	return r
}

func TestDevFallback(t *testing.T) {
	devAdmin := func(ws string) auth.Principal {
		return auth.Principal{Subject: "dev", Workspace: ws, Roles: []auth.Role{auth.RoleAdmin}, Via: "dev"}
	}
	tests := []struct {
		name        string
		requireAuth bool
		h           header
		want        auth.Principal
		wantErr     error
	}{
		{"no bearer, dev", false, nil, devAdmin("default"), nil},
		{"tenant header", false, header{"x-svc-tenant": "acme"}, devAdmin("acme"), nil},
		{"invalid tenant header", false, header{"x-svc-tenant": "_shared"}, auth.Principal{}, derrors.ErrInvalid},
		{"require auth, no bearer", true, nil, auth.Principal{}, derrors.ErrUnauthenticated},
		{"require auth ignores tenant header", true, header{"x-svc-tenant": "acme"}, auth.Principal{}, derrors.ErrUnauthenticated},
		// A credential that nobody accepts is a 401, never the dev admin.
		{"malformed bearer is not dev", false, header{"Authorization": "Bearer "}, auth.Principal{}, derrors.ErrUnauthenticated},
		{"empty Authorization is not dev", false, header{"Authorization": ""}, auth.Principal{}, derrors.ErrUnauthenticated},
		{"basic auth is not dev", false, header{"Authorization": "Basic dXNlcjpwYXNz"}, auth.Principal{}, derrors.ErrUnauthenticated},
		{"unknown token kind is not dev", false, header{"Authorization": "Bearer opaque"}, auth.Principal{}, derrors.ErrUnauthenticated},
		{"JWT with OIDC disabled is not dev", false, header{"Authorization": "Bearer a.b.c"}, auth.Principal{}, derrors.ErrUnauthenticated},
		{"unknown key is not dev", false, header{"Authorization": "Bearer ak_" + "A"}, auth.Principal{}, derrors.ErrUnauthenticated},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rv, err := auth.NewResolver(auth.ResolverConfig{Keys: newFakeKeys(), RequireAuth: tt.requireAuth})
			if err != nil {
				t.Fatal(err)
			}
			r := request(nil)
			for k, v := range tt.h {
				r.Header[http.CanonicalHeaderKey(k)] = []string{v} // keeps empty values
			}
			p, err := rv.Resolve(context.Background(), r)
			if tt.wantErr == nil && err != nil || tt.wantErr != nil && !errors.Is(err, tt.wantErr) {
				t.Fatalf("Resolve err = %v; want %v", err, tt.wantErr)
			}
			if diff := cmp.Diff(tt.want, p); diff != "" {
				t.Errorf("principal (-want +got):\n%s", diff)
			}
		})
	}
}

func TestPrincipalJSON(t *testing.T) {
	tests := []struct {
		p    auth.Principal
		want string
	}{
		{auth.Principal{Subject: "dev", Workspace: "default", Roles: []auth.Role{auth.RoleAdmin}, Via: "dev"},
			`{"subject":"dev","workspace":"default","roles":["admin"],"via":"dev"}`},
		{auth.Principal{Subject: "alice", Workspace: "acme", Roles: []auth.Role{auth.RoleMember}, Via: "oidc", Email: "a@x", Name: "Alice"},
			`{"subject":"alice","workspace":"acme","roles":["member"],"via":"oidc","email":"a@x","name":"Alice"}`},
		{auth.Principal{Subject: "ci", Workspace: "acme", Roles: []auth.Role{auth.RoleAdmin}, Via: "api-key", Scopes: []auth.Scope{auth.ScopeRead}, KeyID: "k1"},
			`{"subject":"ci","workspace":"acme","roles":["admin"],"via":"api-key","scopes":["read"]}`},
	}
	for _, tt := range tests {
		b, err := json.Marshal(tt.p)
		if err != nil || string(b) != tt.want {
			t.Errorf("json.Marshal = %s, %v; want %s", b, err, tt.want)
		}
	}
}

// oidcResolver is a resolver with OIDC and API keys over fakes.
func oidcResolver(t *testing.T, iss *authtest.Issuer, keys *fakeKeys, m *fakeMemberships) *auth.Resolver {
	t.Helper()
	rv, err := auth.NewResolver(auth.ResolverConfig{
		Keys: keys, Memberships: m, OIDC: auth.OIDCConfig{Issuer: iss.URL}, RequireAuth: true, FailLimit: 5,
	})
	if err != nil {
		t.Fatal(err)
	}
	return rv
}

func TestWorkspaceSelection(t *testing.T) {
	iss := authtest.NewIssuer(t)
	keys := newFakeKeys()
	m := newFakeMemberships()
	m.set("beta", "alice", auth.RoleAdmin)
	m.set("gamma", "alice", auth.RoleViewer)
	m.set("beta", "dev", auth.RoleViewer)
	m.set("other", "ci", auth.RoleAdmin) // the key's subject is a member elsewhere; the key still stays home
	rv := oidcResolver(t, iss, keys, m)
	alice := "Bearer " + iss.Mint(map[string]any{"sub": "alice", "workspace": "acme", "roles": []string{"member"}})
	noWS := "Bearer " + iss.Mint(map[string]any{"sub": "alice"})
	key := "Bearer " + keys.addMember(auth.APIKeyPrefix, auth.StoredKey{ID: "k1", Workspace: "acme", Subject: "ci", Roles: []auth.Role{auth.RoleMember}, Kind: auth.KeyKindAPI})
	rvDev, err := auth.NewResolver(auth.ResolverConfig{Memberships: m})
	if err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name   string
		rv     *auth.Resolver
		h      header
		wantWS string
		want   []auth.Role
	}{
		{"token default", rv, header{"Authorization": alice}, "acme", []auth.Role{auth.RoleMember}},
		{"select own default", rv, header{"Authorization": alice, "x-svc-workspace": "acme"}, "acme", []auth.Role{auth.RoleMember}},
		{"select membership, role from it", rv, header{"Authorization": alice, "x-svc-workspace": "beta"}, "beta", []auth.Role{auth.RoleAdmin}},
		{"select lower membership", rv, header{"Authorization": alice, "x-svc-workspace": "gamma"}, "gamma", []auth.Role{auth.RoleViewer}},
		{"non-member falls back silently", rv, header{"Authorization": alice, "x-svc-workspace": "delta"}, "acme", []auth.Role{auth.RoleMember}},
		{"invalid selection falls back", rv, header{"Authorization": alice, "x-svc-workspace": "_shared"}, "acme", []auth.Role{auth.RoleMember}},
		{"token without workspace selects a membership", rv, header{"Authorization": noWS, "x-svc-workspace": "beta"}, "beta", []auth.Role{auth.RoleAdmin}},
		{"token without workspace, non-member", rv, header{"Authorization": noWS, "x-svc-workspace": "delta"}, "", []auth.Role{auth.RoleViewer}},
		{"api key is bound to its workspace", rv, header{"Authorization": key, "x-svc-workspace": "other"}, "acme", []auth.Role{auth.RoleMember}},
		{"dev selects a membership", rvDev, header{"x-svc-workspace": "beta"}, "beta", []auth.Role{auth.RoleViewer}},
		{"dev non-member falls back", rvDev, header{"x-svc-tenant": "t1", "x-svc-workspace": "gamma"}, "t1", []auth.Role{auth.RoleAdmin}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := tt.rv.Resolve(context.Background(), request(tt.h))
			if err != nil {
				t.Fatalf("Resolve: %v", err)
			}
			if p.Workspace != tt.wantWS || !cmp.Equal(p.Roles, tt.want) {
				t.Errorf("got %s %v; want %s %v", p.Workspace, p.Roles, tt.wantWS, tt.want)
			}
		})
	}
}

func TestLazyPromotion(t *testing.T) {
	iss := authtest.NewIssuer(t)
	m := newFakeMemberships()
	rv := oidcResolver(t, iss, newFakeKeys(), m)
	ctx := context.Background()
	tok := "Bearer " + iss.Mint(map[string]any{"sub": "alice", "workspace": "acme", "roles": []string{"member"}})

	for range 3 {
		if _, err := rv.Resolve(ctx, request(header{"Authorization": tok})); err != nil {
			t.Fatal(err)
		}
	}
	if diff := cmp.Diff([]string{"acme/alice/member"}, m.ensureCalls()); diff != "" {
		t.Errorf("EnsureMembership calls (-want +got):\n%s", diff)
	}
	if r, ok, _ := m.Membership(ctx, "acme", "alice"); !ok || r != auth.RoleMember {
		t.Errorf("membership after promotion = %q, %v; want member", r, ok)
	}

	// No workspace in the token: nothing to promote.
	noWS := "Bearer " + iss.Mint(map[string]any{"sub": "bob"})
	p, err := rv.Resolve(ctx, request(header{"Authorization": noWS}))
	if err != nil || p.Workspace != "" {
		t.Fatalf("Resolve(no workspace) = %+v, %v", p, err)
	}
	if err := auth.Authorize(p, auth.RunsRead); !errors.Is(err, derrors.ErrForbidden) {
		t.Errorf("principal without workspace: Authorize(runs:read) = %v; want ErrForbidden", err)
	}
	if err := auth.Authorize(p, auth.Authenticated); err != nil {
		t.Errorf("principal without workspace: Authorize(authenticated) = %v; want nil", err)
	}

	// API keys and the dev principal are never promoted.
	if len(m.ensureCalls()) != 1 {
		t.Errorf("EnsureMembership called %d times; want 1", len(m.ensureCalls()))
	}
}

func TestMembershipStoreErrorsFailClosed(t *testing.T) {
	iss := authtest.NewIssuer(t)
	m := newFakeMemberships()
	m.err = derrors.ErrUnavailable
	rv := oidcResolver(t, iss, newFakeKeys(), m)
	tok := "Bearer " + iss.Mint(map[string]any{"sub": "alice", "workspace": "acme"})
	if p, err := rv.Resolve(context.Background(), request(header{"Authorization": tok})); !errors.Is(err, derrors.ErrUnavailable) || p.Subject != "" {
		t.Errorf("Resolve with memberships down = %+v, %v; want ErrUnavailable", p, err)
	}
}

func TestResolverRateLimitsFailures(t *testing.T) {
	iss := authtest.NewIssuer(t)
	keys := newFakeKeys()
	good := "Bearer " + keys.addMember(auth.APIKeyPrefix, auth.StoredKey{ID: "k1", Workspace: "acme", Subject: "ci", Roles: []auth.Role{auth.RoleAdmin}, Kind: auth.KeyKindAPI})
	bad := func() string { k, _ := auth.NewAPIKey(auth.APIKeyPrefix); return "Bearer " + k }
	rv := oidcResolver(t, iss, keys, newFakeMemberships()) // FailLimit 5
	ctx := context.Background()
	from := func(addr, authz string) *http.Request {
		r := request(header{"Authorization": authz})
		r.RemoteAddr = addr
		return r
	}

	// Successes never count.
	for range 20 {
		if _, err := rv.Resolve(ctx, from("198.51.100.1:1", good)); err != nil {
			t.Fatal(err)
		}
	}
	// Missing credentials (RequireAuth) do not count as guesses either.
	for range 20 {
		if _, err := rv.Resolve(ctx, request(nil)); !errors.Is(err, derrors.ErrUnauthenticated) {
			t.Fatalf("missing credential: %v", err)
		}
	}
	for i := range 5 {
		if _, err := rv.Resolve(ctx, from("198.51.100.1:2", bad())); !errors.Is(err, derrors.ErrUnauthenticated) {
			t.Fatalf("failure %d: %v; want ErrUnauthenticated", i, err)
		}
	}
	// Past the limit, failing attempts from the address are 429 ...
	if _, err := rv.Resolve(ctx, from("198.51.100.1:3", bad())); !errors.Is(err, derrors.ErrRateLimited) {
		t.Fatalf("after 5 failures, a bad key: %v; want ErrRateLimited", err)
	}
	// ... but a valid credential from it is never refused.
	for range 3 {
		if p, err := rv.Resolve(ctx, from("198.51.100.1:3", good)); err != nil || p.Subject != "ci" {
			t.Fatalf("after 5 failures, a good key: %+v, %v; want the key's principal", p, err)
		}
	}
	// Another address is unaffected.
	if _, err := rv.Resolve(ctx, from("198.51.100.2:1", bad())); !errors.Is(err, derrors.ErrUnauthenticated) {
		t.Errorf("other address: %v; want ErrUnauthenticated", err)
	}
	// Forged tokens from a third address are counted as failures.
	forged := "Bearer " + iss.Mint(map[string]any{"sub": "m", "workspace": "acme"}, authtest.WithForeignKey())
	for range 5 {
		_, _ = rv.Resolve(ctx, from("203.0.113.9:1", forged))
	}
	if _, err := rv.Resolve(ctx, from("203.0.113.9:1", forged)); !errors.Is(err, derrors.ErrRateLimited) {
		t.Errorf("after 5 forged tokens: %v; want ErrRateLimited", err)
	}
	valid := "Bearer " + iss.Mint(map[string]any{"sub": "m", "workspace": "acme"})
	if _, err := rv.Resolve(ctx, from("203.0.113.9:1", valid)); err != nil {
		t.Errorf("a valid token from the limited address: %v; want nil", err)
	}
}

// TestResolverRateLimitsKeyPrefixes: failures against one key prefix are
// counted across addresses.
func TestResolverRateLimitsKeyPrefixes(t *testing.T) {
	keys := newFakeKeys()
	plain := keys.addMember(auth.APIKeyPrefix, auth.StoredKey{ID: "k1", Workspace: "acme", Subject: "ci", Roles: []auth.Role{auth.RoleAdmin}, Kind: auth.KeyKindAPI})
	rv, err := auth.NewResolver(auth.ResolverConfig{Keys: keys, FailLimit: 3})
	if err != nil {
		t.Fatal(err)
	}
	guess := func(i int) string { // same display prefix, another body
		b := []byte(plain)
		pos := len(auth.KeyDisplayPrefix(plain)) + i
		if b[pos] == 'A' {
			b[pos] = 'B'
		} else {
			b[pos] = 'A'
		}
		return string(b)
	}
	resolve := func(addr, token string) error {
		r := request(header{"Authorization": "Bearer " + token})
		r.RemoteAddr = addr
		_, err := rv.Resolve(context.Background(), r)
		return err
	}
	for i := range 3 {
		if err := resolve(fmt.Sprintf("192.0.2.%d:1", i+1), guess(i)); !errors.Is(err, derrors.ErrUnauthenticated) {
			t.Fatalf("guess %d: %v; want ErrUnauthenticated", i, err)
		}
	}
	if err := resolve("192.0.2.200:1", guess(3)); !errors.Is(err, derrors.ErrRateLimited) {
		t.Errorf("a guess at the same prefix from a fresh address: %v; want ErrRateLimited", err)
	}
	if err := resolve("192.0.2.200:1", plain); err != nil {
		t.Errorf("the key itself: %v; want nil", err)
	}
	other, _ := auth.NewAPIKey(auth.APIKeyPrefix)
	if err := resolve("192.0.2.201:1", other); !errors.Is(err, derrors.ErrUnauthenticated) {
		t.Errorf("another prefix from another address: %v; want ErrUnauthenticated", err)
	}
}

// TestKeyRolesCappedByOwner: a key acts with the lower of its roles and its
// owner's current standing; an owner without standing kills the key.
func TestKeyRolesCappedByOwner(t *testing.T) {
	keys := newFakeKeys()
	adminKey := keys.add(auth.APIKeyPrefix, auth.StoredKey{ID: "k1", Workspace: "acme", Subject: "alice", Roles: []auth.Role{auth.RoleAdmin}, Kind: auth.KeyKindAPI})
	memberKey := keys.add(auth.APIKeyPrefix, auth.StoredKey{ID: "k2", Workspace: "acme", Subject: "bob", Roles: []auth.Role{auth.RoleMember}, Kind: auth.KeyKindAPI})
	tenantKey := keys.add(auth.APIKeyPrefix, auth.StoredKey{ID: "t1", Workspace: "acme", Subject: auth.KeySubject("t1"), Roles: []auth.Role{auth.RoleAdmin}, Kind: auth.KeyKindAPI})
	minted := keys.add(auth.APIKeyPrefix, auth.StoredKey{ID: "k3", Workspace: "acme", Subject: auth.KeySubject("t1"), Roles: []auth.Role{auth.RoleAdmin}, Kind: auth.KeyKindAPI})
	foreign := keys.add(auth.APIKeyPrefix, auth.StoredKey{ID: "k4", Workspace: "globex", Subject: auth.KeySubject("t1"), Roles: []auth.Role{auth.RoleAdmin}, Kind: auth.KeyKindAPI})
	a := auth.NewAPIKeyAuthenticator(keys)
	roles := func(token string) ([]auth.Role, error) {
		r := httptest.NewRequest("GET", "/me", nil)
		r.Header.Set("Authorization", "Bearer "+token)
		p, _, err := a.Authenticate(context.Background(), r)
		return p.Roles, err
	}
	steps := []struct {
		name    string
		change  func()
		token   string
		want    []auth.Role
		wantErr error
	}{
		{"admin key of an admin", func() { keys.member("acme", "alice", auth.RoleAdmin) }, adminKey, []auth.Role{auth.RoleAdmin}, nil},
		{"admin key of a demoted member", func() { keys.member("acme", "alice", auth.RoleMember) }, adminKey, []auth.Role{auth.RoleMember}, nil},
		{"admin key of a viewer", func() { keys.member("acme", "alice", auth.RoleViewer) }, adminKey, []auth.Role{auth.RoleViewer}, nil},
		{"a membership elsewhere does not count", func() { keys.member("acme", "alice", ""); keys.member("globex", "alice", auth.RoleAdmin) }, adminKey, nil, derrors.ErrUnauthenticated},
		{"an unreadable membership role", func() { keys.member("acme", "alice", "owner") }, adminKey, nil, derrors.ErrUnauthenticated},
		{"member key of an admin stays member", func() { keys.member("acme", "bob", auth.RoleAdmin) }, memberKey, []auth.Role{auth.RoleMember}, nil},
		{"a tenant key needs no membership", func() {}, tenantKey, []auth.Role{auth.RoleAdmin}, nil},
		{"a key minted by the tenant key", func() {}, minted, []auth.Role{auth.RoleAdmin}, nil},
		{"a key naming another workspace's key", func() {}, foreign, nil, derrors.ErrUnauthenticated},
		{"the tenant key is deleted", func() { keys.remove("t1") }, minted, nil, derrors.ErrUnauthenticated},
	}
	for _, st := range steps {
		st.change()
		got, err := roles(st.token)
		if st.wantErr != nil && !errors.Is(err, st.wantErr) || st.wantErr == nil && err != nil {
			t.Fatalf("%s: err = %v; want %v", st.name, err, st.wantErr)
		}
		if !cmp.Equal(got, st.want) {
			t.Errorf("%s: roles %v; want %v", st.name, got, st.want)
		}
	}
}

// TestOIDCReservedSubjects: no person may act as a key (key:<id>) or as the
// legacy operator subject of tenant keys.
func TestOIDCReservedSubjects(t *testing.T) {
	iss := authtest.NewIssuer(t)
	m := newFakeMemberships()
	rv := oidcResolver(t, iss, newFakeKeys(), m)
	for _, sub := range []string{"operator", "key:k1", "key:"} {
		tok := "Bearer " + iss.Mint(map[string]any{"sub": sub, "workspace": "acme", "roles": []string{"admin"}})
		if p, err := rv.Resolve(context.Background(), request(header{"Authorization": tok})); !errors.Is(err, derrors.ErrUnauthenticated) {
			t.Errorf("sub %q: %+v, %v; want ErrUnauthenticated", sub, p, err)
		}
	}
	if calls := m.ensureCalls(); len(calls) != 0 {
		t.Errorf("a reserved subject was promoted: %v", calls)
	}
	for _, sub := range []string{"operators", "Operator", "alice:key:1"} {
		tok := "Bearer " + iss.Mint(map[string]any{"sub": sub})
		if _, err := rv.Resolve(context.Background(), request(header{"Authorization": tok})); err != nil {
			t.Errorf("sub %q: %v; want accepted", sub, err)
		}
	}
}

// TestRemovedMemberIsNotPromoted: once removed (a tombstone), a token's
// workspace claim no longer makes the person a member: they fall back to no
// workspace, silently, and cannot select it either.
func TestRemovedMemberIsNotPromoted(t *testing.T) {
	iss := authtest.NewIssuer(t)
	m := newFakeMemberships()
	rv := oidcResolver(t, iss, newFakeKeys(), m)
	tok := "Bearer " + iss.Mint(map[string]any{"sub": "alice", "workspace": "acme", "roles": []string{"admin"}})
	ctx := context.Background()
	if p, err := rv.Resolve(ctx, request(header{"Authorization": tok})); err != nil || p.Workspace != "acme" {
		t.Fatalf("first use: %+v, %v; want acme", p, err)
	}
	m.remove("acme", "alice")
	for _, h := range []header{{"Authorization": tok}, {"Authorization": tok, "x-svc-workspace": "acme"}} {
		p, err := rv.Resolve(ctx, request(h))
		if err != nil || p.Workspace != "" || len(p.Roles) != 0 {
			t.Errorf("after removal %v: %+v, %v; want no workspace and no roles", h, p, err)
		}
	}
	if _, ok, _ := m.Membership(ctx, "acme", "alice"); ok {
		t.Error("a removed member was promoted again")
	}
}

func TestResolverClientAddr(t *testing.T) {
	rv, err := auth.NewResolver(auth.ResolverConfig{Keys: newFakeKeys(), FailLimit: 1})
	if err != nil {
		t.Fatal(err)
	}
	rv.ClientAddr = func(r *http.Request) string { return r.Header.Get("X-Real-Ip") }
	bad := header{"Authorization": "Bearer ak_bad", "X-Real-Ip": "192.0.2.77"}
	if _, err := rv.Resolve(context.Background(), request(bad)); !errors.Is(err, derrors.ErrUnauthenticated) {
		t.Fatal(err)
	}
	if _, err := rv.Resolve(context.Background(), request(bad)); !errors.Is(err, derrors.ErrRateLimited) {
		t.Errorf("second failure from the extracted address: %v; want ErrRateLimited", err)
	}
	if _, err := rv.Resolve(context.Background(), request(header{"X-Real-Ip": "192.0.2.78"})); err != nil {
		t.Errorf("another extracted address: %v; want the dev principal", err)
	}
}

func TestContextPrincipal(t *testing.T) {
	p := auth.Principal{Subject: "alice", Workspace: "acme", Via: "oidc"}
	got, ok := auth.FromContext(auth.WithPrincipal(context.Background(), p))
	if !ok || !cmp.Equal(got, p) {
		t.Errorf("FromContext = %+v, %v; want %+v", got, ok, p)
	}
	if _, ok := auth.FromContext(context.Background()); ok {
		t.Error("FromContext on a bare context: ok")
	}
}
