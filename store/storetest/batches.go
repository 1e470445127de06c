package storetest

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"svc/internal/platform/derrors"
	"svc/store"
)

// The batch methods (CreateRuns, GetRuns, PutRuns, SealTrajectories) must
// write exactly what their single-row methods would, called in order.

// batchT0 is when the batch cases' runs are created.
var batchT0 = time.Date(2026, 4, 1, 9, 0, 0, 0, time.UTC)

// getRunOrFail reads one run or fails t.
func getRunOrFail(t *testing.T, tx store.Tx, workspace, id string) store.Run {
	t.Helper()
	r, err := tx.GetRun(t.Context(), workspace, id)
	if err != nil {
		t.Fatalf("GetRun(%q, %q): %v", workspace, id, err)
	}
	return r
}

// finished is r as a finish writes it: succeeded, passed, doc changed.
func finished(r store.Run, at time.Time) store.Run {
	r.Status, r.Outcome, r.UpdatedAt = "succeeded", "pass", at
	r.Doc = []byte(fmt.Sprintf(`{"id": %q, "status": "succeeded"}`, r.ID))
	return r
}

var batchCases = []Case{
	{"batch/create_runs_inserts_and_reports_conflicts", func(t *testing.T, s store.Store) {
		ctx := t.Context()
		createRun(t, s, childRun("w", "taken", "sc", "c0", 0, true, batchT0))
		createRun(t, s, childRun("w", "slot-holder", "sc", "c1", 0, true, batchT0))
		rs := []store.Run{
			childRun("w", "new-1", "sc", "c2", 0, true, batchT0),
			childRun("w", "taken", "sc", "c0", 0, true, batchT0),      // its ID exists
			childRun("w", "new-2", "sc", "c1", 0, true, batchT0),      // the slot is another run's
			childRun("w", "new-3", "sc", "c3", 0, true, batchT0),      // takes a slot ...
			childRun("w", "new-4", "sc", "c3", 0, true, batchT0),      // ... this one then finds taken
			childRun("w", "new-5", "sc", "c3", 0, false, time.Time{}), // not canonical: no slot
			childRun("other", "taken", "sc", "c0", 0, true, batchT0),  // another workspace's key
		}
		stored, created, err := s.CreateRuns(ctx, rs)
		if err != nil {
			t.Fatalf("CreateRuns: %v", err)
		}
		want := []bool{true, false, false, true, false, true, true}
		if diff := cmp.Diff(want, created); diff != "" {
			t.Errorf("created (-want +got):\n%s", diff)
		}
		for i, r := range rs {
			_, err := s.GetRun(ctx, r.Workspace, r.ID)
			switch {
			case created[i] && err != nil:
				t.Errorf("GetRun(%q, %q) after it was created: %v", r.Workspace, r.ID, err)
			case !created[i] && r.ID != "taken" && !errors.Is(err, derrors.ErrNotFound):
				t.Errorf("GetRun(%q, %q) of a run not created: err = %v, want ErrNotFound", r.Workspace, r.ID, err)
			}
			if created[i] {
				got := getRunOrFail(t, s, r.Workspace, r.ID)
				if diff := cmp.Diff(got, stored[i], runDocEqual); diff != "" {
					t.Errorf("stored[%d] is not the run as read back (-read +returned):\n%s", i, diff)
				}
			}
		}
		wantStamped(t, "CreatedAt of a run created without one", stored[5].CreatedAt)
		if got := getRunOrFail(t, s, "w", "taken"); got.CaseID != "c0" {
			t.Errorf("the existing run was changed: %+v", got)
		}
	}},
	{"batch/create_runs_same_id_twice_inserts_the_first", func(t *testing.T, s store.Store) {
		a := childRun("w", "r", "sc", "c1", 0, true, batchT0)
		b := childRun("w", "r", "sc", "c2", 0, true, batchT0)
		_, created, err := s.CreateRuns(t.Context(), []store.Run{a, b})
		if err != nil {
			t.Fatalf("CreateRuns: %v", err)
		}
		if diff := cmp.Diff([]bool{true, false}, created); diff != "" {
			t.Errorf("created (-want +got):\n%s", diff)
		}
		if got := getRunOrFail(t, s, "w", "r"); got.CaseID != "c1" {
			t.Errorf("stored case %q, want c1 (the first row)", got.CaseID)
		}
	}},
	{"batch/create_runs_invalid_row_inserts_none", func(t *testing.T, s store.Store) {
		bad := childRun("w", "bad", "sc", "c2", 0, true, batchT0)
		bad.Kind = ""
		_, _, err := s.CreateRuns(t.Context(), []store.Run{childRun("w", "ok", "sc", "c1", 0, true, batchT0), bad})
		wantErr(t, "CreateRuns with a run without kind", err, derrors.ErrInvalid)
		_, err = s.GetRun(t.Context(), "w", "ok")
		wantErr(t, "GetRun of the valid row", err, derrors.ErrNotFound)
	}},
	{"batch/create_runs_in_a_transaction_after_a_conflict", func(t *testing.T, s store.Store) {
		// A skipped row must not abort a PostgreSQL transaction.
		createRun(t, s, childRun("w", "taken", "sc", "c0", 0, true, batchT0))
		err := s.TransactKeyed(t.Context(), func(tx store.Tx) error {
			_, created, err := tx.CreateRuns(t.Context(), []store.Run{
				childRun("w", "taken", "sc", "c0", 0, true, batchT0), childRun("w", "b", "sc", "c1", 0, true, batchT0)})
			if err != nil {
				return err
			}
			if diff := cmp.Diff([]bool{false, true}, created); diff != "" {
				t.Errorf("created (-want +got):\n%s", diff)
			}
			_, err = tx.GetRun(t.Context(), "w", "b")
			return err
		})
		if err != nil {
			t.Fatalf("TransactKeyed: %v", err)
		}
		getRunOrFail(t, s, "w", "b")
	}},
	{"batch/get_runs_in_order_skipping_missing", func(t *testing.T, s store.Store) {
		for _, id := range []string{"a", "b", "c"} {
			createRun(t, s, topRun("w", id, batchT0))
		}
		createRun(t, s, topRun("other", "d", batchT0))
		got, err := s.GetRuns(t.Context(), "w", []string{"c", "missing", "a", "d", "c"})
		if err != nil {
			t.Fatalf("GetRuns: %v", err)
		}
		if diff := cmp.Diff([]string{"c", "a"}, runIDs(got)); diff != "" {
			t.Errorf("GetRuns ids (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff(getRunOrFail(t, s, "w", "a"), got[1], runDocEqual); diff != "" {
			t.Errorf("GetRuns row differs from GetRun (-GetRun +GetRuns):\n%s", diff)
		}
		none, err := s.GetRuns(t.Context(), "w", nil)
		if err != nil || len(none) != 0 {
			t.Errorf("GetRuns(no ids) = %v, %v; want none", none, err)
		}
		_, err = s.GetRuns(t.Context(), "w", []string{"a\x00"})
		wantErr(t, "GetRuns with a NUL id", err, derrors.ErrInvalid)
	}},
	{"batch/put_runs_as_put_run_each", func(t *testing.T, s store.Store) {
		ctx := t.Context()
		var rs []store.Run
		for i := range 5 {
			r := createRun(t, s, childRun("w", fmt.Sprintf("r%d", i), "sc", fmt.Sprintf("c%d", i), 0, true, batchT0.Add(time.Duration(i)*time.Second)))
			rs = append(rs, finished(r, batchT0.Add(time.Minute)))
		}
		// A top-level run and one of another workspace in the same call.
		rs = append(rs, finished(createRun(t, s, topRun("w", "top", batchT0)), batchT0.Add(time.Minute)))
		rs = append(rs, finished(createRun(t, s, childRun("v", "r0", "sc", "c0", 0, true, batchT0)), batchT0.Add(time.Minute)))
		put := make([]store.Run, len(rs))
		for i, r := range rs {
			r.CreatedAt = time.Time{} // the stored one is kept
			put[i] = r
		}
		out, err := s.PutRuns(ctx, put)
		if err != nil {
			t.Fatalf("PutRuns: %v", err)
		}
		for i, want := range rs {
			want.CreatedAt, want.UpdatedAt = norm(want.CreatedAt), norm(want.UpdatedAt)
			got := getRunOrFail(t, s, want.Workspace, want.ID)
			if diff := cmp.Diff(want, got, runDocEqual); diff != "" {
				t.Errorf("run %s/%s as stored (-want +got):\n%s", want.Workspace, want.ID, diff)
			}
			if diff := cmp.Diff(want, out[i], runDocEqual); diff != "" {
				t.Errorf("PutRuns result %d (-want +got):\n%s", i, diff)
			}
		}
	}},
	{"batch/put_runs_refuses_as_put_run_and_stores_none", func(t *testing.T, s store.Store) {
		ctx := t.Context()
		a := createRun(t, s, childRun("w", "a", "sc", "c1", 0, true, batchT0))
		createRun(t, s, childRun("w", "holder", "sc", "c2", 0, true, batchT0))
		b := createRun(t, s, childRun("w", "b", "sc", "c2", 0, false, batchT0))
		// b becoming canonical where holder is: ErrConflict, and a is not
		// written either.
		bCanon := finished(b, batchT0.Add(time.Minute))
		bCanon.Canonical = true
		_, err := s.PutRuns(ctx, []store.Run{finished(a, batchT0.Add(time.Minute)), bCanon})
		wantErr(t, "PutRuns making a second run canonical", err, derrors.ErrConflict)
		if got := getRunOrFail(t, s, "w", "a"); got.Status != "queued" {
			t.Errorf("a is %s after a failed PutRuns, want queued", got.Status)
		}
		// A run that does not exist: ErrNotFound, nothing written.
		_, err = s.PutRuns(ctx, []store.Run{finished(a, batchT0.Add(time.Minute)), finished(childRun("w", "ghost", "sc", "c9", 0, true, batchT0), batchT0)})
		wantErr(t, "PutRuns of a run that does not exist", err, derrors.ErrNotFound)
		if got := getRunOrFail(t, s, "w", "a"); got.Status != "queued" {
			t.Errorf("a is %s after a failed PutRuns, want queued", got.Status)
		}
		// In a transaction the error leaves it usable (PostgreSQL), and
		// the caller decides.
		err = s.TransactKeyed(ctx, func(tx store.Tx) error {
			if _, err := tx.PutRuns(ctx, []store.Run{bCanon, finished(a, batchT0)}); !errors.Is(err, derrors.ErrConflict) {
				t.Errorf("PutRuns in a transaction: err = %v, want ErrConflict", err)
			}
			_, err := tx.PutRuns(ctx, []store.Run{finished(a, batchT0.Add(time.Minute))})
			return err
		})
		if err != nil {
			t.Fatalf("TransactKeyed: %v", err)
		}
		if got := getRunOrFail(t, s, "w", "a"); got.Status != "succeeded" {
			t.Errorf("a is %s, want succeeded", got.Status)
		}
	}},
	{"batch/put_runs_canonical_order_decides_within_the_call", func(t *testing.T, s store.Store) {
		ctx := t.Context()
		a := createRun(t, s, childRun("w", "a", "sc", "c1", 0, true, batchT0))
		b := createRun(t, s, childRun("w", "b", "sc", "c1", 0, false, batchT0))
		aOff, bOn := a, b
		aOff.Canonical, bOn.Canonical = false, true
		// b first: a still holds the slot, as PutRun(b) then PutRun(a) would find.
		_, err := s.PutRuns(ctx, []store.Run{bOn, aOff})
		wantErr(t, "PutRuns taking a slot before its holder leaves it", err, derrors.ErrConflict)
		// a first: the slot is free when b takes it.
		if _, err := s.PutRuns(ctx, []store.Run{aOff, bOn}); err != nil {
			t.Fatalf("PutRuns handing the slot over: %v", err)
		}
		if got := getRunOrFail(t, s, "w", "b"); !got.Canonical {
			t.Errorf("b is not canonical after the handover")
		}
		// Two rows of the call taking one slot: the second is refused.
		c := createRun(t, s, childRun("w", "c", "sc", "c2", 0, false, batchT0))
		d := createRun(t, s, childRun("w", "d", "sc", "c2", 0, false, batchT0))
		c.Canonical, d.Canonical = true, true
		_, err = s.PutRuns(ctx, []store.Run{c, d})
		wantErr(t, "PutRuns making two runs canonical for one slot", err, derrors.ErrConflict)
		// The same run twice: the last one wins.
		e := createRun(t, s, childRun("w", "e", "sc", "c3", 0, true, batchT0))
		if _, err := s.PutRuns(ctx, []store.Run{finished(e, batchT0), e}); err != nil {
			t.Fatalf("PutRuns of one run twice: %v", err)
		}
		if got := getRunOrFail(t, s, "w", "e"); got.Status != "queued" {
			t.Errorf("e is %s, want queued (the last row)", got.Status)
		}
	}},
	{"batch/seal_trajectories_once_each", func(t *testing.T, s store.Store) {
		ctx := t.Context()
		old := trajectory("w", "sealed", 2, batchT0)
		seal(t, s, old)
		ts := []store.Trajectory{
			trajectory("w", "r1", 3, batchT0.Add(time.Second)),
			trajectory("w", "sealed", 2, batchT0.Add(time.Hour)), // a retry of the same events
			trajectory("w", "r2", 1, time.Time{}),
			trajectory("w", "r1", 3, batchT0.Add(time.Minute)), // twice in the call
			trajectory("v", "r1", 1, batchT0),                  // another workspace's run
		}
		stored, created, err := s.SealTrajectories(ctx, ts)
		if err != nil {
			t.Fatalf("SealTrajectories: %v", err)
		}
		if diff := cmp.Diff([]bool{true, false, true, false, true}, created); diff != "" {
			t.Errorf("created (-want +got):\n%s", diff)
		}
		wantStamped(t, "SealedAt of a trajectory sealed without one", stored[2].SealedAt)
		for i, tr := range ts {
			got, err := s.GetTrajectory(ctx, tr.Workspace, tr.RunID)
			if err != nil {
				t.Fatalf("GetTrajectory(%q, %q): %v", tr.Workspace, tr.RunID, err)
			}
			if diff := cmp.Diff(got, stored[i], jsonEqual); diff != "" {
				t.Errorf("stored[%d] is not the trajectory as read back (-read +returned):\n%s", i, diff)
			}
		}
		if got := stored[1].SealedAt; !got.Equal(norm(batchT0)) {
			t.Errorf("the retried seal returned SealedAt %v, want the first seal's %v", got, batchT0)
		}
	}},
	{"batch/seal_trajectories_other_digest_is_conflict_and_seals_none", func(t *testing.T, s store.Store) {
		ctx := t.Context()
		seal(t, s, trajectory("w", "sealed", 2, batchT0))
		_, _, err := s.SealTrajectories(ctx, []store.Trajectory{trajectory("w", "new", 1, batchT0), trajectory("w", "sealed", 5, batchT0)})
		wantErr(t, "SealTrajectories over a seal with other events", err, derrors.ErrConflict)
		_, err = s.GetTrajectory(ctx, "w", "new")
		wantErr(t, "GetTrajectory of the call's other trajectory", err, derrors.ErrNotFound)
		// Twice in one call with other events: the second is refused.
		_, _, err = s.SealTrajectories(ctx, []store.Trajectory{trajectory("w", "x", 1, batchT0), trajectory("w", "x", 2, batchT0)})
		wantErr(t, "SealTrajectories of one run with two digests", err, derrors.ErrConflict)
		bad := trajectory("w", "bad", 1, batchT0)
		bad.Digest = "md5:x"
		_, _, err = s.SealTrajectories(ctx, []store.Trajectory{trajectory("w", "ok", 1, batchT0), bad})
		wantErr(t, "SealTrajectories with a bad digest", err, derrors.ErrInvalid)
		_, err = s.GetTrajectory(ctx, "w", "ok")
		wantErr(t, "GetTrajectory after an invalid call", err, derrors.ErrNotFound)
	}},
	{"batch/many_rows_span_statements", func(t *testing.T, s store.Store) {
		// More rows than one statement takes.
		ctx := t.Context()
		var rs []store.Run
		var ts []store.Trajectory
		for i := range 1203 {
			rs = append(rs, childRun("w", fmt.Sprintf("r%04d", i), "sc", fmt.Sprintf("c%04d", i), 0, true, batchT0))
			ts = append(ts, trajectory("w", fmt.Sprintf("r%04d", i), 1, batchT0))
		}
		_, created, err := s.CreateRuns(ctx, rs)
		if err != nil {
			t.Fatalf("CreateRuns: %v", err)
		}
		for i, c := range created {
			if !c {
				t.Fatalf("row %d not created", i)
			}
		}
		for i := range rs {
			rs[i] = finished(rs[i], batchT0.Add(time.Minute))
		}
		if _, err := s.PutRuns(ctx, rs); err != nil {
			t.Fatalf("PutRuns: %v", err)
		}
		if _, _, err := s.SealTrajectories(ctx, ts); err != nil {
			t.Fatalf("SealTrajectories: %v", err)
		}
		ids := make([]string, len(rs))
		for i, r := range rs {
			ids[i] = r.ID
		}
		got, err := s.GetRuns(ctx, "w", ids)
		if err != nil {
			t.Fatalf("GetRuns: %v", err)
		}
		if len(got) != len(rs) {
			t.Fatalf("GetRuns returned %d runs, want %d", len(got), len(rs))
		}
		for _, r := range got {
			if r.Status != "succeeded" {
				t.Fatalf("run %s is %s, want succeeded", r.ID, r.Status)
			}
		}
	}},
}
