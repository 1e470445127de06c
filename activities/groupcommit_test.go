package activities

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"svc/internal/domain/eval"
	"svc/internal/domain/registry"
	"svc/internal/platform/derrors"
	"svc/store"
	"svc/store/pgtest"
	"svc/store/postgres"
	"svc/store/records"
	"svc/store/sqlite/sqlitetest"
	"svc/store/storetest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// gcT0 is the clock of the group commit tests.
var gcT0 = time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC)

// forEachBackend runs test on a new, migrated SQLite store and on a
// PostgreSQL one (skipped without PostgreSQL, as pgtest says).
func forEachBackend(t *testing.T, test func(t *testing.T, st store.Store)) {
	t.Run("sqlite", func(t *testing.T) { test(t, sqlitetest.New(t)) })
	t.Run("postgres", func(t *testing.T) {
		st, err := postgres.Open(t.Context(), pgtest.URL(t))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		if _, err := st.Migrate(t.Context()); err != nil {
			t.Fatal(err)
		}
		test(t, st)
	})
}

// gatedStore counts writes (keyed transactions and CreateRun), and holds
// the first one after hold until open is called, so that a test can queue
// the writes that are to form the next group.
type gatedStore struct {
	store.Store

	mu      sync.Mutex
	keyed   int
	gate    chan struct{} // closed by open
	entered chan struct{} // closed when the held transaction waits
}

func (s *gatedStore) TransactKeyed(ctx context.Context, fn func(tx store.Tx) error) error {
	s.pass()
	return s.Store.TransactKeyed(ctx, fn)
}

// CreateRun is held and counted as a keyed transaction is: a creation
// written alone is that one statement.
func (s *gatedStore) CreateRun(ctx context.Context, r store.Run) (store.Run, error) {
	s.pass()
	return s.Store.CreateRun(ctx, r)
}

// pass counts a write and holds it when the gate is set.
func (s *gatedStore) pass() {
	s.mu.Lock()
	s.keyed++
	gate, entered := s.gate, s.entered
	s.gate = nil
	s.mu.Unlock()
	if gate != nil {
		close(entered)
		<-gate
	}
}

// hold makes the next keyed transaction wait for the returned open.
func (s *gatedStore) hold() (entered <-chan struct{}, open func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.gate, s.entered = make(chan struct{}), make(chan struct{})
	gate := s.gate
	return s.entered, func() { close(gate) }
}

func (s *gatedStore) keyedCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.keyed
}

// inGroup runs do(0), and once its write is being committed, do(1) ...
// do(n-1) concurrently, which queue behind it and so form the next groups
// (of at most maxGroup). It returns the errors of each.
func inGroup(t *testing.T, a *Activities, gs *gatedStore, n int, do func(i int) error) []error {
	t.Helper()
	errs := make([]error, n)
	entered, open := gs.hold()
	var wg sync.WaitGroup
	wg.Go(func() { errs[0] = do(0) })
	<-entered
	for i := 1; i < n; i++ {
		wg.Go(func() { errs[i] = do(i) })
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		a.commits.mu.Lock()
		queued := len(a.commits.pending)
		a.commits.mu.Unlock()
		if queued == n-1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d writes queued", queued, n-1)
		}
		time.Sleep(time.Millisecond)
	}
	open()
	wg.Wait()
	return errs
}

// gcScorecard is the batch whose children the tests create.
func gcScorecard(ws string) eval.Scorecard {
	return eval.Scorecard{ID: "sc_gc", Tenant: ws, Kind: eval.KindScorecard, Status: eval.ScorecardRunning,
		Harness: registry.Ref{ID: "h", Version: "1.0.0"}, CreatedBy: "user:alice"}
}

// gcChild creates child i of the batch running, or fails t.
func gcChild(t *testing.T, a *Activities, sc eval.Scorecard, i int) eval.Run {
	t.Helper()
	item := CaseItem{ScorecardRef: ScorecardRef{Workspace: sc.Tenant, ScorecardID: sc.ID}, CaseID: fmt.Sprintf("c%03d", i)}
	id := eval.ChildRunID(sc.Tenant, sc.ID, item.CaseID, 0)
	run, _, err := a.createChild(t.Context(), sc, item, id, registry.EvalCase{ID: item.CaseID}, true)
	if err != nil {
		t.Fatalf("createChild %d: %v", i, err)
	}
	return run
}

