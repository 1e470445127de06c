package workflows_test

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"svc/internal/domain/eval"
	"svc/internal/domain/flows"
	"svc/internal/domain/manifest"
	"svc/internal/domain/trace"
	"svc/internal/testing/testwait"
	"svc/store"
)

// Batches end to end through Temporal's real server: ScorecardWorkflow with
// real shell harnesses and a real python code judge, detached re-scoring,
// experiments, cancel, manifest verification and the driver-ops view.

// answerScript answers each case's expected value, except for cases whose
// id starts with "odd", which get a wrong answer.
const answerScript = `set -eu
id=$(grep -o '"id":"[^"]*"' "$SVC_CASE_FILE" | head -n1 | cut -d'"' -f4)
echo '{"kind":"tool_call","name":"lookup"}' >> "$SVC_TRACE_FILE"
case "$id" in
  odd*) echo wrong ;;
  *) echo right ;;
esac
`

// lengthJudge scores the answer's length and whether the answer is "right".
const lengthJudge = `import json, sys
d = json.load(open(sys.argv[1]))
ans = (d.get("evidence") or {}).get("finalAnswer", "")
print("debug line before the verdict")
print(json.dumps([{"metric": "judge", "value": 1.0 if ans == "right" else 0.0, "pass": ans == "right"},
                  {"metric": "length", "value": len(ans)}]))
`

func (s *stack) dataset(t *testing.T, id string, caseIDs ...string) {
	t.Helper()
	var cases []map[string]any
	for _, c := range caseIDs {
		cases = append(cases, map[string]any{"id": c, "task": "answer " + c, "expected": "right",
			"graders": []map[string]any{{"id": "exact"}}, "tags": []string{strings.TrimRight(c, "0123456789")}})
	}
	b, _ := json.Marshal(map[string]any{"id": id, "version": "1.0.0", "cases": cases})
	s.call(t, "POST", "/datasets", string(b), 201, nil)
}

func (s *stack) judge(t *testing.T, id, version, code string) {
	t.Helper()
	b, _ := json.Marshal(map[string]any{"id": id, "version": version, "kind": "code", "language": "python", "code": code, "timeoutSec": 30})
	s.call(t, "POST", "/judges", string(b), 201, nil)
}

// waitBatch polls GET /scorecards/:id until the batch is terminal.
func (s *stack) waitBatch(t *testing.T, id string) eval.Scorecard {
	t.Helper()
	var sc eval.Scorecard
	testwait.UntilValue(t, 3*time.Minute, "batch "+id+" to end and publish", func() (string, bool) {
		sc = eval.Scorecard{}
		s.call(t, "GET", "/scorecards/"+id, "", 200, &sc)
		return fmt.Sprintf("%s %+v", sc.Status, sc.Progress),
			eval.ScorecardTerminal(sc.Status) && sc.FinishedAt != nil && sc.Publication != nil && sc.Publication.State == "published"
	})
	return sc
}

