package auth

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"svc/internal/platform/derrors"
)

// Authenticator turns a request's credential into a Principal.
//
// recognised says whether this authenticator owns the credential's kind (an
// ak_ key, a JWT, no credential at all). A recognised credential that does
// not verify is an error at once (401, or a 5xx when a dependency failed):
// the chain never falls through to a weaker authenticator after a refusal.
type Authenticator interface {
	Authenticate(ctx context.Context, r *http.Request) (p Principal, recognised bool, err error)
}

// errMissingCredential marks a 401 for a request that carried no credential
// at all, so the failure limiter does not count it as a guess.
var errMissingCredential = fmt.Errorf("%w: missing bearer credential", derrors.ErrUnauthenticated)

// Chain tries its authenticators in order; the first that recognises the
// credential decides (spec §5.2).
type Chain []Authenticator

// Authenticate returns the principal of the first authenticator that
// recognises the request's credential, or its error. When none recognises it
// the answer is 401. It fails closed: an authenticator error, or a
// "successful" principal without subject or via, is never a success.
func (c Chain) Authenticate(ctx context.Context, r *http.Request) (Principal, error) {
	for _, a := range c {
		p, recognised, err := a.Authenticate(ctx, r)
		if err != nil {
			if !recognised && !errors.Is(err, derrors.ErrUnauthenticated) {
				return Principal{}, fmt.Errorf("auth: authenticator failed: %w", err)
			}
			return Principal{}, err
		}
		if !recognised {
			continue
		}
		if p.Subject == "" || p.Via == "" {
			return Principal{}, fmt.Errorf("%w: credential names no subject", derrors.ErrUnauthenticated)
		}
		return p, nil
	}
	if !hasAuthorization(r) {
		return Principal{}, errMissingCredential
	}
	return Principal{}, fmt.Errorf("%w: unsupported or malformed Authorization header", derrors.ErrUnauthenticated)
}

// Header names the dev fallback and workspace selection read.
const (
	// TenantHeader names the dev principal's workspace (spec §5.5).
	TenantHeader = "x-svc-tenant"
	// WorkspaceHeader selects the active workspace among the caller's
	// memberships (spec §5.6).
	WorkspaceHeader = "x-svc-workspace"
)

// DefaultWorkspace is the dev principal's workspace when no x-svc-tenant
// header is sent.
const DefaultWorkspace = "default"

// DevFallback recognises requests with no Authorization header at all. With
// RequireAuth it refuses them (401); otherwise it answers the dev principal
// {subject dev, workspace from x-svc-tenant or "default", roles [admin]}
// (spec §5.5). Put it last in a Chain.
type DevFallback struct {
	RequireAuth bool
}

// Authenticate implements Authenticator.
func (d DevFallback) Authenticate(_ context.Context, r *http.Request) (Principal, bool, error) {
	if hasAuthorization(r) {
		// A credential was sent, even a malformed one: never downgrade it
		// to the dev principal.
		return Principal{}, false, nil
	}
	if d.RequireAuth {
		return Principal{}, true, errMissingCredential
	}
	ws := DefaultWorkspace
	if v := strings.TrimSpace(r.Header.Get(TenantHeader)); v != "" {
		if !ValidWorkspaceID(v) {
			return Principal{}, true, derrors.Invalidf("%s %q is not a valid workspace id", TenantHeader, v)
		}
		ws = v
	}
	return Principal{Subject: "dev", Workspace: ws, Roles: []Role{RoleAdmin}, Via: ViaDev}, true, nil
}
