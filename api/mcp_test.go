package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"svc/api"
	"svc/api/apitest"
	"svc/auth"
	"svc/internal/platform/config"
)

func init() {
	// The MCP transport answers POST /mcp with an event stream, which the
	// document describes as a string; kin-openapi needs to be told how to
	// read one to validate it.
	openapi3filter.RegisterBodyDecoder("text/event-stream",
		func(r io.Reader, _ http.Header, _ *openapi3.SchemaRef, _ openapi3filter.EncodingFn) (any, error) {
			b, err := io.ReadAll(r)
			return string(b), err
		})
}

type resourceMetadataJSON struct {
	Resource               string   `json:"resource"`
	AuthorizationServers   []string `json:"authorization_servers,omitempty"`
	BearerMethodsSupported []string `json:"bearer_methods_supported,omitempty"`
	ResourceName           string   `json:"resource_name,omitempty"`
}

func TestProtectedResourceMetadata(t *testing.T) {
	t.Run("derived from the request", func(t *testing.T) {
		e := newEnv(t, withOIDC())
		for _, path := range []string{"/.well-known/oauth-protected-resource", "/.well-known/oauth-protected-resource/mcp"} {
			res := e.do(t, http.MethodGet, path, "")
			want(t, res, http.StatusOK, "GET "+path)
			wantMeta := resourceMetadataJSON{
				Resource:               e.client.URL + "/mcp",
				AuthorizationServers:   []string{e.issuer.URL},
				BearerMethodsSupported: []string{"header"},
				ResourceName:           "svc",
			}
			if diff := cmp.Diff(wantMeta, decode[resourceMetadataJSON](t, res)); diff != "" {
				t.Errorf("GET %s (-want +got):\n%s", path, diff)
			}
		}
	})
	t.Run("SVC_PUBLIC_URL", func(t *testing.T) {
		e := newEnv(t, withConfig(func(c *config.Config) { c.PublicURL = "https://svc.example.com/" }))
		res := e.do(t, http.MethodGet, "/.well-known/oauth-protected-resource", "")
		got := decode[resourceMetadataJSON](t, res)
		if got.Resource != "https://svc.example.com/mcp" || got.AuthorizationServers != nil {
			t.Errorf("metadata = %+v, want resource https://svc.example.com/mcp and no authorization server (OIDC off)", got)
		}
	})
}

// TestMCPUnauthenticated: /mcp's 401 points at the metadata, which is how
// an MCP client discovers where to get a token.
func TestMCPUnauthenticated(t *testing.T) {
	e := newEnv(t, withRequireAuth(), withConfig(func(c *config.Config) { c.PublicURL = "https://svc.example.com" }))
	for _, hs := range [][]header{nil, {bearer("ak_unknown")}} {
		for _, method := range []string{http.MethodPost, http.MethodGet, http.MethodDelete} {
			res := e.do(t, method, "/mcp", bodyFor(method), hs...)
			want(t, res, http.StatusUnauthorized, method+" /mcp")
			wantHdr := `Bearer resource_metadata="https://svc.example.com/.well-known/oauth-protected-resource"`
			if got := res.Header.Get("WWW-Authenticate"); got != wantHdr {
				t.Errorf("%s /mcp: WWW-Authenticate %q, want %q", method, got, wantHdr)
			}
		}
	}
	// Other routes keep the plain challenge.
	res := e.do(t, http.MethodGet, "/me", "")
	if got := res.Header.Get("WWW-Authenticate"); strings.Contains(got, "resource_metadata") {
		t.Errorf("GET /me: WWW-Authenticate %q names the MCP metadata", got)
	}
}

// bearerTransport adds a bearer token (and other headers) to every request
// of the SDK's client, and checks every answer against the OpenAPI document.
type bearerTransport struct {
	token   string
	headers map[string]string
	t       testing.TB // set by connectMCP
}

func (b bearerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	if b.token != "" {
		r.Header.Set("Authorization", "Bearer "+b.token)
	}
	for k, v := range b.headers {
		r.Header.Set(k, v)
	}
	res, err := http.DefaultTransport.RoundTrip(r)
	if err != nil || b.t == nil {
		return res, err
	}
	// Every stream the client opens here ends with its answer (the
	// standalone event stream is disabled), so reading it whole is safe.
	body, err := io.ReadAll(res.Body)
	res.Body.Close()
	if err != nil {
		return nil, err
	}
	apitest.ValidateResponse(b.t, r, &apitest.Response{Status: res.StatusCode, Header: res.Header, Body: body})
	res.Body = io.NopCloser(bytes.NewReader(body))
	return res, nil
}

