package api_test

import (
	"net/http"
	"strings"
	"testing"

	"svc/internal/platform/config"
	"svc/internal/testing/judgetest"
)

// A model judge tried inline against an anthropic binding calls the
// Messages API once, with the preview's prompt as its text and the key in
// x-api-key only; a failing server is a skip score without the key.
func TestJudgeTryModelAnthropic(t *testing.T) {
	e := newEnv(t, withConfig(func(c *config.Config) { c.WebhookAllow = "127.0.0.1" }))
	a := e.tenant(t, "tryant")
	status := http.StatusOK
	srv := judgetest.NewAnthropic(t, func(p string) (int, string) {
		return status, `{"score": 1, "pass": true, "reason": "391 is right", "criteria": {"correct": {"score": 1}}}`
	})
	e.putSecret(t, a.key, "anthropic-key", tryKey, []string{"127.0.0.1"})
	want(t, e.do(t, http.MethodPut, "/workspace/models/grader", `{"provider":"anthropic","baseUrl":"`+srv.BaseURL()+`","model":"claude-test","keySecret":"anthropic-key","inputUsdPerMTok":3,"outputUsdPerMTok":15}`, bearer(a.key)),
		http.StatusNoContent, "PUT /workspace/models/grader")

	res := e.do(t, http.MethodPost, "/judges/try", `{"spec":`+tryModelJudge+`,`+tryEvidence+`}`, bearer(a.key))
	want(t, res, http.StatusOK, "POST /judges/try")
	if strings.Contains(string(res.Body), tryKey) {
		t.Fatalf("the answer holds the model key: %s", res.Body)
	}
	var got struct {
		tryAnswer
		Usage *struct {
			InputTokens, OutputTokens int64
			CostUSD                   float64 `json:"costUsd"`
		}
	}
	res.JSON(t, &got)
	if got.Skipped || len(got.Scores) != 2 || got.Usage == nil || got.Usage.InputTokens != 812 || got.Usage.OutputTokens != 64 || got.Usage.CostUSD == 0 {
		t.Fatalf("answer = %s, want two scores, not skipped, with 812/64 tokens and their cost", res.Body)
	}
	recv := srv.Received()
	if len(recv) != 1 || recv[0].APIKey != tryKey || recv[0].Authorization != "" || recv[0].Path != "/v1/messages" || recv[0].Model != "claude-test" {
		t.Fatalf("the server received %d calls (%+v), want one Messages call with the key in x-api-key", len(recv), recv)
	}
	res = e.do(t, http.MethodPost, "/judges/preview", `{"spec":`+tryModelJudge+`,`+tryEvidence+`}`, bearer(a.key))
	want(t, res, http.StatusOK, "POST /judges/preview")
	var pv map[string]any
	res.JSON(t, &pv)
	if pv["prompt"] != recv[0].Prompt {
		t.Errorf("the preview's prompt differs from the prompt sent:\npreview %q\nsent    %q", pv["prompt"], recv[0].Prompt)
	}

	status = http.StatusTooManyRequests
	res = e.do(t, http.MethodPost, "/judges/try", `{"spec":`+tryModelJudge+`,`+tryEvidence+`}`, bearer(a.key))
	want(t, res, http.StatusOK, "POST /judges/try, rate limited")
	got.Usage = nil
	res.JSON(t, &got)
	if !got.Skipped || len(got.Scores) != 1 || !strings.Contains(got.Scores[0].Detail, "answered HTTP 429") || strings.Contains(string(res.Body), tryKey) {
		t.Errorf("answer = %s, want one skip score saying HTTP 429, without the key", res.Body)
	}
}
