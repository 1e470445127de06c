package storetest

import (
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"svc/internal/platform/derrors"
	"svc/store"
)

// sameJSON reports whether a and b are the same JSON value: PostgreSQL's
// jsonb does not keep the bytes of a run's doc.
func sameJSON(a, b []byte) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return string(a) == string(b)
	}
	return cmp.Equal(x, y)
}

// runDocEqual compares store.Run.Doc by meaning.
var runDocEqual = cmp.FilterPath(func(p cmp.Path) bool { return p.Last().String() == ".Doc" },
	cmp.Comparer(func(a, b []byte) bool { return sameJSON(a, b) }))

// topRun returns a valid top-level eval run of workspace created at at,
// visible to the whole workspace.
func topRun(workspace, id string, at time.Time) store.Run {
	return store.Run{
		ID: id, Workspace: workspace, Kind: "eval", Status: "queued", CreatedBy: "user:alice", CaseID: "case-1",
		Doc:       []byte(fmt.Sprintf(`{"id": %q, "status": "queued"}`, id)),
		CreatedAt: at,
	}
}

// childRun returns a valid child run of scorecard sc, for case and trial.
func childRun(workspace, id, sc, caseID string, trial int, canonical bool, at time.Time) store.Run {
	r := topRun(workspace, id, at)
	r.ParentScorecardID, r.CaseID, r.Trial, r.Canonical = sc, caseID, trial, canonical
	return r
}

// createRun creates r or fails t.
func createRun(t *testing.T, tx store.Tx, r store.Run) store.Run {
	t.Helper()
	got, err := tx.CreateRun(t.Context(), r)
	if err != nil {
		t.Fatalf("CreateRun(%q, %q): %v", r.Workspace, r.ID, err)
	}
	return got
}

// listRuns lists runs or fails t.
func listRuns(t *testing.T, tx store.Tx, f store.RunFilter) []store.Run {
	t.Helper()
	got, err := tx.ListRuns(t.Context(), f)
	if err != nil {
		t.Fatalf("ListRuns(%+v): %v", f, err)
	}
	return got
}

// countRuns counts runs or fails t.
func countRuns(t *testing.T, tx store.Tx, workspace string, since time.Time) int {
	t.Helper()
	n, err := tx.CountRuns(t.Context(), workspace, since)
	if err != nil {
		t.Fatalf("CountRuns(%q, %v): %v", workspace, since, err)
	}
	return n
}

func runIDs(rs []store.Run) []string { return pluck(rs, func(r store.Run) string { return r.ID }) }

// wantStamped fails t unless at is now-ish: set, UTC, to the microsecond.
func wantStamped(t *testing.T, what string, at time.Time) {
	t.Helper()
	if at.IsZero() || at.Location() != time.UTC || at.Nanosecond()%1000 != 0 {
		t.Errorf("%s = %v, want now, in UTC, to the microsecond", what, at)
	}
}