// gcResult is a passing result with a trace of n events.
func gcResult(run eval.Run, n int) *eval.CaseResult {
	res := &eval.CaseResult{Harness: "h@1.0.1", CaseID: run.CaseID, Pass: true, EvidenceVersion: eval.EvidenceVersion}
	for j := range n {
		res.Trace = append(res.Trace, eval.TraceEvent{Kind: "message", Role: "assistant", Content: fmt.Sprintf("%s says %d", run.ID, j)})
	}
	return res
}

// loadRunOrFail reads a run or fails t.
func loadRunOrFail(t *testing.T, a *Activities, ws, id string) eval.Run {
	t.Helper()
	run, err := a.loadRun(t.Context(), RunRef{Workspace: ws, RunID: id})
	if err != nil {
		t.Fatalf("loadRun(%s): %v", id, err)
	}
	return run
}

// TestGroupCommitFinishes: finishes that arrive together are written in
// one transaction per group, and each one as finishing it alone would:
// terminal, its trajectory sealed, its log appended, a later attempt's
// count kept, and a run that was already finished left as it was.
func TestGroupCommitFinishes(t *testing.T) {
	forEachBackend(t, func(t *testing.T, st store.Store) {
		ctx := t.Context()
		gs := &gatedStore{Store: st}
		a := &Activities{Store: gs, Now: func() time.Time { return gcT0 }}
		const ws, n = "acme", 200
		sc := gcScorecard(ws)
		runs := make([]eval.Run, n)
		for i := range runs {
			runs[i] = gcChild(t, a, sc, i)
		}
		// Run 1 was finished (failed) by an earlier attempt; run 2 was
		// marked by a later attempt since this one read it.
		if _, err := a.finish(ctx, runs[1], nil, &eval.Error{Code: eval.CodeDispatch, Message: "first attempt"}); err != nil {
			t.Fatal(err)
		}
		later := runs[2]
		later.Attempts = 3
		row, err := records.Row(later)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := st.PutRun(ctx, row); err != nil {
			t.Fatal(err)
		}

		before := gs.keyedCount()
		statuses := make([]RunStatus, n)
		errs := inGroup(t, a, gs, n, func(i int) error {
			run := runs[i]
			logs := []store.RunLog{{Workspace: ws, RunID: run.ID, Seq: 1, Stream: "stdout", Data: "out " + run.ID}}
			var err error
			statuses[i], err = a.finish(ctx, run, gcResult(run, 1+i%3), nil, logs...)
			return err
		})
		for i, err := range errs {
			if err != nil {
				t.Errorf("finish %d: %v", i, err)
			}
		}
		// One for the held leader, then 199 in groups of at most 128.
		if got, want := gs.keyedCount()-before, 3; got != want {
			t.Errorf("%d keyed transactions for %d finishes, want %d", got, n, want)
		}
		for i, r := range runs {
			got := loadRunOrFail(t, a, ws, r.ID)
			want := eval.StatusSucceeded
			if i == 1 {
				want = eval.StatusFailed
			}
			if got.Status != want || string(statuses[i].Status) != string(want) {
				t.Errorf("run %d: stored %s, finish returned %s; want %s", i, got.Status, statuses[i].Status, want)
			}
			if got.FinishedAt == nil || !got.FinishedAt.Equal(gcT0) {
				t.Errorf("run %d: finishedAt %v, want %v", i, got.FinishedAt, gcT0)
			}
			if i == 1 {
				if got.Error == nil || got.Error.Message != "first attempt" || got.Result != nil {
					t.Errorf("the finished run was written over: error %+v, result %+v", got.Error, got.Result)
				}
				continue
			}
			if got.Result == nil || got.Result.TraceRef != "trajectory:"+r.ID || !got.Result.TraceSealed {
				t.Errorf("run %d: result %+v, want its trace sealed", i, got.Result)
			}
			if got.Harness.Version != "1.0.1" {
				t.Errorf("run %d: harness %v, want the resolved h@1.0.1", i, got.Harness)
			}
			wantAttempts := 1
			if i == 2 {
				wantAttempts = 3
			}
			if got.Attempts != wantAttempts {
				t.Errorf("run %d: attempts %d, want %d", i, got.Attempts, wantAttempts)
			}
			tr, err := st.GetTrajectory(ctx, ws, r.ID)
			if err != nil {
				t.Errorf("run %d: trajectory: %v", i, err)
			} else if tr.EventCount != 1+i%3 {
				t.Errorf("run %d: trajectory of %d events, want %d", i, tr.EventCount, 1+i%3)
			}
		}
		for i, r := range runs {
			logs, err := st.ListRunLogs(ctx, ws, r.ID, 0, 0)
			if err != nil || len(logs) != 1 || logs[0].Data != "out "+r.ID {
				t.Errorf("run %d: logs %+v, %v; want its one chunk", i, logs, err)
			}
		}

		// Retried, every finish keeps what the first wrote.
		errs = inGroup(t, a, gs, 10, func(i int) error {
			st, err := a.finish(ctx, runs[i], nil, &eval.Error{Code: eval.CodeDispatch, Message: "retry"})
			if err == nil && i != 1 && st.Status != string(eval.StatusSucceeded) {
				err = fmt.Errorf("status %s, want succeeded", st.Status)
			}
			return err
		})
		for i, err := range errs {
			if err != nil {
				t.Errorf("retried finish %d: %v", i, err)
			}
			if got := loadRunOrFail(t, a, ws, runs[i].ID); got.Error != nil && i != 1 {
				t.Errorf("retried finish %d wrote over the run: error %+v", i, got.Error)
			}
		}
	})
}

