package api

import (
	"bytes"
	"context"
	"crypto/rand"
	"fmt"
	"mime"
	"net/http"
	"strings"
	"time"

	"github.com/labstack/echo/v4"
	mcpauth "github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/modelcontextprotocol/go-sdk/oauthex"

	"svc/auth"
	"svc/internal/platform/derrors"
)

// The agent tool endpoint (spec §4.11, §5.10): the official MCP Go SDK's
// streamable-HTTP server at /mcp, behind the same authentication as every
// other route, and the RFC 9728 metadata that tells an MCP client which
// authorization server issues tokens for it.
const (
	mcpPath              = "/mcp"
	resourceMetadataPath = "/.well-known/oauth-protected-resource"
	// mcpSessionIdle closes MCP sessions that sent nothing for this long, so
	// clients that vanish do not hold memory forever.
	mcpSessionIdle = 30 * time.Minute
	// principalExtraKey is where an MCP tool handler finds the caller:
	// req.Extra.TokenInfo.Extra[principalExtraKey] (see mcpPrincipal).
	principalExtraKey = "svc.principal"
)

func (s *Server) mcpRoutes() []Route {
	if s.e != nil {
		// Tool calls are served by the routes (mcp_dispatch.go); this tells
		// a route that it serves one. NewServer builds the table after the
		// Echo instance and before serving, so the chain is complete in time.
		s.e.Use(markToolCall)
	}
	h := s.serveMCP
	metadata := s.resourceMetadata
	return []Route{
		{Method: http.MethodGet, Path: resourceMetadataPath, Action: auth.Public,
			Summary: "OAuth 2.0 protected-resource metadata (RFC 9728) of the MCP endpoint", Handler: metadata},
		{Method: http.MethodGet, Path: resourceMetadataPath + mcpPath, Action: auth.Public,
			Summary: "OAuth 2.0 protected-resource metadata (RFC 9728) at the path-specific location", Handler: metadata},
		{Method: http.MethodPost, Path: mcpPath, Action: auth.Authenticated,
			Summary: "MCP streamable HTTP: send a JSON-RPC message", Handler: h},
		{Method: http.MethodGet, Path: mcpPath, Action: auth.Authenticated,
			Summary: "MCP streamable HTTP: open the server-to-client event stream", Handler: h},
		{Method: http.MethodDelete, Path: mcpPath, Action: auth.Authenticated,
			Summary: "MCP streamable HTTP: end a session", Handler: h},
	}
}

// newMCPHandler builds the MCP server. Its tools (mcp_tools.go), one per
// authenticated route, are generated from the route table, which NewServer
// builds after this and then registers them (registerMCPTools).
func (s *Server) newMCPHandler() http.Handler {
	srv := mcp.NewServer(&mcp.Implementation{Name: "svc", Title: "svc evaluation control plane", Version: s.version}, &mcp.ServerOptions{
		Logger:       s.logger,
		Capabilities: &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{ListChanged: true}},
	})
	s.mcpServer = srv
	stream := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, &mcp.StreamableHTTPOptions{
		Logger:              s.logger,
		SessionTimeout:      mcpSessionIdle,
		MaxRequestBodyBytes: s.maxBody,
	})
	// The SDK hands a tool the caller only through TokenInfo, which only its
	// RequireBearerToken middleware can attach. Our middleware has already
	// authenticated the request, so the verifier does not look at the token:
	// it returns the principal resolved for this request. TokenInfo.UserID
	// also makes the SDK refuse a session id presented by another caller.
	bearer := mcpauth.RequireBearerToken(func(ctx context.Context, _ string, _ *http.Request) (*mcpauth.TokenInfo, error) {
		p, ok := auth.FromContext(ctx)
		if !ok {
			return nil, mcpauth.ErrInvalidToken
		}
		scopes := make([]string, 0, len(p.Scopes))
		for _, sc := range p.Scopes {
			scopes = append(scopes, string(sc))
		}
		return &mcpauth.TokenInfo{
			UserID: mcpUserID(p),
			Scopes: scopes,
			Extra:  map[string]any{principalExtraKey: p},
		}, nil
	}, &mcpauth.RequireBearerTokenOptions{AllowMissingExpiration: true})(stream)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !hasBearer(r) {
			// The dev principal (no credential, SVC_REQUIRE_AUTH off) has no
			// token for the SDK's middleware to find; give it a placeholder
			// that the verifier above ignores.
			r = r.Clone(r.Context())
			r.Header.Set(echo.HeaderAuthorization, "Bearer dev")
		}
		bearer.ServeHTTP(w, r)
	})
}

