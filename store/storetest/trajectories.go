package storetest

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"svc/internal/platform/derrors"
	"svc/store"
)

// trajectory returns a valid trajectory of run with n events, sealed at at.
// Its events are in canonical form (sorted keys, no spaces) and its digest
// is theirs.
func trajectory(workspace, run string, n int, at time.Time) store.Trajectory {
	events := "["
	for i := range n {
		if i > 0 {
			events += ","
		}
		events += fmt.Sprintf(`{"kind":"tool.call","run":%q,"seq":%d}`, run, i)
	}
	events += "]"
	return store.Trajectory{
		Workspace: workspace, RunID: run, Source: "svc", EventCount: n,
		Digest: digestOf(events), SealedAt: at, Events: json.RawMessage(events),
	}
}

// seal seals tr or fails t.
func seal(t *testing.T, tx store.Tx, tr store.Trajectory) (store.Trajectory, bool) {
	t.Helper()
	got, created, err := tx.SealTrajectory(t.Context(), tr)
	if err != nil {
		t.Fatalf("SealTrajectory(%q, %q): %v", tr.Workspace, tr.RunID, err)
	}
	return got, created
}

// listTrajectories lists metas or fails t.
func listTrajectories(t *testing.T, tx store.Tx, f store.TrajectoryFilter) []store.Trajectory {
	t.Helper()
	got, err := tx.ListTrajectories(t.Context(), f)
	if err != nil {
		t.Fatalf("ListTrajectories(%+v): %v", f, err)
	}
	return got
}

func trajectoryRuns(ts []store.Trajectory) []string {
	return pluck(ts, func(tr store.Trajectory) string { return tr.RunID })
}

// sealedAs is tr as the store returns it.
func sealedAs(tr store.Trajectory) store.Trajectory {
	tr.SealedAt = norm(tr.SealedAt)
	return tr
}

