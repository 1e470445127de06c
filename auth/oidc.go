package auth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"

	"svc/internal/platform/derrors"
)

// OIDCConfig configures the OIDC authenticator (spec §5.3).
type OIDCConfig struct {
	// Issuer is the issuer URL (OIDC_ISSUER); required.
	Issuer string
	// Audience, when set (OIDC_AUDIENCE), must be among the token's aud.
	Audience string
	// WorkspaceClaim names the claim that carries the workspace
	// (WORKSPACE_CLAIM); "workspace" when empty.
	WorkspaceClaim string
	// GroupPrefix is the group path under which the first segment names a
	// workspace (/workspaces/<ws>/...); "/workspaces/" when empty.
	GroupPrefix string
	// HTTPClient fetches discovery and keys; a client with a 10 s timeout
	// when nil.
	HTTPClient *http.Client
}

// asymmetricAlgs are the only signature algorithms accepted. Listing them
// explicitly keeps "none" and the HMAC family out even if the issuer's
// discovery document advertises them (HS256 signed with the public key is the
// classic algorithm-confusion forgery).
var asymmetricAlgs = []string{
	oidc.RS256, oidc.RS384, oidc.RS512,
	oidc.ES256, oidc.ES384, oidc.ES512,
	oidc.PS256, oidc.PS384, oidc.PS512,
	oidc.EdDSA,
}

const (
	defaultWorkspaceClaim = "workspace"
	defaultGroupPrefix    = "/workspaces/"
	discoveryTimeout      = 10 * time.Second
	// discoveryRetry spaces discovery attempts after a failure, so an issuer
	// that is down is not hammered by every request.
	discoveryRetry = 5 * time.Second
)

// OIDCAuthenticator verifies OIDC access tokens (JWTs) against the issuer's
// key set. Discovery happens on first use and is retried after a failure,
// so the service starts while the issuer is down; until discovery succeeds
// every token is refused (fail closed, 503).
type OIDCAuthenticator struct {
	cfg    OIDCConfig
	client *http.Client
	now    func() time.Time
	retry  time.Duration
	// sem admits one discovery at a time; waiters honour their context.
	sem chan struct{}

	mu       sync.Mutex // guards the fields below
	verifier *oidc.IDTokenVerifier
	lastFail time.Time
	lastErr  error
}

// NewOIDCAuthenticator returns an authenticator for cfg. It does not contact
// the issuer; an empty or malformed Issuer is an error (the OIDC verifier is
// enabled only when an issuer is configured).
func NewOIDCAuthenticator(cfg OIDCConfig) (*OIDCAuthenticator, error) {
	u, err := url.Parse(cfg.Issuer)
	if cfg.Issuer == "" || err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return nil, derrors.Invalidf("OIDC issuer %q: want an http(s) URL", cfg.Issuer)
	}
	if cfg.WorkspaceClaim == "" {
		cfg.WorkspaceClaim = defaultWorkspaceClaim
	}
	if cfg.GroupPrefix == "" {
		cfg.GroupPrefix = defaultGroupPrefix
	}
	if !strings.HasSuffix(cfg.GroupPrefix, "/") {
		cfg.GroupPrefix += "/"
	}
	client := cfg.HTTPClient
	if client == nil {
		client = &http.Client{Timeout: discoveryTimeout}
	}
	return &OIDCAuthenticator{
		cfg:    cfg,
		client: client,
		now:    time.Now,
		retry:  discoveryRetry,
		sem:    make(chan struct{}, 1),
	}, nil
}

// verifierFor returns the verifier, running discovery if it has not
// succeeded yet.
func (a *OIDCAuthenticator) verifierFor(ctx context.Context) (*oidc.IDTokenVerifier, error) {
	if v, err := a.cached(); v != nil || err != nil {
		return v, err
	}
	select {
	case a.sem <- struct{}{}:
	case <-ctx.Done():
		return nil, fmt.Errorf("%w: waiting for OIDC discovery: %w", derrors.ErrUnavailable, ctx.Err())
	}
	defer func() { <-a.sem }()
	// Another request may have finished discovery while this one waited.
	if v, err := a.cached(); v != nil || err != nil {
		return v, err
	}
	// Discovery is shared by every request, so one caller going away must
	// not abort it; it stays bounded by its own timeout.
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), discoveryTimeout)
	defer cancel()
	provider, err := oidc.NewProvider(oidc.ClientContext(dctx, a.client), a.cfg.Issuer)
	a.mu.Lock()
	defer a.mu.Unlock()
	if err != nil {
		a.lastFail, a.lastErr = a.now(), err
		return nil, fmt.Errorf("%w: OIDC discovery at %s: %v", derrors.ErrUnavailable, a.cfg.Issuer, err)
	}
	// The provider keeps a.client (from the context) for its key set, which
	// it refreshes with its own background context.
	a.verifier = provider.Verifier(&oidc.Config{
		ClientID:             a.cfg.Audience,
		SkipClientIDCheck:    a.cfg.Audience == "",
		SupportedSigningAlgs: asymmetricAlgs,
		Now:                  a.now,
	})
	return a.verifier, nil
}

