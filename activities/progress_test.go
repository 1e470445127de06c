package activities

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.temporal.io/sdk/testsuite"

	"svc/eval"
	"svc/registry"
	"svc/runs"
	"svc/store"
	"svc/store/sqlite/sqlitetest"
)

var progressT0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func timeAt(d time.Duration) *time.Time {
	t := progressT0.Add(d)
	return &t
}

func TestCountProgress(t *testing.T) {
	counts := func(first time.Duration, byStatus, byOutcome map[string]int) store.RunCounts {
		c := store.RunCounts{ByStatus: byStatus, ByOutcome: byOutcome, FirstCreatedAt: progressT0.Add(first)}
		for _, n := range byStatus {
			c.Total += n
		}
		return c
	}
	for _, tc := range []struct {
		name  string
		total int
		c     store.RunCounts
		at    time.Duration
		want  eval.Progress
	}{
		{"nothing started", 300, store.RunCounts{ByStatus: map[string]int{}, ByOutcome: map[string]int{}}, 5 * time.Second,
			eval.Progress{Total: 300, Queued: 300, UpdatedAt: timeAt(5 * time.Second)}},
		{"started, none done: no rate yet", 300, counts(0, map[string]int{"queued": 2, "running": 62}, map[string]int{}), 5 * time.Second,
			eval.Progress{Total: 300, Queued: 236, Running: 64, StartedAt: timeAt(0), UpdatedAt: timeAt(5 * time.Second)}},
		{"under way", 2000, counts(time.Second, map[string]int{"running": 64, "succeeded": 445, "failed": 5},
			map[string]int{"pass": 440, "fail": 5, "error": 3, "cancelled": 2}), 12 * time.Second,
			eval.Progress{Total: 2000, Done: 450, Passed: 440, Failed: 8, DispatchErrors: 3, Cancelled: 2, Queued: 1486, Running: 64,
				CasesPerSecond: 40.909, StartedAt: timeAt(time.Second), UpdatedAt: timeAt(12 * time.Second)}},
		{"all done", 4, counts(0, map[string]int{"succeeded": 4}, map[string]int{"pass": 3, "fail": 1}), 3 * time.Second,
			eval.Progress{Total: 4, Done: 4, Passed: 3, Failed: 1, CasesPerSecond: 1.333, StartedAt: timeAt(0), UpdatedAt: timeAt(3 * time.Second)}},
		{"a clock behind the first case: no rate", 4, counts(time.Minute, map[string]int{"succeeded": 1, "running": 1}, map[string]int{"pass": 1}), 0,
			eval.Progress{Total: 4, Done: 1, Passed: 1, Queued: 2, Running: 1, StartedAt: timeAt(time.Minute), UpdatedAt: timeAt(0)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := CountProgress(tc.total, tc.c, progressT0.Add(tc.at))
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("CountProgress (-want +got):\n%s", diff)
			}
			if got.Queued+got.Running+got.Done != got.Total {
				t.Errorf("queued %d + running %d + done %d != total %d", got.Queued, got.Running, got.Done, got.Total)
			}
		})
	}
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
	row, err := ScorecardRow(sc, 0)
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
		r.ID, r.Tenant, r.Harness, r.Kind, r.Trigger = ChildRunID(ws, sc.ID, r.CaseID, 0), ws, sc.Harness, eval.KindEval, eval.TriggerScorecard
		r.ParentScorecardID, r.Canonical, r.CreatedAt, r.UpdatedAt = sc.ID, &canonical, at, at
		row, err := runs.Row(r)
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
	got, _, err := LoadScorecard(ctx, st, ws, sc.ID)
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
			row, err := ScorecardRow(sc, 0)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := st.CreateScorecard(ctx, row); err != nil {
				t.Fatal(err)
			}
			canonical := true
			for _, r := range tc.runs {
				r.ID, r.Tenant, r.Harness, r.Kind, r.Trigger = ChildRunID(ws, sc.ID, r.CaseID, 0), ws, sc.Harness, eval.KindEval, eval.TriggerScorecard
				r.ParentScorecardID, r.Canonical, r.CreatedAt, r.UpdatedAt = sc.ID, &canonical, progressT0, progressT0
				row, err := runs.Row(r)
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
			got, _, err := LoadScorecard(ctx, st, ws, sc.ID)
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
