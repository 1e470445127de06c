package judges_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"svc/activities/judges"
	"svc/internal/domain/eval"
	"svc/internal/domain/judge"
	"svc/internal/domain/registry"
	"svc/internal/testing/judgetest"
)

// A model judge with an anthropic binding scores a case through the
// Messages API: the key in x-api-key only, anthropic-version set, the
// preview's prompt as the text block, temperature 0, max_tokens
// AnthropicMaxTokens, usage priced by the binding.
func TestModelVerdictAnthropic(t *testing.T) {
	eff := judge.Effective{RubricText: "Is 17*23 answered right?", Criteria: []registry.Criterion{{ID: "correct"}}}
	ev := judge.Evidence{Case: registry.EvalCase{ID: "c1", Task: "What is 17*23?"}, Evidence: &eval.Evidence{FinalAnswer: "391"}}
	srv := judgetest.NewAnthropic(t, func(p string) (int, string) {
		if strings.Contains(p, "391") {
			return http.StatusOK, `{"score": 1, "pass": true, "reason": "right", "criteria": {"correct": {"score": 1}}}`
		}
		return http.StatusOK, `{"score": 0}`
	})
	// The old default base ("<root>/v1", Anthropic's OpenAI-compatible
	// root) and the new one (the root) both reach /v1/messages.
	for _, base := range []string{srv.BaseURL(), srv.BaseURL() + "/v1", srv.BaseURL() + "/v1/"} {
		t.Run(base, func(t *testing.T) {
			ep := judges.Endpoint{Name: "grader", Provider: "anthropic", BaseURL: base, Model: "claude-test", Key: secretKey,
				Price: func(in, out int64) (float64, bool) { return float64(in+out) / 1e6, true }}
			before := len(srv.Received())
			scores, usage, err := judges.ModelVerdict(context.Background(), "quality", eff, ev, ep)
			if err != nil {
				t.Fatal(err)
			}
			want := []eval.Score{
				{GraderID: "quality", Metric: "judge:quality", Value: 1, Pass: bp(true), Detail: "right [812 input + 64 output tokens, $0.000876]"},
				{GraderID: "quality", Metric: "judge:quality:correct", Value: 1},
			}
			if diff := cmp.Diff(want, scores); diff != "" {
				t.Errorf("scores (-want +got):\n%s", diff)
			}
			if usage == nil || usage.InputTokens != 812 || usage.OutputTokens != 64 || !usage.Priced {
				t.Errorf("usage = %+v, want 812 in, 64 out, priced", usage)
			}
			got := srv.Received()
			if len(got) != before+1 {
				t.Fatalf("server received %d requests, want %d", len(got), before+1)
			}
			r := got[len(got)-1]
			// The preview's text is the text sent.
			if p := judge.Render(eff, ev).Prompt; r.Prompt != p {
				t.Errorf("sent prompt differs from the rendered one:\nsent %q\nrendered %q", r.Prompt, p)
			}
			if r.APIKey != secretKey || r.Authorization != "" || r.Version == "" || r.Model != "claude-test" {
				t.Errorf("request x-api-key %q authorization %q anthropic-version %q model %q", r.APIKey, r.Authorization, r.Version, r.Model)
			}
			var body struct {
				MaxTokens   int64    `json:"max_tokens"`
				Temperature *float64 `json:"temperature"`
				Stream      *bool    `json:"stream"`
			}
			if err := json.Unmarshal(r.Body, &body); err != nil {
				t.Fatal(err)
			}
			if body.MaxTokens != judges.AnthropicMaxTokens || body.Temperature == nil || *body.Temperature != 0 || (body.Stream != nil && *body.Stream) {
				t.Errorf("body %s: want max_tokens %d, temperature 0, no stream", r.Body, judges.AnthropicMaxTokens)
			}
		})
	}
}

// The screenshot goes as a base64 image block beside the preview's text.
func TestModelVerdictAnthropicScreenshot(t *testing.T) {
	srv := judgetest.NewAnthropic(t, func(string) (int, string) { return http.StatusOK, `{"score": 1, "pass": true}` })
	png := base64.StdEncoding.EncodeToString([]byte("\x89PNG\r\n\x1a\npixels"))
	eff := judge.Effective{RubricText: "Does the page show the total?", Inputs: []string{registry.InputDOM, registry.InputScreenshot}}
	ev := judge.Evidence{Case: registry.EvalCase{ID: "b1", Task: "open the cart"},
		Snapshot: &eval.Snapshot{Kind: "browser", DOM: "<p>total: 391</p>", Screenshot: png}}
	ep := judges.Endpoint{Name: "grader", Provider: "anthropic", BaseURL: srv.BaseURL(), Model: "claude-test", Key: "sk-ant-test"}
	scores, _, err := judges.ModelVerdict(t.Context(), "page", eff, ev, ep)
	if err != nil {
		t.Fatal(err)
	}
	if len(scores) != 1 || scores[0].Value != 1 {
		t.Fatalf("scores = %+v", scores)
	}
	got := srv.Received()
	if len(got) != 1 {
		t.Fatalf("%d calls, want 1", len(got))
	}
	if want := judge.Render(eff, ev); got[0].Prompt != want.Prompt {
		t.Errorf("the server got the prompt\n%s\nwant the preview's\n%s", got[0].Prompt, want.Prompt)
	}
	if len(got[0].Images) != 1 || got[0].Images[0] != "data:image/png;base64,"+png {
		t.Errorf("the server got images %v, want the screenshot as a PNG base64 block", got[0].Images)
	}
	if !bytes.Contains(got[0].Body, []byte(`"media_type":"image/png"`)) {
		t.Errorf("body %s has no image/png base64 source", got[0].Body)
	}
}