// TestGroupCommitOneBadItem: when one finish of a group cannot be written
// (its trajectory is already sealed with other events), the group falls
// back to writing each finish alone: that one fails, its neighbours are
// written.
func TestGroupCommitOneBadItem(t *testing.T) {
	forEachBackend(t, func(t *testing.T, st store.Store) {
		ctx := t.Context()
		gs := &gatedStore{Store: st}
		a := &Activities{Store: gs, Now: func() time.Time { return gcT0 }}
		const ws, n, bad = "acme", 20, 7
		sc := gcScorecard(ws)
		runs := make([]eval.Run, n)
		for i := range runs {
			runs[i] = gcChild(t, a, sc, i)
		}
		events, digest, err := sealOther()
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := st.SealTrajectory(ctx, store.Trajectory{Workspace: ws, RunID: runs[bad].ID, Source: "import",
			EventCount: 1, Digest: digest, Events: events}); err != nil {
			t.Fatal(err)
		}
		before := gs.keyedCount()
		errs := inGroup(t, a, gs, n, func(i int) error {
			_, err := a.finish(ctx, runs[i], gcResult(runs[i], 2), nil)
			return err
		})
		for i, err := range errs {
			switch {
			case i == bad && !errors.Is(err, derrors.ErrConflict):
				t.Errorf("finish of the bad run: err = %v, want ErrConflict", err)
			case i != bad && err != nil:
				t.Errorf("finish %d beside the bad one: %v", i, err)
			}
			want := eval.StatusSucceeded
			if i == bad {
				want = eval.StatusRunning
			}
			if got := loadRunOrFail(t, a, ws, runs[i].ID); got.Status != want {
				t.Errorf("run %d is %s, want %s", i, got.Status, want)
			}
		}
		// The held leader alone, the failed group, then the 19 alone.
		if got, want := gs.keyedCount()-before, 1+1+(n-1); got != want {
			t.Errorf("%d keyed transactions, want %d", got, want)
		}
	})
}

// sealOther returns events and their digest that no gcResult has.
func sealOther() ([]byte, string, error) {
	events := `[{"kind":"message","content":"imported"}]`
	return []byte(events), registry.Digest([]byte(events)), nil
}

