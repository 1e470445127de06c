package judges_test

import (
	"context"
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

func fp(x float64) *float64 { return &x }
func bp(b bool) *bool       { return &b }

func TestVerdictScores(t *testing.T) {
	crit := []registry.Criterion{{ID: "a", Weight: fp(3), PassThreshold: fp(0.5)}, {ID: "b"}}
	for _, c := range []struct {
		name       string
		eff        judge.Effective
		milestones []registry.Milestone
		verdict    string
		want       []eval.Score
	}{
		{name: "overall only, threshold re-decides the pass", eff: judge.Effective{PassThreshold: fp(0.9)}, verdict: `{"score":0.8,"pass":true,"reason":"ok"}`,
			want: []eval.Score{{GraderID: "j", Metric: "judge:j", Value: 0.8, Pass: bp(false), Detail: "ok"}}},
		{name: "weighted mean of criteria", eff: judge.Effective{Criteria: crit, PassThreshold: fp(0.5)}, verdict: `{"criteria":{"a":{"score":1},"b":{"score":0}}}`,
			want: []eval.Score{
				{GraderID: "j", Metric: "judge:j", Value: 0.75, Pass: bp(true), Detail: "weighted mean of 2 criteria"},
				{GraderID: "j", Metric: "judge:j:a", Value: 1, Pass: bp(true)},
				{GraderID: "j", Metric: "judge:j:b", Value: 0}}},
		{name: "missing criterion and milestone are error scores", eff: judge.Effective{Criteria: crit}, milestones: []registry.Milestone{{ID: "m"}},
			verdict: `{"score":0.4,"criteria":{"a":{"score":0.2}}}`,
			want: []eval.Score{
				{GraderID: "j", Metric: "judge:j", Value: 0.4},
				{GraderID: "j", Metric: "judge:j:a", Value: 0.2, Pass: bp(false)},
				{GraderID: "j", Metric: "judge:j:b", Value: 0, Pass: bp(false), Detail: "error: criterion b missing from the verdict"},
				{GraderID: "j", Metric: "judge:j:milestone:m", Value: 0, Pass: bp(false), Detail: "error: criterion milestone:m missing from the verdict"}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			v, err := judge.ParseVerdict(c.verdict)
			if err != nil {
				t.Fatal(err)
			}
			got := judges.VerdictScores("j", c.eff, c.milestones, v, nil)
			if diff := cmp.Diff(c.want, got); diff != "" {
				t.Errorf("VerdictScores (-want +got):\n%s", diff)
			}
		})
	}
}

const secretKey = "sk-test-DO-NOT-LEAK-4242"

func TestModelVerdictLoopback(t *testing.T) {
	eff := judge.Effective{RubricText: "Is 17*23 answered right?", Criteria: []registry.Criterion{{ID: "correct"}}}
	ev := judge.Evidence{Case: registry.EvalCase{ID: "c1", Task: "What is 17*23?"}, Evidence: &eval.Evidence{FinalAnswer: "391"}}
	ctx := context.Background()

	srv := judgetest.New(t, func(p string) (int, string) {
		if strings.Contains(p, "391") {
			return http.StatusOK, "Here you are:\n" + `{"score": 1, "pass": true, "reason": "right", "criteria": {"correct": {"score": 1}}}`
		}
		return http.StatusOK, `{"score": 0}`
	})
	ep := judges.Endpoint{Name: "grader", BaseURL: srv.BaseURL(), Model: "gpt-test", Key: secretKey,
		Price: func(in, out int64) (float64, bool) { return float64(in+out) / 1e6, true }}
	scores, usage, err := judges.ModelVerdict(ctx, "quality", eff, ev, ep)
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
	if usage == nil || usage.InputTokens != 812 || usage.OutputTokens != 64 {
		t.Errorf("usage = %+v, want 812 in, 64 out", usage)
	}
	got := srv.Received()
	if len(got) != 1 {
		t.Fatalf("server received %d requests, want 1", len(got))
	}
	// The preview's text is the text sent.
	if p := judge.Render(eff, ev).Prompt; got[0].Prompt != p {
		t.Errorf("sent prompt differs from the rendered one:\nsent %q\nrendered %q", got[0].Prompt, p)
	}
	if got[0].Authorization != "Bearer "+secretKey || got[0].Model != "gpt-test" {
		t.Errorf("request auth %q model %q", got[0].Authorization, got[0].Model)
	}
}

func TestModelVerdictFailuresSkip(t *testing.T) {
	eff := judge.Effective{RubricText: "r"}
	ev := judge.Evidence{Case: registry.EvalCase{ID: "c1", Task: "t"}}
	ctx := context.Background()
	for _, c := range []struct {
		name   string
		answer judgetest.Answer
		block  bool
		says   string
	}{
		{name: "rate limited", answer: func(string) (int, string) { return http.StatusTooManyRequests, "" }, says: "answered HTTP 429: Rate limit reached"},
		{name: "server error", answer: func(string) (int, string) { return http.StatusInternalServerError, "" }, says: "answered HTTP 500"},
		{name: "no verdict", answer: func(string) (int, string) { return http.StatusOK, "I think it is fine." }, says: "no valid verdict"},
		{name: "timeout", answer: func(string) (int, string) { return http.StatusOK, `{"score":1}` }, block: true, says: "did not answer within"},
	} {
		t.Run(c.name, func(t *testing.T) {
			srv := judgetest.New(t, c.answer)
			ep := judges.Endpoint{Name: "grader", BaseURL: srv.BaseURL(), Model: "gpt-test", Key: secretKey}
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
		})
	}
	// Unreachable server.
	ep := judges.Endpoint{Name: "grader", BaseURL: "http://127.0.0.1:1/v1", Model: "m", Key: secretKey}
	scores, _, err := judges.ModelVerdict(ctx, "q", eff, ev, ep)
	if err != nil || len(scores) != 1 || !judges.IsSkip(scores[0]) || strings.Contains(scores[0].Detail, secretKey) {
		t.Errorf("unreachable: scores %+v err %v, want one skip without the key", scores, err)
	}
}