// connectMCP connects the SDK's real client to the env's /mcp.
func connectMCP(t *testing.T, e *testEnv, tr bearerTransport) (*mcp.ClientSession, error) {
	t.Helper()
	tr.t = t
	client := mcp.NewClient(&mcp.Implementation{Name: "svc-test", Version: "1"}, nil)
	cs, err := client.Connect(t.Context(), &mcp.StreamableClientTransport{
		Endpoint:             e.client.URL + "/mcp",
		HTTPClient:           &http.Client{Transport: tr},
		MaxRetries:           -1,
		DisableStandaloneSSE: true,
	}, nil)
	if err == nil {
		t.Cleanup(func() { cs.Close() })
	}
	return cs, err
}

func TestMCPWithSDKClient(t *testing.T) {
	e := newEnv(t, withRequireAuth())
	a := e.tenant(t, "agents")
	cs, err := connectMCP(t, e, bearerTransport{token: a.key})
	if err != nil {
		t.Fatalf("connecting with a tenant key: %v", err)
	}
	if info := cs.InitializeResult().ServerInfo; info.Name != "svc" || info.Version != "test" {
		t.Errorf("server info = %+v, want svc test", info)
	}
	tools, err := cs.ListTools(t.Context(), nil)
	if err != nil {
		t.Fatalf("ListTools: %v", err)
	}
	if len(tools.Tools) == 0 {
		t.Error("ListTools = no tools; mcp_tools.go registers them")
	}

	if _, err := connectMCP(t, e, bearerTransport{}); err == nil {
		t.Error("connecting without a credential succeeded under SVC_REQUIRE_AUTH")
	}
	unknown, _ := auth.NewAPIKey(auth.APIKeyPrefix)
	if _, err := connectMCP(t, e, bearerTransport{token: unknown}); err == nil {
		t.Error("connecting with an unknown key succeeded")
	}
}

// TestMCPToolSeesPrincipal: a tool handler learns the caller the API
// resolved for that very request: the key's principal, the dev principal,
// and a person's workspace switched by x-svc-workspace.
func TestMCPToolSeesPrincipal(t *testing.T) {
	e := newEnv(t, withOIDC())
	mcp.AddTool(e.srv.MCPServer(), &mcp.Tool{Name: "whoami", Description: "test only"},
		func(_ context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, auth.Principal, error) {
			p, ok := api.MCPPrincipal(req.Extra)
			if !ok {
				return nil, auth.Principal{}, errors.New("no principal")
			}
			return nil, p, nil
		})
	a := e.tenant(t, "tools")
	zoe := e.join(t, a, "zoe", auth.RoleMember)

	tests := []struct {
		name string
		tr   bearerTransport
		want auth.Principal
	}{
		{"API key", bearerTransport{token: a.key}, auth.Principal{Subject: "key:" + a.id, Workspace: a.ws, Roles: []auth.Role{auth.RoleAdmin}, Via: auth.ViaAPIKey}},
		{"dev", bearerTransport{headers: map[string]string{auth.TenantHeader: "devspace"}}, auth.Principal{Subject: "dev", Workspace: "devspace", Roles: []auth.Role{auth.RoleAdmin}, Via: auth.ViaDev}},
		{"person selecting a workspace", bearerTransport{token: zoe, headers: map[string]string{auth.WorkspaceHeader: a.ws}},
			auth.Principal{Subject: "zoe", Workspace: a.ws, Roles: []auth.Role{auth.RoleMember}, Via: auth.ViaOIDC, Email: "zoe@example.com"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cs, err := connectMCP(t, e, tt.tr)
			if err != nil {
				t.Fatalf("connect: %v", err)
			}
			res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "whoami", Arguments: map[string]any{}})
			if err != nil {
				t.Fatalf("CallTool: %v", err)
			}
			if res.IsError {
				t.Fatalf("whoami failed: %+v", res.Content)
			}
			var got auth.Principal
			b, _ := json.Marshal(res.StructuredContent)
			if err := json.Unmarshal(b, &got); err != nil {
				t.Fatalf("decoding %s: %v", b, err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("principal seen by the tool (-want +got):\n%s", diff)
			}
		})
	}
}