func TestScorecardEndToEnd(t *testing.T) {
	s := newStack(t, "sqlite")
	s.harness(t, "answerer", "1.0.0", answerScript, nil)
	s.dataset(t, "qa", "even1", "even2", "odd1", "even3", "odd2")
	s.judge(t, "len", "1", lengthJudge)

	var queued eval.Scorecard
	s.call(t, "POST", "/scorecards", `{"dataset":{"id":"qa","version":"latest"},"harness":{"id":"answerer","version":"latest"},
		"judges":[{"id":"len"}],"concurrency":3,"trials":2,"cases":{"tags":["even","odd"],"limit":4},
		"criticalCases":[{"prefix":"even"}]}`, 202, &queued)
	if queued.Status != eval.ScorecardQueued || queued.Subset == nil || queued.Subset.Selected != 4 || queued.Subset.Total != 5 {
		t.Fatalf("submit answered %+v / subset %+v", queued.Status, queued.Subset)
	}
	// The submit's answer is a summary view: the manifest without its
	// per-case digests, which the detail read shows.
	if queued.Manifest == nil || queued.Manifest.Cases != nil || !strings.HasPrefix(queued.Manifest.Harness, "sha256:") || queued.VerdictPolicy == nil {
		t.Fatalf("manifest %+v, policy %+v", queued.Manifest, queued.VerdictPolicy)
	}

	sc := s.waitBatch(t, queued.ID)
	if sc.Status != eval.ScorecardSucceeded {
		t.Fatalf("batch ended %s: %+v", sc.Status, sc.Error)
	}
	if len(sc.Manifest.Cases) != 4 || len(sc.Orchestration.CaseIDs) != 4 {
		t.Errorf("the detail read shows %d case digests and %d case ids, want 4 and 4", len(sc.Manifest.Cases), len(sc.Orchestration.CaseIDs))
	}
	if len(sc.Scorecard) != 8 || len(sc.CaseRuns) != 8 {
		t.Fatalf("%d case rows and %d caseRuns, want 8 (4 cases x 2 trials)", len(sc.Scorecard), len(sc.CaseRuns))
	}
	for _, row := range sc.Scorecard {
		wantPass := strings.HasPrefix(row.CaseID, "even")
		if row.CasePass != wantPass {
			t.Errorf("case %s#%d: casePass %v, want %v (%s, %s)", row.CaseID, row.Trial, row.CasePass, wantPass, row.Verdict, row.VerdictBasis)
		}
		if _, ok := row.Outcomes["judge:len"]; !ok {
			t.Errorf("case %s#%d lacks judge:len: %v", row.CaseID, row.Trial, row.Outcomes)
		}
		if _, ok := row.Outcomes["judge:len:length"]; !ok {
			t.Errorf("case %s#%d lacks judge:len:length", row.CaseID, row.Trial)
		}
		if row.EvidenceStatus == nil || row.EvidenceStatus.Trace != "complete" {
			t.Errorf("case %s evidenceStatus %+v", row.CaseID, row.EvidenceStatus)
		}
		if want := strings.HasPrefix(row.CaseID, "even"); row.Critical != want {
			t.Errorf("case %s critical %v, want %v", row.CaseID, row.Critical, want)
		}
	}
	if m, ok := sc.Summary["exact"]; !ok || m.Count != 8 || m.PassRate == nil || *m.PassRate != 0.75 {
		t.Errorf("summary exact = %+v", sc.Summary["exact"])
	}
	if m, ok := sc.Summary["judge:len:length"]; !ok || m.P50 == nil || m.P95 == nil {
		t.Errorf("summary of a numeric metric lacks p50/p95: %+v", m)
	}
	if len(sc.Scoring) != 1 || sc.Scoring[0].Kind != "initial" || !strings.HasPrefix(sc.Scoring[0].ScorePlaneDigest, "sha256:") {
		t.Errorf("scoring %+v", sc.Scoring)
	}
	// even1, even2, odd1 and even3 are the first four matching the tags.
	if sc.Progress.Total != 8 || sc.Progress.Done != 8 || sc.Progress.Passed != 6 || sc.Progress.Failed != 2 {
		t.Errorf("progress %+v", sc.Progress)
	}
	// The finish recorded the pace: from the first case to the finish.
	if p := sc.Progress; p.Queued != 0 || p.Running != 0 || p.CasesPerSecond <= 0 || p.StartedAt == nil || p.UpdatedAt == nil ||
		p.StartedAt.Before(sc.CreatedAt) || !p.UpdatedAt.Equal(*sc.FinishedAt) {
		t.Errorf("progress %+v of a batch created %s and finished %s: want nothing queued or running, and the pace from the first case to the finish",
			p, sc.CreatedAt, sc.FinishedAt)
	}
	if sc.PolicyResolution == nil || sc.PolicyResolution.Status != "resolved" {
		t.Errorf("policyResolution %+v", sc.PolicyResolution)
	}
	phases := map[string]bool{}
	for _, st := range sc.Steps {
		phases[st.Phase+":"+st.Status] = true
	}
	for _, want := range []string{"submit:succeeded", "dispatch:started", "finalize:succeeded"} {
		if !phases[want] {
			t.Errorf("steps lack %s: %+v", want, sc.Steps)
		}
	}

	// The batch's children: hidden from GET /runs, listed by scorecardId.
	var top, children []eval.Run
	s.call(t, "GET", "/runs", "", 200, &top)
	s.call(t, "GET", "/runs?scorecardId="+sc.ID+"&limit=100", "", 200, &children)
	if len(top) != 0 || len(children) != 8 {
		t.Errorf("GET /runs shows %d runs (want 0), ?scorecardId %d (want 8)", len(top), len(children))
	}
	for _, c := range children {
		if c.Canonical == nil || !*c.Canonical || c.ParentScorecardID != sc.ID || c.Trigger != eval.TriggerScorecard {
			t.Errorf("child %+v", c)
		}
	}
	// Children do not notify; the batch does, once (just after its
	// record turns final).
	var feed []store.Notification
	testwait.Until(t, time.Minute, "the batch's notification", func() bool {
		feed = nil
		s.call(t, "GET", "/notifications", "", 200, &feed)
		return len(feed) > 0
	})
	if len(feed) != 1 || feed[0].Kind != eval.NotifyScorecardCompleted {
		t.Errorf("notifications %+v, want one scorecard_completed", feed)
	}

	saveHistory(t, s.tc, sc.ID, "scorecard_judged")
	var v manifest.Verification
	s.call(t, "POST", "/scorecards/"+sc.ID+"/verify-manifest", "", 200, &v)
	if !v.Verified {
		t.Errorf("verify-manifest: %+v", v)
	}

	// The record is final a moment before the workflow itself completes.
	var drv flows.DriverView
	testwait.Until(t, time.Minute, "the batch workflow to complete", func() bool {
		drv = flows.DriverView{}
		s.call(t, "GET", "/ops/driver/batch/"+sc.ID, "", 200, &drv)
		return drv.Status == "Completed"
	})
	if drv.HistoryLength == 0 || drv.Type != "ScorecardWorkflow" {
		t.Errorf("driver view %+v", drv)
	}

	// Re-score with a second judge: its verdicts are added, the first
	// judge's kept, and revision 2 is a rescore.
	s.judge(t, "strict", "1", `import json; print(json.dumps({"metric":"judge","value":0,"pass":False,"detail":"never satisfied"}))`)
	s.call(t, "POST", "/scorecards/"+sc.ID+"/score", `{"judges":[{"id":"strict"}]}`, 202, nil)
	s.call(t, "POST", "/scorecards/"+sc.ID+"/score", `{"judges":[{"id":"strict"}]}`, 409, nil)
	testwait.UntilValue(t, 2*time.Minute, "a second scoring revision", func() (string, bool) {
		var cur eval.Scorecard // a fresh value: decoding does not clear absent fields
		s.call(t, "GET", "/scorecards/"+sc.ID, "", 200, &cur)
		sc = cur
		return fmt.Sprintf("revisions %+v in flight %q", sc.Scoring, sc.ScoringInFlight), len(sc.Scoring) == 2 && sc.ScoringInFlight == ""
	})
	saveHistory(t, s.tc, sc.Scoring[1].JudgeRun, "score_pass")
	if sc.Scoring[1].Kind != "rescore" || len(sc.Scoring[1].Judges) != 1 || sc.Scoring[1].Judges[0].ID != "strict" {
		t.Errorf("revision 2 = %+v", sc.Scoring[1])
	}
	for _, row := range sc.Scorecard {
		if _, ok := row.Outcomes["judge:strict"]; !ok {
			t.Errorf("case %s lacks the new judge's verdict", row.CaseID)
		}
		if _, ok := row.Outcomes["judge:len"]; !ok {
			t.Errorf("case %s lost the first judge's verdict", row.CaseID)
		}
	}
	// Each revision froze its analysis bundle.
	for _, rev := range []string{"", "?revision=1", "?revision=2"} {
		var bundle trace.Analysis
		s.call(t, "GET", "/scorecards/"+sc.ID+"/analysis"+rev, "", 200, &bundle)
		want := 2
		if rev == "?revision=1" {
			want = 1
		}
		if bundle.Revision != want || len(bundle.Cases) != 8 || bundle.Digests.ScorePlane != sc.Scoring[want-1].ScorePlaneDigest {
			t.Errorf("analysis%s: revision %d, %d cases, plane %s", rev, bundle.Revision, len(bundle.Cases), bundle.Digests.ScorePlane)
		}
	}
	s.call(t, "GET", "/scorecards/"+sc.ID+"/analysis?revision=3", "", 404, nil)
	var events []store.Event
	if events, _ = s.store.ListEvents(t.Context(), store.EventFilter{Workspace: s.ws, Type: "scorecard.scored"}); len(events) != 1 {
		t.Errorf("scorecard.scored events: %d, want 1", len(events))
	}
}

