package storetest

import (
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"svc/internal/platform/derrors"
	"svc/store"
)

// childRunFixture stores, in acme's batch sc-1, five children updated at
// t0, t1 (two, a tie), t2 (a superseded attempt, and a run restricted to
// bob), and beside them runs the batch's reads must leave out: another
// batch's child, a child of globex's batch of the same id, a top-level
// run. It returns the five in (UpdatedAt, ID) order.
func childRunFixture(t *testing.T, s store.Store) []store.Run {
	t.Helper()
	createBatch(t, s, batch("acme", "sc-1", t0))
	createBatch(t, s, batch("acme", "sc-2", t0))
	createBatch(t, s, batch("globex", "sc-1", t0))
	at := func(r store.Run, updated time.Time, status, outcome string) store.Run {
		r.UpdatedAt, r.Status, r.Outcome = updated, status, outcome
		return r
	}
	t1, t2 := t0.Add(time.Second), t0.Add(2*time.Second)
	bob := childRun("acme", "c5", "sc-1", "case-4", 0, true, t0)
	bob.Audience = "bob"
	var mine []store.Run
	for _, r := range []store.Run{
		at(childRun("acme", "c1", "sc-1", "case-1", 0, true, t0), t0, "running", ""),
		at(childRun("acme", "c3", "sc-1", "case-3", 0, true, t0), t1, "succeeded", "pass"),
		at(childRun("acme", "c2", "sc-1", "case-2", 0, true, t0), t1, "failed", "error"),
		at(childRun("acme", "c4", "sc-1", "case-1", 1, false, t0), t2, "failed", "error"),
		at(bob, t2, "succeeded", "fail"),
	} {
		mine = append(mine, createRun(t, s, r))
	}
	for _, r := range []store.Run{
		at(childRun("acme", "d1", "sc-2", "case-1", 0, true, t0), t2.Add(time.Hour), "running", ""),
		at(childRun("globex", "c9", "sc-1", "case-1", 0, true, t0), t2.Add(time.Hour), "running", ""),
		at(topRun("acme", "top", t0), t2.Add(time.Hour), "running", ""),
	} {
		createRun(t, s, r)
	}
	// (UpdatedAt, ID) order: c1; c2 and c3 tied at t1; c4 and c5 at t2.
	return []store.Run{mine[0], mine[2], mine[1], mine[3], mine[4]}
}

func childStates(rs []store.Run) []store.ChildRunState {
	out := []store.ChildRunState{}
	for _, r := range rs {
		out = append(out, store.ChildRunState{ID: r.ID, Status: r.Status, Outcome: r.Outcome, Audience: r.Audience,
			Canonical: r.Canonical, CreatedAt: norm(r.CreatedAt), UpdatedAt: norm(r.UpdatedAt)})
	}
	return out
}