// TestMCPSessionBelongsToItsCaller: another credential presenting a
// session's id, even one with the same subject, gets the very answer an
// unknown session id gets (404, the same message), so the answer does not
// tell whether the session exists.
func TestMCPSessionBelongsToItsCaller(t *testing.T) {
	e := newEnv(t, withRequireAuth())
	a, b := e.tenant(t, "owner"), e.tenant(t, "thief") // both keys have subject "operator"
	cs, err := connectMCP(t, e, bearerTransport{token: a.key})
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	listTools := `{"jsonrpc":"2.0","id":7,"method":"tools/list","params":{}}`
	send := func(method, key, session string) *apitest.Response {
		body := ""
		if method == http.MethodPost {
			body = listTools
		}
		return e.do(t, method, "/mcp", body, bearer(key),
			header{"Mcp-Session-Id", session}, header{"Accept", "application/json, text/event-stream"},
			header{"Mcp-Protocol-Version", cs.InitializeResult().ProtocolVersion})
	}
	for _, method := range []string{http.MethodPost, http.MethodGet, http.MethodDelete} {
		foreign := send(method, b.key, cs.ID())
		unknown := send(method, b.key, "NO"+cs.ID())
		want(t, foreign, http.StatusNotFound, method+" /mcp on another tenant's session")
		want(t, unknown, http.StatusNotFound, method+" /mcp on an unknown session")
		if f, u := foreign.ErrorInfo(t).Message, unknown.ErrorInfo(t).Message; f != u {
			t.Errorf("%s /mcp: a foreign session answers %q, an unknown one %q: want the same", method, f, u)
		}
	}
	if res := send(http.MethodPost, a.key, cs.ID()); res.Status != http.StatusOK {
		t.Errorf("the owner's key on the session: status %d, want 200; body %s", res.Status, res.Body)
	}
}

// TestMCPTransportErrorsAreJSON: the SDK's transport refuses in plain
// text; every such refusal reaches the client in the one error shape,
// with the status the transport chose. JSON-RPC errors stay JSON-RPC.
func TestMCPTransportErrorsAreJSON(t *testing.T) {
	e := newEnv(t)
	cs, err := connectMCP(t, e, bearerTransport{})
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	accept := header{"Accept", "application/json, text/event-stream"}
	session := header{"Mcp-Session-Id", cs.ID()}
	version := header{"Mcp-Protocol-Version", cs.InitializeResult().ProtocolVersion}
	ping := `{"jsonrpc":"2.0","id":1,"method":"ping"}`
	tests := []struct {
		name         string
		method, body string
		hs           []header
		status       int
		code         string
	}{
		{"POST with a text body", http.MethodPost, ping, []header{{"Content-Type", "text/plain"}, accept}, http.StatusUnsupportedMediaType, api.CodeBadRequest},
		{"POST without Accept", http.MethodPost, ping, nil, http.StatusBadRequest, api.CodeBadRequest},
		{"POST with a malformed body", http.MethodPost, `{"jsonrpc":`, []header{accept, session, version}, http.StatusBadRequest, api.CodeBadRequest},
		{"POST with an unknown session", http.MethodPost, ping, []header{accept, {"Mcp-Session-Id", "nope"}, version}, http.StatusNotFound, api.CodeNotFound},
		{"POST with an unsupported protocol version", http.MethodPost, ping, []header{accept, session, {"Mcp-Protocol-Version", "1999-01-01"}}, http.StatusBadRequest, api.CodeBadRequest},
		{"GET without Accept: text/event-stream", http.MethodGet, "", []header{session}, http.StatusBadRequest, api.CodeBadRequest},
		{"GET without a session", http.MethodGet, "", []header{{"Accept", "text/event-stream"}}, http.StatusBadRequest, api.CodeBadRequest},
		{"GET with an unknown session", http.MethodGet, "", []header{{"Accept", "text/event-stream"}, {"Mcp-Session-Id", "nope"}}, http.StatusNotFound, api.CodeNotFound},
		{"DELETE without a session", http.MethodDelete, "", nil, http.StatusBadRequest, api.CodeBadRequest},
		{"DELETE with an unknown session", http.MethodDelete, "", []header{{"Mcp-Session-Id", "nope"}}, http.StatusNotFound, api.CodeNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := e.do(t, tt.method, "/mcp", tt.body, tt.hs...)
			if res.Status != tt.status {
				t.Fatalf("status %d, want %d; body %s", res.Status, tt.status, res.Body)
			}
			if ct := res.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
				t.Errorf("Content-Type %q, want application/json", ct)
			}
			info := res.ErrorInfo(t)
			if info.Code != tt.code || info.Message == "" || info.RequestID != res.Header.Get("X-Request-Id") {
				t.Errorf("error = %+v, want code %s, a message and the request id", info, tt.code)
			}
		})
	}

	t.Run("a JSON-RPC error stays JSON-RPC", func(t *testing.T) {
		res := e.do(t, http.MethodPost, "/mcp", `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"no-such-tool","arguments":{}}}`, accept, session, version)
		if res.Status != http.StatusOK || !strings.Contains(string(res.Body), `"jsonrpc":"2.0"`) || !strings.Contains(string(res.Body), `"error"`) {
			t.Errorf("status %d, body %s: want 200 with a JSON-RPC error", res.Status, res.Body)
		}
	})
}
