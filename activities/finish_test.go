package activities

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.temporal.io/sdk/testsuite"

	"svc/internal/domain/eval"
	"svc/internal/domain/registry"
	"svc/store/records"
	"svc/store/sqlite/sqlitetest"
)

var progressT0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func timeAt(d time.Duration) *time.Time {
	t := progressT0.Add(d)
	return &t
}

// TestFinishScorecardRecordsProgress: a batch's finish writes its final
// counts and pace into the record, so lists and later reads show them
// without counting: here a batch that failed with one case never started.
func TestFinishScorecardRecordsProgress(t *testing.T) {
	ctx := t.Context()
	st := sqlitetest.New(t)
	const ws = "acme"
	sc := eval.Scorecard{ID: "sc_p", Tenant: ws, Kind: eval.KindScorecard, Status: eval.ScorecardRunning,
		Dataset: registry.Ref{ID: "ds", Version: "1.0.0"}, Harness: registry.Ref{ID: "h", Version: "1.0.0"},
		CreatedAt: progressT0, UpdatedAt: progressT0, Concurrency: 2, Trials: 1, Progress: eval.Progress{Total: 3}}
	row, err := records.ScorecardRow(sc, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.CreateScorecard(ctx, row); err != nil {
		t.Fatal(err)
	}
	canonical := true
	for i, r := range []eval.Run{
		{CaseID: "c1", Status: eval.StatusSucceeded, Result: &eval.CaseResult{Pass: true}},
		{CaseID: "c2", Status: eval.StatusFailed, Error: &eval.Error{Code: eval.CodeDispatch, Message: "no runtime"}},
	} {
		at := progressT0.Add(time.Duration(i+2) * time.Second)
		r.ID, r.Tenant, r.Harness, r.Kind, r.Trigger = eval.ChildRunID(ws, sc.ID, r.CaseID, 0), ws, sc.Harness, eval.KindEval, eval.TriggerScorecard
		r.ParentScorecardID, r.Canonical, r.CreatedAt, r.UpdatedAt = sc.ID, &canonical, at, at
		row, err := records.Row(r)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := st.CreateRun(ctx, row); err != nil {
			t.Fatal(err)
		}
	}

	a := &Activities{Store: st, Now: func() time.Time { return progressT0.Add(12 * time.Second) }}
	env := (&testsuite.WorkflowTestSuite{}).NewTestActivityEnvironment()
	env.RegisterActivity(a)
	if _, err := env.ExecuteActivity(a.FinishScorecard, FinishInput{ScorecardRef: ScorecardRef{Workspace: ws, ScorecardID: sc.ID},
		Phase: eval.PhaseDispatch, Message: "the runtime went away"}); err != nil {
		t.Fatalf("FinishScorecard: %v", err)
	}
	got, _, err := records.LoadScorecard(ctx, st, ws, sc.ID)
	if err != nil {
		t.Fatal(err)
	}
	want := eval.Progress{Total: 3, Done: 2, Passed: 1, Failed: 1, DispatchErrors: 1, Queued: 1,
		CasesPerSecond: 0.2, StartedAt: timeAt(2 * time.Second), UpdatedAt: timeAt(12 * time.Second)}
	if got.Status != eval.ScorecardFailed {
		t.Errorf("status %s, want failed", got.Status)
	}
	if diff := cmp.Diff(want, got.Progress); diff != "" {
		t.Errorf("recorded progress (-want +got):\n%s", diff)
	}
}

// TestFinishScorecardNoCaseDispatched: a batch none of whose cases reached
// its harness ends failed (phase dispatch) with the reason; one where some
// did succeeds and counts the others in dispatchErrors.
func TestFinishScorecardNoCaseDispatched(t *testing.T) {
	for _, tc := range []struct {
		name       string
		runs       []eval.Run
		wantStatus eval.Status
		wantErr    string
		wantCounts eval.Progress
	}{
		{"none dispatched", []eval.Run{
			{CaseID: "c1", Status: eval.StatusFailed, Error: &eval.Error{Code: eval.CodeDispatch, Message: `harness command "agent.py" not found`}},
			{CaseID: "c2", Status: eval.StatusFailed, Error: &eval.Error{Code: eval.CodeDispatch, Message: `harness command "agent.py" not found`}},
		}, eval.ScorecardFailed, `no case could be dispatched (2 of 2 case runs): harness command "agent.py" not found`,
			eval.Progress{Total: 2, Done: 2, Failed: 2, DispatchErrors: 2}},
		{"some dispatched", []eval.Run{
			{CaseID: "c1", Status: eval.StatusSucceeded, Result: &eval.CaseResult{Pass: true}},
			{CaseID: "c2", Status: eval.StatusFailed, Error: &eval.Error{Code: eval.CodeDispatch, Message: "no runtime"}},
		}, eval.ScorecardSucceeded, "", eval.Progress{Total: 2, Done: 2, Passed: 1, Failed: 1, DispatchErrors: 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := t.Context()
			st := sqlitetest.New(t)
			const ws = "acme"
			sc := eval.Scorecard{ID: "sc_d", Tenant: ws, Kind: eval.KindScorecard, Status: eval.ScorecardRunning,
				Dataset: registry.Ref{ID: "ds", Version: "1.0.0"}, Harness: registry.Ref{ID: "h", Version: "1.0.0"},
				CreatedAt: progressT0, UpdatedAt: progressT0, Concurrency: 2, Trials: 1, Progress: eval.Progress{Total: len(tc.runs)}}
			row, err := records.ScorecardRow(sc, 0)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := st.CreateScorecard(ctx, row); err != nil {
				t.Fatal(err)
			}
			canonical := true
			for _, r := range tc.runs {
				r.ID, r.Tenant, r.Harness, r.Kind, r.Trigger = eval.ChildRunID(ws, sc.ID, r.CaseID, 0), ws, sc.Harness, eval.KindEval, eval.TriggerScorecard
				r.ParentScorecardID, r.Canonical, r.CreatedAt, r.UpdatedAt = sc.ID, &canonical, progressT0, progressT0
				row, err := records.Row(r)
				if err != nil {
					t.Fatal(err)
				}
				if _, err := st.CreateRun(ctx, row); err != nil {
					t.Fatal(err)
				}
			}
			a := &Activities{Store: st, Now: func() time.Time { return progressT0.Add(4 * time.Second) }}
			env := (&testsuite.WorkflowTestSuite{}).NewTestActivityEnvironment()
			env.RegisterActivity(a)
			if _, err := env.ExecuteActivity(a.FinishScorecard, FinishInput{ScorecardRef: ScorecardRef{Workspace: ws, ScorecardID: sc.ID}}); err != nil {
				t.Fatalf("FinishScorecard: %v", err)
			}
			got, _, err := records.LoadScorecard(ctx, st, ws, sc.ID)
			if err != nil {
				t.Fatal(err)
			}
			if got.Status != tc.wantStatus {
				t.Errorf("status %s, want %s", got.Status, tc.wantStatus)
			}
			switch {
			case tc.wantErr == "" && got.Error != nil:
				t.Errorf("error %+v, want none", got.Error)
			case tc.wantErr != "" && (got.Error == nil || got.Error.Phase != eval.PhaseDispatch || got.Error.Message != tc.wantErr):
				t.Errorf("error %+v, want phase dispatch and %q", got.Error, tc.wantErr)
			}
			p := got.Progress
			p.CasesPerSecond, p.StartedAt, p.UpdatedAt = 0, nil, nil
			if diff := cmp.Diff(tc.wantCounts, p); diff != "" {
				t.Errorf("recorded progress (-want +got):\n%s", diff)
			}
		})
	}
}
