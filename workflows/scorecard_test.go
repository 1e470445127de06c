package workflows

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"svc/activities"
	"svc/internal/domain/flows"
)

// Unit tests of ScorecardWorkflow's and ScoreWorkflow's decisions with the
// SDK's test environment. The end-to-end paths are in
// scorecard_integration_test.go.

// newBatchEnv is a test environment on the per-case path (one RunCase
// activity per item), as histories recorded before case chunks replay.
func newBatchEnv(t *testing.T) *testsuite.TestWorkflowEnvironment {
	env := newChunkEnv(t)
	env.OnGetVersion(caseChunksChange, workflow.DefaultVersion, guidedChunks).Return(workflow.DefaultVersion).Maybe()
	return env
}

// newChunkEnv is a test environment on today's path: cases run in chunks.
func newChunkEnv(t *testing.T) *testsuite.TestWorkflowEnvironment {
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	env.RegisterWorkflow(ScorecardWorkflow)
	env.RegisterWorkflow(ScoreWorkflow)
	env.RegisterActivity(&activities.Activities{})
	return env
}

var batch = activities.ScorecardRef{Workspace: "ws", ScorecardID: "sc_1"}

// pages answers CasePage for a selection of n cases c0..c(n-1).
func pages(n int) func(context.Context, activities.CasePageInput) ([]string, error) {
	return func(_ context.Context, in activities.CasePageInput) ([]string, error) {
		var out []string
		for i := in.From; i < n && len(out) < in.Limit; i++ {
			out = append(out, "c"+itoa(i))
		}
		return out, nil
	}
}

func itoa(i int) string {
	if i == 0 {
		return "0"
	}
	var b []byte
	for ; i > 0; i /= 10 {
		b = append([]byte{byte('0' + i%10)}, b...)
	}
	return string(b)
}

// TestScorecardWorkflowWindow: never more than Concurrency cases in flight, every
// (case, trial) run exactly once, judges after each case, then the
// aggregate; continue-as-new splits a long batch.
func TestScorecardWorkflowWindow(t *testing.T) {
	env := newBatchEnv(t)
	var mu sync.Mutex
	inFlight, peak := 0, 0
	seen := map[string]int{}
	judged := 0
	env.OnActivity(a.StartScorecard, mock.Anything, batch).Return(nil).Once()
	env.OnActivity(a.CasePage, mock.Anything, mock.Anything).Return(pages(7))
	env.OnActivity(a.RunCase, mock.Anything, mock.Anything).Return(func(_ context.Context, item activities.CaseItem) (activities.RunStatus, error) {
		mu.Lock()
		inFlight++
		peak = max(peak, inFlight)
		seen[item.CaseID+"#"+itoa(item.Trial)]++
		mu.Unlock()
		return activities.RunStatus{Status: "succeeded"}, nil
	}).After(time.Second)
	env.OnActivity(a.JudgeCase, mock.Anything, mock.Anything).Return(func(context.Context, activities.JudgeInput) error {
		mu.Lock()
		inFlight--
		judged++
		mu.Unlock()
		return nil
	})
	env.OnActivity(a.FinishScorecard, mock.Anything, activities.FinishInput{ScorecardRef: batch}).Return(nil).Once()
	env.ExecuteWorkflow(ScorecardWorkflow, flows.ScorecardInput{Workspace: "ws", ScorecardID: "sc_1", Total: 14, Trials: 2, Concurrency: 3, Judged: true})
	if err := env.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	if peak > 3 || peak == 0 {
		t.Errorf("peak in flight %d, want 1 to 3", peak)
	}
	if len(seen) != 14 || judged != 14 {
		t.Errorf("ran %d distinct items and judged %d, want 14 each", len(seen), judged)
	}
	for k, n := range seen {
		if n != 1 {
			t.Errorf("%s ran %d times", k, n)
		}
	}
	env.AssertExpectations(t)
}

func TestScorecardWorkflowContinuesAsNew(t *testing.T) {
	env := newBatchEnv(t)
	env.OnActivity(a.StartScorecard, mock.Anything, batch).Return(nil).Once()
	env.OnActivity(a.CasePage, mock.Anything, mock.Anything).Return(pages(10))
	env.OnActivity(a.RunCase, mock.Anything, mock.Anything).Return(activities.RunStatus{Status: "succeeded"}, nil)
	env.ExecuteWorkflow(ScorecardWorkflow, flows.ScorecardInput{Workspace: "ws", ScorecardID: "sc_1", Total: 10, Trials: 1, Concurrency: 4, ItemsPerRun: 4})
	err := env.GetWorkflowError()
	if err == nil {
		t.Fatal("a batch longer than ItemsPerRun did not continue as new")
	}
	var next flows.ScorecardInput
	if !isContinueAsNew(err, &next) || next.Next != 4 || !next.Started {
		t.Fatalf("continue-as-new error %v with input %+v, want Next 4 and Started", err, next)
	}
}

// A case that fails after its retries (infrastructure) fails the batch in
// the dispatch phase; what finished is kept by the aggregate.
func TestScorecardWorkflowInfrastructureFailure(t *testing.T) {
	env := newBatchEnv(t)
	env.OnActivity(a.StartScorecard, mock.Anything, batch).Return(nil).Once()
	env.OnActivity(a.CasePage, mock.Anything, mock.Anything).Return(pages(3))
	env.OnActivity(a.RunCase, mock.Anything, mock.MatchedBy(func(i activities.CaseItem) bool { return i.CaseID == "c1" })).Return(activities.RunStatus{}, errors.New("store unreachable"))
	env.OnActivity(a.RunCase, mock.Anything, mock.Anything).Return(activities.RunStatus{Status: "succeeded"}, nil)
	env.OnActivity(a.FinishScorecard, mock.Anything, mock.MatchedBy(func(in activities.FinishInput) bool {
		return in.Phase == "dispatch" && !in.Cancelled && in.Message != ""
	})).Return(nil).Once()
	env.ExecuteWorkflow(ScorecardWorkflow, flows.ScorecardInput{Workspace: "ws", ScorecardID: "sc_1", Total: 3, Trials: 1, Concurrency: 1})
	if err := env.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	env.AssertExpectations(t)
}

