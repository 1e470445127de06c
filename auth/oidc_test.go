package auth_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"svc/auth"
	"svc/auth/authtest"
	"svc/internal/platform/derrors"
)

func newOIDC(t *testing.T, cfg auth.OIDCConfig) *auth.OIDCAuthenticator {
	t.Helper()
	a, err := auth.NewOIDCAuthenticator(cfg)
	if err != nil {
		t.Fatalf("NewOIDCAuthenticator: %v", err)
	}
	return a
}

func withBearer(token string) *http.Request {
	r := httptest.NewRequest("GET", "/me", nil)
	r.Header.Set("Authorization", "Bearer "+token)
	return r
}

func TestOIDCAcceptsValidTokens(t *testing.T) {
	iss := authtest.NewIssuer(t)
	tests := []struct {
		name   string
		cfg    auth.OIDCConfig
		claims map[string]any
		want   auth.Principal
	}{
		{
			name: "workspace claim, realm roles intersected",
			claims: map[string]any{
				"sub": "alice", "workspace": "acme", "email": "alice@example.com", "name": "Alice",
				"realm_access": map[string]any{"roles": []string{"offline_access", "member", "uma_authorization"}},
			},
			want: auth.Principal{Subject: "alice", Workspace: "acme", Roles: []auth.Role{auth.RoleMember}, Via: "oidc", Email: "alice@example.com", Name: "Alice"},
		},
		{
			name:   "group prefix yields the workspace",
			claims: map[string]any{"sub": "bob", "groups": []string{"/staff", "/workspaces/beta/engineers", "/workspaces/gamma"}},
			want:   auth.Principal{Subject: "bob", Workspace: "beta", Roles: []auth.Role{auth.RoleViewer}, Via: "oidc"},
		},
		{
			name:   "group without trailing path",
			claims: map[string]any{"sub": "bob", "groups": []string{"/workspaces/gamma"}},
			want:   auth.Principal{Subject: "bob", Workspace: "gamma", Roles: []auth.Role{auth.RoleViewer}, Via: "oidc"},
		},
		{
			name:   "workspace claim wins over groups",
			claims: map[string]any{"sub": "bob", "workspace": "acme", "groups": []string{"/workspaces/beta"}},
			want:   auth.Principal{Subject: "bob", Workspace: "acme", Roles: []auth.Role{auth.RoleViewer}, Via: "oidc"},
		},
		{
			name:   "custom claim and prefix",
			cfg:    auth.OIDCConfig{WorkspaceClaim: "tenant", GroupPrefix: "/orgs"},
			claims: map[string]any{"sub": "carol", "workspace": "ignored", "groups": []string{"/orgs/delta/x"}, "roles": []string{"admin"}},
			want:   auth.Principal{Subject: "carol", Workspace: "delta", Roles: []auth.Role{auth.RoleAdmin}, Via: "oidc"},
		},
		{
			name:   "custom claim present",
			cfg:    auth.OIDCConfig{WorkspaceClaim: "tenant"},
			claims: map[string]any{"sub": "carol", "tenant": "epsilon"},
			want:   auth.Principal{Subject: "carol", Workspace: "epsilon", Roles: []auth.Role{auth.RoleViewer}, Via: "oidc"},
		},
		{
			name:   "no known role means viewer",
			claims: map[string]any{"sub": "dan", "workspace": "acme", "realm_access": map[string]any{"roles": []string{"superuser", "Admin"}}},
			want:   auth.Principal{Subject: "dan", Workspace: "acme", Roles: []auth.Role{auth.RoleViewer}, Via: "oidc"},
		},
		{
			name:   "realm and top-level roles together",
			claims: map[string]any{"sub": "erin", "workspace": "acme", "realm_access": map[string]any{"roles": []any{"admin", 7}}, "roles": []string{"viewer", "admin"}},
			want:   auth.Principal{Subject: "erin", Workspace: "acme", Roles: []auth.Role{auth.RoleViewer, auth.RoleAdmin}, Via: "oidc"},
		},
		{
			name:   "reserved or odd workspace names are ignored",
			claims: map[string]any{"sub": "fay", "workspace": "_shared", "groups": []string{"/workspaces/_shared/x", "/workspaces/../x", "/workspaces/zeta"}},
			want:   auth.Principal{Subject: "fay", Workspace: "zeta", Roles: []auth.Role{auth.RoleViewer}, Via: "oidc"},
		},
		{
			name:   "no workspace at all",
			claims: map[string]any{"sub": "gus", "workspace": []string{"a", "b"}},
			want:   auth.Principal{Subject: "gus", Workspace: "", Roles: []auth.Role{auth.RoleViewer}, Via: "oidc"},
		},
		{
			name:   "audience checked when configured",
			cfg:    auth.OIDCConfig{Audience: "svc-api"},
			claims: map[string]any{"sub": "hal", "workspace": "acme", "aud": []string{"account", "svc-api"}},
			want:   auth.Principal{Subject: "hal", Workspace: "acme", Roles: []auth.Role{auth.RoleViewer}, Via: "oidc"},
		},
		{
			name:   "any audience when none configured",
			claims: map[string]any{"sub": "ivy", "workspace": "acme", "aud": "something-else"},
			want:   auth.Principal{Subject: "ivy", Workspace: "acme", Roles: []auth.Role{auth.RoleViewer}, Via: "oidc"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := tt.cfg
			cfg.Issuer = iss.URL
			a := newOIDC(t, cfg)
			p, recognised, err := a.Authenticate(context.Background(), withBearer(iss.Mint(tt.claims)))
			if err != nil || !recognised {
				t.Fatalf("Authenticate = (%v, %v); want recognised and valid", recognised, err)
			}
			if diff := cmp.Diff(tt.want, p); diff != "" {
				t.Errorf("principal (-want +got):\n%s", diff)
			}
		})
	}
}

