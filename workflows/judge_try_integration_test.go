package workflows_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"svc/internal/domain/eval"
	"svc/internal/domain/gate"
	"svc/internal/domain/manifest"
	"svc/internal/service/runs"
	"svc/internal/testing/testwait"
)

// nonemptyJudge passes a case whose final answer is not empty, printing a
// line on stdout and one on stderr first, for the try run's logs.
const nonemptyJudge = `import json, sys
inp = json.load(open(sys.argv[1]))
print("checking the answer")
print("to stderr", file=sys.stderr)
ans = (inp.get("evidence") or {}).get("finalAnswer", "")
print(json.dumps({"metric": "judge", "value": 1 if ans else 0, "pass": bool(ans), "detail": "answer " + ans}))
`

// A code judge tried once is a first-class run of trigger judge-preview:
// placed on the judge's runtime (over a pasted trace) or on the source
// case's placement (over a stored run), its output in the run's logs and
// its scores in the run's result.
func TestCodeJudgeTryRun(t *testing.T) {
	s := newStack(t, "sqlite")
	s.call(t, "POST", "/runtimes", `{"id":"here","version":"1.0.0","kind":"local"}`, 201, nil)
	spec, _ := json.Marshal(map[string]any{"kind": "code", "id": "nonempty", "version": "0.1.0", "language": "python",
		"runtime": "here", "code": nonemptyJudge, "timeoutSec": 30})

	// Source B, placed on the judge's runtime.
	var started struct {
		RunID, Status, Logs, Runtime string
	}
	s.call(t, "POST", "/judges/try", `{"spec":`+string(spec)+`,"evidence":{"source":"B","prompt":"What is 17*23?",
		"trace":[{"kind":"message","role":"assistant","content":"391"}],"output":"391"}}`, 202, &started)
	if started.RunID == "" || started.Runtime != "here" || started.Logs != "/runs/"+started.RunID+"/logs" {
		t.Fatalf("try answered %+v", started)
	}
	run := s.wait(t, started.RunID)
	if run.Status != eval.StatusSucceeded || run.Trigger != eval.TriggerJudgePreview || run.Harness.String() != "nonempty@0.1.0" {
		t.Fatalf("try run ended %s (trigger %q, harness %s): %+v", run.Status, run.Trigger, run.Harness, run.Error)
	}
	if run.Result == nil || len(run.Result.Scores) != 1 || run.Result.Scores[0].Metric != "judge:nonempty" ||
		run.Result.Scores[0].Value != 1 || run.Result.Scores[0].Detail != "answer 391" || !run.Result.Pass {
		t.Errorf("try run result = %+v", run.Result)
	}
	var logs runs.Logs
	s.call(t, "GET", started.Logs, "", 200, &logs)
	var text strings.Builder
	for _, c := range logs.Chunks {
		text.WriteString(c.Stream + ": " + c.Data)
	}
	if !strings.Contains(text.String(), "stdout: checking the answer") || !strings.Contains(text.String(), "stderr: to stderr") {
		t.Errorf("the try run's logs = %q, want the judge's stdout and stderr", text.String())
	}

	// A registered judge without a runtime, over a stored run: placed
	// where the source case ran (the local runtime), judging its result.
	s.harness(t, "answerer", "1.0.0", answerScript, nil)
	var src eval.Run
	s.call(t, "POST", "/runs", `{"harness":{"id":"answerer","version":"1.0.0"},"case":{"id":"even1","task":"answer"}}`, 202, &src)
	s.wait(t, src.ID)
	s.judge(t, "len", "1", lengthJudge)
	s.call(t, "POST", "/judges/len/try", `{"evidence":{"source":"A","runId":"`+src.ID+`"}}`, 202, &started)
	run = s.wait(t, started.RunID)
	if run.Status != eval.StatusSucceeded || run.CaseID != "even1" || run.Harness.String() != "len@1" {
		t.Fatalf("try run of len ended %s over case %q as %s: %+v", run.Status, run.CaseID, run.Harness, run.Error)
	}
	got := map[string]float64{}
	for _, sc := range run.Result.Scores {
		got[sc.Metric] = sc.Value
	}
	if got["judge:len"] != 1 || got["judge:len:length"] != 5 {
		t.Errorf("try run of len scores = %v, want judge:len 1 and judge:len:length 5", got)
	}

	// A judge that cannot judge still ends its run with its skip score.
	bad, _ := json.Marshal(map[string]any{"kind": "code", "id": "broken", "version": "1", "language": "python",
		"runtime": "here", "code": "import sys\nsys.exit(3)\n"})
	s.call(t, "POST", "/judges/try", `{"spec":`+string(bad)+`,"evidence":{"source":"B","trace":[]}}`, 202, &started)
	run = s.wait(t, started.RunID)
	if run.Status != eval.StatusSucceeded || len(run.Result.Scores) != 1 || !strings.HasPrefix(run.Result.Scores[0].Detail, "skipped: judge broken exited with code 3") {
		t.Errorf("try run of a failing judge = %s %+v", run.Status, run.Result)
	}
}