var runCases = []Case{
	{"runs/create_then_get", func(t *testing.T, s store.Store) {
		ctx := t.Context()
		in := store.Run{
			ID: "run-1", Workspace: "acme", Kind: "eval", Status: "running", Audience: "user:alice", CreatedBy: "user:alice",
			ParentScorecardID: "sc-1", CaseID: "case-7", Trial: 2, Canonical: true, Outcome: "pass",
			Doc:       []byte(`{"id":"run-1","harness":{"id":"h","version":"1.0.0"},"nested":[1,{"a":null}]}`),
			CreatedAt: t0,
		}
		got := createRun(t, s, in)
		want := in
		want.CreatedAt, want.UpdatedAt = norm(t0), norm(t0) // UpdatedAt defaults to CreatedAt
		if diff := cmp.Diff(want, got, runDocEqual); diff != "" {
			t.Errorf("CreateRun (-want +got):\n%s", diff)
		}
		stored, err := s.GetRun(ctx, "acme", "run-1")
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, stored, runDocEqual); diff != "" {
			t.Errorf("GetRun (-want +got):\n%s", diff)
		}
		stamped := createRun(t, s, store.Run{ID: "run-2", Workspace: "acme", Kind: "sandbox", Status: "queued", Doc: []byte(`{}`)})
		wantStamped(t, "CreatedAt", stamped.CreatedAt)
		if !stamped.UpdatedAt.Equal(stamped.CreatedAt) {
			t.Errorf("UpdatedAt = %v, want CreatedAt %v", stamped.UpdatedAt, stamped.CreatedAt)
		}
	}},
	{"runs/existing_id_is_conflict_and_the_transaction_goes_on", func(t *testing.T, s store.Store) {
		ctx := t.Context()
		createRun(t, s, topRun("acme", "run-1", t0))
		err := s.Transact(ctx, func(tx store.Tx) error {
			_, err := tx.CreateRun(ctx, topRun("acme", "run-1", t0.Add(time.Hour)))
			wantErr(t, "CreateRun of an existing id", err, derrors.ErrConflict)
			// The conflict must not have aborted the transaction.
			createRun(t, tx, topRun("acme", "run-2", t0))
			return nil
		})
		if err != nil {
			t.Fatalf("Transact: %v", err)
		}
		got, err := s.GetRun(ctx, "acme", "run-1")
		if err != nil {
			t.Fatal(err)
		}
		if !got.CreatedAt.Equal(norm(t0)) {
			t.Errorf("run-1 CreatedAt = %v, want the first create's %v", got.CreatedAt, norm(t0))
		}
		if _, err := s.GetRun(ctx, "acme", "run-2"); err != nil {
			t.Errorf("GetRun(run-2) after commit: %v", err)
		}
		// Ids are per workspace.
		createRun(t, s, topRun("globex", "run-1", t0))
	}},
	{"runs/put_replaces_and_keeps_created_at", func(t *testing.T, s store.Store) {
		ctx := t.Context()
		createRun(t, s, topRun("acme", "run-1", t0))
		later := t0.Add(time.Hour)
		upd := topRun("acme", "run-1", t0.Add(48*time.Hour)) // a CreatedAt that must be ignored
		upd.Status, upd.Audience, upd.Outcome, upd.UpdatedAt = "succeeded", "user:bob", "fail", later
		upd.Doc = []byte(`{"id":"run-1","status":"succeeded","result":{"score":1}}`)
		got, err := s.PutRun(ctx, upd)
		if err != nil {
			t.Fatal(err)
		}
		want := upd
		want.CreatedAt, want.UpdatedAt = norm(t0), norm(later)
		if diff := cmp.Diff(want, got, runDocEqual); diff != "" {
			t.Errorf("PutRun (-want +got):\n%s", diff)
		}
		stored, err := s.GetRun(ctx, "acme", "run-1")
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, stored, runDocEqual); diff != "" {
			t.Errorf("GetRun after PutRun (-want +got):\n%s", diff)
		}
		upd.UpdatedAt = time.Time{}
		got, err = s.PutRun(ctx, upd)
		if err != nil {
			t.Fatal(err)
		}
		wantStamped(t, "UpdatedAt of a PutRun without one", got.UpdatedAt)
		for _, r := range []store.Run{topRun("acme", "absent", t0), topRun("globex", "run-1", t0)} {
			_, err := s.PutRun(ctx, r)
			wantErr(t, fmt.Sprintf("PutRun(%q, %q)", r.Workspace, r.ID), err, derrors.ErrNotFound)
		}
	}},
	{"runs/workspace_scoping", func(t *testing.T, s store.Store) {
		ctx := t.Context()
		createRun(t, s, topRun("acme", "run-1", t0))
		_, err := s.GetRun(ctx, "globex", "run-1")
		wantErr(t, "GetRun(globex, run-1)", err, derrors.ErrNotFound)
		if got := listRuns(t, s, store.RunFilter{Workspace: "globex", Viewer: "user:alice", IncludeChildren: true}); len(got) != 0 {
			t.Errorf("ListRuns(globex) = %v, want none", runIDs(got))
		}
		if n := countRuns(t, s, "globex", time.Time{}); n != 0 {
			t.Errorf("CountRuns(globex) = %d, want 0", n)
		}
	}},
	{"runs/list_newest_first_with_a_cursor", func(t *testing.T, s store.Store) {
		// b and c share a CreatedAt: the id breaks the tie, descending.
		for _, r := range []store.Run{
			topRun("acme", "a", t0),
			topRun("acme", "b", t0.Add(time.Minute)),
			topRun("acme", "c", t0.Add(time.Minute)),
			topRun("acme", "d", t0.Add(2*time.Minute)),
			topRun("acme", "e", t0.Add(3*time.Minute)),
			topRun("globex", "z", t0.Add(time.Minute)),
		} {
			createRun(t, s, r)
		}
		all := listRuns(t, s, store.RunFilter{Workspace: "acme", Viewer: "user:alice"})
		if diff := cmp.Diff([]string{"e", "d", "c", "b", "a"}, runIDs(all)); diff != "" {
			t.Errorf("ListRuns (-want +got):\n%s", diff)
		}
		if len(all) > 0 && !sameJSON(all[0].Doc, []byte(`{"id":"e","status":"queued"}`)) {
			t.Errorf("listed Doc = %s, want the run's document", all[0].Doc)
		}
		var paged []string
		f := store.RunFilter{Workspace: "acme", Viewer: "user:alice", Limit: 2}
		for range 10 {
			page := listRuns(t, s, f)
			if len(page) == 0 {
				break
			}
			if len(page) > 2 {
				t.Fatalf("page of %d runs, want at most 2", len(page))
			}
			paged = append(paged, runIDs(page)...)
			last := page[len(page)-1]
			f.BeforeTime, f.BeforeID = last.CreatedAt, last.ID
		}
		if diff := cmp.Diff([]string{"e", "d", "c", "b", "a"}, paged); diff != "" {
			t.Errorf("pages (-want +got):\n%s", diff)
		}
	}},
	{"runs/list_default_limit_is_50", func(t *testing.T, s store.Store) {
		err := s.Transact(t.Context(), func(tx store.Tx) error {
			for i := range 51 {
				createRun(t, tx, topRun("acme", fmt.Sprintf("run-%02d", i), t0.Add(time.Duration(i)*time.Second)))
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		got := listRuns(t, s, store.RunFilter{Workspace: "acme", Viewer: "user:alice"})
		if len(got) != 50 || got[0].ID != "run-50" || got[49].ID != "run-01" {
			t.Errorf("ListRuns without a limit = %d runs %v, want the newest 50", len(got), runIDs(got))
		}
	}},
	{"runs/list_leaves_out_other_subjects_runs", func(t *testing.T, s store.Store) {
		ctx := t.Context()
		for i, aud := range []string{"", "user:alice", "user:bob"} {
			r := topRun("acme", fmt.Sprintf("run-%d", i), t0.Add(time.Duration(i)*time.Minute))
			r.Audience = aud
			createRun(t, s, r)
		}
		for _, tc := range []struct {
			viewer string
			want   []string
		}{
			{"user:alice", []string{"run-1", "run-0"}},
			{"user:bob", []string{"run-2", "run-0"}},
			{"user:carol", []string{"run-0"}},
		} {
			got := listRuns(t, s, store.RunFilter{Workspace: "acme", Viewer: tc.viewer})
			if diff := cmp.Diff(tc.want, runIDs(got)); diff != "" {
				t.Errorf("ListRuns as %s (-want +got):\n%s", tc.viewer, diff)
			}
		}
		_, err := s.ListRuns(ctx, store.RunFilter{Workspace: "acme"})
		wantErr(t, "ListRuns without a viewer", err, derrors.ErrInvalid)
	}},
	{"runs/list_hides_scorecard_children", func(t *testing.T, s store.Store) {
		private := childRun("acme", "c3", "sc-1", "case-2", 0, false, t0.Add(4*time.Minute))
		private.Audience = "user:bob"
		for _, r := range []store.Run{
			topRun("acme", "top", t0),
			childRun("acme", "c1", "sc-1", "case-1", 0, true, t0.Add(time.Minute)),
			childRun("acme", "c2", "sc-1", "case-1", 1, true, t0.Add(2*time.Minute)),
			childRun("acme", "d1", "sc-2", "case-1", 0, true, t0.Add(3*time.Minute)),
			private,
		} {
			createRun(t, s, r)
		}
		for _, tc := range []struct {
			name string
			f    store.RunFilter
			want []string
		}{
			{"default", store.RunFilter{}, []string{"top"}},
			{"with children", store.RunFilter{IncludeChildren: true}, []string{"d1", "c2", "c1", "top"}},
			{"one scorecard", store.RunFilter{ScorecardID: "sc-1"}, []string{"c2", "c1"}},
			{"one scorecard, children flag ignored", store.RunFilter{ScorecardID: "sc-2", IncludeChildren: true}, []string{"d1"}},
			{"one scorecard as bob", store.RunFilter{ScorecardID: "sc-1", Viewer: "user:bob"}, []string{"c3", "c2", "c1"}},
			{"no such scorecard", store.RunFilter{ScorecardID: "sc-9"}, []string{}},
		} {
			f := tc.f
			f.Workspace = "acme"
			if f.Viewer == "" {
				f.Viewer = "user:alice"
			}
			if diff := cmp.Diff(tc.want, runIDs(listRuns(t, s, f))); diff != "" {
				t.Errorf("%s: ListRuns (-want +got):\n%s", tc.name, diff)
			}
		}
	}},
	{"runs/count_top_level_runs_since", func(t *testing.T, s store.Store) {
		for _, r := range []store.Run{
			topRun("acme", "r0", t0),
			topRun("acme", "r1", t0.Add(time.Hour)),
			topRun("acme", "r2", t0.Add(2*time.Hour)),
			childRun("acme", "c1", "sc-1", "case-1", 0, true, t0.Add(2*time.Hour)),
			topRun("globex", "g1", t0.Add(2*time.Hour)),
		} {
			createRun(t, s, r)
		}
		for _, tc := range []struct {
			since time.Time
			want  int
		}{
			{time.Time{}, 3},
			{t0, 3}, // at or after: the boundary counts
			{t0.Add(time.Nanosecond * 1000), 2},
			{t0.Add(time.Hour), 2},
			{t0.Add(3 * time.Hour), 0},
		} {
			if got := countRuns(t, s, "acme", tc.since); got != tc.want {
				t.Errorf("CountRuns(acme, %v) = %d, want %d", tc.since, got, tc.want)
			}
		}
		// The budget admission counts and creates in one transaction.
		err := s.Transact(t.Context(), func(tx store.Tx) error {
			createRun(t, tx, topRun("acme", "r3", t0.Add(3*time.Hour)))
			if got := countRuns(t, tx, "acme", t0.Add(3*time.Hour)); got != 1 {
				t.Errorf("CountRuns in the transaction = %d, want 1 (its own run)", got)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}},
	{"runs/workspace_usage_since", func(t *testing.T, s store.Store) {
		ctx := t.Context()
		costed := func(r store.Run, usd string) store.Run {
			r.Doc = []byte(fmt.Sprintf(`{"id": %q, "status": "succeeded", "usage": {"costUsd": %s, "inputTokens": 7}}`, r.ID, usd))
			return r
		}
		for _, r := range []store.Run{
			costed(topRun("acme", "r0", t0), "0.5"),
			costed(topRun("acme", "r1", t0.Add(time.Hour)), "0.25"),
			topRun("acme", "r2", t0.Add(time.Hour)), // no usage: costs nothing
			costed(childRun("acme", "c1", "sc-1", "case-1", 0, true, t0.Add(2*time.Hour)), "1.125"),
			costed(topRun("globex", "g1", t0.Add(2*time.Hour)), "100"),
		} {
			createRun(t, s, r)
		}
		withTotal := func(b store.Scorecard, total int) store.Scorecard {
			b.Doc = []byte(fmt.Sprintf(`{"id": %q, "status": "queued", "progress": {"total": %d, "done": 0}}`, b.ID, total))
			return b
		}
		createBatch(t, s, withTotal(batch("acme", "sc-1", t0), 100000))
		createBatch(t, s, withTotal(batch("acme", "sc-2", t0.Add(2*time.Hour)), 3))
		createBatch(t, s, batch("acme", "sc-3", t0.Add(2*time.Hour))) // no progress: counts 0
		createBatch(t, s, withTotal(batch("globex", "sc-9", t0), 50))
		for _, tc := range []struct {
			since time.Time
			want  store.Usage
		}{
			{time.Time{}, store.Usage{Runs: 3, BatchRuns: 100003, CostUSD: 1.875}},
			{t0.Add(time.Hour), store.Usage{Runs: 2, BatchRuns: 3, CostUSD: 1.375}},
			{t0.Add(3 * time.Hour), store.Usage{}},
		} {
			got, err := s.WorkspaceUsage(ctx, "acme", tc.since)
			if err != nil {
				t.Fatalf("WorkspaceUsage(acme, %v): %v", tc.since, err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("WorkspaceUsage(acme, %v) (-want +got):\n%s", tc.since, diff)
			}
			n, err := s.CountBatchRuns(ctx, "acme", tc.since)
			if err != nil || n != tc.want.BatchRuns {
				t.Errorf("CountBatchRuns(acme, %v) = %d, %v; want %d", tc.since, n, err, tc.want.BatchRuns)
			}
		}
		if _, err := s.WorkspaceUsage(ctx, "", t0); !errors.Is(err, derrors.ErrInvalid) {
			t.Errorf("WorkspaceUsage without a workspace: %v, want ErrInvalid", err)
		}
	}},
	{"runs/count_queued", func(t *testing.T, s store.Store) {
		withProgress := func(b store.Scorecard, status string, total, done int) store.Scorecard {
			b.Status = status
			b.Doc = []byte(fmt.Sprintf(`{"id": %q, "status": %q, "progress": {"total": %d, "done": %d}}`, b.ID, status, total, done))
			return b
		}
		createBatch(t, s, withProgress(batch("acme", "sc-1", t0), "running", 100, 40))
		createBatch(t, s, withProgress(batch("acme", "sc-2", t0), "queued", 7, 0))
		createBatch(t, s, withProgress(batch("acme", "sc-3", t0), "succeeded", 50, 50))
		createBatch(t, s, withProgress(batch("globex", "sc-9", t0), "running", 1000, 0))
		running := topRun("acme", "r2", t0)
		running.Status = "running"
		done := topRun("acme", "r3", t0)
		done.Status = "succeeded"
		for _, r := range []store.Run{topRun("acme", "r1", t0), running, done,
			childRun("acme", "c1", "sc-1", "case-1", 0, true, t0)} {
			createRun(t, s, r)
		}
		n, err := s.CountQueued(t.Context(), "acme")
		if err != nil {
			t.Fatal(err)
		}
		if n != 60+7+2 {
			t.Errorf("CountQueued(acme) = %d, want 69 (60 and 7 case-trials of unfinished batches, 2 unfinished runs)", n)
		}
	}},
	{"runs/one_canonical_run_per_scorecard_trial", func(t *testing.T, s store.Store) {
		ctx := t.Context()
		createRun(t, s, childRun("acme", "c1", "sc-1", "case-1", 0, true, t0))
		// Not canonical, another trial, another case, another scorecard,
		// another workspace, or a top-level run: all allowed.
		for _, r := range []store.Run{
			childRun("acme", "c1-retry", "sc-1", "case-1", 0, false, t0),
			childRun("acme", "c2", "sc-1", "case-1", 1, true, t0),
			childRun("acme", "c3", "sc-1", "case-2", 0, true, t0),
			childRun("acme", "d1", "sc-2", "case-1", 0, true, t0),
			childRun("globex", "c1", "sc-1", "case-1", 0, true, t0),
			childRun("acme", "top-1", "", "case-1", 0, true, t0),
			childRun("acme", "top-2", "", "case-1", 0, true, t0),
		} {
			createRun(t, s, r)
		}
		err := s.Transact(ctx, func(tx store.Tx) error {
			_, err := tx.CreateRun(ctx, childRun("acme", "c1-bis", "sc-1", "case-1", 0, true, t0))
			wantErr(t, "CreateRun of a second canonical run", err, derrors.ErrConflict)
			promoted := childRun("acme", "c1-retry", "sc-1", "case-1", 0, true, t0)
			_, err = tx.PutRun(ctx, promoted)
			wantErr(t, "PutRun making a second run canonical", err, derrors.ErrConflict)
			// Neither conflict aborted the transaction: hand the slot over.
			demoted := childRun("acme", "c1", "sc-1", "case-1", 0, false, t0)
			if _, err := tx.PutRun(ctx, demoted); err != nil {
				return err
			}
			_, err = tx.PutRun(ctx, promoted)
			return err
		})
		if err != nil {
			t.Fatalf("Transact: %v", err)
		}
		_, err = s.GetRun(ctx, "acme", "c1-bis")
		wantErr(t, "GetRun of the refused run", err, derrors.ErrNotFound)
		for id, want := range map[string]bool{"c1": false, "c1-retry": true} {
			r, err := s.GetRun(ctx, "acme", id)
			if err != nil {
				t.Fatal(err)
			}
			if r.Canonical != want {
				t.Errorf("%s: Canonical = %t, want %t", id, r.Canonical, want)
			}
		}
		// The canonical run may be put again as it is.
		if _, err := s.PutRun(ctx, childRun("acme", "c1-retry", "sc-1", "case-1", 0, true, t0)); err != nil {
			t.Errorf("PutRun of the canonical run itself: %v", err)
		}
	}},
	{"runs/concurrent_canonical_creates_one_wins", func(t *testing.T, s store.Store) {
		const n = 6
		errs := make([]error, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				_, errs[i] = s.CreateRun(t.Context(), childRun("acme", fmt.Sprintf("c%d", i), "sc-1", "case-1", 0, true, t0))
			})
		}
		wg.Wait()
		won := 0
		for i, err := range errs {
			switch {
			case err == nil:
				won++
			case !errors.Is(err, derrors.ErrConflict):
				t.Errorf("CreateRun #%d: %v, want success or ErrConflict", i, err)
			}
		}
		if won != 1 {
			t.Errorf("%d creates succeeded, want exactly 1", won)
		}
		got := listRuns(t, s, store.RunFilter{Workspace: "acme", Viewer: "user:alice", ScorecardID: "sc-1"})
		if len(got) != 1 {
			t.Errorf("scorecard children = %v, want one", runIDs(got))
		}
	}},
	{"runs/invalid_input", func(t *testing.T, s store.Store) {
		ctx := t.Context()
		bad := func(edit func(r *store.Run)) store.Run {
			r := topRun("acme", "run-1", t0)
			edit(&r)
			return r
		}
		for _, tc := range []struct {
			name string
			r    store.Run
		}{
			{"no workspace", bad(func(r *store.Run) { r.Workspace = "" })},
			{"no id", bad(func(r *store.Run) { r.ID = "" })},
			{"no kind", bad(func(r *store.Run) { r.Kind = "" })},
			{"no status", bad(func(r *store.Run) { r.Status = "" })},
			{"no doc", bad(func(r *store.Run) { r.Doc = nil })},
			{"doc not JSON", bad(func(r *store.Run) { r.Doc = []byte(`{"id":`) })},
			{"doc with a NUL escape", bad(func(r *store.Run) { r.Doc = []byte(`{"id":"a\u0000"}`) })},
			{"audience with NUL", bad(func(r *store.Run) { r.Audience = "user:\x00" })},
			{"case id not UTF-8", bad(func(r *store.Run) { r.CaseID = "\xff" })},
			{"outcome with NUL", bad(func(r *store.Run) { r.Outcome = "pass\x00" })},
			{"negative trial", bad(func(r *store.Run) { r.Trial = -1 })},
		} {
			_, err := s.CreateRun(ctx, tc.r)
			wantErr(t, "CreateRun: "+tc.name, err, derrors.ErrInvalid)
			_, err = s.PutRun(ctx, tc.r)
			wantErr(t, "PutRun: "+tc.name, err, derrors.ErrInvalid)
		}
		for _, tc := range []struct {
			name string
			f    store.RunFilter
		}{
			{"no workspace", store.RunFilter{Viewer: "user:alice"}},
			{"cursor id without a time", store.RunFilter{Workspace: "acme", Viewer: "user:alice", BeforeID: "run-1"}},
			{"negative limit", store.RunFilter{Workspace: "acme", Viewer: "user:alice", Limit: -1}},
		} {
			_, err := s.ListRuns(ctx, tc.f)
			wantErr(t, "ListRuns: "+tc.name, err, derrors.ErrInvalid)
		}
		_, err := s.CountRuns(ctx, "", t0)
		wantErr(t, "CountRuns without a workspace", err, derrors.ErrInvalid)
		if got := listRuns(t, s, store.RunFilter{Workspace: "acme", Viewer: "user:alice", IncludeChildren: true}); len(got) != 0 {
			t.Errorf("ListRuns = %v, want nothing stored", runIDs(got))
		}
	}},
	{"runs/child_run_keyset_pages", func(t *testing.T, s store.Store) {
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
		page := func(what string, p store.ChildRunPage) []store.Run {
			t.Helper()
			got, err := s.ListChildRunPage(ctx, "acme", "sc-1", p)
			if err != nil {
				t.Fatalf("%s: ListChildRunPage(%+v): %v", what, p, err)
			}
			return got
		}
		// Walking the batch two at a time visits every child once, in id
		// order: the superseded attempt c4 and bob's c5 too, never sc-2's
		// d1, globex's c9 or the top-level run.
		var walked [][]string
		for after := ""; ; {
			got := page("walk", store.ChildRunPage{After: after, Limit: 2})
			walked = append(walked, runIDs(got))
			if len(got) < 2 {
				break
			}
			after = got[len(got)-1].ID
		}
		if diff := cmp.Diff([][]string{{"c1", "c2"}, {"c3", "c4"}, {"c5"}}, walked); diff != "" {
			t.Errorf("pages of two (-want +got):\n%s", diff)
		}
		for _, tc := range []struct {
			what string
			p    store.ChildRunPage
			want []store.Run
		}{
			{"first page, documents and all", store.ChildRunPage{Limit: 3}, pick("c1", "c2", "c3")},
			{"no limit: the default page", store.ChildRunPage{After: "c2"}, pick("c3", "c4", "c5")},
			// The cursor need not be a child's id: the page starts past it.
			{"a cursor between ids", store.ChildRunPage{After: "c25", Limit: 10}, pick("c3", "c4", "c5")},
			{"past the last child", store.ChildRunPage{After: "c5", Limit: 10}, pick()},
		} {
			if diff := cmp.Diff(tc.want, page(tc.what, tc.p), runDocEqual); diff != "" {
				t.Errorf("%s: ListChildRunPage (-want +got):\n%s", tc.what, diff)
			}
		}
		if got, err := s.ListChildRunPage(ctx, "acme", "absent", store.ChildRunPage{}); err != nil || len(got) != 0 {
			t.Errorf("ListChildRunPage of an absent batch = %v, %v; want none", runIDs(got), err)
		}
		for _, tc := range []struct {
			what          string
			workspace, sc string
			p             store.ChildRunPage
		}{
			{"no workspace", "", "sc-1", store.ChildRunPage{}},
			{"no batch", "acme", "", store.ChildRunPage{}},
			{"negative limit", "acme", "sc-1", store.ChildRunPage{Limit: -1}},
			{"limit above the largest page", "acme", "sc-1", store.ChildRunPage{Limit: 5001}},
			{"cursor with NUL", "acme", "sc-1", store.ChildRunPage{After: "c\x00"}},
		} {
			_, err := s.ListChildRunPage(ctx, tc.workspace, tc.sc, tc.p)
			wantErr(t, "ListChildRunPage: "+tc.what, err, derrors.ErrInvalid)
		}
	}},
}

// logChunk is chunk seq of run in workspace, on stdout.
func logChunk(workspace, run string, seq int64, data string) store.RunLog {
	return store.RunLog{Workspace: workspace, RunID: run, Seq: seq, Stream: "stdout", Data: data, At: t0.Add(time.Duration(seq) * time.Second)}
}

// appendLogs appends chunks or fails t.
func appendLogs(t *testing.T, tx store.Tx, chunks ...store.RunLog) {
	t.Helper()
	if err := tx.AppendRunLogs(t.Context(), chunks); err != nil {
		t.Fatalf("AppendRunLogs(%d chunks): %v", len(chunks), err)
	}
}

// listLogs lists a run's chunks or fails t.
func listLogs(t *testing.T, tx store.Tx, workspace, run string, afterSeq int64, limit int) []store.RunLog {
	t.Helper()
	got, err := tx.ListRunLogs(t.Context(), workspace, run, afterSeq, limit)
	if err != nil {
		t.Fatalf("ListRunLogs(%q, %q, %d, %d): %v", workspace, run, afterSeq, limit, err)
	}
	return got
}

func logSeqs(ls []store.RunLog) []int64 {
	return pluck(ls, func(l store.RunLog) int64 { return l.Seq })
}

// wantLog is chunk c as ListRunLogs returns it.
func wantLog(c store.RunLog) store.RunLog {
	c.At = norm(c.At)
	return c
}

var runLogCases = []Case{
	{"runlogs/append_and_list_in_seq_order", func(t *testing.T, s store.Store) {
		sys := store.RunLog{Workspace: "acme", RunID: "run-1", Seq: 2, Stream: "system", Data: "pulling image\n", At: t0}
		appendLogs(t, s, logChunk("acme", "run-1", 3, "ok\n"), logChunk("acme", "run-1", 1, "go test ./...\n"), sys)
		want := []store.RunLog{wantLog(logChunk("acme", "run-1", 1, "go test ./...\n")), wantLog(sys), wantLog(logChunk("acme", "run-1", 3, "ok\n"))}
		if diff := cmp.Diff(want, listLogs(t, s, "acme", "run-1", 0, 0)); diff != "" {
			t.Errorf("ListRunLogs (-want +got):\n%s", diff)
		}
		for _, tc := range []struct {
			after int64
			limit int
			want  []int64
		}{
			{1, 0, []int64{2, 3}},
			{3, 0, []int64{}},
			{0, 2, []int64{1, 2}},
			{1, 1, []int64{2}},
		} {
			if diff := cmp.Diff(tc.want, logSeqs(listLogs(t, s, "acme", "run-1", tc.after, tc.limit))); diff != "" {
				t.Errorf("ListRunLogs(after %d, limit %d) (-want +got):\n%s", tc.after, tc.limit, diff)
			}
		}
	}},
	{"runlogs/a_stored_seq_is_skipped", func(t *testing.T, s store.Store) {
		appendLogs(t, s, logChunk("acme", "run-1", 1, "first\n"), logChunk("acme", "run-1", 2, "second\n"))
		// A retried flush, overlapping the stored chunks and repeating one
		// in the same call.
		appendLogs(t, s, logChunk("acme", "run-1", 2, "retried\n"), logChunk("acme", "run-1", 3, "third\n"), logChunk("acme", "run-1", 3, "again\n"))
		got := pluck(listLogs(t, s, "acme", "run-1", 0, 0), func(l store.RunLog) string { return l.Data })
		if diff := cmp.Diff([]string{"first\n", "second\n", "third\n"}, got); diff != "" {
			t.Errorf("log data (-want +got):\n%s", diff)
		}
	}},
	{"runlogs/delete_starts_afresh", func(t *testing.T, s store.Store) {
		ctx := t.Context()
		appendLogs(t, s, logChunk("acme", "run-1", 1, "a"), logChunk("acme", "run-1", 2, "b"), logChunk("acme", "run-2", 1, "other run"))
		for range 2 { // absent is a no-op
			if err := s.DeleteRunLogs(ctx, "acme", "run-1"); err != nil {
				t.Fatal(err)
			}
		}
		if got := listLogs(t, s, "acme", "run-1", 0, 0); len(got) != 0 {
			t.Errorf("ListRunLogs after delete = %v, want none", logSeqs(got))
		}
		if got := listLogs(t, s, "acme", "run-2", 0, 0); len(got) != 1 {
			t.Errorf("run-2's logs = %v, want its one chunk untouched", logSeqs(got))
		}
		appendLogs(t, s, logChunk("acme", "run-1", 1, "redispatched"))
		if got := listLogs(t, s, "acme", "run-1", 0, 0); len(got) != 1 || got[0].Data != "redispatched" {
			t.Errorf("ListRunLogs after a new append = %+v, want the new chunk", got)
		}
	}},
	{"runlogs/workspace_scoping", func(t *testing.T, s store.Store) {
		ctx := t.Context()
		appendLogs(t, s, logChunk("acme", "run-1", 1, "acme's"))
		if got := listLogs(t, s, "globex", "run-1", 0, 0); len(got) != 0 {
			t.Errorf("ListRunLogs(globex, run-1) = %v, want none", logSeqs(got))
		}
		if err := s.DeleteRunLogs(ctx, "globex", "run-1"); err != nil {
			t.Fatal(err)
		}
		appendLogs(t, s, logChunk("globex", "run-1", 1, "globex's"))
		if got := listLogs(t, s, "acme", "run-1", 0, 0); len(got) != 1 || got[0].Data != "acme's" {
			t.Errorf("acme's logs = %+v, want its chunk untouched", got)
		}
	}},
	{"runlogs/large_flush_and_default_limit", func(t *testing.T, s store.Store) {
		chunks := make([]store.RunLog, 1201)
		for i := range chunks {
			chunks[i] = logChunk("acme", "run-1", int64(i+1), fmt.Sprintf("line %d\n", i+1))
		}
		appendLogs(t, s, chunks...)
		first := listLogs(t, s, "acme", "run-1", 0, 0)
		if len(first) != 1000 || first[999].Seq != 1000 {
			t.Fatalf("ListRunLogs without a limit = %d chunks, want the first 1000", len(first))
		}
		if rest := listLogs(t, s, "acme", "run-1", 1000, 0); len(rest) != 201 || rest[200].Seq != 1201 {
			t.Errorf("ListRunLogs after 1000 = %d chunks, want 201", len(rest))
		}
	}},
	{"runlogs/invalid_input_stores_nothing", func(t *testing.T, s store.Store) {
		ctx := t.Context()
		good := logChunk("acme", "run-1", 1, "ok")
		for _, tc := range []struct {
			name string
			c    store.RunLog
		}{
			{"no workspace", store.RunLog{RunID: "run-1", Seq: 2, Stream: "stdout"}},
			{"no run", store.RunLog{Workspace: "acme", Seq: 2, Stream: "stdout"}},
			{"no stream", store.RunLog{Workspace: "acme", RunID: "run-1", Seq: 2}},
			{"seq 0", store.RunLog{Workspace: "acme", RunID: "run-1", Seq: 0, Stream: "stdout"}},
			{"data with NUL", logChunk("acme", "run-1", 2, "a\x00b")},
			{"data not UTF-8", logChunk("acme", "run-1", 2, "a\xffb")},
		} {
			// The good chunk first: the whole call is refused.
			err := s.AppendRunLogs(ctx, []store.RunLog{good, tc.c})
			wantErr(t, "AppendRunLogs: "+tc.name, err, derrors.ErrInvalid)
		}
		if got := listLogs(t, s, "acme", "run-1", 0, 0); len(got) != 0 {
			t.Errorf("ListRunLogs = %v, want nothing stored", logSeqs(got))
		}
		_, err := s.ListRunLogs(ctx, "acme", "run-1", 0, -1)
		wantErr(t, "ListRunLogs with a negative limit", err, derrors.ErrInvalid)
		if err := s.AppendRunLogs(ctx, nil); err != nil {
			t.Errorf("AppendRunLogs(nil): %v", err)
		}
	}},
}