// serveMCP serves the SDK's streamable-HTTP transport. The transport
// refuses in plain text (http.Error); those refusals are held back and
// returned as errors, so the client reads the one JSON error body like on
// every other route. Its JSON-RPC errors, already JSON, pass unchanged.
func (s *Server) serveMCP(c echo.Context) error {
	w := &mcpResponse{ResponseWriter: c.Response()}
	req := c.Request()
	// The SDK does not end a stateful session's tool call when the POST
	// that carries it goes away (only the 2026-07-28 protocol does): the
	// POST's context is registered under a token only this process sets,
	// so callRoute ends the call with it (a parked call's caller is gone).
	token := rand.Text()
	req.Header.Set(mcpPostHeader, token)
	s.mcpPosts.Store(token, req.Context())
	defer s.mcpPosts.Delete(token)
	s.mcp.ServeHTTP(w, req)
	if w.held == 0 {
		return nil
	}
	// Whatever http.Error said about the body no longer holds; the error
	// handler writes its own. The SDK's Allow and WWW-Authenticate stay.
	h := c.Response().Header()
	h.Del(echo.HeaderContentType)
	h.Del(echo.HeaderXContentTypeOptions)
	return mcpRefusal(c.Request(), w.held, w.text.String())
}

// errMCPSession is the one answer for a session id that names no session
// of the caller: unknown, expired, closing, or another principal's (which
// the SDK refuses with 403). One status and one message for all, so the
// answer does not tell whether someone else's session exists.
var errMCPSession = publicError(derrors.ErrNotFound, nil,
	"no MCP session of yours has this Mcp-Session-Id (it ended, expired or never existed); start a new session with an initialize request")

// mcpRefusal maps a plain-text refusal of the SDK (status and text) to the
// error the error handler answers with.
func mcpRefusal(r *http.Request, status int, text string) error {
	msg := clip(strings.TrimSpace(text))
	switch {
	case status == http.StatusNotFound,
		// With a session id, a 403 is the SDK's session-owner check (its
		// only other 403, the Host check, is refused here as 404 too).
		status == http.StatusForbidden && r.Header.Get(mcpSessionIDHeader) != "":
		return errMCPSession
	case status >= 500:
		// Logged by the error handler; the client reads the generic text.
		return fmt.Errorf("api: the MCP transport answered %d: %s", status, msg)
	}
	if msg == "" {
		msg = http.StatusText(status)
	}
	msg = "the MCP transport refused the request: " + msg
	if sentinel := sentinelFor(status); sentinel != nil {
		return publicError(sentinel, nil, "%s", msg)
	}
	return echo.NewHTTPError(status, msg) // 405, 415: worded by echoMessage or as is
}

// mcpSessionIDHeader is the streamable-HTTP transport's session header.
const mcpSessionIDHeader = "Mcp-Session-Id"

// mcpResponse is the ResponseWriter the SDK writes to: a non-2xx answer
// that is not JSON is held (status and up to 1 KiB of text) instead of
// written; everything else, event streams included, passes through.
type mcpResponse struct {
	http.ResponseWriter
	started bool
	held    int // the status of a held refusal; 0 when passing through
	text    bytes.Buffer
}

func (w *mcpResponse) WriteHeader(code int) {
	switch {
	case w.held != 0:
	case !w.started && code >= 400 && !isJSON(w.Header().Get(echo.HeaderContentType)):
		w.started, w.held = true, code
	default:
		w.started = true
		w.ResponseWriter.WriteHeader(code)
	}
}

