package api_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"svc/internal/platform/config"
	"svc/internal/service/models"
	"svc/internal/testing/judgetest"
)

// The model proxy stays OpenAI-wire for an anthropic binding: it forwards
// the chat completion to Anthropic's OpenAI-compatible endpoint, the API
// root + /v1/chat/completions, whether the binding's baseUrl is the root
// (the default now) or the root + /v1 (the default before).
func TestModelProxyAnthropicBinding(t *testing.T) {
	e := newEnv(t, withConfig(func(c *config.Config) { c.WebhookAllow = "127.0.0.1" }))
	a := e.tenant(t, "proxyant")
	srv := judgetest.New(t, func(p string) (int, string) { return http.StatusOK, "judged: " + p })
	e.putSecret(t, a.key, "anthropic-key", tryKey, []string{"127.0.0.1"})
	ms := &models.Service{Store: e.store, Now: e.clock.Now}
	for i, base := range []string{srv.URL, srv.URL + "/v1"} {
		name := []string{"claude-root", "claude-v1"}[i]
		want(t, e.do(t, http.MethodPut, "/workspace/models/"+name, `{"provider":"anthropic","baseUrl":"`+base+`","model":"claude-test","keySecret":"anthropic-key"}`, bearer(a.key)),
			http.StatusNoContent, "PUT /workspace/models/"+name)
		tok, err := ms.MintProxyToken(t.Context(), models.ProxyGrant{Workspace: a.ws, Model: name, JudgeID: "tone", RunID: "run-1", ExpiresAt: e.clock.Now().Add(time.Minute)})
		if err != nil {
			t.Fatal(err)
		}
		res := e.do(t, http.MethodPost, "/model-proxy/v1/chat/completions", `{"messages":[{"role":"user","content":"is it polite?"}]}`, bearer(tok))
		want(t, res, http.StatusOK, name)
		if !strings.Contains(string(res.Body), `"content":"judged: is it polite?"`) || strings.Contains(string(res.Body), tryKey) {
			t.Errorf("%s: answer = %s", name, res.Body)
		}
		recv := srv.Received()
		if len(recv) != i+1 {
			t.Fatalf("%s: %d calls, want %d", name, len(recv), i+1)
		}
		if r := recv[i]; r.Path != "/v1/chat/completions" || r.Authorization != "Bearer "+tryKey || r.Model != "claude-test" {
			t.Errorf("%s: the server got path %s, auth set %v, model %s; want /v1/chat/completions, the key, claude-test", name, r.Path, r.Authorization == "Bearer "+tryKey, r.Model)
		}
	}
}