func TestScorecardRefusals(t *testing.T) {
	s := newStack(t, "sqlite")
	s.harness(t, "answerer", "1.0.0", answerScript, nil)
	s.dataset(t, "qa", "even1", "odd1")
	for _, tc := range []struct {
		body   string
		status int
	}{
		{`{"dataset":{"id":"nope","version":"latest"},"harness":{"id":"answerer","version":"latest"}}`, 404},
		{`{"dataset":{"id":"qa","version":"latest"},"harness":{"id":"answerer","version":"latest"},"concurrency":0}`, 400},
		{`{"dataset":{"id":"qa","version":"latest"},"harness":{"id":"answerer","version":"latest"},"concurrency":65}`, 400},
		{`{"dataset":{"id":"qa","version":"latest"},"harness":{"id":"answerer","version":"latest"},"cases":{"ids":["ghost"]}}`, 400},
		{`{"dataset":{"id":"qa","version":"latest"},"harness":{"id":"answerer","version":"latest"},"cases":{"tags":["none"]}}`, 400},
	} {
		s.call(t, "POST", "/scorecards", tc.body, tc.status, nil)
	}
	s.call(t, "POST", "/groups", `{"harness":{"id":"answerer","version":"latest"}}`, 400, nil)
	s.call(t, "POST", "/groups", `{"harness":{"id":"answerer","version":"latest"},"dataset":{"id":"qa","version":"1.0.0"},"task":{"prompt":"x"}}`, 400, nil)
}