func (w *mcpResponse) Write(p []byte) (int, error) {
	if !w.started {
		w.WriteHeader(http.StatusOK)
	}
	if w.held == 0 {
		return w.ResponseWriter.Write(p)
	}
	if room := 1024 - w.text.Len(); room > 0 {
		w.text.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

// Flush sends what the SDK wrote so far: the event stream depends on it.
func (w *mcpResponse) Flush() {
	if w.held != 0 {
		return
	}
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap lets http.ResponseController reach echo's writer.
func (w *mcpResponse) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// isJSON reports whether a Content-Type is JSON (a JSON-RPC message).
func isJSON(contentType string) bool {
	mt, _, err := mime.ParseMediaType(contentType)
	return err == nil && mt == "application/json"
}

// mcpUserID names whom an MCP session belongs to: the SDK refuses the
// session's id from anyone else. A key is its own owner (every tenant key
// has the subject "operator", so the subject alone would let one tenant's
// key continue another's session); a person is their subject.
func mcpUserID(p auth.Principal) string {
	if p.KeyID != "" {
		return "key:" + p.KeyID
	}
	return p.Via + ":" + p.Subject
}

// hasBearer reports whether r carries an Authorization header that the
// SDK's middleware will parse as a bearer token.
func hasBearer(r *http.Request) bool {
	f := strings.Fields(r.Header.Get(echo.HeaderAuthorization))
	return len(f) == 2 && strings.EqualFold(f[0], "bearer")
}

// mcpPrincipal returns the caller of an MCP request, for tool handlers:
// mcpPrincipal(req.Extra).
func mcpPrincipal(extra *mcp.RequestExtra) (auth.Principal, bool) {
	if extra == nil || extra.TokenInfo == nil {
		return auth.Principal{}, false
	}
	p, ok := extra.TokenInfo.Extra[principalExtraKey].(auth.Principal)
	return p, ok && p.Subject != ""
}

// publicURL is the external base URL: SVC_PUBLIC_URL, else derived from the
// request (its scheme, honouring X-Forwarded-Proto, and Host). Set
// SVC_PUBLIC_URL in production so clients never see an internal host name.
func (s *Server) publicURL(c echo.Context) string {
	if u := strings.TrimRight(s.cfg.PublicURL, "/"); u != "" {
		return u
	}
	return c.Scheme() + "://" + c.Request().Host
}

// resourceMetadata serves RFC 9728 metadata for the MCP endpoint: the
// resource is <public url>/mcp and its authorization server is the
// configured OIDC issuer (none is named when OIDC is off; API keys still
// work as bearer tokens then).
func (s *Server) resourceMetadata(c echo.Context) error {
	m := oauthex.ProtectedResourceMetadata{
		Resource:               s.publicURL(c) + mcpPath,
		BearerMethodsSupported: []string{"header"},
		ResourceName:           "svc",
	}
	if s.cfg.OIDCIssuer != "" {
		m.AuthorizationServers = []string{s.cfg.OIDCIssuer}
	}
	return c.JSON(http.StatusOK, m)
}

// mcpPostHeader carries, from serveMCP to the tool handler, the token of
// the POST a tool call came in (set by serveMCP; a client's is replaced).
const mcpPostHeader = "X-Svc-Mcp-Post"

// postContext is ctx ended also when the POST that carried the call ends
// (its client disconnected), and the function that releases it.
func (s *Server) postContext(ctx context.Context, extra *mcp.RequestExtra) (context.Context, func()) {
	if extra == nil {
		return ctx, func() {}
	}
	v, ok := s.mcpPosts.Load(extra.Header.Get(mcpPostHeader))
	if !ok {
		return ctx, func() {}
	}
	ctx, cancel := context.WithCancel(ctx)
	stop := context.AfterFunc(v.(context.Context), cancel)
	return ctx, func() { stop(); cancel() }
}
