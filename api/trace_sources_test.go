package api_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"svc/internal/platform/config"
)

// Trace sources (spec §4.2, issue 16 point 7) against a loopback server
// answering Langfuse's documented public API with the recorded fixtures of
// internal/integrations/pull/testdata; SVC_WEBHOOK_ALLOW admits the loopback address, as
// an operator would admit a self-hosted platform.

// sourceBody is a source whose endpoint is public (the guard admits it
// without an allow list) and whose secret is not stored: the routes that
// call the platform answer 400 before any network.
const sourceBody = `{"kind":"langfuse","endpoint":"https://93.184.215.14","authSecret":"missing-key"}`

func init() {
	setup := func(t *testing.T, e *testEnv, a tenant) map[string]string {
		want(t, e.do(t, http.MethodPut, "/workspace/trace-sources/lf", sourceBody, bearer(a.key)), http.StatusNoContent, "PUT /workspace/trace-sources/lf")
		return map[string]string{"name": "lf", "traceId": "lf-trace-1"}
	}
	snap := func(t *testing.T, e *testEnv, a tenant, _ map[string]string) any {
		res := e.do(t, http.MethodGet, "/workspace/trace-sources", "", bearer(a.key))
		want(t, res, http.StatusOK, "GET /workspace/trace-sources")
		var out []map[string]any
		res.JSON(t, &out)
		return out
	}
	registerCrossTenant("PUT /workspace/trace-sources/:name", crossTenantFixture{Setup: setup, Snapshot: snap, Body: sourceBody, ForeignNoop: true})
	registerCrossTenant("GET /workspace/trace-sources/:name", crossTenantFixture{Setup: setup, Snapshot: snap})
	registerCrossTenant("DELETE /workspace/trace-sources/:name", crossTenantFixture{Setup: setup, Snapshot: snap})
	// A's own calls reach the source and stop at its missing secret (400).
	registerCrossTenant("GET /workspace/trace-sources/:name/traces", crossTenantFixture{Setup: setup, Snapshot: snap, OwnStatus: http.StatusBadRequest})
	registerCrossTenant("POST /workspace/trace-sources/:name/traces/:traceId/inspect", crossTenantFixture{Setup: setup, Snapshot: snap,
		Body: `{"mapping":{}}`, OwnStatus: http.StatusBadRequest})
}