func TestOIDCRefusesBadTokens(t *testing.T) {
	iss := authtest.NewIssuer(t)
	other := authtest.NewIssuer(t)
	claims := map[string]any{"sub": "mallory", "workspace": "acme", "roles": []string{"admin"}}
	tests := []struct {
		name  string
		cfg   auth.OIDCConfig
		token string
	}{
		{"forged signature", auth.OIDCConfig{}, iss.Mint(claims, authtest.WithForeignKey())},
		{"unknown key id", auth.OIDCConfig{}, iss.Mint(claims, authtest.WithKeyID("no-such-key"))},
		{"foreign key, unknown key id", auth.OIDCConfig{}, iss.Mint(claims, authtest.WithForeignKey(), authtest.WithKeyID("rotated"))},
		{"wrong issuer claim", auth.OIDCConfig{}, iss.Mint(claims, authtest.WithIssuer("https://evil.example"))},
		{"token of another issuer", auth.OIDCConfig{}, other.Mint(claims)},
		{"wrong audience", auth.OIDCConfig{Audience: "svc-api"}, iss.Mint(map[string]any{"sub": "m", "workspace": "acme", "aud": "other-api"})},
		{"missing audience", auth.OIDCConfig{Audience: "svc-api"}, iss.Mint(claims)},
		{"expired", auth.OIDCConfig{}, iss.Mint(claims, authtest.Expired())},
		{"no expiry", auth.OIDCConfig{}, iss.Mint(map[string]any{"sub": "m", "exp": nil})},
		{"alg none", auth.OIDCConfig{}, iss.Mint(claims, authtest.WithAlgNone())},
		{"HS256 keyed with the public key", auth.OIDCConfig{}, iss.Mint(claims, authtest.WithHS256PublicKey())},
		{"no subject", auth.OIDCConfig{}, iss.Mint(map[string]any{"workspace": "acme"})},
		{"garbage in three segments", auth.OIDCConfig{}, "abc.def.ghi"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := tt.cfg
			cfg.Issuer = iss.URL
			a := newOIDC(t, cfg)
			p, recognised, err := a.Authenticate(context.Background(), withBearer(tt.token))
			if !recognised || !errors.Is(err, derrors.ErrUnauthenticated) || p.Subject != "" {
				t.Errorf("Authenticate = (%+v, %v, %v); want recognised, ErrUnauthenticated, no principal", p, recognised, err)
			}
			// The same token through a full chain is a 401 too: a refused
			// JWT never falls through to the dev principal.
			chain := auth.Chain{a, auth.DevFallback{}}
			if _, err := chain.Authenticate(context.Background(), withBearer(tt.token)); !errors.Is(err, derrors.ErrUnauthenticated) {
				t.Errorf("chain: %v; want ErrUnauthenticated", err)
			}
		})
	}
}