// cached returns the verifier if discovery succeeded, an error if it failed
// recently, or neither when a new attempt is due.
func (a *OIDCAuthenticator) cached() (*oidc.IDTokenVerifier, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.verifier != nil {
		return a.verifier, nil
	}
	if a.lastErr != nil && a.now().Sub(a.lastFail) < a.retry {
		return nil, fmt.Errorf("%w: OIDC issuer %s unreachable: %v", derrors.ErrUnavailable, a.cfg.Issuer, a.lastErr)
	}
	return nil, nil
}

// looksLikeJWT reports whether token has the JWS compact shape: three
// dot-separated segments (spec §5.1). Empty segments still count, so that an
// unsigned "alg: none" token is recognised, and refused, here.
func looksLikeJWT(token string) bool { return strings.Count(token, ".") == 2 }

// Authenticate implements Authenticator: it recognises JWT-shaped bearer
// tokens and verifies signature (asymmetric algorithms only), issuer,
// audience when configured, and expiry.
func (a *OIDCAuthenticator) Authenticate(ctx context.Context, r *http.Request) (Principal, bool, error) {
	token, ok := BearerToken(r)
	if !ok || !looksLikeJWT(token) {
		return Principal{}, false, nil
	}
	v, err := a.verifierFor(ctx)
	if err != nil {
		return Principal{}, true, err
	}
	idt, err := v.Verify(ctx, token)
	if err != nil {
		var expired *oidc.TokenExpiredError
		if errors.As(err, &expired) {
			return Principal{}, true, fmt.Errorf("%w: token expired", derrors.ErrUnauthenticated)
		}
		return Principal{}, true, fmt.Errorf("%w: token verification failed: %v", derrors.ErrUnauthenticated, err)
	}
	var raw map[string]json.RawMessage
	if err := idt.Claims(&raw); err != nil {
		return Principal{}, true, fmt.Errorf("%w: unreadable token claims: %v", derrors.ErrUnauthenticated, err)
	}
	if idt.Subject == "" {
		return Principal{}, true, fmt.Errorf("%w: token has no subject", derrors.ErrUnauthenticated)
	}
	if ReservedSubject(idt.Subject) {
		// A person acting as "key:<id>" or "operator" would inherit the
		// creator rights over what those keys made; refuse rather than map,
		// so no stored record can ever be reached through a token.
		return Principal{}, true, fmt.Errorf("%w: token subject %q is reserved for API keys", derrors.ErrUnauthenticated, idt.Subject)
	}
	return Principal{
		Subject:   idt.Subject,
		Workspace: a.workspaceFrom(raw),
		Roles:     rolesFrom(raw),
		Via:       ViaOIDC,
		Email:     stringClaim(raw, "email"),
		Name:      stringClaim(raw, "name"),
	}, true, nil
}

// workspaceFrom reads the workspace claim, else the first group under the
// group prefix (/workspaces/<ws>/... yields <ws>). A value that is not a
// valid workspace id is ignored: the principal then has no workspace and can
// only reach its memberships through x-svc-workspace.
func (a *OIDCAuthenticator) workspaceFrom(raw map[string]json.RawMessage) string {
	if ws := stringClaim(raw, a.cfg.WorkspaceClaim); ValidWorkspaceID(ws) {
		return ws
	}
	for _, g := range stringsClaim(raw["groups"]) {
		rest, ok := strings.CutPrefix(g, a.cfg.GroupPrefix)
		if !ok {
			continue
		}
		ws, _, _ := strings.Cut(rest, "/")
		if ValidWorkspaceID(ws) {
			return ws
		}
	}
	return ""
}

// rolesFrom intersects the token's realm roles (realm_access.roles, and a
// top-level roles claim) with viewer, member, admin; none means viewer.
func rolesFrom(raw map[string]json.RawMessage) []Role {
	var names []string
	var realm struct {
		Roles json.RawMessage `json:"roles"`
	}
	if json.Unmarshal(raw["realm_access"], &realm) == nil {
		names = append(names, stringsClaim(realm.Roles)...)
	}
	names = append(names, stringsClaim(raw["roles"])...)
	roles := make([]Role, 0, len(names))
	for _, n := range names {
		roles = append(roles, Role(n))
	}
	roles = sortRoles(roles)
	if len(roles) == 0 {
		return []Role{RoleViewer}
	}
	return roles
}

// stringClaim returns a string claim, or "" when absent or not a string.
func stringClaim(raw map[string]json.RawMessage, name string) string {
	var s string
	if json.Unmarshal(raw[name], &s) != nil {
		return ""
	}
	return s
}

// stringsClaim returns the string elements of a JSON array claim, skipping
// anything else, so one odd element does not hide the rest.
func stringsClaim(msg json.RawMessage) []string {
	var items []json.RawMessage
	if json.Unmarshal(msg, &items) != nil {
		return nil
	}
	out := make([]string, 0, len(items))
	for _, it := range items {
		var s string
		if json.Unmarshal(it, &s) == nil {
			out = append(out, s)
		}
	}
	return out
}
