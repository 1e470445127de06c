package auth

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"svc/derrors"
)

// Memberships is what workspace selection needs from storage (spec §5.6).
type Memberships interface {
	// Membership returns the subject's role in workspace; ok is false when
	// the subject is not a member.
	Membership(ctx context.Context, workspace, subject string) (role Role, ok bool, err error)
	// EnsureMembership adds the subject with role unless it is already a
	// member; an existing membership, and its role, are left unchanged.
	EnsureMembership(ctx context.Context, workspace, subject string, role Role) error
}

// Resolver turns a request into the caller's Principal: failure rate limit,
// then the authenticator chain, then active-workspace selection.
type Resolver struct {
	// Chain authenticates the credential.
	Chain Chain
	// Limiter refuses addresses with too many recent failures; nil disables it.
	Limiter *FailureLimiter
	// Memberships backs workspace selection and lazy promotion; nil disables both.
	Memberships Memberships
	// ClientAddr names the request's source for the limiter; r.RemoteAddr
	// when nil. Behind a proxy, pass the API's trusted real-IP extractor.
	ClientAddr func(r *http.Request) string
}

// ResolverConfig is what NewResolver needs to build the standard chain.
type ResolverConfig struct {
	// Keys resolves API keys; nil disables API-key authentication.
	Keys KeyLookup
	// Memberships backs x-svc-workspace and lazy promotion; may be nil.
	Memberships Memberships
	// OIDC enables OIDC tokens when OIDC.Issuer is set.
	OIDC OIDCConfig
	// RequireAuth refuses requests without a credential (SVC_REQUIRE_AUTH).
	RequireAuth bool
	// FailLimit is the number of failed authentications per source address
	// per minute before 429 (SVC_AUTH_FAIL_LIMIT); 0 or less disables it.
	FailLimit int
}

// NewResolver builds the standard resolver: API keys, then OIDC (when an
// issuer is configured), then the dev fallback.
func NewResolver(cfg ResolverConfig) (*Resolver, error) {
	var chain Chain
	if cfg.Keys != nil {
		chain = append(chain, NewAPIKeyAuthenticator(cfg.Keys))
	}
	if cfg.OIDC.Issuer != "" {
		o, err := NewOIDCAuthenticator(cfg.OIDC)
		if err != nil {
			return nil, fmt.Errorf("auth.NewResolver: %w", err)
		}
		chain = append(chain, o)
	}
	chain = append(chain, DevFallback{RequireAuth: cfg.RequireAuth})
	var lim *FailureLimiter
	if cfg.FailLimit > 0 {
		lim = NewFailureLimiter(cfg.FailLimit, 0, 0)
	}
	return &Resolver{Chain: chain, Limiter: lim, Memberships: cfg.Memberships}, nil
}

// Resolve authenticates req and selects its active workspace. Errors wrap
// derrors.ErrRateLimited (429, checked before any verification work),
// ErrUnauthenticated (401), ErrInvalid (a malformed x-svc-tenant), or a
// dependency's error (5xx); every error refuses the request.
func (rv *Resolver) Resolve(ctx context.Context, req *http.Request) (Principal, error) {
	addr := req.RemoteAddr
	if rv.ClientAddr != nil {
		addr = rv.ClientAddr(req)
	}
	if rv.Limiter != nil && !rv.Limiter.Allow(addr) {
		return Principal{}, fmt.Errorf("%w: too many failed authentications from this address; retry in a minute", derrors.ErrRateLimited)
	}
	p, err := rv.Chain.Authenticate(ctx, req)
	if err != nil {
		// Only a presented credential that failed counts as a guess; a
		// missing one or an unreachable dependency does not.
		if rv.Limiter != nil && errors.Is(err, derrors.ErrUnauthenticated) && !errors.Is(err, errMissingCredential) {
			rv.Limiter.Fail(addr)
		}
		return Principal{}, err
	}
	return rv.selectWorkspace(ctx, req, p)
}

// selectWorkspace applies spec §5.6. An OIDC principal's own workspace (from
// its token) is promoted to a membership on first use. x-svc-workspace then
// switches a person (OIDC or dev) to another workspace they are a member of,
// taking the role from that membership; any other value silently keeps the
// default. API keys and runners stay bound to their key's workspace.
func (rv *Resolver) selectWorkspace(ctx context.Context, req *http.Request, p Principal) (Principal, error) {
	if p.IsMachine() || rv.Memberships == nil {
		return p, nil
	}
	if p.Via == ViaOIDC && p.Workspace != "" {
		if err := rv.promote(ctx, p); err != nil {
			return Principal{}, err
		}
	}
	want := strings.TrimSpace(req.Header.Get(WorkspaceHeader))
	if want == "" || want == p.Workspace || !ValidWorkspaceID(want) {
		return p, nil
	}
	role, ok, err := rv.Memberships.Membership(ctx, want, p.Subject)
	if err != nil {
		return Principal{}, fmt.Errorf("auth: membership of %q in %q: %w", p.Subject, want, err)
	}
	if !ok || !role.Valid() {
		return p, nil // spec §5.6: fall back to the default, never 403
	}
	p.Workspace = want
	p.Roles = []Role{role}
	return p, nil
}

// promote records the token's workspace as a membership with the token's
// role, once; later changes to that membership are not overwritten.
func (rv *Resolver) promote(ctx context.Context, p Principal) error {
	_, ok, err := rv.Memberships.Membership(ctx, p.Workspace, p.Subject)
	if err != nil {
		return fmt.Errorf("auth: membership of %q in %q: %w", p.Subject, p.Workspace, err)
	}
	if ok {
		return nil
	}
	role := p.HighestRole()
	if !role.Valid() {
		role = RoleViewer
	}
	if err := rv.Memberships.EnsureMembership(ctx, p.Workspace, p.Subject, role); err != nil {
		return fmt.Errorf("auth: promoting %q to a member of %q: %w", p.Subject, p.Workspace, err)
	}
	return nil
}
