package auth

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"svc/internal/platform/derrors"
)

// Memberships is what workspace selection needs from storage (spec §5.6).
type Memberships interface {
	// Membership returns the subject's role in workspace; ok is false when
	// the subject is not a member.
	Membership(ctx context.Context, workspace, subject string) (role Role, ok bool, err error)
	// EnsureMembership adds the subject with role unless it is already a
	// member; an existing membership, and its role, are left unchanged. A
	// subject removed from the workspace (DELETE /members) is not added
	// until they accept an invite: member is then false.
	EnsureMembership(ctx context.Context, workspace, subject string, role Role) (member bool, err error)
}

// Resolver turns a request into the caller's Principal: failure rate limit,
// then the authenticator chain, then active-workspace selection.
type Resolver struct {
	// Chain authenticates the credential.
	Chain Chain
	// Failures turns failed authentications from an address, or against a
	// key prefix, past the limit into 429s; nil disables it. It never
	// refuses a valid credential.
	Failures *FailureGuard
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
	// FailLimit is the number of failed authentications per source address,
	// and per key prefix, per minute after which failing attempts get 429
	// (SVC_AUTH_FAIL_LIMIT); 0 or less disables it.
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
	return &Resolver{Chain: chain, Failures: NewFailureGuard(cfg.FailLimit), Memberships: cfg.Memberships}, nil
}

// Resolve authenticates req and selects its active workspace. Errors wrap
// derrors.ErrUnauthenticated (401), ErrRateLimited (429: a failed attempt
// from an address or against a key prefix past the failure limit; a valid
// credential is never refused), ErrInvalid (a malformed x-svc-tenant), or a
// dependency's error (5xx); every error refuses the request.
func (rv *Resolver) Resolve(ctx context.Context, req *http.Request) (Principal, error) {
	p, err := rv.Chain.Authenticate(ctx, req)
	if err != nil {
		// Only a presented credential that failed counts as a guess; a
		// missing one or an unreachable dependency does not.
		if errors.Is(err, derrors.ErrUnauthenticated) && !errors.Is(err, errMissingCredential) {
			token, _ := BearerToken(req)
			return Principal{}, rv.Failed(req, token, err)
		}
		return Principal{}, err
	}
	return rv.selectWorkspace(ctx, req, p)
}

// Failed records a failed authentication of req, which presented
// credential ("" when it was not a bearer key), and returns the error to
// answer: err itself, or a 429 when the client address or the credential's
// key prefix is past the failure limit.
func (rv *Resolver) Failed(req *http.Request, credential string, err error) error {
	if rv.Failures.Fail(rv.clientAddr(req), credential) {
		return fmt.Errorf("%w: too many failed authentications from this address or for this key; retry in a minute", derrors.ErrRateLimited)
	}
	return err
}

// clientAddr is the address the failure limit counts.
func (rv *Resolver) clientAddr(req *http.Request) string {
	if rv.ClientAddr != nil {
		return rv.ClientAddr(req)
	}
	return req.RemoteAddr
}

// selectWorkspace applies spec §5.6. An OIDC principal's own workspace (from
// its token) is promoted to a membership on first use, unless an admin
// removed them from it: they then have no default workspace, exactly like a
// token without a workspace claim, until they accept an invite.
// x-svc-workspace then switches a person (OIDC or dev) to another workspace
// they are a member of, taking the role from that membership; any other
// value silently keeps the default. API keys and runners stay bound to their
// key's workspace.
func (rv *Resolver) selectWorkspace(ctx context.Context, req *http.Request, p Principal) (Principal, error) {
	if p.IsMachine() || rv.Memberships == nil {
		return p, nil
	}
	if p.Via == ViaOIDC && p.Workspace != "" {
		member, err := rv.promote(ctx, p)
		if err != nil {
			return Principal{}, err
		}
		if !member {
			// Removed: silent fallback, as for a non-member selection
			// (never 403). The token's roles applied to that workspace only.
			p.Workspace, p.Roles = "", nil
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
// role, once; later changes to that membership are not overwritten, and a
// removal sticks. It reports whether p is a member of its token's workspace.
func (rv *Resolver) promote(ctx context.Context, p Principal) (member bool, err error) {
	_, ok, err := rv.Memberships.Membership(ctx, p.Workspace, p.Subject)
	if err != nil {
		return false, fmt.Errorf("auth: membership of %q in %q: %w", p.Subject, p.Workspace, err)
	}
	if ok {
		return true, nil
	}
	role := p.HighestRole()
	if !role.Valid() {
		role = RoleViewer
	}
	member, err = rv.Memberships.EnsureMembership(ctx, p.Workspace, p.Subject, role)
	if err != nil {
		return false, fmt.Errorf("auth: promoting %q to a member of %q: %w", p.Subject, p.Workspace, err)
	}
	return member, nil
}