var childRunCases = []Case{
	{"childruns/states_since_an_update_time", func(t *testing.T, s store.Store) {
		ctx := t.Context()
		runs := childRunFixture(t, s)
		t1 := t0.Add(time.Second)
		for _, tc := range []struct {
			what  string
			since time.Time
			want  []store.Run
		}{
			{"since zero: every child, canonical or not, of every audience", time.Time{}, runs},
			{"since t0", t0, runs},
			// Both runs at t1, not only the one with the greater id.
			{"since t1: the runs stamped at t1 too", t1, runs[1:]},
			{"since t1 and a microsecond", t1.Add(time.Microsecond), runs[3:]},
			// The store keeps microseconds: a finer bound is its microsecond.
			{"since t1 as stored and 999ns", norm(t1).Add(999 * time.Nanosecond), runs[1:]},
			{"since after every update", t0.Add(time.Minute), nil},
		} {
			got, err := s.ListChildRunStates(ctx, "acme", "sc-1", tc.since)
			if err != nil {
				t.Fatalf("%s: ListChildRunStates: %v", tc.what, err)
			}
			if diff := cmp.Diff(childStates(tc.want), got); diff != "" {
				t.Errorf("%s: ListChildRunStates (-want +got):\n%s", tc.what, diff)
			}
		}

		// A run that stops being canonical is listed with its new state
		// once it is written, so a reader sees it leave.
		c1 := runs[0]
		c1.Canonical, c1.Status, c1.Outcome, c1.UpdatedAt = false, "failed", "cancelled", t0.Add(3*time.Second)
		if _, err := s.PutRun(ctx, c1); err != nil {
			t.Fatal(err)
		}
		got, err := s.ListChildRunStates(ctx, "acme", "sc-1", t0.Add(3*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(childStates([]store.Run{c1}), got); diff != "" {
			t.Errorf("ListChildRunStates after c1 left the canonical runs (-want +got):\n%s", diff)
		}
		if got, err := s.ListChildRunStates(ctx, "acme", "absent", time.Time{}); err != nil || len(got) != 0 {
			t.Errorf("ListChildRunStates of an absent batch = %v, %v; want none", got, err)
		}
	}},
	{"childruns/latest_update_time", func(t *testing.T, s store.Store) {
		ctx := t.Context()
		runs := childRunFixture(t, s)
		check := func(what string, want time.Time) {
			t.Helper()
			got, err := s.ChildRunsUpdatedAt(ctx, "acme", "sc-1")
			if err != nil {
				t.Fatalf("%s: ChildRunsUpdatedAt: %v", what, err)
			}
			if !got.Equal(norm(want)) {
				t.Errorf("%s: ChildRunsUpdatedAt = %v, want %v", what, got, norm(want))
			}
		}
		// The superseded attempt and bob's run count: a reader must see
		// them change.
		check("the fixture", t0.Add(2*time.Second))
		c1 := runs[0]
		c1.Status, c1.UpdatedAt = "succeeded", t0.Add(time.Minute).Add(123456789*time.Nanosecond)
		if _, err := s.PutRun(ctx, c1); err != nil {
			t.Fatal(err)
		}
		check("after a write", c1.UpdatedAt)
		// Read in a transaction, it sees the transaction's writes.
		err := s.Transact(ctx, func(tx store.Tx) error {
			c1.UpdatedAt = t0.Add(time.Hour)
			if _, err := tx.PutRun(ctx, c1); err != nil {
				return err
			}
			got, err := tx.ChildRunsUpdatedAt(ctx, "acme", "sc-1")
			if err != nil {
				return err
			}
			if want := norm(t0.Add(time.Hour)); !got.Equal(want) {
				t.Errorf("ChildRunsUpdatedAt in the transaction = %v, want %v", got, want)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		createBatch(t, s, batch("acme", "sc-empty", t0))
		for _, id := range []string{"sc-empty", "absent"} {
			if got, err := s.ChildRunsUpdatedAt(ctx, "acme", id); err != nil || !got.IsZero() {
				t.Errorf("ChildRunsUpdatedAt(%s) = %v, %v; want zero", id, got, err)
			}
		}
	}},
	{"childruns/list_by_id", func(t *testing.T, s store.Store) {
		ctx := t.Context()
		runs := childRunFixture(t, s)
		byID := map[string]store.Run{}
		for _, r := range runs {
			byID[r.ID] = r
		}
		pick := func(ids ...string) []store.Run {
			out := []store.Run{}
			for _, id := range ids {
				out = append(out, byID[id])
			}
			return out
		}
		// Many ids, past one query's worth, most of them of no run.
		many := make([]string, 1200)
		for i := range many {
			many[i] = fmt.Sprintf("nope-%d", i)
		}
		many[0], many[700], many[1199] = "c4", "c2", "c5"
		for _, tc := range []struct {
			what string
			ids  []string
			want []store.Run
		}{
			{"nil: every child, in id order", nil, pick("c1", "c2", "c3", "c4", "c5")},
			{"some, in id order", []string{"c3", "c1"}, pick("c1", "c3")},
			// d1 is sc-2's child, c9 globex's, top no child at all.
			{"ids of runs that are no child of the batch are skipped", []string{"d1", "c9", "top", "absent", "c2"}, pick("c2")},
			{"many ids", many, pick("c2", "c4", "c5")},
			{"none", []string{}, pick()},
		} {
			got, err := s.ListChildRuns(ctx, "acme", "sc-1", tc.ids)
			if err != nil {
				t.Fatalf("%s: ListChildRuns: %v", tc.what, err)
			}
			if diff := cmp.Diff(tc.want, got, runDocEqual); diff != "" {
				t.Errorf("%s: ListChildRuns (-want +got):\n%s", tc.what, diff)
			}
		}
	}},
	{"childruns/invalid_input", func(t *testing.T, s store.Store) {
		ctx := t.Context()
		for _, tc := range []struct{ workspace, sc string }{{"", "sc-1"}, {"acme", ""}, {"acme", "sc\x00"}, {"ac\xffme", "sc-1"}} {
			_, err := s.ChildRunsUpdatedAt(ctx, tc.workspace, tc.sc)
			wantErr(t, fmt.Sprintf("ChildRunsUpdatedAt(%q, %q)", tc.workspace, tc.sc), err, derrors.ErrInvalid)
			_, err = s.ListChildRunStates(ctx, tc.workspace, tc.sc, time.Time{})
			wantErr(t, fmt.Sprintf("ListChildRunStates(%q, %q)", tc.workspace, tc.sc), err, derrors.ErrInvalid)
			_, err = s.ListChildRuns(ctx, tc.workspace, tc.sc, nil)
			wantErr(t, fmt.Sprintf("ListChildRuns(%q, %q)", tc.workspace, tc.sc), err, derrors.ErrInvalid)
		}
		_, err := s.ListChildRuns(ctx, "acme", "sc-1", []string{"c\x00"})
		wantErr(t, "ListChildRuns(id with NUL)", err, derrors.ErrInvalid)
	}},
}
