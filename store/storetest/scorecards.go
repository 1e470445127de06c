package storetest

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"svc/internal/platform/derrors"
	"svc/store"
)

// batch returns a valid queued scorecard of workspace created at at.
func batch(workspace, id string, at time.Time) store.Scorecard {
	return store.Scorecard{
		ID: id, Workspace: workspace, Kind: "scorecard", Status: "queued",
		DatasetID: "ds-1", HarnessID: "h-1", CreatedBy: "user:alice",
		Doc:       []byte(fmt.Sprintf(`{"id": %q, "status": "queued"}`, id)),
		CreatedAt: at,
	}
}

// createBatch creates s or fails t.
func createBatch(t *testing.T, tx store.Tx, s store.Scorecard) store.Scorecard {
	t.Helper()
	got, err := tx.CreateScorecard(t.Context(), s)
	if err != nil {
		t.Fatalf("CreateScorecard(%q, %q): %v", s.Workspace, s.ID, err)
	}
	return got
}

// getBatch reads a batch or fails t.
func getBatch(t *testing.T, tx store.Tx, workspace, id string) store.Scorecard {
	t.Helper()
	got, err := tx.GetScorecard(t.Context(), workspace, id)
	if err != nil {
		t.Fatalf("GetScorecard(%q, %q): %v", workspace, id, err)
	}
	return got
}

// listBatches lists batches or fails t.
func listBatches(t *testing.T, tx store.Tx, f store.ScorecardFilter) []store.Scorecard {
	t.Helper()
	got, err := tx.ListScorecards(t.Context(), f)
	if err != nil {
		t.Fatalf("ListScorecards(%+v): %v", f, err)
	}
	return got
}

func batchIDs(ss []store.Scorecard) []string {
	return pluck(ss, func(s store.Scorecard) string { return s.ID })
}