// langfuseFixtures serves Langfuse's trace and trace list routes from the
// recorded fixtures to a request with the right basic credential.
func langfuseFixtures(t *testing.T, credential string) *httptest.Server {
	t.Helper()
	read := func(name string) []byte {
		b, err := os.ReadFile(filepath.Join("..", "internal", "integrations", "pull", "testdata", name))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if u, p, ok := r.BasicAuth(); !ok || u+":"+p != credential {
			w.WriteHeader(http.StatusUnauthorized)
			w.Write([]byte(`{"message":"Invalid credentials"}`))
			return
		}
		switch r.URL.Path {
		case "/api/public/traces":
			w.Write(read("langfuse_list.json"))
		case "/api/public/traces/lf-trace-1":
			w.Write(read("langfuse_trace.json"))
		default:
			w.WriteHeader(http.StatusNotFound)
			w.Write([]byte(`{"message":"Trace not found"}`))
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

func allowLoopback(c *config.Config) { c.WebhookAllow = "127.0.0.1" }

func TestTraceSources(t *testing.T) {
	const cred = "pk-lf-1:sk-lf-very-secret"
	srv := langfuseFixtures(t, cred)
	e := newEnv(t, withConfig(allowLoopback))
	a := e.tenant(t, "sources")
	e.putSecret(t, a.key, "lf-key", cred, []string{"127.0.0.1"})
	body := `{"kind":"langfuse","endpoint":"` + srv.URL + `","authSecret":"lf-key","spanAttrMapping":{"spanKinds":{"retrieve":"tool_call"}}}`
	want(t, e.do(t, http.MethodPut, "/workspace/trace-sources/lf", body, bearer(a.key)), http.StatusNoContent, "PUT")

	res := e.do(t, http.MethodGet, "/workspace/trace-sources/lf", "", bearer(a.key))
	want(t, res, http.StatusOK, "GET")
	var src map[string]any
	res.JSON(t, &src)
	if src["kind"] != "langfuse" || src["authSecret"] != "lf-key" || src["createdBy"] == "" {
		t.Errorf("GET = %v", src)
	}

	res = e.do(t, http.MethodGet, "/workspace/trace-sources/lf/traces?limit=5", "", bearer(a.key))
	want(t, res, http.StatusOK, "GET traces")
	var list []map[string]any
	res.JSON(t, &list)
	if len(list) != 2 || list[1]["traceId"] != "lf-trace-1" || list[1]["durationMs"] != 1500.0 || list[1]["spans"] != 3.0 {
		t.Errorf("GET traces = %v", list)
	}

	// The mapping in the body wins over the source's: retrieve is a tool
	// call named by its metadata.
	res = e.do(t, http.MethodPost, "/workspace/trace-sources/lf/traces/lf-trace-1/inspect",
		`{"mapping":{"fields":{"toolName":["metadata.acme.tool"]}}}`, bearer(a.key))
	want(t, res, http.StatusOK, "inspect")
	var in struct {
		Spans []struct {
			Name       string
			Attributes map[string]any
		}
		Events []struct {
			Kind, Name string
		}
		Evidence struct {
			FinalAnswer string
			ToolCalls   []string
		}
		Usage struct{ InputTokens int64 }
	}
	if err := json.Unmarshal(res.Body, &in); err != nil {
		t.Fatal(err)
	}
	if len(in.Spans) != 3 || in.Spans[2].Attributes["metadata.acme.tool"] != "kb" {
		t.Errorf("inspect spans = %+v", in.Spans)
	}
	if in.Evidence.FinalAnswer != "4" || strings.Join(in.Evidence.ToolCalls, ",") != "calculator,kb" || in.Usage.InputTokens != 812 {
		t.Errorf("inspect evidence %+v usage %+v", in.Evidence, in.Usage)
	}
	if strings.Contains(string(res.Body), "sk-lf") {
		t.Errorf("the inspection shows the credential")
	}
	want(t, e.do(t, http.MethodPost, "/workspace/trace-sources/lf/traces/nope/inspect", `{}`, bearer(a.key)), http.StatusNotFound, "inspect unknown trace")

	// A wrong credential: 400 saying which secret to fix, never its value.
	e.putSecret(t, a.key, "lf-key", "pk-lf-1:sk-lf-WRONG", []string{"127.0.0.1"})
	res = e.do(t, http.MethodGet, "/workspace/trace-sources/lf/traces", "", bearer(a.key))
	want(t, res, http.StatusBadRequest, "wrong credential")
	if msg := string(res.Body); !strings.Contains(msg, `lf-key`) || strings.Contains(msg, "sk-lf") {
		t.Errorf("wrong credential: %s", msg)
	}
	// A secret not bound to the endpoint's host is never sent.
	e.putSecret(t, a.key, "lf-key", cred, []string{"cloud.langfuse.com"})
	res = e.do(t, http.MethodGet, "/workspace/trace-sources/lf/traces", "", bearer(a.key))
	want(t, res, http.StatusBadRequest, "unbound secret")
	if !strings.Contains(string(res.Body), "allowedHosts") {
		t.Errorf("unbound secret: %s", res.Body)
	}

	want(t, e.do(t, http.MethodDelete, "/workspace/trace-sources/lf", "", bearer(a.key)), http.StatusNoContent, "DELETE")
	want(t, e.do(t, http.MethodGet, "/workspace/trace-sources/lf", "", bearer(a.key)), http.StatusNotFound, "GET after DELETE")
	want(t, e.do(t, http.MethodGet, "/workspace/trace-sources/lf/traces", "", bearer(a.key)), http.StatusNotFound, "traces after DELETE")
}

func TestTraceSourceRefusals(t *testing.T) {
	e := newEnv(t)
	a := e.tenant(t, "sources-bad")
	for _, c := range []struct{ name, path, body, says string }{
		{"reserved", "/workspace/trace-sources/svc", sourceBody, "reserved"},
		{"kind", "/workspace/trace-sources/x", `{"kind":"datadog","endpoint":"https://93.184.215.14"}`, "kind"},
		{"loopback", "/workspace/trace-sources/x", `{"kind":"langfuse","endpoint":"http://127.0.0.1:3000"}`, "SVC_WEBHOOK_ALLOW"},
		{"userinfo", "/workspace/trace-sources/x", `{"kind":"langfuse","endpoint":"https://pk:sk@93.184.215.14"}`, "authSecret"},
		{"phoenix project", "/workspace/trace-sources/x", `{"kind":"phoenix","endpoint":"https://93.184.215.14"}`, "project"},
		{"a credential, not a name", "/workspace/trace-sources/x", `{"kind":"langsmith","endpoint":"https://93.184.215.14","authSecret":"lsv2 key with spaces"}`, "authSecret"},
		{"unknown field", "/workspace/trace-sources/x", `{"kind":"langfuse","endpoint":"https://93.184.215.14","apiKey":"sk"}`, "apiKey"},
		{"mapping", "/workspace/trace-sources/x", `{"kind":"otel","endpoint":"https://93.184.215.14","spanAttrMapping":{"spanKinds":{"a":"nope"}}}`, "spanAttrMapping"},
	} {
		res := e.do(t, http.MethodPut, c.path, c.body, bearer(a.key))
		want(t, res, http.StatusBadRequest, c.name)
		if !strings.Contains(string(res.Body), c.says) {
			t.Errorf("%s: body %s does not say %s", c.name, res.Body, c.says)
		}
	}
	want(t, e.do(t, http.MethodPut, "/workspace/trace-sources/lf", sourceBody, bearer(a.key)), http.StatusNoContent, "PUT")
	res := e.do(t, http.MethodGet, "/workspace/trace-sources/lf/traces?limit=500", "", bearer(a.key))
	want(t, res, http.StatusBadRequest, "limit")
	res = e.do(t, http.MethodGet, "/workspace/trace-sources/lf/traces", "", bearer(a.key))
	want(t, res, http.StatusBadRequest, "missing secret")
	if !strings.Contains(string(res.Body), "PUT /secrets/missing-key") {
		t.Errorf("missing secret: %s", res.Body)
	}
	var list []json.RawMessage
	res = e.do(t, http.MethodGet, "/workspace/trace-sources", "", bearer(a.key))
	res.JSON(t, &list)
	if len(list) != 1 {
		t.Errorf("list = %s", res.Body)
	}
}
