package api

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/labstack/echo/v4"

	"svc/auth"
	"svc/internal/platform/derrors"
	"svc/internal/service/identity"
	"svc/store"
)

// retryAfterSeconds is what a 429 for failed authentication tells the
// client to wait: the failure limiter's window is one minute, so after that
// failing attempts are answered 401 again whatever happened inside it.
const retryAfterSeconds = 60

// identityAdapter lets package auth reach the store through its own narrow
// interfaces (auth.KeyLookup, auth.Memberships), so auth never imports store.
type identityAdapter struct {
	st  store.Store
	ids *identity.Service
}

var (
	_ auth.KeyLookup   = identityAdapter{}
	_ auth.Memberships = identityAdapter{}
)

// KeyByHash implements auth.KeyLookup: the key and its owner's standing,
// in one read.
func (a identityAdapter) KeyByHash(ctx context.Context, hash []byte) (auth.StoredKey, error) {
	g, err := a.st.APIKeyGrantByHash(ctx, hash)
	if err != nil {
		return auth.StoredKey{}, err
	}
	k := storedKey(g.Key)
	k.MemberRole = auth.Role(g.MemberRole)
	k.OwnerKeyFound = g.OwnerKeyFound
	k.OwnerKeyRoles = toRoles(g.OwnerKeyRoles)
	return k, nil
}

// toRoles converts stored role names; unknown ones pass through for auth to
// refuse.
func toRoles(rs []string) []auth.Role {
	out := make([]auth.Role, 0, len(rs))
	for _, r := range rs {
		out = append(out, auth.Role(r))
	}
	return out
}

// storedKey converts the store's record into what auth verifies.
func storedKey(k store.APIKey) auth.StoredKey {
	// An unknown scope is passed through as is: auth refuses such a key
	// rather than widening it by dropping the scope.
	scopes := make([]auth.Scope, 0, len(k.Scopes))
	for _, s := range k.Scopes {
		scopes = append(scopes, auth.Scope(s))
	}
	return auth.StoredKey{
		ID:        k.ID,
		Workspace: k.Workspace,
		Subject:   k.Subject,
		Roles:     toRoles(k.Roles),
		Scopes:    scopes,
		Prefix:    k.Prefix,
		Kind:      auth.KeyKind(k.Kind),
		Hash:      k.Hash,
	}
}

// Membership implements auth.Memberships.
func (a identityAdapter) Membership(ctx context.Context, workspace, subject string) (auth.Role, bool, error) {
	m, err := a.st.GetMember(ctx, workspace, subject)
	if errors.Is(err, derrors.ErrNotFound) {
		return "", false, nil
	}
	if err != nil {
		return "", false, err
	}
	return auth.Role(m.Role), true, nil
}

// EnsureMembership implements auth.Memberships: the lazy promotion of a
// token's workspace claim, which the identity service owns.
func (a identityAdapter) EnsureMembership(ctx context.Context, workspace, subject string, role auth.Role) (bool, error) {
	return a.ids.EnsureMembership(ctx, workspace, subject, role)
}

// devWorkspaces remembers the workspaces whose record and dev admin
// membership this process has already ensured, so the dev principal costs a
// write only on its first request per workspace.
type devWorkspaces struct {
	mu   sync.Mutex
	done map[string]bool
}

// ensureDev makes the dev principal's workspace a real workspace with dev as
// an admin member, so that `svc dev` lists something sensible under
// /workspaces and /members.
func (s *Server) ensureDev(ctx context.Context, workspace string) error {
	if s.store == nil {
		return nil
	}
	s.dev.mu.Lock()
	done := s.dev.done[workspace]
	s.dev.mu.Unlock()
	if done {
		return nil
	}
	m := store.Member{Workspace: workspace, Subject: devSubject, Role: string(auth.RoleAdmin), AddedAt: s.now()}
	if err := s.identityService().EnsureMember(ctx, m, devSubject); err != nil {
		return fmt.Errorf("api: ensuring the dev workspace %q: %w", workspace, err)
	}
	s.dev.mu.Lock()
	s.dev.done[workspace] = true
	s.dev.mu.Unlock()
	return nil
}

// devSubject is the dev fallback principal's subject (spec §5.5).
const devSubject = "dev"

// newResolver builds the authenticator chain from the configuration: API
// keys from the store, OIDC when OIDC_ISSUER is set, then the dev fallback
// unless SVC_REQUIRE_AUTH.
func newResolver(o Options, now func() time.Time) (*auth.Resolver, error) {
	rc := auth.ResolverConfig{
		OIDC: auth.OIDCConfig{
			Issuer:         o.Config.OIDCIssuer,
			Audience:       o.Config.OIDCAudience,
			WorkspaceClaim: o.Config.WorkspaceClaim,
			GroupPrefix:    o.Config.OIDCGroupPrefix,
		},
		RequireAuth: o.Config.RequireAuth,
		FailLimit:   o.Config.AuthFailLimit,
	}
	if o.Store != nil {
		a := identityAdapter{st: o.Store, ids: identity.New(identity.Options{Store: o.Store, Now: now})}
		rc.Keys, rc.Memberships = a, a
	}
	rv, err := auth.NewResolver(rc)
	if err != nil {
		return nil, fmt.Errorf("api: building the authenticator chain (check OIDC_ISSUER): %w", err)
	}
	extract, err := clientIPExtractor(o.Config.TrustedProxies)
	if err != nil {
		return nil, fmt.Errorf("api: SVC_TRUSTED_PROXIES: %w", err)
	}
	rv.ClientAddr = extract
	return rv, nil
}

