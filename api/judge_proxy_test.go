package api_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"svc/internal/platform/config"
	"svc/internal/service/models"
	"svc/internal/testing/judgetest"
	"svc/store"
)

const proxyPath = "/judge-proxy/v1/chat/completions"

// A code judge's model call through the proxy: its run-scoped token opens
// one binding for one judge execution; the call reaches the model server
// with the real key and the bound model, its tokens and cost are recorded
// per judge, and neither the key nor the token is in what is recorded.
func TestJudgeProxy(t *testing.T) {
	e := newEnv(t, withConfig(func(c *config.Config) { c.WebhookAllow = "127.0.0.1" }))
	a := e.tenant(t, "proxy")
	srv := judgetest.New(t, func(p string) (int, string) { return http.StatusOK, "judged: " + p })
	e.putSecret(t, a.key, "openai-key", tryKey, []string{"127.0.0.1"})
	want(t, e.do(t, http.MethodPut, "/workspace/models/grader", `{"provider":"openai","baseUrl":"`+srv.BaseURL()+`","model":"gpt-test","keySecret":"openai-key","inputUsdPerMTok":1,"outputUsdPerMTok":2}`, bearer(a.key)),
		http.StatusNoContent, "PUT /workspace/models/grader")
	ms := &models.Service{Store: e.store, Now: e.clock.Now}
	mint := func(model string, ttl time.Duration) string {
		t.Helper()
		tok, err := ms.MintProxyToken(t.Context(), models.ProxyGrant{Workspace: a.ws, Model: model, JudgeID: "tone", RunID: "run-1", ExpiresAt: e.clock.Now().Add(ttl)})
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	token := mint("grader", time.Minute)
	call := `{"model":"whatever-the-judge-says","messages":[{"role":"user","content":"is it polite?"}]}`

	res := e.do(t, http.MethodPost, proxyPath, call, bearer(token))
	want(t, res, http.StatusOK, "a call with the token")
	if !strings.Contains(string(res.Body), `"content":"judged: is it polite?"`) {
		t.Errorf("answer = %s", res.Body)
	}
	recv := srv.Received()
	if len(recv) != 1 || recv[0].Authorization != "Bearer "+tryKey || recv[0].Model != "gpt-test" {
		t.Fatalf("the model server received %+v, want one call with the key and the bound model", recv)
	}
	if strings.Contains(string(res.Body), tryKey) {
		t.Error("the answer holds the key")
	}
	evs, err := e.store.ListEvents(t.Context(), store.EventFilter{Workspace: a.ws, Type: "judge.model_call"})
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != 1 {
		t.Fatalf("%d judge.model_call events, want 1", len(evs))
	}
	var data map[string]any
	if err := json.Unmarshal(evs[0].Data, &data); err != nil {
		t.Fatal(err)
	}
	if data["judge"] != "tone" || data["runId"] != "run-1" || data["model"] != "grader" || data["inputTokens"] != float64(812) || data["outputTokens"] != float64(64) || data["costUsd"] == nil {
		t.Errorf("event data = %v, want the judge, run, model, tokens and cost", data)
	}
	if strings.Contains(string(evs[0].Data), tryKey) || strings.Contains(string(evs[0].Data), token) {
		t.Error("the event holds the key or the token")
	}

	for _, c := range []struct {
		name, token, body string
		status            int
		says              string
	}{
		{"no token", "", call, 401, "run-scoped token"},
		{"an API key is not a proxy token", a.key, call, 401, "run-scoped token"},
		{"a forged token", token[:len(token)-4] + "AAAA", call, 401, "run-scoped token"},
		{"streaming", token, `{"stream":true,"messages":[]}`, 400, "streaming is off"},
		{"no messages", token, `{}`, 400, "messages"},
		{"a binding the workspace lacks", mint("nope", time.Minute), call, 503, "declares no model"},
	} {
		var hs []header
		if c.token != "" {
			hs = append(hs, bearer(c.token))
		}
		res := e.do(t, http.MethodPost, proxyPath, c.body, hs...)
		if c.status == http.StatusServiceUnavailable {
			// want knows the codes of client errors only.
			if res.Status != c.status || res.ErrorInfo(t).Code != "UNAVAILABLE" {
				t.Errorf("%s: status %d, want 503 UNAVAILABLE; body %s", c.name, res.Status, res.Body)
			}
		} else {
			want(t, res, c.status, c.name)
		}
		if !strings.Contains(string(res.Body), c.says) {
			t.Errorf("%s: body %s does not say %q", c.name, res.Body, c.says)
		}
	}

	// Expired, then revoked: both refused like an unknown token.
	short := mint("grader", time.Second)
	e.clock.Advance(2 * time.Second)
	want(t, e.do(t, http.MethodPost, proxyPath, call, bearer(short)), http.StatusUnauthorized, "an expired token")
	if err := ms.RevokeProxyToken(t.Context(), token); err != nil {
		t.Fatal(err)
	}
	want(t, e.do(t, http.MethodPost, proxyPath, call, bearer(token)), http.StatusUnauthorized, "a revoked token")
	if n := len(srv.Received()); n != 1 {
		t.Errorf("the model server received %d calls, want only the first", n)
	}
}

// A harness job's token opens the model proxy on /model-proxy/v1 (and on
// the judges' path, which takes either kind): each call is recorded as
// harness.model_call for the run, metered under the grant for the run's
// cost, and neither the key nor the token is recorded; a judge's token
// works on the new path too.
func TestModelProxyHarnessGrant(t *testing.T) {
	e := newEnv(t, withConfig(func(c *config.Config) { c.WebhookAllow = "127.0.0.1" }))
	a := e.tenant(t, "hproxy")
	srv := judgetest.New(t, func(p string) (int, string) { return http.StatusOK, "agent: " + p })
	e.putSecret(t, a.key, "agent-key", tryKey, []string{"127.0.0.1"})
	want(t, e.do(t, http.MethodPut, "/workspace/models/brain", `{"provider":"openai","baseUrl":"`+srv.BaseURL()+`","model":"gpt-agent","keySecret":"agent-key","inputUsdPerMTok":1,"outputUsdPerMTok":2}`, bearer(a.key)),
		http.StatusNoContent, "PUT /workspace/models/brain")
	ms := &models.Service{Store: e.store, Now: e.clock.Now}
	token, err := ms.MintProxyToken(t.Context(), models.ProxyGrant{Workspace: a.ws, Model: "brain", Harness: "agent@2", Attempt: 1, RunID: "run-7", ExpiresAt: e.clock.Now().Add(time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	judge, err := ms.MintProxyToken(t.Context(), models.ProxyGrant{Workspace: a.ws, Model: "brain", JudgeID: "tone", RunID: "run-7", ExpiresAt: e.clock.Now().Add(time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	call := `{"messages":[{"role":"user","content":"plan"}]}`
	for _, c := range []struct{ path, token string }{
		{"/model-proxy/v1/chat/completions", token},
		{proxyPath, token},
		{"/model-proxy/v1/chat/completions", judge},
	} {
		res := e.do(t, http.MethodPost, c.path, call, bearer(c.token))
		want(t, res, http.StatusOK, c.path)
		if !strings.Contains(string(res.Body), `"content":"agent: plan"`) {
			t.Errorf("%s: answer = %s", c.path, res.Body)
		}
	}
	evs, err := e.store.ListEvents(t.Context(), store.EventFilter{Workspace: a.ws, Type: "harness.model_call"})
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != 2 {
		t.Fatalf("%d harness.model_call events, want 2", len(evs))
	}
	for _, ev := range evs {
		var d map[string]any
		if err := json.Unmarshal(ev.Data, &d); err != nil {
			t.Fatal(err)
		}
		if d["harness"] != "agent@2" || d["runId"] != "run-7" || d["model"] != "brain" || d["costUsd"] == nil || ev.Actor != "harness:agent@2" || ev.Subject != "run:run-7" {
			t.Errorf("event %s %s %s", ev.Actor, ev.Subject, ev.Data)
		}
		if strings.Contains(string(ev.Data), tryKey) || strings.Contains(string(ev.Data), token) {
			t.Error("the event holds the key or the token")
		}
	}
	if n, _ := e.store.ListEvents(t.Context(), store.EventFilter{Workspace: a.ws, Type: "judge.model_call"}); len(n) != 1 {
		t.Errorf("%d judge.model_call events, want the judge's 1", len(n))
	}
	u, err := ms.ProxyUsage(t.Context(), token)
	if err != nil || u.Calls != 2 || u.InputTokens != 2*812 || u.CostUSD <= 0 {
		t.Errorf("metered usage = %+v, %v; want 2 priced calls", u, err)
	}
	if u, _ := ms.ProxyUsage(t.Context(), judge); u.Calls != 0 {
		t.Errorf("a judge's calls are metered as a harness's: %+v", u)
	}
}
