package api_test

import (
	"net/http"
	"strings"
	"testing"
)

const modelBody = `{"provider":"openai","baseUrl":"https://93.184.215.14/v1","model":"gpt-test","keySecret":"openai-key"}`

func init() {
	// B's PUT declares B's own binding of that name and B's DELETE finds
	// none (404); A's must not change either way.
	setup := func(t *testing.T, e *testEnv, a tenant) map[string]string {
		want(t, e.do(t, http.MethodPut, "/workspace/models/grader", modelBody, bearer(a.key)), http.StatusNoContent, "PUT /workspace/models/grader")
		return map[string]string{"name": "grader"}
	}
	snap := func(t *testing.T, e *testEnv, a tenant, _ map[string]string) any {
		res := e.do(t, http.MethodGet, "/workspace/models", "", bearer(a.key))
		want(t, res, http.StatusOK, "GET /workspace/models")
		var bs []map[string]any
		res.JSON(t, &bs)
		return bs
	}
	registerCrossTenant("PUT /workspace/models/:name", crossTenantFixture{Setup: setup, Snapshot: snap, Body: modelBody, ForeignNoop: true})
	registerCrossTenant("GET /workspace/models/:name", crossTenantFixture{Setup: setup, Snapshot: snap})
	registerCrossTenant("DELETE /workspace/models/:name", crossTenantFixture{Setup: setup, Snapshot: snap})
}

func TestModelBindings(t *testing.T) {
	e := newEnv(t)
	a := e.tenant(t, "models")
	want(t, e.do(t, http.MethodPut, "/workspace/models/grader", modelBody, bearer(a.key)), http.StatusNoContent, "PUT")
	res := e.do(t, http.MethodGet, "/workspace/models/grader", "", bearer(a.key))
	want(t, res, http.StatusOK, "GET")
	var b map[string]any
	res.JSON(t, &b)
	if b["model"] != "gpt-test" || b["keySecret"] != "openai-key" || b["baseUrl"] != "https://93.184.215.14/v1" {
		t.Errorf("GET /workspace/models/grader = %v", b)
	}
	// Replacing keeps one binding.
	want(t, e.do(t, http.MethodPut, "/workspace/models/grader", strings.Replace(modelBody, "gpt-test", "gpt-2", 1), bearer(a.key)), http.StatusNoContent, "PUT again")
	res = e.do(t, http.MethodGet, "/workspace/models", "", bearer(a.key))
	var bs []map[string]any
	res.JSON(t, &bs)
	if len(bs) != 1 || bs[0]["model"] != "gpt-2" {
		t.Errorf("GET /workspace/models after a replace = %v, want one binding of model gpt-2", bs)
	}
	want(t, e.do(t, http.MethodDelete, "/workspace/models/grader", "", bearer(a.key)), http.StatusNoContent, "DELETE")
	want(t, e.do(t, http.MethodGet, "/workspace/models/grader", "", bearer(a.key)), http.StatusNotFound, "GET after DELETE")
	want(t, e.do(t, http.MethodDelete, "/workspace/models/grader", "", bearer(a.key)), http.StatusNotFound, "DELETE again")

	for _, c := range []struct{ name, body, says string }{
		{"provider", `{"provider":"mistral","model":"m","keySecret":"k"}`, "provider"},
		{"no model", `{"provider":"openai","keySecret":"k"}`, "model"},
		{"no key", `{"provider":"openai","model":"m"}`, "keySecret"},
		{"loopback", `{"provider":"openai","baseUrl":"http://127.0.0.1:9/v1","model":"m","keySecret":"k"}`, "SVC_WEBHOOK_ALLOW"},
		{"scheme", `{"provider":"openai","baseUrl":"ftp://x/v1","model":"m","keySecret":"k"}`, "baseUrl"},
		{"unknown field", `{"provider":"openai","model":"m","keySecret":"k","apiKey":"sk-1"}`, "apiKey"},
	} {
		res := e.do(t, http.MethodPut, "/workspace/models/x", c.body, bearer(a.key))
		want(t, res, http.StatusBadRequest, c.name)
		if !strings.Contains(string(res.Body), c.says) {
			t.Errorf("%s: body %s does not name %s", c.name, res.Body, c.says)
		}
	}
}