// clientIPExtractor returns how the client address is found (for the
// failure limit, and Echo's RealIP): the peer that connected, unless it is
// one of the trusted proxies (comma-separated CIDRs or addresses), in which
// case the right-most X-Forwarded-For entry that is not a trusted proxy.
// X-Forwarded-For is never trusted by default: a header the client writes
// would let it pick a fresh address for every guess.
func clientIPExtractor(trusted string) (func(*http.Request) string, error) {
	var opts []echo.TrustOption
	for _, f := range strings.Split(trusted, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		pfx, err := netip.ParsePrefix(f)
		if err != nil {
			addr, aerr := netip.ParseAddr(f)
			if aerr != nil {
				return nil, derrors.Invalidf("%q is neither a CIDR nor an address", f)
			}
			pfx = netip.PrefixFrom(addr, addr.BitLen())
		}
		pfx = pfx.Masked()
		opts = append(opts, echo.TrustIPRange(&net.IPNet{IP: pfx.Addr().AsSlice(), Mask: net.CIDRMask(pfx.Bits(), pfx.Addr().BitLen())}))
	}
	if len(opts) == 0 {
		return echo.ExtractIPDirect(), nil
	}
	// Echo trusts loopback, link-local and private ranges unless told not
	// to: only the configured proxies are trusted here.
	opts = append(opts, echo.TrustLoopback(false), echo.TrustLinkLocal(false), echo.TrustPrivateNet(false))
	return echo.ExtractIPFromXFFHeader(opts...), nil
}

// authenticate is the middleware derived from a route's action: public
// routes pass, internal routes need the operator token, every other route
// needs a principal, and role-gated routes also need Authorize to allow the
// action. The principal is stored in the request context for the handler.
func (s *Server) authenticate(r Route) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		switch r.Action {
		case auth.Public:
			return next
		case auth.Internal:
			return func(c echo.Context) error {
				if err := s.checkInternal(c); err != nil {
					return err
				}
				return next(c)
			}
		}
		return func(c echo.Context) error {
			req := c.Request()
			// An approved parked call runs as the caller who made it
			// (approvals.go); only this process can mark a request so.
			if p, ok := replayPrincipal(req.Context()); ok {
				if err := auth.Authorize(p, r.Action); err != nil {
					return err
				}
				c.SetRequest(req.WithContext(auth.WithPrincipal(req.Context(), p)))
				return next(c)
			}
			// A runner job's run-scoped OTLP token (api/runners.go).
			if req, ok, err := s.runTokenPrincipal(req, r); ok {
				if err != nil {
					return s.authError(c, s.runTokenFailed(req, err))
				}
				c.SetRequest(req)
				return next(c)
			}
			p, err := s.resolver.Resolve(req.Context(), req)
			if err != nil {
				return s.authError(c, err)
			}
			if p.Via == auth.ViaDev {
				if err := s.ensureDev(req.Context(), p.Workspace); err != nil {
					return err
				}
			}
			// Authorize also keeps a runner key to the runner routes,
			// Authenticated ones (/me, /mcp) included.
			if err := auth.Authorize(p, r.Action); err != nil {
				return err
			}
			// The agent acting with the credential, when the client
			// declares one (docs/agents.md): its headers, else on a tool
			// call the MCP client's info.
			agent, err := auth.DeclaredAgent(req.Header)
			if err != nil {
				return err
			}
			if agent == nil {
				agent = mcpClientAgent(req.Context())
			}
			p.Agent = agent
			c.SetRequest(req.WithContext(auth.WithPrincipal(req.Context(), p)))
			return next(c)
		}
	}
}

// authError adds the headers a refusal needs: Retry-After on 429, and on
// /mcp a 401 that points at the protected-resource metadata (RFC 9728 §5.1),
// which is how an MCP client learns where to get a token.
func (s *Server) authError(c echo.Context, err error) error {
	switch {
	case errors.Is(err, derrors.ErrRateLimited):
		c.Response().Header().Set("Retry-After", strconv.Itoa(retryAfterSeconds))
	case errors.Is(err, derrors.ErrUnauthenticated) && c.Path() == mcpPath:
		c.Response().Header().Set(echo.HeaderWWWAuthenticate,
			fmt.Sprintf("Bearer resource_metadata=%q", s.publicURL(c)+resourceMetadataPath))
	}
	return err
}

// checkInternal admits a call of an /internal route when its
// x-internal-token equals SVC_INTERNAL_TOKEN. Failures count against the
// client address like failed logins, and past the limit a wrong token gets
// 429; the right token is never refused.
func (s *Server) checkInternal(c echo.Context) error {
	req := c.Request()
	if err := auth.CheckInternalToken(s.cfg.InternalToken, req.Header.Get(auth.InternalTokenHeader)); err != nil {
		if s.cfg.InternalToken != "" {
			return s.authError(c, s.resolver.Failed(req, "", err))
		}
		return err
	}
	return nil
}

// principal is the caller of a route that went through authenticate.
func principal(c echo.Context) auth.Principal {
	p, _ := auth.FromContext(c.Request().Context())
	return p
}
