package workflows_test

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"svc/internal/domain/eval"
	"svc/internal/platform/config"
	"svc/internal/testing/judgetest"
	"svc/internal/testing/stacktest"
)

// modelKey is the model server's API key: it must reach the server's
// Authorization header and nothing else.
const modelKey = "sk-loopback-NEVER-STORED-7781"

// TestModelJudgeInJudgedBatch: a legacy model judge in a real judged
// batch gets its scores from a loopback server speaking the OpenAI chat
// completions wire format; the preview of a case renders exactly the
// prompt the server received for it; the key is in no stored record.
func TestModelJudgeInJudgedBatch(t *testing.T) {
	// The stack's log, at info level, is kept to be searched for the key.
	var logs syncBuffer
	st := stacktest.New(t, stacktest.Options{Backend: "sqlite", TaskQueue: taskQueue, Host: "test-worker", Level: slog.LevelInfo, LogTo: &logs,
		Config: func(cfg *config.Config) { cfg.WebhookAllow = "127.0.0.1" }})
	s := &stack{st: st, url: st.URL, store: st.Store, tc: st.Client, apiKey: st.APIKey, ws: st.Workspace, tmp: st.Tmp}
	srv := judgetest.New(t, func(p string) (int, string) {
		if strings.Contains(p, "\nright\n") {
			return http.StatusOK, `{"score": 1, "pass": true, "reason": "right answer", "criteria": {"correct": {"score": 1}}}`
		}
		return http.StatusOK, `{"score": 0, "pass": false, "reason": "wrong answer", "criteria": {"correct": {"score": 0}}}`
	})
	s.harness(t, "answerer", "1.0.0", answerScript, nil)
	s.dataset(t, "qa", "even1", "odd1")
	s.call(t, "PUT", "/secrets/openai-key", `{"value":"`+modelKey+`","allowedHosts":["127.0.0.1"]}`, 204, nil)
	s.call(t, "PUT", "/workspace/models/grader", `{"provider":"openai","baseUrl":"`+srv.BaseURL()+`","model":"gpt-test","keySecret":"openai-key","inputUsdPerMTok":1,"outputUsdPerMTok":2}`, 204, nil)

	// Legacy model judges cannot be registered (spec §2.5): this one is
	// stored as an existing spec is.
	raw := `{"kind":"model","id":"quality","version":"1.0.0","model":"grader","rubric":"Is the answer right?","criteria":[{"id":"correct"}],"passThreshold":0.5}`
	s.storeLegacyJudge(t, raw)

	var queued eval.Scorecard
	s.call(t, "POST", "/scorecards", `{"dataset":{"id":"qa","version":"1.0.0"},"harness":{"id":"answerer","version":"1.0.0"},"judges":[{"id":"quality"}]}`, 202, &queued)
	sc := s.waitBatch(t, queued.ID)
	if sc.Status != eval.ScorecardSucceeded || len(sc.Scorecard) != 2 {
		t.Fatalf("batch ended %s with %d rows: %+v", sc.Status, len(sc.Scorecard), sc.Error)
	}
	for _, row := range sc.Scorecard {
		for _, m := range []string{"judge:quality", "judge:quality:correct"} {
			if _, ok := row.Outcomes[m]; !ok {
				t.Errorf("case %s lacks %s: %v", row.CaseID, m, row.Outcomes)
			}
		}
	}
	got := srv.Received()
	if len(got) != 2 {
		t.Fatalf("the model server received %d calls, want 2", len(got))
	}

	// The preview of each case is the prompt the server received for it.
	for key, runID := range sc.CaseRuns {
		var run eval.Run
		s.call(t, "GET", "/runs/"+runID, "", 200, &run)
		var overall *eval.Score
		for i, sco := range run.Result.Scores {
			if sco.Metric == "judge:quality" {
				overall = &run.Result.Scores[i]
			}
		}
		wantPass := strings.HasPrefix(key, "even")
		if overall == nil || overall.Pass == nil || *overall.Pass != wantPass || !strings.Contains(overall.Detail, "812 input + 64 output tokens") {
			t.Errorf("case %s: judge:quality = %+v, want pass %v with its usage", key, overall, wantPass)
		}
		var pv struct{ Prompt string }
		s.call(t, "POST", "/judges/preview", `{"judge":{"id":"quality","version":"1.0.0"},"evidence":{"source":"A","runId":"`+runID+`"}}`, 200, &pv)
		found := false
		for _, r := range got {
			found = found || r.Prompt == pv.Prompt
		}
		if !found {
			t.Errorf("case %s: the preview's prompt is not what the server received:\n%s", key, pv.Prompt)
		}
		b, _ := json.Marshal(run)
		if strings.Contains(string(b), modelKey) {
			t.Errorf("run %s holds the model key", runID)
		}
	}
	for _, r := range got {
		if r.Authorization != "Bearer "+modelKey {
			t.Errorf("the server got Authorization %q", r.Authorization)
		}
	}
	if !strings.Contains(logs.String(), "model judge call") {
		t.Error("the worker logged no model judge call: the log capture is not the worker's")
	}
	if strings.Contains(logs.String(), modelKey) {
		t.Error("the stack's log holds the model key")
	}
	// Nothing stored holds the key in clear: not the database, not its WAL.
	files, _ := filepath.Glob(filepath.Join(s.tmp, "svc.db*"))
	if len(files) == 0 {
		t.Fatal("no database file to check")
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(b), modelKey) {
			t.Errorf("%s holds the model key in clear", f)
		}
	}
}