// Error statuses, a slow server, an unreachable one and an answer without
// a verdict are skip scores that never hold the key, nor do the logs of
// the call (the SDK's and ours, captured through slog's default).
func TestModelVerdictAnthropicFailuresSkip(t *testing.T) {
	var logs bytes.Buffer
	prev := slog.Default()
	slog.SetDefault(slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug})))
	t.Cleanup(func() { slog.SetDefault(prev) })

	eff := judge.Effective{RubricText: "r"}
	ev := judge.Evidence{Case: registry.EvalCase{ID: "c1", Task: "t"}}
	ctx := context.Background()
	for _, c := range []struct {
		name   string
		answer judgetest.Answer
		block  bool
		says   string
	}{
		{name: "rate limited", answer: func(string) (int, string) { return http.StatusTooManyRequests, "" },
			says: "answered HTTP 429: Number of request tokens has exceeded your per-minute rate limit"},
		{name: "overloaded", answer: func(string) (int, string) { return 529, "" }, says: "answered HTTP 529"},
		{name: "server error", answer: func(string) (int, string) { return http.StatusInternalServerError, "" }, says: "answered HTTP 500"},
		{name: "no verdict", answer: func(string) (int, string) { return http.StatusOK, "I think it is fine." }, says: "no valid verdict"},
		{name: "timeout", answer: func(string) (int, string) { return http.StatusOK, `{"score":1}` }, block: true, says: "did not answer within"},
	} {
		t.Run(c.name, func(t *testing.T) {
			srv := judgetest.NewAnthropic(t, c.answer)
			ep := judges.Endpoint{Name: "grader", Provider: "anthropic", BaseURL: srv.BaseURL(), Model: "claude-test", Key: secretKey}
			if c.block {
				srv.Block = make(chan struct{})
				defer close(srv.Block)
				ep.Timeout = 50 * time.Millisecond // the bound under test, not a timed assertion
			}
			scores, _, err := judges.ModelVerdict(ctx, "q", eff, ev, ep)
			if err != nil {
				t.Fatal(err)
			}
			if len(scores) != 1 || !judges.IsSkip(scores[0]) || !strings.Contains(scores[0].Detail, c.says) {
				t.Fatalf("scores = %+v, want one skip score saying %q", scores, c.says)
			}
			if strings.Contains(scores[0].Detail, secretKey) {
				t.Errorf("skip detail holds the key: %s", scores[0].Detail)
			}
			if len(srv.Received()) != 1 {
				t.Errorf("%d calls, want exactly 1 (no retries)", len(srv.Received()))
			}
		})
	}
	// Unreachable server.
	ep := judges.Endpoint{Name: "grader", Provider: "anthropic", BaseURL: "http://127.0.0.1:1", Model: "m", Key: secretKey}
	scores, _, err := judges.ModelVerdict(ctx, "q", eff, ev, ep)
	if err != nil || len(scores) != 1 || !judges.IsSkip(scores[0]) || strings.Contains(scores[0].Detail, secretKey) {
		t.Errorf("unreachable: scores %+v err %v, want one skip without the key", scores, err)
	}
	if strings.Contains(logs.String(), secretKey) {
		t.Errorf("the logs hold the key:\n%s", logs.String())
	}
}

// Environment settings of the Anthropic SDK (ANTHROPIC_BASE_URL,
// ANTHROPIC_API_KEY) never redirect a judge's call or replace its key.
func TestModelVerdictAnthropicIgnoresEnvironment(t *testing.T) {
	t.Setenv("ANTHROPIC_BASE_URL", "http://127.0.0.1:1")
	t.Setenv("ANTHROPIC_API_KEY", "sk-from-the-environment")
	t.Setenv("ANTHROPIC_AUTH_TOKEN", "tok-from-the-environment")
	srv := judgetest.NewAnthropic(t, func(string) (int, string) { return http.StatusOK, `{"score": 1}` })
	ep := judges.Endpoint{Name: "grader", Provider: "anthropic", BaseURL: srv.BaseURL(), Model: "claude-test", Key: secretKey}
	scores, _, err := judges.ModelVerdict(t.Context(), "q", judge.Effective{RubricText: "r"},
		judge.Evidence{Case: registry.EvalCase{ID: "c1", Task: "t"}}, ep)
	if err != nil || len(scores) != 1 || judges.IsSkip(scores[0]) {
		t.Fatalf("scores %+v err %v", scores, err)
	}
	got := srv.Received()
	if len(got) != 1 || got[0].APIKey != secretKey || got[0].Authorization != "" {
		t.Errorf("received %+v, want the binding's key in x-api-key and no Authorization", got)
	}
}