// TestGroupCommitFallsBackWhenTheGroupFails: a group whose batch write
// fails (here PutRuns) is written item by item, all of them.
func TestGroupCommitFallsBackWhenTheGroupFails(t *testing.T) {
	forEachBackend(t, func(t *testing.T, st store.Store) {
		ctx := t.Context()
		failing := storetest.NewFailing(st)
		gs := &gatedStore{Store: failing}
		a := &Activities{Store: gs, Now: func() time.Time { return gcT0 }}
		const ws, n = "acme", 12
		sc := gcScorecard(ws)
		runs := make([]eval.Run, n)
		for i := range runs {
			runs[i] = gcChild(t, a, sc, i)
		}
		failing.Fail("PutRuns", errors.New("connection reset"))
		errs := inGroup(t, a, gs, n, func(i int) error {
			_, err := a.finish(ctx, runs[i], gcResult(runs[i], 1), nil)
			return err
		})
		for i, err := range errs {
			if err != nil {
				t.Errorf("finish %d: %v", i, err)
			}
			if got := loadRunOrFail(t, a, ws, runs[i].ID); got.Status != eval.StatusSucceeded {
				t.Errorf("run %d is %s, want succeeded", i, got.Status)
			}
		}
		// The held leader was alone and written so; the group of the
		// others failed, and they were written alone.
		if failing.Calls("PutRuns") != 1 || failing.Calls("PutRun") != n {
			t.Errorf("PutRuns called %d times and PutRun %d, want 1 group and %d alone",
				failing.Calls("PutRuns"), failing.Calls("PutRun"), n)
		}
	})
}

// TestGroupCommitCreates: child creations that arrive together are
// inserted in one transaction per group; a child an earlier attempt made
// is adopted as it is stored, and not reported fresh.
func TestGroupCommitCreates(t *testing.T) {
	forEachBackend(t, func(t *testing.T, st store.Store) {
		ctx := t.Context()
		gs := &gatedStore{Store: st}
		a := &Activities{Store: gs, Now: func() time.Time { return gcT0 }}
		const ws, n = "acme", 40
		sc := gcScorecard(ws)
		existing := map[int]bool{3: true, 17: true, 39: true}
		for i := range existing {
			run := gcChild(t, a, sc, i)
			run.Attempts = 5
			row, err := records.Row(run)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := st.PutRun(ctx, row); err != nil {
				t.Fatal(err)
			}
		}
		before := gs.keyedCount()
		runs := make([]eval.Run, n)
		fresh := make([]bool, n)
		errs := inGroup(t, a, gs, n, func(i int) error {
			item := CaseItem{ScorecardRef: ScorecardRef{Workspace: ws, ScorecardID: sc.ID}, CaseID: fmt.Sprintf("c%03d", i)}
			id := eval.ChildRunID(ws, sc.ID, item.CaseID, 0)
			var err error
			runs[i], fresh[i], err = a.createChild(ctx, sc, item, id, registry.EvalCase{ID: item.CaseID}, true)
			return err
		})
		// The held leader's CreateRun, then one transaction for the rest.
		if got, want := gs.keyedCount()-before, 2; got != want {
			t.Errorf("%d writes for %d creations, want %d", got, n, want)
		}
		for i, err := range errs {
			if err != nil {
				t.Fatalf("createChild %d: %v", i, err)
			}
			wantAttempts := 1
			if existing[i] {
				wantAttempts = 5
			}
			if fresh[i] == existing[i] || runs[i].Attempts != wantAttempts || runs[i].Status != eval.StatusRunning {
				t.Errorf("child %d: fresh %v, attempts %d, status %s; want fresh %v, attempts %d, running",
					i, fresh[i], runs[i].Attempts, runs[i].Status, !existing[i], wantAttempts)
			}
			if got := loadRunOrFail(t, a, ws, runs[i].ID); got.Attempts != wantAttempts {
				t.Errorf("child %d stored with attempts %d, want %d", i, got.Attempts, wantAttempts)
			}
		}
	})
}