// A re-score with the same judge seals it exactly as the manifest did:
// verify-manifest still matches, and the diff's judges axis against a
// batch judged by the same judge without a re-score reads held.
func TestRescoreSealsEqualManifestSeals(t *testing.T) {
	s := newStack(t, "sqlite")
	s.harness(t, "answerer", "1.0.0", answerScript, nil)
	s.dataset(t, "qa", "even1", "odd1")
	// The judge names a model binding, so its closure resolves one.
	s.call(t, "PUT", "/secrets/openai-key", `{"value":"sk-never-called-1234567890","allowedHosts":["127.0.0.1"]}`, 204, nil)
	s.call(t, "PUT", "/workspace/models/grader", `{"provider":"openai","baseUrl":"http://127.0.0.1:9/v1","model":"m","keySecret":"openai-key"}`, 204, nil)
	b, _ := json.Marshal(map[string]any{"id": "len", "version": "1", "kind": "code", "language": "python", "code": lengthJudge,
		"timeoutSec": 30, "model": map[string]any{"ref": "grader"}})
	s.call(t, "POST", "/judges", string(b), 201, nil)

	batch := func() eval.Scorecard {
		var q eval.Scorecard
		s.call(t, "POST", "/scorecards", `{"dataset":{"id":"qa","version":"1.0.0"},"harness":{"id":"answerer","version":"1.0.0"},"judges":[{"id":"len"}]}`, 202, &q)
		sc := s.waitBatch(t, q.ID)
		if sc.Status != eval.ScorecardSucceeded {
			t.Fatalf("batch %s ended %s: %+v", sc.ID, sc.Status, sc.Error)
		}
		return sc
	}
	base, cand := batch(), batch()
	sealed := cand.Manifest.Judges[0]
	if m := sealed.Closure[manifest.ClosureModel]; !strings.HasPrefix(m, "grader@") || len(cand.JudgeModels) != 1 || cand.JudgeModels[0] != m {
		t.Errorf("the manifest seals model %q and judgeModels %v, want grader@<version> in both", m, cand.JudgeModels)
	}

	s.call(t, "POST", "/scorecards/"+cand.ID+"/score", `{"judges":[{"id":"len"}]}`, 202, nil)
	testwait.UntilValue(t, 2*time.Minute, "a second scoring revision", func() (string, bool) {
		var cur eval.Scorecard
		s.call(t, "GET", "/scorecards/"+cand.ID, "", 200, &cur)
		cand = cur
		return fmt.Sprintf("revisions %+v in flight %q", cand.Scoring, cand.ScoringInFlight), len(cand.Scoring) == 2 && cand.ScoringInFlight == ""
	})
	if got := cand.Scoring[1].Judges; len(got) != 1 || got[0].Digest != sealed.Digest || got[0].Closure[manifest.ClosureModel] != sealed.Closure[manifest.ClosureModel] {
		t.Errorf("re-score seals %+v, want the manifest's %+v", got, sealed)
	}
	var v manifest.Verification
	s.call(t, "POST", "/scorecards/"+cand.ID+"/verify-manifest", "", 200, &v)
	if !v.Verified {
		t.Errorf("verify-manifest after a re-score with the same judge: %+v", v)
	}
	var d gate.ScorecardDiff
	s.call(t, "GET", "/scorecards/diff?baseline="+base.ID+"&candidate="+cand.ID, "", 200, &d)
	if d.Experiment[gate.AxisJudges] != gate.Held {
		t.Errorf("diff judges axis = %q, want held (experiment %v)", d.Experiment[gate.AxisJudges], d.Experiment)
	}
}