// An experiment is ungraded; scoring it makes it a scorecard.
func TestExperimentThenScore(t *testing.T) {
	s := newStack(t, "sqlite")
	s.harness(t, "answerer", "1.0.0", answerScript, nil)
	s.judge(t, "len", "1", lengthJudge)
	var g eval.Scorecard
	s.call(t, "POST", "/groups", `{"harness":{"id":"answerer","version":"1.0.0"},"task":{"prompt":"say something"},"trials":3}`, 202, &g)
	if g.Kind != eval.KindExperiment || g.Dataset.ID != eval.DatasetAdhoc {
		t.Fatalf("group %+v", g)
	}
	g = s.waitBatch(t, g.ID)
	if g.Status != eval.ScorecardSucceeded || len(g.Scorecard) != 3 || len(g.Scoring) != 0 {
		t.Fatalf("experiment ended %s with %d rows and %d revisions", g.Status, len(g.Scorecard), len(g.Scoring))
	}
	for _, row := range g.Scorecard {
		if len(row.Scores) != 0 {
			t.Errorf("an experiment's case carries scores: %+v", row.Scores)
		}
	}
	saveHistory(t, s.tc, g.ID, "experiment_task")
	var again eval.Scorecard
	s.call(t, "GET", "/groups/"+g.ID, "", 200, &again)
	s.call(t, "POST", "/groups/"+g.ID+"/score", `{"judges":[{"id":"len","version":"1"}]}`, 202, nil)
	testwait.Until(t, 2*time.Minute, "scoring the experiment to make a revision", func() bool {
		var cur eval.Scorecard
		s.call(t, "GET", "/groups/"+g.ID, "", 200, &cur)
		g = cur
		return len(g.Scoring) == 1 && g.ScoringInFlight == ""
	})
	if g.Kind != eval.KindScorecard || g.Scoring[0].Kind != "initial" {
		t.Errorf("after scoring: kind %s, revision %+v", g.Kind, g.Scoring[0])
	}
}

// Cancel mid-run: the batch ends cancelled, no further case fires, and no
// harness process is left running.
func TestScorecardCancel(t *testing.T) {
	s := newStack(t, "sqlite")
	pidFile := filepath.Join(s.tmp, "batch.pids")
	s.harness(t, "slow", "1", fmt.Sprintf("echo $$ >> %s\nsleep 1000 &\necho $! >> %s\nwait\n", pidFile, pidFile), nil)
	var ids []string
	for i := range 20 {
		ids = append(ids, fmt.Sprintf("c%d", i))
	}
	s.dataset(t, "many", ids...)
	var q eval.Scorecard
	s.call(t, "POST", "/scorecards", `{"dataset":{"id":"many","version":"latest"},"harness":{"id":"slow","version":"1"},"concurrency":2}`, 202, &q)
	testwait.Until(t, time.Minute, "two cases running", func() bool { return len(readPids(t, pidFile)) >= 4 })
	var cancelled eval.Scorecard
	s.call(t, "POST", "/scorecards/"+q.ID+"/cancel", "", 200, &cancelled)
	if cancelled.Status != eval.ScorecardCancelled {
		t.Fatalf("cancel answered %s", cancelled.Status)
	}
	s.call(t, "POST", "/scorecards/"+q.ID+"/cancel", "", 409, nil)
	sc := s.waitBatch(t, q.ID)
	if sc.Status != eval.ScorecardCancelled {
		t.Errorf("batch ended %s, want cancelled", sc.Status)
	}
	saveHistory(t, s.tc, q.ID, "scorecard_cancelled")
	pids := readPids(t, pidFile)
	testwait.Until(t, time.Minute, "every harness process to be gone", func() bool {
		for _, p := range pids {
			if alive(p) {
				return false
			}
		}
		return true
	})
	if n := len(readPids(t, pidFile)); n > 4 {
		t.Errorf("%d harness processes started; a cancelled batch must not fire more cases", n/2)
	}
	if len(sc.Scorecard) > 2 {
		t.Errorf("%d child runs exist, want at most the 2 that were running", len(sc.Scorecard))
	}
	var feed []store.Notification
	s.call(t, "GET", "/notifications", "", 200, &feed)
	if len(feed) != 0 {
		t.Errorf("a cancelled batch notified: %+v", feed)
	}
}