var trajectoryCases = []Case{
	{"trajectories/seal_then_get_keeps_the_bytes", func(t *testing.T, s store.Store) {
		ctx := t.Context()
		in := trajectory("acme", "run-1", 3, t0)
		in.Audience, in.Source = "user:alice", "import"
		got, created := seal(t, s, in)
		if !created {
			t.Error("first seal: created = false, want true")
		}
		want := sealedAs(in)
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("SealTrajectory (-want +got):\n%s", diff)
		}
		stored, err := s.GetTrajectory(ctx, "acme", "run-1")
		if err != nil {
			t.Fatal(err)
		}
		// Byte for byte: the digest must still match what is served.
		if diff := cmp.Diff(want, stored); diff != "" {
			t.Errorf("GetTrajectory (-want +got):\n%s", diff)
		}
		if digestOf(string(stored.Events)) != stored.Digest {
			t.Errorf("the stored events no longer hash to the digest %s", stored.Digest)
		}
		now, _ := seal(t, s, trajectory("acme", "run-2", 0, time.Time{}))
		wantStamped(t, "SealedAt", now.SealedAt)
	}},
	{"trajectories/a_seal_is_never_rewritten", func(t *testing.T, s store.Store) {
		ctx := t.Context()
		first, _ := seal(t, s, trajectory("acme", "run-1", 2, t0))
		again := trajectory("acme", "run-1", 2, t0.Add(time.Hour))
		again.Source = "otlp"
		got, created := seal(t, s, again)
		if created {
			t.Error("second seal with the same digest: created = true, want false")
		}
		if diff := cmp.Diff(first, got); diff != "" {
			t.Errorf("second seal returns (-stored +got):\n%s", diff)
		}
		err := s.Transact(ctx, func(tx store.Tx) error {
			_, _, err := tx.SealTrajectory(ctx, trajectory("acme", "run-1", 3, t0))
			wantErr(t, "SealTrajectory with another digest", err, derrors.ErrConflict)
			// The conflict did not abort the transaction.
			seal(t, tx, trajectory("acme", "run-2", 1, t0))
			return nil
		})
		if err != nil {
			t.Fatalf("Transact: %v", err)
		}
		stored, err := s.GetTrajectory(ctx, "acme", "run-1")
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(first, stored); diff != "" {
			t.Errorf("GetTrajectory after a refused reseal (-first +got):\n%s", diff)
		}
		if _, err := s.GetTrajectory(ctx, "acme", "run-2"); err != nil {
			t.Errorf("GetTrajectory(run-2) after commit: %v", err)
		}
	}},
	{"trajectories/list_newest_first_without_events", func(t *testing.T, s store.Store) {
		// b and c share a SealedAt: the run id breaks the tie, descending.
		private := trajectory("acme", "p", 1, t0.Add(4*time.Minute))
		private.Audience = "user:bob"
		mine := trajectory("acme", "m", 1, t0.Add(5*time.Minute))
		mine.Audience = "user:alice"
		for _, tr := range []store.Trajectory{
			trajectory("acme", "a", 1, t0),
			trajectory("acme", "b", 2, t0.Add(time.Minute)),
			trajectory("acme", "c", 3, t0.Add(time.Minute)),
			trajectory("acme", "d", 4, t0.Add(2*time.Minute)),
			private, mine,
			trajectory("globex", "z", 1, t0.Add(time.Minute)),
		} {
			seal(t, s, tr)
		}
		all := listTrajectories(t, s, store.TrajectoryFilter{Workspace: "acme", Viewer: "user:alice"})
		if diff := cmp.Diff([]string{"m", "d", "c", "b", "a"}, trajectoryRuns(all)); diff != "" {
			t.Errorf("ListTrajectories as alice (-want +got):\n%s", diff)
		}
		meta := sealedAs(trajectory("acme", "d", 4, t0.Add(2*time.Minute)))
		meta.Events = nil
		if len(all) > 1 {
			if diff := cmp.Diff(meta, all[1]); diff != "" {
				t.Errorf("listed meta (-want +got):\n%s", diff)
			}
		}
		if got := listTrajectories(t, s, store.TrajectoryFilter{Workspace: "acme", Viewer: "user:bob"}); len(got) != 5 || got[0].RunID != "p" {
			t.Errorf("ListTrajectories as bob = %v, want p first and not m", trajectoryRuns(got))
		}
		var paged []string
		f := store.TrajectoryFilter{Workspace: "acme", Viewer: "user:alice", Limit: 2}
		for range 10 {
			page := listTrajectories(t, s, f)
			if len(page) == 0 {
				break
			}
			paged = append(paged, trajectoryRuns(page)...)
			last := page[len(page)-1]
			f.BeforeTime, f.BeforeID = last.SealedAt, last.RunID
		}
		if diff := cmp.Diff([]string{"m", "d", "c", "b", "a"}, paged); diff != "" {
			t.Errorf("pages (-want +got):\n%s", diff)
		}
	}},
	{"trajectories/workspace_scoping", func(t *testing.T, s store.Store) {
		ctx := t.Context()
		seal(t, s, trajectory("acme", "run-1", 2, t0))
		_, err := s.GetTrajectory(ctx, "globex", "run-1")
		wantErr(t, "GetTrajectory(globex, run-1)", err, derrors.ErrNotFound)
		if got := listTrajectories(t, s, store.TrajectoryFilter{Workspace: "globex", Viewer: "user:alice"}); len(got) != 0 {
			t.Errorf("ListTrajectories(globex) = %v, want none", trajectoryRuns(got))
		}
		// globex's run of the same id seals its own trajectory.
		if _, created := seal(t, s, trajectory("globex", "run-1", 5, t0)); !created {
			t.Error("globex's seal: created = false, want true")
		}
	}},
	{"trajectories/invalid_input", func(t *testing.T, s store.Store) {
		ctx := t.Context()
		bad := func(edit func(tr *store.Trajectory)) store.Trajectory {
			tr := trajectory("acme", "run-1", 1, t0)
			edit(&tr)
			return tr
		}
		for _, tc := range []struct {
			name string
			tr   store.Trajectory
		}{
			{"no workspace", bad(func(tr *store.Trajectory) { tr.Workspace = "" })},
			{"no run", bad(func(tr *store.Trajectory) { tr.RunID = "" })},
			{"no source", bad(func(tr *store.Trajectory) { tr.Source = "" })},
			{"no digest", bad(func(tr *store.Trajectory) { tr.Digest = "" })},
			{"digest not sha256", bad(func(tr *store.Trajectory) { tr.Digest = "md5:abc" })},
			{"negative count", bad(func(tr *store.Trajectory) { tr.EventCount = -1 })},
			{"no events", bad(func(tr *store.Trajectory) { tr.Events = nil })},
			{"events not JSON", bad(func(tr *store.Trajectory) { tr.Events = json.RawMessage(`[{"kind":`) })},
			{"events not an array", bad(func(tr *store.Trajectory) { tr.Events = json.RawMessage(`{"kind":"x"}`) })},
			{"events with a NUL escape", bad(func(tr *store.Trajectory) { tr.Events = json.RawMessage(`["\u0000"]`) })},
			{"audience with NUL", bad(func(tr *store.Trajectory) { tr.Audience = "user:\x00" })},
		} {
			_, _, err := s.SealTrajectory(ctx, tc.tr)
			wantErr(t, "SealTrajectory: "+tc.name, err, derrors.ErrInvalid)
		}
		_, err := s.ListTrajectories(ctx, store.TrajectoryFilter{Workspace: "acme", BeforeID: "run-1"})
		wantErr(t, "ListTrajectories with a cursor id without a time", err, derrors.ErrInvalid)
		if got := listTrajectories(t, s, store.TrajectoryFilter{Workspace: "acme"}); len(got) != 0 {
			t.Errorf("ListTrajectories = %v, want nothing stored", trajectoryRuns(got))
		}
	}},
}