// syncBuffer is a bytes.Buffer the API and the worker may log into at once.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// TestAnthropicModelJudgeInJudgedBatch: a legacy model judge on an
// anthropic binding, in a real judged batch, calls Anthropic's Messages
// API (the loopback server answers only POST /v1/messages with the key in
// x-api-key), and the preview of a case is the prompt the server received.
func TestAnthropicModelJudgeInJudgedBatch(t *testing.T) {
	st := stacktest.New(t, stacktest.Options{Backend: "sqlite", TaskQueue: taskQueue, Host: "test-worker",
		Config: func(cfg *config.Config) { cfg.WebhookAllow = "127.0.0.1" }})
	s := &stack{st: st, url: st.URL, store: st.Store, tc: st.Client, apiKey: st.APIKey, ws: st.Workspace, tmp: st.Tmp}
	srv := judgetest.NewAnthropic(t, func(p string) (int, string) {
		if strings.Contains(p, "\nright\n") {
			return http.StatusOK, `{"score": 1, "pass": true, "reason": "right answer"}`
		}
		return http.StatusOK, `{"score": 0, "pass": false, "reason": "wrong answer"}`
	})
	s.harness(t, "answerer", "1.0.0", answerScript, nil)
	s.dataset(t, "qa", "even1", "odd1")
	s.call(t, "PUT", "/secrets/anthropic-key", `{"value":"`+modelKey+`","allowedHosts":["127.0.0.1"]}`, 204, nil)
	s.call(t, "PUT", "/workspace/models/claude", `{"provider":"anthropic","baseUrl":"`+srv.BaseURL()+`","model":"claude-test","keySecret":"anthropic-key"}`, 204, nil)
	raw := `{"kind":"model","id":"quality","version":"1.0.0","model":"claude","rubric":"Is the answer right?","passThreshold":0.5}`
	s.storeLegacyJudge(t, raw)
	var queued eval.Scorecard
	s.call(t, "POST", "/scorecards", `{"dataset":{"id":"qa","version":"1.0.0"},"harness":{"id":"answerer","version":"1.0.0"},"judges":[{"id":"quality"}]}`, 202, &queued)
	sc := s.waitBatch(t, queued.ID)
	if sc.Status != eval.ScorecardSucceeded || len(sc.Scorecard) != 2 {
		t.Fatalf("batch ended %s with %d rows: %+v", sc.Status, len(sc.Scorecard), sc.Error)
	}
	got := srv.Received()
	if len(got) != 2 {
		t.Fatalf("the Messages server received %d calls, want 2", len(got))
	}
	for _, r := range got {
		if r.Path != "/v1/messages" || r.APIKey != modelKey || r.Authorization != "" {
			t.Errorf("the server got path %q, x-api-key set %v, Authorization %q", r.Path, r.APIKey == modelKey, r.Authorization)
		}
	}
	for key, runID := range sc.CaseRuns {
		var run eval.Run
		s.call(t, "GET", "/runs/"+runID, "", 200, &run)
		var overall *eval.Score
		for i, sco := range run.Result.Scores {
			if sco.Metric == "judge:quality" {
				overall = &run.Result.Scores[i]
			}
		}
		wantPass := strings.HasPrefix(key, "even")
		if overall == nil || overall.Pass == nil || *overall.Pass != wantPass {
			t.Errorf("case %s: judge:quality = %+v, want pass %v", key, overall, wantPass)
		}
		var pv struct{ Prompt string }
		s.call(t, "POST", "/judges/preview", `{"judge":{"id":"quality","version":"1.0.0"},"evidence":{"source":"A","runId":"`+runID+`"}}`, 200, &pv)
		found := false
		for _, r := range got {
			found = found || r.Prompt == pv.Prompt
		}
		if !found {
			t.Errorf("case %s: the preview's prompt is not what the Messages server received:\n%s", key, pv.Prompt)
		}
	}
}
