package activities_test

import (
	"strings"
	"testing"

	"svc/drivers/nomad/nomadtest"
	"svc/internal/domain/eval"
)

// judgeVerdict is what the fake cluster prints for a judge's job.
const judgeVerdict = `{"metric": "judge", "value": 1, "pass": true, "detail": "ran in the judge image"}`

// A code judge whose program is an entrypoint in its image runs through
// its runtime's driver: tried (a run of trigger judge-preview placed on the
// judge's runtime) and in a judged batch, the fake Nomad cluster gets a
// job in the judge's image running the entrypoint, and its output is the
// judge's score.
func TestImageJudgeOnNomadRuntime(t *testing.T) {
	s := newNomadStack(t)
	s.cluster.ScriptFor(func(r nomadtest.Registered) nomadtest.Script {
		if len(r.Case()) == 0 {
			// A judge's job: no case, the judge's input file beside it.
			return nomadtest.Script{Stdout: []string{"judging\n", judgeVerdict + "\n"}}
		}
		return nomadtest.Script{Stdout: []string{"4\n"}}
	})
	s.Call(t, "POST", "/judges", `{"id":"imgj","version":"1","kind":"code","language":"python","entrypoint":"/judge/run",
		"image":"registry.example/judge:1","runtime":"cluster","timeoutSec":60}`, 201, nil)

	var queued struct{ RunID, Runtime string }
	s.Call(t, "POST", "/judges/imgj/try", `{"evidence":{"source":"B","prompt":"2+2?","trace":[{"kind":"message","role":"assistant","content":"4"}]}}`, 202, &queued)
	if queued.Runtime != "cluster" {
		t.Errorf("the try is placed on %q, want the judge's runtime cluster", queued.Runtime)
	}
	run := s.wait(t, queued.RunID)
	if run.Status != eval.StatusSucceeded || run.Result == nil || len(run.Result.Scores) != 1 || run.Result.Scores[0].Metric != "judge:imgj" || run.Result.Scores[0].Value != 1 {
		t.Fatalf("try run %s: %+v %+v", run.Status, run.Result, run.Error)
	}

	s.dataset(t, "qa", "ok1")
	var q eval.Scorecard
	s.Call(t, "POST", "/scorecards", `{"dataset":{"id":"qa","version":"latest"},"harness":{"id":"agent","version":"latest"},
		"runtime":"cluster","judges":[{"id":"imgj"}]}`, 202, &q)
	sc := s.waitBatch(t, q.ID)
	if sc.Status != eval.ScorecardSucceeded || len(sc.Scorecard) != 1 {
		t.Fatalf("batch ended %s: %+v", sc.Status, sc.Error)
	}
	child := s.wait(t, sc.Scorecard[0].RunID)
	var judged bool
	for _, x := range child.Result.Scores {
		judged = judged || (x.Metric == "judge:imgj" && x.Value == 1 && x.Detail == "ran in the judge image")
	}
	if !judged {
		t.Errorf("the batch's case has no judge:imgj score from the cluster: %+v", child.Result.Scores)
	}
	images := 0
	for _, id := range s.cluster.Jobs() {
		_, body, _ := s.cluster.Job(id)
		if strings.Contains(string(body), `"image":"registry.example/judge:1"`) && strings.Contains(string(body), "/judge/run") {
			images++
		}
	}
	if images != 2 {
		t.Errorf("%d jobs ran the judge's entrypoint in its image, want 2 (the try and the batch's case)", images)
	}
}