func TestOIDCRecognisesOnlyJWTs(t *testing.T) {
	iss := authtest.NewIssuer(t)
	a := newOIDC(t, auth.OIDCConfig{Issuer: iss.URL})
	key, _ := auth.NewAPIKey(auth.APIKeyPrefix)
	for _, h := range []string{"", "Bearer " + key, "Bearer opaque-token", "Bearer a.b", "Bearer a.b.c.d", "Basic a.b.c"} {
		r := httptest.NewRequest("GET", "/", nil)
		if h != "" {
			r.Header.Set("Authorization", h)
		}
		if _, recognised, err := a.Authenticate(context.Background(), r); recognised || err != nil {
			t.Errorf("Authorization %q: recognised=%v err=%v; want not recognised", h, recognised, err)
		}
	}
	if iss.DiscoveryHits() != 0 {
		t.Errorf("discovery ran %d times for non-JWT credentials; want 0", iss.DiscoveryHits())
	}
}

func TestNewOIDCAuthenticatorNeedsIssuer(t *testing.T) {
	for _, issuer := range []string{"", "not a url", "ftp://x", "/relative"} {
		if _, err := auth.NewOIDCAuthenticator(auth.OIDCConfig{Issuer: issuer}); !errors.Is(err, derrors.ErrInvalid) {
			t.Errorf("NewOIDCAuthenticator(%q) = %v; want ErrInvalid", issuer, err)
		}
	}
}

// TestOIDCIssuerDownAtStart: discovery is lazy and retried; while it fails
// every token is refused (503, never accepted), retries are spaced, and once
// the issuer answers tokens verify.
func TestOIDCIssuerDownAtStart(t *testing.T) {
	iss := authtest.NewIssuer(t)
	iss.SetDown(true)
	a := newOIDC(t, auth.OIDCConfig{Issuer: iss.URL})
	now := time.Now()
	a.SetNow(func() time.Time { return now })
	token := iss.Mint(map[string]any{"sub": "alice", "workspace": "acme"})
	ctx := context.Background()

	for i := range 3 {
		p, recognised, err := a.Authenticate(ctx, withBearer(token))
		if !recognised || !errors.Is(err, derrors.ErrUnavailable) || p.Subject != "" {
			t.Fatalf("attempt %d while down: (%+v, %v, %v); want recognised, ErrUnavailable", i, p, recognised, err)
		}
	}
	if got := iss.DiscoveryHits(); got != 1 {
		t.Errorf("discovery hit %d times within the retry interval; want 1", got)
	}

	iss.SetDown(false)
	if _, _, err := a.Authenticate(ctx, withBearer(token)); !errors.Is(err, derrors.ErrUnavailable) {
		t.Errorf("before the retry interval: %v; want ErrUnavailable", err)
	}
	now = now.Add(6 * time.Second)
	p, _, err := a.Authenticate(ctx, withBearer(token))
	if err != nil || p.Subject != "alice" || p.Workspace != "acme" {
		t.Fatalf("after the issuer came back: (%+v, %v); want alice@acme", p, err)
	}
	if got := iss.DiscoveryHits(); got != 2 {
		t.Errorf("discovery hits = %d; want 2", got)
	}
	// A forged token is still refused after discovery.
	if _, _, err := a.Authenticate(ctx, withBearer(iss.Mint(map[string]any{"sub": "m"}, authtest.WithForeignKey()))); !errors.Is(err, derrors.ErrUnauthenticated) {
		t.Errorf("forged token after recovery: %v; want ErrUnauthenticated", err)
	}
}

// TestOIDCConcurrentFirstUse: many requests arriving before discovery share
// one discovery and all verify.
func TestOIDCConcurrentFirstUse(t *testing.T) {
	iss := authtest.NewIssuer(t)
	a := newOIDC(t, auth.OIDCConfig{Issuer: iss.URL})
	token := iss.Mint(map[string]any{"sub": "alice", "workspace": "acme"})
	const n = 8
	errs := make(chan error, n)
	for range n {
		go func() {
			_, _, err := a.Authenticate(context.Background(), withBearer(token))
			errs <- err
		}()
	}
	for range n {
		if err := <-errs; err != nil {
			t.Errorf("concurrent Authenticate: %v", err)
		}
	}
	if got := iss.DiscoveryHits(); got != 1 {
		t.Errorf("discovery ran %d times; want 1", got)
	}
}
