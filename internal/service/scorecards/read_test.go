package scorecards

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"svc/auth"
	"svc/internal/domain/eval"
	"svc/internal/domain/registry"
	"svc/store/records"
	"svc/store/sqlite/sqlitetest"
)

// TestReadProgress: while a batch runs, the detail read and the list count
// its progress live, with the pace since its first case started; once it
// is over, the counts stay live (judges may turn verdicts) and the pace is
// the one its finish recorded, however long after the read comes.
func TestReadProgress(t *testing.T) {
	ctx := t.Context()
	st := sqlitetest.New(t)
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	at := func(d time.Duration) *time.Time { t := t0.Add(d); return &t }
	now := t0.Add(20 * time.Second)
	s := New(Options{Store: st, Now: func() time.Time { return now }})
	p := auth.Principal{Subject: "alice", Workspace: "acme", Roles: []auth.Role{auth.RoleMember}}

	sc := eval.Scorecard{ID: "sc_p", Tenant: p.Workspace, Kind: eval.KindScorecard, Status: eval.ScorecardRunning,
		Dataset: registry.Ref{ID: "ds", Version: "1.0.0"}, Harness: registry.Ref{ID: "h", Version: "1.0.0"},
		CreatedAt: t0, UpdatedAt: t0, Concurrency: 2, Trials: 1, Progress: eval.Progress{Total: 5}}
	row, err := records.ScorecardRow(sc, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.CreateScorecard(ctx, row); err != nil {
		t.Fatal(err)
	}
	canonical := true
	children := []eval.Run{
		{CaseID: "c1", Status: eval.StatusSucceeded, Result: &eval.CaseResult{Pass: true}},
		{CaseID: "c2", Status: eval.StatusSucceeded, Result: &eval.CaseResult{}},
		{CaseID: "c3", Status: eval.StatusRunning},
	}
	for i := range children {
		r := &children[i]
		created := t0.Add(time.Duration(10+i) * time.Second)
		r.ID, r.Tenant, r.Harness, r.Kind, r.Trigger = eval.ChildRunID(sc.Tenant, sc.ID, r.CaseID, 0), sc.Tenant, sc.Harness, eval.KindEval, eval.TriggerScorecard
		r.ParentScorecardID, r.Canonical, r.CreatedAt, r.UpdatedAt = sc.ID, &canonical, created, created
		row, err := records.Row(*r)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := st.CreateRun(ctx, row); err != nil {
			t.Fatal(err)
		}
	}

	check := func(what string, want eval.Progress) {
		t.Helper()
		got, err := s.Get(ctx, p, sc.ID)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, got.Progress); diff != "" {
			t.Errorf("%s: Get's progress (-want +got):\n%s", what, diff)
		}
		list, _, err := s.List(ctx, p, ListQuery{})
		if err != nil || len(list) != 1 {
			t.Fatalf("List = %d batches, %v; want 1", len(list), err)
		}
		if diff := cmp.Diff(want, list[0].Progress); diff != "" {
			t.Errorf("%s: List's progress (-want +got):\n%s", what, diff)
		}
	}
	// 2 done in the 10 s since c1 started.
	check("running", eval.Progress{Total: 5, Done: 2, Passed: 1, Failed: 1, Queued: 2, Running: 1,
		CasesPerSecond: 0.2, StartedAt: at(10 * time.Second), UpdatedAt: at(20 * time.Second)})

	// c3 passes and the batch finishes (cancelled with 2 cases never
	// started): the record holds the final counts and pace, which an hour
	// later still read as they were, not as 3 cases in an hour.
	c3 := children[2]
	c3.Status, c3.Result = eval.StatusSucceeded, &eval.CaseResult{Pass: true}
	c3row, err := records.Row(c3)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.PutRun(ctx, c3row); err != nil {
		t.Fatal(err)
	}
	final := eval.Progress{Total: 5, Done: 3, Passed: 2, Failed: 1, Queued: 2,
		CasesPerSecond: 0.6, StartedAt: at(10 * time.Second), UpdatedAt: at(15 * time.Second)}
	if _, err := records.UpdateScorecard(ctx, st, sc.Tenant, sc.ID, func(sc *eval.Scorecard) error {
		sc.Status, sc.FinishedAt, sc.Progress = eval.ScorecardCancelled, final.UpdatedAt, final
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	now = t0.Add(time.Hour)
	check("over", final)
}
