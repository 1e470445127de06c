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
	"svc/config"
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
		{"API key", bearerTransport{token: a.key}, auth.Principal{Subject: "operator", Workspace: a.ws, Roles: []auth.Role{auth.RoleAdmin}, Via: auth.ViaAPIKey}},
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
// session's id is refused by the SDK, even one with the same subject.
func TestMCPSessionBelongsToItsCaller(t *testing.T) {
	e := newEnv(t, withRequireAuth())
	a, b := e.tenant(t, "owner"), e.tenant(t, "thief") // both keys have subject "operator"
	cs, err := connectMCP(t, e, bearerTransport{token: a.key})
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	listTools := `{"jsonrpc":"2.0","id":7,"method":"tools/list","params":{}}`
	send := func(key string) int {
		res := e.do(t, http.MethodPost, "/mcp", listTools, bearer(key),
			header{"Mcp-Session-Id", cs.ID()}, header{"Accept", "application/json, text/event-stream"},
			header{"Mcp-Protocol-Version", cs.InitializeResult().ProtocolVersion})
		return res.Status
	}
	if got := send(b.key); got != http.StatusForbidden {
		t.Errorf("another tenant's key on the session: status %d, want 403", got)
	}
	if got := send(a.key); got != http.StatusOK {
		t.Errorf("the owner's key on the session: status %d, want 200", got)
	}
}