// A judge activity that fails for good fails the batch in the judges phase.
func TestScorecardWorkflowJudgesFailure(t *testing.T) {
	env := newBatchEnv(t)
	env.OnActivity(a.StartScorecard, mock.Anything, batch).Return(nil).Once()
	env.OnActivity(a.CasePage, mock.Anything, mock.Anything).Return(pages(1))
	env.OnActivity(a.RunCase, mock.Anything, mock.Anything).Return(activities.RunStatus{Status: "succeeded"}, nil)
	env.OnActivity(a.JudgeCase, mock.Anything, mock.Anything).Return(errors.New("judge runner down"))
	env.OnActivity(a.FinishScorecard, mock.Anything, mock.MatchedBy(func(in activities.FinishInput) bool { return in.Phase == "judges" })).Return(nil).Once()
	env.ExecuteWorkflow(ScorecardWorkflow, flows.ScorecardInput{Workspace: "ws", ScorecardID: "sc_1", Total: 1, Trials: 1, Concurrency: 1, Judged: true})
	if err := env.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	env.AssertExpectations(t)
}

// Cancel: no further case starts and the aggregate records the cancel.
func TestScorecardWorkflowCancel(t *testing.T) {
	env := newBatchEnv(t)
	started := 0
	env.OnActivity(a.StartScorecard, mock.Anything, batch).Return(nil).Once()
	env.OnActivity(a.CasePage, mock.Anything, mock.Anything).Return(pages(50))
	env.OnActivity(a.RunCase, mock.Anything, mock.Anything).Return(func(context.Context, activities.CaseItem) (activities.RunStatus, error) {
		started++
		return activities.RunStatus{Status: "succeeded"}, nil
	}).After(time.Hour)
	env.OnActivity(a.FinishScorecard, mock.Anything, activities.FinishInput{ScorecardRef: batch, Cancelled: true}).Return(nil).Once()
	env.RegisterDelayedCallback(env.CancelWorkflow, time.Minute)
	env.ExecuteWorkflow(ScorecardWorkflow, flows.ScorecardInput{Workspace: "ws", ScorecardID: "sc_1", Total: 50, Trials: 1, Concurrency: 2})
	if !env.IsWorkflowCompleted() {
		t.Fatal("not completed after cancel")
	}
	if started > 2 {
		t.Errorf("%d cases started, want at most the window of 2", started)
	}
	env.AssertExpectations(t)
}

func TestScoreWorkflow(t *testing.T) {
	env := newBatchEnv(t)
	judges := []flows.JudgeUse{{ID: "j", Version: "1"}}
	items := []activities.CaseItem{{ScorecardRef: batch, CaseID: "a", RunID: "run_a"}, {ScorecardRef: batch, CaseID: "b", RunID: "run_b"}}
	env.OnActivity(a.ChildRunPage, mock.Anything, mock.Anything).Return(activities.ChildPage{Items: items}, nil).Once()
	env.OnActivity(a.JudgeCase, mock.Anything, mock.MatchedBy(func(in activities.JudgeInput) bool { return in.Replace && len(in.Judges) == 1 })).Return(nil).Times(2)
	env.OnActivity(a.FinishScore, mock.Anything, mock.MatchedBy(func(in activities.FinishScoreInput) bool { return !in.Aborted && in.Pass == "score_1" })).Return(nil).Once()
	env.ExecuteWorkflow(ScoreWorkflow, flows.ScoreInput{Workspace: "ws", ScorecardID: "sc_1", Pass: "score_1", Judges: judges, Concurrency: 2})
	if err := env.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	env.AssertExpectations(t)
}

// A failing judge aborts the pass: FinishScore is told, no revision.
func TestScoreWorkflowAborts(t *testing.T) {
	env := newBatchEnv(t)
	env.OnActivity(a.ChildRunPage, mock.Anything, mock.Anything).Return(activities.ChildPage{Items: []activities.CaseItem{{ScorecardRef: batch, CaseID: "a", RunID: "run_a"}}}, nil)
	env.OnActivity(a.JudgeCase, mock.Anything, mock.Anything).Return(errors.New("boom"))
	env.OnActivity(a.FinishScore, mock.Anything, mock.MatchedBy(func(in activities.FinishScoreInput) bool { return in.Aborted })).Return(nil).Once()
	env.ExecuteWorkflow(ScoreWorkflow, flows.ScoreInput{Workspace: "ws", ScorecardID: "sc_1", Pass: "score_2", Judges: []flows.JudgeUse{{ID: "j", Version: "1"}}, Concurrency: 2})
	if env.GetWorkflowError() == nil {
		t.Fatal("an aborted pass ended without an error")
	}
	env.AssertExpectations(t)
}

// isContinueAsNew reports whether err is a continue-as-new of
// ScorecardWorkflow and decodes its input into next.
func isContinueAsNew(err error, next *flows.ScorecardInput) bool {
	var can *workflow.ContinueAsNewError
	if !errors.As(err, &can) {
		return false
	}
	return converter.GetDefaultDataConverter().FromPayloads(can.Input, next) == nil
}
