package workflows_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"svc/internal/domain/eval"
	"svc/internal/domain/registry"
	"svc/internal/testing/judgetest"
	"svc/store"
)

// graderScript is the harness a legacy harness judge delegates to: its
// task is the judge's rendered prompt (in the case file, JSON-escaped), and
// its final answer the verdict.
const graderScript = `set -eu
if grep -q 'Final answer\\nright\\n' "$SVC_CASE_FILE"; then
  echo '{"score": 1, "pass": true, "reason": "the answer is right", "criteria": {"correct": {"score": 1}}}'
else
  echo '{"score": 0, "pass": false, "reason": "the answer is wrong", "criteria": {"correct": {"score": 0}}}'
fi
`

// storeLegacyJudge stores a legacy judge spec as an existing one is
// stored: legacy kinds cannot be registered through the API.
func (s *stack) storeLegacyJudge(t *testing.T, raw string) {
	t.Helper()
	spec, err := registry.Parse(registry.Judge, []byte(raw), false)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.store.RegisterVersion(t.Context(), store.EntityVersion{Kind: string(registry.Judge), Owner: s.ws, ID: spec.ID(),
		Version: spec.Version(), Digest: spec.Digest(), Spec: spec.Canonical(), CreatedAt: time.Now().UTC()}, "", nil); err != nil {
		t.Fatal(err)
	}
}

type judgeTryAnswer struct {
	Skipped bool
	RunID   string
	Scores  []eval.Score
}

// A legacy harness judge runs its registered harness as the judge: in a
// judged batch each case gets a child run of the grader harness whose task
// is the rendered prompt, and its final answer is read as the verdict
// (criteria completed, the overall naming the run); the same judge tried
// inline answers its scores; a judge whose harness is gone is a skip score.
// A live one-case dispatch (evidence source C) previews the prompt of the
// case it ran.
func TestHarnessJudge(t *testing.T) {
	s := newStack(t, "sqlite")
	s.harness(t, "answerer", "1.0.0", answerScript, nil)
	s.harness(t, "grader", "1.0.0", graderScript, nil)
	s.dataset(t, "qa", "even1", "odd1")
	s.storeLegacyJudge(t, `{"kind":"harness","id":"hj","version":"1.0.0","harness":{"id":"grader","version":"1.0.0"},
		"rubric":"Is the answer right?","criteria":[{"id":"correct","description":"the answer is right"}]}`)
	s.storeLegacyJudge(t, `{"kind":"harness","id":"gone","version":"1.0.0","harness":{"id":"no-such-harness","version":"1.0.0"}}`)

	var q eval.Scorecard
	s.call(t, "POST", "/scorecards", `{"dataset":{"id":"qa","version":"1.0.0"},"harness":{"id":"answerer","version":"1.0.0"},"judges":[{"id":"hj"},{"id":"gone"}]}`, 202, &q)
	sc := s.waitBatch(t, q.ID)
	if sc.Status != eval.ScorecardSucceeded || len(sc.Scorecard) != 2 {
		t.Fatalf("batch ended %s with %d rows: %+v", sc.Status, len(sc.Scorecard), sc.Error)
	}
	var evenRun string
	for key, runID := range sc.CaseRuns {
		var run eval.Run
		s.call(t, "GET", "/runs/"+runID, "", 200, &run)
		by := map[string]eval.Score{}
		for _, x := range run.Result.Scores {
			by[x.Metric] = x
		}
		right := strings.HasPrefix(key, "even")
		if right {
			evenRun = runID
		}
		overall, crit := by["judge:hj"], by["judge:hj:correct"]
		if overall.Pass == nil || *overall.Pass != right || crit.Value != map[bool]float64{true: 1, false: 0}[right] {
			t.Errorf("case %s: judge:hj = %+v, judge:hj:correct = %+v; want the grader's verdict (right: %v)", key, overall, crit, right)
		}
		if !strings.Contains(overall.Detail, "[judged by run run_") {
			t.Errorf("case %s: judge:hj's detail names no judge run: %q", key, overall.Detail)
		}
		if got := by["judge:gone"]; !strings.HasPrefix(got.Detail, "skipped: the judge's harness no-such-harness@1.0.0 is not registered") {
			t.Errorf("case %s: judge:gone = %+v, want the missing harness's skip score", key, got)
		}
		// The judge's run is a first-class run of the grader harness.
		judgeRun := overall.Detail[strings.Index(overall.Detail, "run_"):]
		judgeRun = strings.TrimSuffix(judgeRun, "]")
		var jr eval.Run
		s.call(t, "GET", "/runs/"+judgeRun, "", 200, &jr)
		if jr.Harness.ID != "grader" || jr.Trigger != "judge" || jr.Case == nil || !strings.Contains(jr.Case.Task.(string), "## Rubric\nIs the answer right?") {
			t.Fatalf("case %s: the judge's run %s is %+v", key, judgeRun, jr)
		}
		// The preview of the case is the task the harness was given.
		var pv struct{ Prompt string }
		s.call(t, "POST", "/judges/preview", `{"judge":{"id":"hj","version":"1.0.0"},"evidence":{"source":"A","runId":"`+runID+`"}}`, 200, &pv)
		if pv.Prompt != jr.Case.Task.(string) {
			t.Errorf("case %s: the preview's prompt is not the task the judge's harness got:\n%s\n---\n%s", key, pv.Prompt, jr.Case.Task)
		}
	}
	if sc.Summary == nil {
		t.Fatal("no summary")
	}

	// Tried inline over the even case (source A): the grader runs again as
	// a run of the caller's, and its verdict is answered.
	var tried judgeTryAnswer
	s.call(t, "POST", "/judges/hj/try", `{"evidence":{"source":"A","runId":"`+evenRun+`"}}`, 200, &tried)
	if tried.Skipped || tried.RunID == "" || len(tried.Scores) != 2 || tried.Scores[0].Metric != "judge:hj" || tried.Scores[0].Value != 1 {
		t.Errorf("try = %+v, want the grader's verdict 1 and its run", tried)
	}
	s.call(t, "POST", "/judges/gone/try", `{"evidence":{"source":"A","runId":"`+evenRun+`"}}`, 200, &tried)
	if !tried.Skipped || len(tried.Scores) != 1 || !strings.HasPrefix(tried.Scores[0].Detail, "skipped: ") {
		t.Errorf("try of the judge whose harness is gone = %+v, want its skip score", tried)
	}

	// Source C: a live one-case dispatch, previewed.
	var pv struct {
		Prompt         string
		RunID          string
		EvidenceStatus eval.EvidenceStatus
	}
	s.call(t, "POST", "/judges/preview", `{"judge":{"id":"hj","version":"1.0.0"},"evidence":{"source":"C","harness":{"id":"answerer","version":"1.0.0"},
		"case":{"id":"even7","task":"answer even7"}}}`, 200, &pv)
	if pv.RunID == "" || !strings.Contains(pv.Prompt, "## Task\nanswer even7\n") || !strings.Contains(pv.Prompt, "## Final answer\nright\n") ||
		pv.EvidenceStatus.Trace == "" {
		t.Errorf("preview of source C = %+v", pv)
	}
	var live eval.Run
	s.call(t, "GET", "/runs/"+pv.RunID, "", 200, &live)
	if live.Status != eval.StatusSucceeded || live.Harness.ID != "answerer" {
		t.Errorf("the live dispatch's run is %s of %s", live.Status, live.Harness)
	}
	// Source C needs a harness and a case.
	s.call(t, "POST", "/judges/preview", `{"judge":{"id":"hj","version":"1.0.0"},"evidence":{"source":"C","case":{"id":"x","task":"t"}}}`, 400, nil)
}