var scorecardCases = []Case{
	{"scorecards/create_then_get", func(t *testing.T, s store.Store) {
		ctx := t.Context()
		in := store.Scorecard{
			ID: "sc-1", Workspace: "acme", Kind: "experiment", Status: "running",
			DatasetID: "ds-7", HarnessID: "h-3", CreatedBy: "user:alice",
			Doc:       []byte(`{"id":"sc-1","dataset":{"id":"ds-7","version":"1.0.0"},"nested":[1,{"a":null}]}`),
			Version:   7, // the store starts every batch at 1
			CreatedAt: t0,
		}
		got := createBatch(t, s, in)
		want := in
		want.Version = 1
		want.CreatedAt, want.UpdatedAt = norm(t0), norm(t0) // UpdatedAt defaults to CreatedAt
		if diff := cmp.Diff(want, got, runDocEqual); diff != "" {
			t.Errorf("CreateScorecard (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff(want, getBatch(t, s, "acme", "sc-1"), runDocEqual); diff != "" {
			t.Errorf("GetScorecard (-want +got):\n%s", diff)
		}
		if v, err := s.ScorecardVersion(ctx, "acme", "sc-1"); err != nil || v != 1 {
			t.Errorf("ScorecardVersion = %d, %v; want 1", v, err)
		}
		if _, err := s.ScorecardVersion(ctx, "acme", "absent"); !errors.Is(err, derrors.ErrNotFound) {
			t.Errorf("ScorecardVersion of an absent batch: %v, want ErrNotFound", err)
		}
		stamped := createBatch(t, s, store.Scorecard{ID: "sc-2", Workspace: "acme", Kind: "scorecard", Status: "queued", Doc: []byte(`{}`)})
		wantStamped(t, "CreatedAt", stamped.CreatedAt)
		if !stamped.UpdatedAt.Equal(stamped.CreatedAt) {
			t.Errorf("UpdatedAt = %v, want CreatedAt %v", stamped.UpdatedAt, stamped.CreatedAt)
		}
		_, err := s.GetScorecard(ctx, "acme", "absent")
		wantErr(t, "GetScorecard(absent)", err, derrors.ErrNotFound)
	}},
	{"scorecards/selection_is_kept_apart", func(t *testing.T, s store.Store) {
		ctx := t.Context()
		sel := []byte(`{"caseIds":["a","b"],"cases":{"a":"sha256:1","b":"sha256:2"}}`)
		in := batch("acme", "sc-1", t0)
		in.Selection = sel
		created := createBatch(t, s, in)
		if created.Selection != nil || !created.HasSelection {
			t.Errorf("CreateScorecard returned Selection %q, HasSelection %v; want none returned, and true", created.Selection, created.HasSelection)
		}
		got := getBatch(t, s, "acme", "sc-1")
		if got.Selection != nil || !got.HasSelection {
			t.Errorf("GetScorecard: Selection %q, HasSelection %v; want none returned, and true", got.Selection, got.HasSelection)
		}
		if ls := listBatches(t, s, store.ScorecardFilter{Workspace: "acme"}); len(ls) != 1 || ls[0].Selection != nil || !ls[0].HasSelection {
			t.Errorf("ListScorecards = %+v; want sc-1 with HasSelection and no Selection", ls)
		}
		wantSel := func(what string, want []byte) {
			t.Helper()
			b, err := s.GetScorecardSelection(ctx, "acme", "sc-1")
			if err != nil {
				t.Fatalf("%s: GetScorecardSelection: %v", what, err)
			}
			if want == nil && b != nil || want != nil && !sameJSON(b, want) {
				t.Errorf("%s: GetScorecardSelection = %s, want %s", what, b, want)
			}
		}
		wantSel("after create", sel)
		// A write without a selection leaves the stored one.
		got.Doc = []byte(`{"status":"running"}`)
		put, err := s.PutScorecard(ctx, got)
		if err != nil {
			t.Fatalf("PutScorecard: %v", err)
		}
		if !put.HasSelection {
			t.Errorf("PutScorecard without a selection: HasSelection false, want the stored one kept")
		}
		wantSel("after a write without one", sel)
		// A batch written without one (an older record) gets one on a
		// write that carries it.
		old := createBatch(t, s, batch("acme", "sc-2", t0))
		if old.HasSelection {
			t.Errorf("a batch created without a selection has HasSelection")
		}
		if b, err := s.GetScorecardSelection(ctx, "acme", "sc-2"); err != nil || b != nil {
			t.Errorf("GetScorecardSelection of a batch without one = %q, %v; want nil, nil", b, err)
		}
		old.Selection = sel
		if put, err := s.PutScorecard(ctx, old); err != nil || !put.HasSelection {
			t.Fatalf("PutScorecard with a selection = %+v, %v", put, err)
		}
		if b, err := s.GetScorecardSelection(ctx, "acme", "sc-2"); err != nil || !sameJSON(b, sel) {
			t.Errorf("GetScorecardSelection after the write = %s, %v; want %s", b, err, sel)
		}
		_, err = s.GetScorecardSelection(ctx, "acme", "absent")
		wantErr(t, "GetScorecardSelection(absent)", err, derrors.ErrNotFound)
		_, err = s.GetScorecardSelection(ctx, "other", "sc-1")
		wantErr(t, "GetScorecardSelection of another workspace's batch", err, derrors.ErrNotFound)
		bad := batch("acme", "sc-3", t0)
		bad.Selection = []byte(`{"caseIds":`)
		_, err = s.CreateScorecard(ctx, bad)
		wantErr(t, "CreateScorecard with a selection that is not JSON", err, derrors.ErrInvalid)
	}},
	{"scorecards/canonical_child_page_by_case_and_trial", func(t *testing.T, s store.Store) {
		ctx := t.Context()
		createBatch(t, s, batch("acme", "sc-1", t0))
		createBatch(t, s, batch("acme", "sc-2", t0))
		// Created out of order; "b" sorts after "a-long" in byte order
		// only if compared bytewise ('-' < 'b').
		for i, c := range []struct {
			id, caseID string
			trial      int
			canonical  bool
		}{
			{"r6", "b", 0, true}, {"r1", "a", 1, true}, {"r2", "a", 0, true}, {"r3", "a", 0, false},
			{"r4", "a-long", 0, true}, {"r5", "a", 10, true}, {"r7", "b", 2, true},
		} {
			createRun(t, s, childRun("acme", c.id, "sc-1", c.caseID, c.trial, c.canonical, t0.Add(time.Duration(i)*time.Second)))
		}
		createRun(t, s, childRun("acme", "other", "sc-2", "a", 0, true, t0))
		page := func(afterCase string, afterTrial, limit int) []string {
			t.Helper()
			rs, err := s.ListCanonicalChildPage(ctx, "acme", "sc-1", store.CaseTrialPage{AfterCase: afterCase, AfterTrial: afterTrial, Limit: limit})
			if err != nil {
				t.Fatalf("ListCanonicalChildPage(after %q#%d, limit %d): %v", afterCase, afterTrial, limit, err)
			}
			var ids []string
			for _, r := range rs {
				ids = append(ids, r.ID)
			}
			return ids
		}
		if diff := cmp.Diff([]string{"r2", "r1", "r5", "r4", "r6", "r7"}, page("", -1, 100)); diff != "" {
			t.Errorf("the whole batch (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff([]string{"r2", "r1"}, page("", -1, 2)); diff != "" {
			t.Errorf("the first page of 2 (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff([]string{"r5", "r4"}, page("a", 1, 2)); diff != "" {
			t.Errorf("after a#1 (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff([]string{"r7"}, page("b", 0, 2)); diff != "" {
			t.Errorf("after b#0 (-want +got):\n%s", diff)
		}
		if got := page("b", 2, 2); len(got) != 0 {
			t.Errorf("after the last: %q, want none", got)
		}
		for _, limit := range []int{0, -1, 10_001} {
			_, err := s.ListCanonicalChildPage(ctx, "acme", "sc-1", store.CaseTrialPage{Limit: limit})
			wantErr(t, fmt.Sprintf("limit %d", limit), err, derrors.ErrInvalid)
		}
		if rs, err := s.ListCanonicalChildPage(ctx, "other", "sc-1", store.CaseTrialPage{AfterTrial: -1, Limit: 10}); err != nil || len(rs) != 0 {
			t.Errorf("another workspace's batch: %d runs, %v; want none", len(rs), err)
		}
	}},
	{"scorecards/existing_id_is_conflict_and_the_transaction_goes_on", func(t *testing.T, s store.Store) {
		ctx := t.Context()
		createBatch(t, s, batch("acme", "sc-1", t0))
		err := s.Transact(ctx, func(tx store.Tx) error {
			_, err := tx.CreateScorecard(ctx, batch("acme", "sc-1", t0.Add(time.Hour)))
			wantErr(t, "CreateScorecard of an existing id", err, derrors.ErrConflict)
			// The conflict must not have aborted the transaction.
			createBatch(t, tx, batch("acme", "sc-2", t0))
			return nil
		})
		if err != nil {
			t.Fatalf("Transact: %v", err)
		}
		if got := getBatch(t, s, "acme", "sc-1"); !got.CreatedAt.Equal(norm(t0)) {
			t.Errorf("sc-1 CreatedAt = %v, want the first create's %v", got.CreatedAt, norm(t0))
		}
		getBatch(t, s, "acme", "sc-2")
		// Ids are per workspace.
		createBatch(t, s, batch("globex", "sc-1", t0))
	}},
	{"scorecards/put_needs_the_stored_version", func(t *testing.T, s store.Store) {
		ctx := t.Context()
		v1 := createBatch(t, s, batch("acme", "sc-1", t0))
		later := t0.Add(time.Hour)
		upd := v1
		upd.Status, upd.DatasetID, upd.HarnessID, upd.UpdatedAt = "running", "ds-2", "h-2", later
		upd.CreatedAt = t0.Add(48 * time.Hour) // must be ignored
		upd.Doc = []byte(`{"id":"sc-1","status":"running","progress":{"total":3}}`)
		got, err := s.PutScorecard(ctx, upd)
		if err != nil {
			t.Fatal(err)
		}
		want := upd
		want.Version, want.CreatedAt, want.UpdatedAt = 2, norm(t0), norm(later)
		if diff := cmp.Diff(want, got, runDocEqual); diff != "" {
			t.Errorf("PutScorecard (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff(want, getBatch(t, s, "acme", "sc-1"), runDocEqual); diff != "" {
			t.Errorf("GetScorecard after PutScorecard (-want +got):\n%s", diff)
		}
		// A writer still holding version 1 lost the race: refused, and
		// the stored batch is the winner's, inside a transaction that goes on.
		stale := v1
		stale.Status = "cancelled"
		err = s.Transact(ctx, func(tx store.Tx) error {
			_, err := tx.PutScorecard(ctx, stale)
			wantErr(t, "PutScorecard of version 1 after version 2", err, derrors.ErrConflict)
			createBatch(t, tx, batch("acme", "sc-2", t0))
			return nil
		})
		if err != nil {
			t.Fatalf("Transact: %v", err)
		}
		if diff := cmp.Diff(want, getBatch(t, s, "acme", "sc-1"), runDocEqual); diff != "" {
			t.Errorf("GetScorecard after a stale put (-want +got):\n%s", diff)
		}
		ahead := got
		ahead.Version = 3
		_, err = s.PutScorecard(ctx, ahead)
		wantErr(t, "PutScorecard of a version not yet written", err, derrors.ErrConflict)
		got.UpdatedAt = time.Time{}
		v3, err := s.PutScorecard(ctx, got)
		if err != nil {
			t.Fatal(err)
		}
		if v3.Version != 3 {
			t.Errorf("Version after two puts = %d, want 3", v3.Version)
		}
		wantStamped(t, "UpdatedAt of a put without one", v3.UpdatedAt)
		for _, b := range []store.Scorecard{batch("acme", "absent", t0), batch("globex", "sc-1", t0)} {
			b.Version = 1
			_, err := s.PutScorecard(ctx, b)
			wantErr(t, fmt.Sprintf("PutScorecard(%q, %q)", b.Workspace, b.ID), err, derrors.ErrNotFound)
		}
	}},
	{"scorecards/concurrent_puts_of_one_version_one_wins", func(t *testing.T, s store.Store) {
		v1 := createBatch(t, s, batch("acme", "sc-1", t0))
		const n = 6
		errs := make([]error, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				b := v1
				b.Status = fmt.Sprintf("writer-%d", i)
				_, errs[i] = s.PutScorecard(t.Context(), b)
			})
		}
		wg.Wait()
		won := -1
		for i, err := range errs {
			switch {
			case err == nil && won >= 0:
				t.Errorf("PutScorecard #%d and #%d both succeeded on version 1", won, i)
			case err == nil:
				won = i
			case !errors.Is(err, derrors.ErrConflict):
				t.Errorf("PutScorecard #%d: %v, want success or ErrConflict", i, err)
			}
		}
		if won < 0 {
			t.Fatal("no put succeeded")
		}
		got := getBatch(t, s, "acme", "sc-1")
		if want := fmt.Sprintf("writer-%d", won); got.Version != 2 || got.Status != want {
			t.Errorf("stored version %d status %q, want version 2 status %q (the winner's)", got.Version, got.Status, want)
		}
	}},
	{"scorecards/workspace_scoping", func(t *testing.T, s store.Store) {
		ctx := t.Context()
		createBatch(t, s, batch("acme", "sc-1", t0))
		appendSteps(t, s, step("acme", "sc-1", "", "submit", "acme's"))
		createRun(t, s, childRun("acme", "c1", "sc-1", "case-1", 0, true, t0))
		_, err := s.GetScorecard(ctx, "globex", "sc-1")
		wantErr(t, "GetScorecard(globex, sc-1)", err, derrors.ErrNotFound)
		if got := listBatches(t, s, store.ScorecardFilter{Workspace: "globex"}); len(got) != 0 {
			t.Errorf("ListScorecards(globex) = %v, want none", batchIDs(got))
		}
		_, err = s.ListScorecardSteps(ctx, "globex", "sc-1", 0, 0)
		wantErr(t, "ListScorecardSteps(globex, sc-1)", err, derrors.ErrNotFound)
		err = s.AppendScorecardSteps(ctx, []store.ScorecardStep{step("globex", "sc-1", "", "submit", "globex's")})
		wantErr(t, "AppendScorecardSteps(globex, sc-1)", err, derrors.ErrNotFound)
		_, err = s.ChildRunCounts(ctx, "globex", "sc-1")
		wantErr(t, "ChildRunCounts(globex, sc-1)", err, derrors.ErrNotFound)
		// globex's own batch of the same id sees only its own.
		createBatch(t, s, batch("globex", "sc-1", t0))
		if got := listSteps(t, s, "globex", "sc-1", 0, 0); len(got) != 0 {
			t.Errorf("globex's steps = %v, want none", stepMessages(got))
		}
		if c := childCounts(t, s, "globex", "sc-1"); c.Total != 0 {
			t.Errorf("globex's ChildRunCounts = %+v, want none", c)
		}
		if got := stepMessages(listSteps(t, s, "acme", "sc-1", 0, 0)); !cmp.Equal(got, []string{"acme's"}) {
			t.Errorf("acme's steps = %v, want its one step", got)
		}
	}},
	{"scorecards/list_newest_first_with_a_cursor", func(t *testing.T, s store.Store) {
		// b and c share a CreatedAt: the id breaks the tie, descending.
		for _, b := range []store.Scorecard{
			batch("acme", "a", t0),
			batch("acme", "b", t0.Add(time.Minute)),
			batch("acme", "c", t0.Add(time.Minute)),
			batch("acme", "d", t0.Add(2*time.Minute)),
			batch("acme", "e", t0.Add(3*time.Minute)),
			batch("globex", "z", t0.Add(time.Minute)),
		} {
			createBatch(t, s, b)
		}
		all := listBatches(t, s, store.ScorecardFilter{Workspace: "acme"})
		if diff := cmp.Diff([]string{"e", "d", "c", "b", "a"}, batchIDs(all)); diff != "" {
			t.Errorf("ListScorecards (-want +got):\n%s", diff)
		}
		if len(all) > 0 && (!sameJSON(all[0].Doc, []byte(`{"id":"e","status":"queued"}`)) || all[0].Version != 1) {
			t.Errorf("listed batch = version %d doc %s, want version 1 and the batch's document", all[0].Version, all[0].Doc)
		}
		var paged []string
		f := store.ScorecardFilter{Workspace: "acme", Limit: 2}
		for range 10 {
			page := listBatches(t, s, f)
			if len(page) == 0 {
				break
			}
			if len(page) > 2 {
				t.Fatalf("page of %d batches, want at most 2", len(page))
			}
			paged = append(paged, batchIDs(page)...)
			last := page[len(page)-1]
			f.BeforeTime, f.BeforeID = last.CreatedAt, last.ID
		}
		if diff := cmp.Diff([]string{"e", "d", "c", "b", "a"}, paged); diff != "" {
			t.Errorf("pages (-want +got):\n%s", diff)
		}
	}},
	{"scorecards/list_filters", func(t *testing.T, s store.Store) {
		mk := func(id, kind, status, dataset, harness string, minute int) store.Scorecard {
			b := batch("acme", id, t0.Add(time.Duration(minute)*time.Minute))
			b.Kind, b.Status, b.DatasetID, b.HarnessID = kind, status, dataset, harness
			return b
		}
		for _, b := range []store.Scorecard{
			mk("s1", "scorecard", "succeeded", "ds-1", "h-1", 1),
			mk("s2", "scorecard", "running", "ds-1", "h-2", 2),
			mk("s3", "scorecard", "failed", "ds-2", "h-1", 3),
			mk("x1", "experiment", "queued", "ds-1", "h-1", 4),
			mk("x2", "experiment", "running", "_adhoc", "h-2", 5),
		} {
			createBatch(t, s, b)
		}
		other := batch("globex", "g1", t0.Add(6*time.Minute))
		other.Status = "running"
		createBatch(t, s, other)
		for _, tc := range []struct {
			name string
			f    store.ScorecardFilter
			want []string
		}{
			{"none", store.ScorecardFilter{}, []string{"x2", "x1", "s3", "s2", "s1"}},
			{"kind", store.ScorecardFilter{Kind: "scorecard"}, []string{"s3", "s2", "s1"}},
			{"one status", store.ScorecardFilter{Statuses: []string{"running"}}, []string{"x2", "s2"}},
			{"statuses", store.ScorecardFilter{Statuses: []string{"queued", "running"}}, []string{"x2", "x1", "s2"}},
			{"dataset", store.ScorecardFilter{DatasetID: "ds-1"}, []string{"x1", "s2", "s1"}},
			{"harness", store.ScorecardFilter{HarnessID: "h-2"}, []string{"x2", "s2"}},
			{"all at once", store.ScorecardFilter{Kind: "scorecard", Statuses: []string{"running", "succeeded"}, DatasetID: "ds-1", HarnessID: "h-1"}, []string{"s1"}},
			{"no match", store.ScorecardFilter{Kind: "experiment", DatasetID: "ds-2"}, []string{}},
			{"filter with a cursor", store.ScorecardFilter{DatasetID: "ds-1", BeforeTime: t0.Add(4 * time.Minute), BeforeID: "x1"}, []string{"s2", "s1"}},
			{"filter with a limit", store.ScorecardFilter{HarnessID: "h-1", Limit: 2}, []string{"x1", "s3"}},
		} {
			f := tc.f
			f.Workspace = "acme"
			if diff := cmp.Diff(tc.want, batchIDs(listBatches(t, s, f))); diff != "" {
				t.Errorf("%s: ListScorecards (-want +got):\n%s", tc.name, diff)
			}
		}
	}},
	{"scorecards/list_default_limit_is_50", func(t *testing.T, s store.Store) {
		err := s.Transact(t.Context(), func(tx store.Tx) error {
			for i := range 51 {
				createBatch(t, tx, batch("acme", fmt.Sprintf("sc-%02d", i), t0.Add(time.Duration(i)*time.Second)))
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		got := listBatches(t, s, store.ScorecardFilter{Workspace: "acme"})
		if len(got) != 50 || got[0].ID != "sc-50" || got[49].ID != "sc-01" {
			t.Errorf("ListScorecards without a limit = %d batches %v, want the newest 50", len(got), batchIDs(got))
		}
	}},
	{"scorecards/invalid_input", func(t *testing.T, s store.Store) {
		ctx := t.Context()
		bad := func(edit func(b *store.Scorecard)) store.Scorecard {
			b := batch("acme", "sc-1", t0)
			b.Version = 1
			edit(&b)
			return b
		}
		for _, tc := range []struct {
			name string
			b    store.Scorecard
		}{
			{"no workspace", bad(func(b *store.Scorecard) { b.Workspace = "" })},
			{"no id", bad(func(b *store.Scorecard) { b.ID = "" })},
			{"no kind", bad(func(b *store.Scorecard) { b.Kind = "" })},
			{"no status", bad(func(b *store.Scorecard) { b.Status = "" })},
			{"no doc", bad(func(b *store.Scorecard) { b.Doc = nil })},
			{"doc not JSON", bad(func(b *store.Scorecard) { b.Doc = []byte(`{"id":`) })},
			{"doc with a NUL escape", bad(func(b *store.Scorecard) { b.Doc = []byte(`{"id":"a\u0000"}`) })},
			{"dataset with NUL", bad(func(b *store.Scorecard) { b.DatasetID = "ds\x00" })},
			{"harness not UTF-8", bad(func(b *store.Scorecard) { b.HarnessID = "\xff" })},
		} {
			_, err := s.CreateScorecard(ctx, tc.b)
			wantErr(t, "CreateScorecard: "+tc.name, err, derrors.ErrInvalid)
			_, err = s.PutScorecard(ctx, tc.b)
			wantErr(t, "PutScorecard: "+tc.name, err, derrors.ErrInvalid)
		}
		createBatch(t, s, batch("acme", "sc-1", t0))
		_, err := s.PutScorecard(ctx, batch("acme", "sc-1", t0)) // Version 0: never read
		wantErr(t, "PutScorecard of version 0", err, derrors.ErrInvalid)
		for _, tc := range []struct {
			name string
			f    store.ScorecardFilter
		}{
			{"no workspace", store.ScorecardFilter{}},
			{"cursor id without a time", store.ScorecardFilter{Workspace: "acme", BeforeID: "sc-1"}},
			{"negative limit", store.ScorecardFilter{Workspace: "acme", Limit: -1}},
			{"status with NUL", store.ScorecardFilter{Workspace: "acme", Statuses: []string{"running", "a\x00"}}},
		} {
			_, err := s.ListScorecards(ctx, tc.f)
			wantErr(t, "ListScorecards: "+tc.name, err, derrors.ErrInvalid)
		}
		if got := listBatches(t, s, store.ScorecardFilter{Workspace: "acme"}); !cmp.Equal(batchIDs(got), []string{"sc-1"}) {
			t.Errorf("ListScorecards = %v, want only the valid sc-1", batchIDs(got))
		}
		if got := getBatch(t, s, "acme", "sc-1"); got.Version != 1 {
			t.Errorf("sc-1 version = %d, want 1: no invalid put may have been stored", got.Version)
		}
	}},
}

// step returns a valid step of batch sc with the given key and message.
func step(workspace, sc, key, phase, message string) store.ScorecardStep {
	return store.ScorecardStep{
		Workspace: workspace, ScorecardID: sc, Key: key,
		TS: t0, Phase: phase, Status: "info", Message: message,
	}
}

// appendSteps appends steps or fails t.
func appendSteps(t *testing.T, tx store.Tx, steps ...store.ScorecardStep) {
	t.Helper()
	if err := tx.AppendScorecardSteps(t.Context(), steps); err != nil {
		t.Fatalf("AppendScorecardSteps(%d steps): %v", len(steps), err)
	}
}

// listSteps lists a batch's steps or fails t.
func listSteps(t *testing.T, tx store.Tx, workspace, sc string, afterSeq int64, limit int) []store.ScorecardStep {
	t.Helper()
	got, err := tx.ListScorecardSteps(t.Context(), workspace, sc, afterSeq, limit)
	if err != nil {
		t.Fatalf("ListScorecardSteps(%q, %q, %d, %d): %v", workspace, sc, afterSeq, limit, err)
	}
	return got
}

func stepMessages(ss []store.ScorecardStep) []string {
	return pluck(ss, func(s store.ScorecardStep) string { return s.Message })
}

func stepSeqs(ss []store.ScorecardStep) []int64 {
	return pluck(ss, func(s store.ScorecardStep) int64 { return s.Seq })
}

var scorecardStepCases = []Case{
	{"scorecardsteps/append_and_list_in_order", func(t *testing.T, s store.Store) {
		createBatch(t, s, batch("acme", "sc-1", t0))
		first := store.ScorecardStep{
			Workspace: "acme", ScorecardID: "sc-1", Key: "submit",
			TS: t0, Phase: "submit", Status: "succeeded", Message: "3 cases",
		}
		caseStep := store.ScorecardStep{
			Workspace: "acme", ScorecardID: "sc-1",
			TS: t0.Add(-time.Hour), Phase: "case", Status: "failed", Message: "exit 1", CaseID: "case-2",
		}
		appendSteps(t, s, first, caseStep)
		appendSteps(t, s, step("acme", "sc-1", "", "aggregate", "third"))
		got := listSteps(t, s, "acme", "sc-1", 0, 0)
		// Appended order, not TS order: the timeline is as recorded.
		want := []store.ScorecardStep{first, caseStep, step("acme", "sc-1", "", "aggregate", "third")}
		for i := range want {
			want[i].Seq, want[i].TS = int64(i+1), norm(want[i].TS)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("ListScorecardSteps (-want +got):\n%s", diff)
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
			if diff := cmp.Diff(tc.want, stepSeqs(listSteps(t, s, "acme", "sc-1", tc.after, tc.limit))); diff != "" {
				t.Errorf("ListScorecardSteps(after %d, limit %d) (-want +got):\n%s", tc.after, tc.limit, diff)
			}
		}
		stamped := step("acme", "sc-1", "", "finalize", "no time")
		stamped.TS = time.Time{}
		appendSteps(t, s, stamped)
		if got := listSteps(t, s, "acme", "sc-1", 3, 0); len(got) != 1 {
			t.Fatalf("steps after 3 = %v, want the stamped one", stepMessages(got))
		} else {
			wantStamped(t, "TS of a step without one", got[0].TS)
		}
	}},
	{"scorecardsteps/a_recorded_key_is_skipped", func(t *testing.T, s store.Store) {
		createBatch(t, s, batch("acme", "sc-1", t0))
		appendSteps(t, s, step("acme", "sc-1", "dispatch", "dispatch", "dispatched"), step("acme", "sc-1", "", "case", "unkeyed"))
		// A retried activity: the same keyed step again, repeated within
		// the call too; unkeyed steps are always appended.
		appendSteps(t, s,
			step("acme", "sc-1", "dispatch", "dispatch", "dispatched again"),
			step("acme", "sc-1", "", "case", "unkeyed"),
			step("acme", "sc-1", "judges", "judges", "judged"),
			step("acme", "sc-1", "judges", "judges", "judged twice"))
		got := listSteps(t, s, "acme", "sc-1", 0, 0)
		if diff := cmp.Diff([]string{"dispatched", "unkeyed", "unkeyed", "judged"}, stepMessages(got)); diff != "" {
			t.Errorf("step messages (-want +got):\n%s", diff)
		}
		// Skipped steps take no seq: the timeline has no holes.
		if diff := cmp.Diff([]int64{1, 2, 3, 4}, stepSeqs(got)); diff != "" {
			t.Errorf("seqs (-want +got):\n%s", diff)
		}
		// Keys are per batch.
		createBatch(t, s, batch("acme", "sc-2", t0))
		appendSteps(t, s, step("acme", "sc-2", "dispatch", "dispatch", "sc-2 dispatched"))
		if got := stepMessages(listSteps(t, s, "acme", "sc-2", 0, 0)); !cmp.Equal(got, []string{"sc-2 dispatched"}) {
			t.Errorf("sc-2 steps = %v, want its own keyed step", got)
		}
	}},
	{"scorecardsteps/each_batch_has_its_own_timeline", func(t *testing.T, s store.Store) {
		createBatch(t, s, batch("acme", "sc-1", t0))
		createBatch(t, s, batch("acme", "sc-2", t0))
		// One call may carry steps of several batches.
		appendSteps(t, s,
			step("acme", "sc-1", "", "submit", "one"),
			step("acme", "sc-2", "", "submit", "two"),
			step("acme", "sc-1", "", "dispatch", "one again"))
		for _, tc := range []struct {
			sc   string
			want []string
		}{
			{"sc-1", []string{"one", "one again"}},
			{"sc-2", []string{"two"}},
		} {
			got := listSteps(t, s, "acme", tc.sc, 0, 0)
			if diff := cmp.Diff(tc.want, stepMessages(got)); diff != "" {
				t.Errorf("%s: step messages (-want +got):\n%s", tc.sc, diff)
			}
			for i := 1; i < len(got); i++ {
				if got[i].Seq <= got[i-1].Seq {
					t.Errorf("%s: seqs %v do not increase", tc.sc, stepSeqs(got))
				}
			}
		}
	}},
	{"scorecardsteps/unknown_batch_is_not_found_and_stores_nothing", func(t *testing.T, s store.Store) {
		ctx := t.Context()
		createBatch(t, s, batch("acme", "sc-1", t0))
		if got := listSteps(t, s, "acme", "sc-1", 0, 0); len(got) != 0 {
			t.Errorf("steps of a new batch = %v, want none", stepMessages(got))
		}
		// The good step first: the call lands whole or not at all.
		err := s.AppendScorecardSteps(ctx, []store.ScorecardStep{
			step("acme", "sc-1", "", "submit", "good"),
			step("acme", "absent", "", "submit", "orphan"),
		})
		wantErr(t, "AppendScorecardSteps to an absent batch", err, derrors.ErrNotFound)
		if got := listSteps(t, s, "acme", "sc-1", 0, 0); len(got) != 0 {
			t.Errorf("steps after a refused append = %v, want none", stepMessages(got))
		}
		_, err = s.ListScorecardSteps(ctx, "acme", "absent", 0, 0)
		wantErr(t, "ListScorecardSteps of an absent batch", err, derrors.ErrNotFound)
	}},
	{"scorecardsteps/rolled_back_with_the_transaction", func(t *testing.T, s store.Store) {
		ctx := t.Context()
		createBatch(t, s, batch("acme", "sc-1", t0))
		err := s.Transact(ctx, func(tx store.Tx) error {
			appendSteps(t, tx, step("acme", "sc-1", "k", "submit", "rolled back"))
			if got := listSteps(t, tx, "acme", "sc-1", 0, 0); len(got) != 1 {
				t.Errorf("steps inside the transaction = %v, want its own", stepMessages(got))
			}
			return errAbort
		})
		wantErr(t, "Transact", err, errAbort)
		// The key was not recorded either: the retry appends.
		appendSteps(t, s, step("acme", "sc-1", "k", "submit", "retried"))
		got := listSteps(t, s, "acme", "sc-1", 0, 0)
		if diff := cmp.Diff([]string{"retried"}, stepMessages(got)); diff != "" {
			t.Errorf("step messages (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff([]int64{1}, stepSeqs(got)); diff != "" {
			t.Errorf("seqs (-want +got):\n%s", diff)
		}
	}},
	{"scorecardsteps/concurrent_appends_keep_each_call_whole_and_in_order", func(t *testing.T, s store.Store) {
		createBatch(t, s, batch("acme", "sc-1", t0))
		const writers, per = 6, 3
		errs := make([]error, writers)
		var wg sync.WaitGroup
		for w := range writers {
			wg.Go(func() {
				steps := make([]store.ScorecardStep, per)
				for i := range steps {
					steps[i] = step("acme", "sc-1", "", "case", fmt.Sprintf("w%d-%d", w, i))
				}
				errs[w] = s.AppendScorecardSteps(t.Context(), steps)
			})
		}
		wg.Wait()
		for w, err := range errs {
			if err != nil {
				t.Errorf("AppendScorecardSteps #%d: %v", w, err)
			}
		}
		got := listSteps(t, s, "acme", "sc-1", 0, 0)
		if len(got) != writers*per {
			t.Fatalf("%d steps, want %d", len(got), writers*per)
		}
		for i, st := range got {
			if st.Seq != int64(i+1) {
				t.Fatalf("seqs = %v, want 1..%d without holes", stepSeqs(got), writers*per)
			}
			// Each call's steps sit together, in the call's order.
			var w, j int
			if _, err := fmt.Sscanf(st.Message, "w%d-%d", &w, &j); err != nil || j != i%per {
				t.Fatalf("steps = %v, want each call's %d steps together and in order", stepMessages(got), per)
			}
			if j > 0 && got[i-1].Message != fmt.Sprintf("w%d-%d", w, j-1) {
				t.Fatalf("steps = %v, want each call's %d steps together and in order", stepMessages(got), per)
			}
		}
	}},
	{"scorecardsteps/invalid_input_stores_nothing", func(t *testing.T, s store.Store) {
		ctx := t.Context()
		createBatch(t, s, batch("acme", "sc-1", t0))
		good := step("acme", "sc-1", "", "submit", "ok")
		bad := func(edit func(st *store.ScorecardStep)) store.ScorecardStep {
			st := step("acme", "sc-1", "", "case", "bad")
			edit(&st)
			return st
		}
		for _, tc := range []struct {
			name string
			st   store.ScorecardStep
		}{
			{"no workspace", bad(func(st *store.ScorecardStep) { st.Workspace = "" })},
			{"no batch", bad(func(st *store.ScorecardStep) { st.ScorecardID = "" })},
			{"no phase", bad(func(st *store.ScorecardStep) { st.Phase = "" })},
			{"no status", bad(func(st *store.ScorecardStep) { st.Status = "" })},
			{"message with NUL", bad(func(st *store.ScorecardStep) { st.Message = "a\x00b" })},
			{"key not UTF-8", bad(func(st *store.ScorecardStep) { st.Key = "a\xffb" })},
			{"case id with NUL", bad(func(st *store.ScorecardStep) { st.CaseID = "c\x00" })},
		} {
			err := s.AppendScorecardSteps(ctx, []store.ScorecardStep{good, tc.st})
			wantErr(t, "AppendScorecardSteps: "+tc.name, err, derrors.ErrInvalid)
		}
		if got := listSteps(t, s, "acme", "sc-1", 0, 0); len(got) != 0 {
			t.Errorf("ListScorecardSteps = %v, want nothing stored", stepMessages(got))
		}
		for _, tc := range []struct {
			name      string
			workspace string
			sc        string
			limit     int
		}{
			{"negative limit", "acme", "sc-1", -1},
			{"no workspace", "", "sc-1", 0},
			{"no batch", "acme", "", 0},
		} {
			_, err := s.ListScorecardSteps(ctx, tc.workspace, tc.sc, 0, tc.limit)
			wantErr(t, "ListScorecardSteps: "+tc.name, err, derrors.ErrInvalid)
		}
		if err := s.AppendScorecardSteps(ctx, nil); err != nil {
			t.Errorf("AppendScorecardSteps(nil): %v", err)
		}
	}},
	{"scorecardsteps/default_limit_is_1000", func(t *testing.T, s store.Store) {
		createBatch(t, s, batch("acme", "sc-1", t0))
		steps := make([]store.ScorecardStep, 1001)
		for i := range steps {
			steps[i] = step("acme", "sc-1", fmt.Sprintf("case-%d", i), "case", fmt.Sprintf("case %d", i))
		}
		appendSteps(t, s, steps...)
		first := listSteps(t, s, "acme", "sc-1", 0, 0)
		if len(first) != 1000 || first[999].Seq != 1000 {
			t.Fatalf("ListScorecardSteps without a limit = %d steps, want the first 1000", len(first))
		}
		if rest := listSteps(t, s, "acme", "sc-1", 1000, 0); len(rest) != 1 || rest[0].Message != "case 1000" {
			t.Errorf("ListScorecardSteps after 1000 = %v, want the last step", stepMessages(rest))
		}
	}},
}

// childCounts counts a batch's canonical children or fails t.
func childCounts(t *testing.T, tx store.Tx, workspace, sc string) store.RunCounts {
	t.Helper()
	c, err := tx.ChildRunCounts(t.Context(), workspace, sc)
	if err != nil {
		t.Fatalf("ChildRunCounts(%q, %q): %v", workspace, sc, err)
	}
	return c
}

var childRunCountCases = []Case{
	{"scorecards/child_run_counts_by_status_and_outcome", func(t *testing.T, s store.Store) {
		ctx := t.Context()
		createBatch(t, s, batch("acme", "sc-1", t0))
		createBatch(t, s, batch("acme", "sc-2", t0))
		empty := childCounts(t, s, "acme", "sc-1")
		if diff := cmp.Diff(store.RunCounts{ByStatus: map[string]int{}, ByOutcome: map[string]int{}}, empty); diff != "" {
			t.Errorf("ChildRunCounts of a batch without runs (-want +got):\n%s", diff)
		}
		if empty.ByStatus == nil || empty.ByOutcome == nil {
			t.Errorf("ChildRunCounts maps = %v, %v, want empty maps, not nil", empty.ByStatus, empty.ByOutcome)
		}
		finished := func(r store.Run, status, outcome string) store.Run {
			r.Status, r.Outcome = status, outcome
			return r
		}
		for _, r := range []store.Run{
			finished(childRun("acme", "c1", "sc-1", "case-1", 0, true, t0), "succeeded", "pass"),
			finished(childRun("acme", "c2", "sc-1", "case-1", 1, true, t0), "succeeded", "pass"),
			// The earliest counted run: when the batch's first case started.
			finished(childRun("acme", "c3", "sc-1", "case-2", 0, true, t0.Add(-2*time.Second)), "succeeded", "fail"),
			finished(childRun("acme", "c4", "sc-1", "case-3", 0, true, t0), "failed", "error"),
			finished(childRun("acme", "c5", "sc-1", "case-4", 0, true, t0), "running", ""),
			finished(childRun("acme", "c6", "sc-1", "case-5", 0, true, t0), "queued", ""),
			// Not counted: a superseded attempt, another batch's child,
			// another workspace's batch of the same id, a top-level run.
			// Each is older than c3, so none may set FirstCreatedAt.
			finished(childRun("acme", "c1-old", "sc-1", "case-1", 0, false, t0.Add(-time.Hour)), "failed", "error"),
			finished(childRun("acme", "d1", "sc-2", "case-1", 0, true, t0.Add(-time.Hour)), "succeeded", "pass"),
			finished(childRun("globex", "c1", "sc-1", "case-1", 0, true, t0.Add(-time.Hour)), "succeeded", "fail"),
			finished(topRun("acme", "top", t0.Add(-time.Hour)), "succeeded", "pass"),
		} {
			createRun(t, s, r)
		}
		want := store.RunCounts{
			Total:     6,
			ByStatus:  map[string]int{"succeeded": 3, "failed": 1, "running": 1, "queued": 1},
			ByOutcome: map[string]int{"pass": 2, "fail": 1, "error": 1},
			// Read back as the store keeps times (UTC, microseconds).
			FirstCreatedAt: norm(t0.Add(-2 * time.Second)),
		}
		if diff := cmp.Diff(want, childCounts(t, s, "acme", "sc-1")); diff != "" {
			t.Errorf("ChildRunCounts(sc-1) (-want +got):\n%s", diff)
		}
		// A run that finishes moves from one bucket to another, and the
		// count reads its own transaction's writes.
		err := s.Transact(ctx, func(tx store.Tx) error {
			if _, err := tx.PutRun(ctx, finished(childRun("acme", "c5", "sc-1", "case-4", 0, true, t0), "succeeded", "cancelled")); err != nil {
				return err
			}
			delete(want.ByStatus, "running")
			want.ByStatus["succeeded"] = 4
			want.ByOutcome["cancelled"] = 1
			if diff := cmp.Diff(want, childCounts(t, tx, "acme", "sc-1")); diff != "" {
				t.Errorf("ChildRunCounts in the transaction (-want +got):\n%s", diff)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, childCounts(t, s, "acme", "sc-1")); diff != "" {
			t.Errorf("ChildRunCounts after commit (-want +got):\n%s", diff)
		}
		_, err = s.ChildRunCounts(ctx, "acme", "absent")
		wantErr(t, "ChildRunCounts of an absent batch", err, derrors.ErrNotFound)
		for _, tc := range []struct{ workspace, sc string }{{"", "sc-1"}, {"acme", ""}, {"acme", "sc\x00"}} {
			_, err := s.ChildRunCounts(ctx, tc.workspace, tc.sc)
			wantErr(t, fmt.Sprintf("ChildRunCounts(%q, %q)", tc.workspace, tc.sc), err, derrors.ErrInvalid)
		}
	}},
}
