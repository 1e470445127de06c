package workflows_test

import (
	"net/url"
	"testing"

	"github.com/google/go-cmp/cmp"

	"svc/internal/domain/eval"
	"svc/internal/domain/gate"
	"svc/internal/domain/trace"
)

// Push ingest end to end (issue 16 point 5): a managed scorecard of a
// harness, then the traces of the same cases pushed to POST
// /scorecards/ingest, graded by the same ScorecardWorkflow from their
// sealed copy and judged; the two then diff and gate against each other
// case by case.
func TestIngestDiffsAndGatesAgainstManaged(t *testing.T) {
	s := newStack(t, "sqlite")
	s.harness(t, "answerer", "1.0.0", answerScript, nil)
	s.dataset(t, "qa", "even1", "even2", "odd1")
	s.judge(t, "len", "1", lengthJudge)

	var managed eval.Scorecard
	s.call(t, "POST", "/scorecards", `{"dataset":{"id":"qa","version":"1.0.0"},"harness":{"id":"answerer","version":"1.0.0"},"judges":[{"id":"len"}]}`, 202, &managed)
	base := s.waitBatch(t, managed.ID)
	if base.Status != eval.ScorecardSucceeded {
		t.Fatalf("the managed batch ended %s: %+v", base.Status, base.Error)
	}

	// even1 still passes, even2 breaks, odd1 is fixed; "elsewhere" is not
	// a case of qa and is skipped.
	var queued eval.Scorecard
	s.call(t, "POST", "/scorecards/ingest", `{"dataset":{"id":"qa","version":"1.0.0"},"harness":{"id":"answerer","version":"1.0.0"},"judges":[{"id":"len"}],"traces":[
		{"caseId":"even1","trace":[{"kind":"tool_call","name":"lookup"},{"kind":"message","role":"assistant","content":"right"}]},
		{"caseId":"even2","trace":[{"kind":"tool_call","name":"lookup"},{"kind":"message","role":"assistant","content":"wrong"}]},
		{"caseId":"odd1","trace":[{"kind":"llm_call","model":"m","costUsd":0.01},{"kind":"message","role":"assistant","content":"right"}]},
		{"caseId":"elsewhere","trace":[{"kind":"message","role":"assistant","content":"right"}]}]}`, 202, &queued)
	cand := s.waitBatch(t, queued.ID)
	if cand.Status != eval.ScorecardSucceeded {
		t.Fatalf("the ingest ended %s: %+v", cand.Status, cand.Error)
	}
	wantPass := map[string]bool{"even1": true, "even2": false, "odd1": true}
	if len(cand.Scorecard) != 3 {
		t.Fatalf("the ingest has %d case rows, want 3: %+v", len(cand.Scorecard), cand.Scorecard)
	}
	for _, row := range cand.Scorecard {
		if row.CasePass != wantPass[row.CaseID] {
			t.Errorf("ingested case %s: casePass %v, want %v (%s, %s)", row.CaseID, row.CasePass, wantPass[row.CaseID], row.Verdict, row.VerdictBasis)
		}
		if row.EvidenceStatus == nil || row.EvidenceStatus.Trace != "partial" {
			t.Errorf("ingested case %s: evidenceStatus %+v, want trace partial", row.CaseID, row.EvidenceStatus)
		}
		if _, ok := row.Outcomes["judge:len"]; !ok {
			t.Errorf("ingested case %s was not judged: %v", row.CaseID, row.Outcomes)
		}
		if _, ok := row.Outcomes["exact"]; !ok {
			t.Errorf("ingested case %s lacks the exact grader of the managed plan: %v", row.CaseID, row.Outcomes)
		}
		// Graded from the ledger's copy, sealed at submit as an import.
		tr, err := s.store.GetTrajectory(t.Context(), s.ws, eval.ChildRunID(s.ws, cand.ID, row.CaseID, 0))
		if err != nil || tr.Source != trace.SourceImport || tr.EventCount != 2 {
			t.Errorf("ingested case %s: trajectory %+v (%v), want 2 events sealed as import", row.CaseID, tr, err)
		}
	}
	if len(cand.CaseRuns) != 3 {
		t.Errorf("caseRuns = %v, want one canonical run for each of the 3 cases", cand.CaseRuns)
	}
	skipped := false
	for _, st := range cand.Steps {
		skipped = skipped || (st.Status == "skipped" && st.CaseID == "elsewhere")
	}
	if !skipped {
		t.Errorf("steps %+v do not report the skipped caseId elsewhere", cand.Steps)
	}

	var diff gate.ScorecardDiff
	s.call(t, "GET", "/scorecards/diff?baseline="+url.QueryEscape(base.ID)+"&candidate="+url.QueryEscape(cand.ID), "", 200, &diff)
	changes := map[string]string{}
	for _, tr := range diff.CaseTransitions {
		changes[tr.CaseID] = tr.Change
	}
	wantChanges := map[string]string{"even1": gate.ChangeStillPassing, "even2": gate.ChangeBroke, "odd1": gate.ChangeFixed}
	if diff := cmp.Diff(wantChanges, changes); diff != "" {
		t.Errorf("case transitions (-want +got):\n%s", diff)
	}
	if diff.Comparability == gate.ComparabilityNone {
		t.Errorf("the diff reads not comparable: experiment %v", diff.Experiment)
	}
	for axis, reading := range diff.Experiment {
		if axis != gate.AxisHarness && reading != gate.Held && reading != gate.Unverified {
			t.Errorf("axis %s reads %s: an ingest over the same dataset, grading and judges should hold it", axis, reading)
		}
	}

	var dec gate.Decision
	s.call(t, "POST", "/scorecards/gate", `{"baseline":"`+base.ID+`","candidate":"`+cand.ID+`"}`, 200, &dec)
	if dec.Outcome == gate.OutcomeNotComparable || len(dec.Tests) != 3 {
		t.Errorf("gate = %s with %d case tests, reasons %+v; want a decision over the 3 cases", dec.Outcome, len(dec.Tests), dec.Reasons)
	}
}