// A code judge's model calls through the proxy are summed into its
// overall score's detail (calls, tokens, cost).
func TestCodeJudgeModelUsageInDetail(t *testing.T) {
	s := newStack(t, "sqlite")
	srv := judgetest.New(t, func(p string) (int, string) { return 200, "yes" })
	s.harness(t, "answerer", "1.0.0", answerScript, nil)
	s.dataset(t, "qa", "even1")
	s.call(t, "PUT", "/secrets/openai-key", `{"value":"`+proxyKey+`","allowedHosts":["127.0.0.1"]}`, 204, nil)
	s.call(t, "PUT", "/workspace/models/grader", `{"provider":"openai","baseUrl":"`+srv.BaseURL()+`","model":"gpt-test","keySecret":"openai-key","inputUsdPerMTok":1,"outputUsdPerMTok":2}`, 204, nil)
	b, _ := json.Marshal(map[string]any{"id": "asker", "version": "1", "kind": "code", "language": "python", "code": modelJudge,
		"timeoutSec": 30, "model": map[string]any{"ref": "grader"}})
	s.call(t, "POST", "/judges", string(b), 201, nil)
	var q eval.Scorecard
	s.call(t, "POST", "/scorecards", `{"dataset":{"id":"qa","version":"1.0.0"},"harness":{"id":"answerer","version":"1.0.0"},"judges":[{"id":"asker"}]}`, 202, &q)
	sc := s.waitBatch(t, q.ID)
	if sc.Status != eval.ScorecardSucceeded {
		t.Fatalf("batch ended %s: %+v", sc.Status, sc.Error)
	}
	if len(sc.JudgeModels) != 1 || !strings.HasPrefix(sc.JudgeModels[0], "grader@") {
		t.Errorf("judgeModels = %v, want the grader binding", sc.JudgeModels)
	}
	for _, runID := range sc.CaseRuns {
		var run eval.Run
		s.call(t, "GET", "/runs/"+runID, "", 200, &run)
		found := false
		for _, x := range run.Result.Scores {
			if x.Metric == "judge:asker" {
				found = true
				if !strings.HasSuffix(x.Detail, "[model grader: 1 call, 812 input + 64 output tokens, $0.000940]") {
					t.Errorf("judge:asker's detail = %q, want its model usage", x.Detail)
				}
			}
		}
		if !found {
			t.Errorf("run %s has no judge:asker score: %+v", runID, run.Result.Scores)
		}
	}
}
