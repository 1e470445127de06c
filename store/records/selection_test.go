package records_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"svc/internal/domain/eval"
	"svc/store"
	"svc/store/records"
	"svc/store/sqlite/sqlitetest"
)

// countingSelections counts the reads of stored selections.
type countingSelections struct {
	store.Store
	reads int
}

func (c *countingSelections) GetScorecardSelection(ctx context.Context, ws, id string) ([]byte, error) {
	c.reads++
	return c.Store.GetScorecardSelection(ctx, ws, id)
}

func selectedBatch(at time.Time) eval.Scorecard {
	return eval.Scorecard{
		ID: "sc_1", Tenant: "acme", Kind: eval.KindScorecard, Status: eval.ScorecardQueued, CreatedAt: at, UpdatedAt: at,
		Manifest: &eval.Manifest{IdentityVersion: 1, Dataset: "sha256:d", Harness: "sha256:h", GradingPlan: "sha256:g",
			Cases:        map[string]string{"a": "sha256:1", "b": "sha256:2"},
			GradingCases: map[string]string{"a": "sha256:3", "b": "sha256:4"}},
		Orchestration: &eval.Orchestration{CaseIDs: []string{"b", "a"}, DatasetOwner: "acme"},
	}
}

// TestSelectionIsStoredApart: the record's stored document never carries
// the selection; LoadScorecard reads it without, LoadScorecardFull with,
// and a write of a record read without it keeps the stored selection.
func TestSelectionIsStoredApart(t *testing.T) {
	ctx := t.Context()
	st := sqlitetest.New(t)
	at := time.Date(2026, 11, 23, 8, 0, 0, 0, time.UTC)
	sc := selectedBatch(at)
	row, err := records.ScorecardRow(sc, 0)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(row.Doc), `"sha256:1"`) || strings.Contains(string(row.Doc), `caseIds`) {
		t.Errorf("the record's document carries the selection: %s", row.Doc)
	}
	if sc.Manifest.Cases == nil || sc.Orchestration.CaseIDs == nil {
		t.Fatalf("ScorecardRow modified the record it was given")
	}
	if _, err := st.CreateScorecard(ctx, row); err != nil {
		t.Fatal(err)
	}
	light, _, err := records.LoadScorecard(ctx, st, "acme", "sc_1")
	if err != nil {
		t.Fatal(err)
	}
	if light.Manifest.Cases != nil || light.Manifest.GradingCases != nil || light.Orchestration.CaseIDs != nil {
		t.Errorf("LoadScorecard returned the selection: %+v %+v", light.Manifest, light.Orchestration)
	}
	full, _, err := records.LoadScorecardFull(ctx, st, "acme", "sc_1")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(records.SelectionOf(sc), records.SelectionOf(full)); diff != "" {
		t.Errorf("LoadScorecardFull's selection (-want +got):\n%s", diff)
	}
	// A write of the light record keeps the stored selection.
	if _, err := records.UpdateScorecard(ctx, st, "acme", "sc_1", func(x *eval.Scorecard) error {
		x.Status = eval.ScorecardRunning
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	full, _, err = records.LoadScorecardFull(ctx, st, "acme", "sc_1")
	if err != nil {
		t.Fatal(err)
	}
	if full.Status != eval.ScorecardRunning || !cmp.Equal(records.SelectionOf(sc), records.SelectionOf(full)) {
		t.Errorf("after a write: status %s, selection %+v; want running and the stored selection", full.Status, records.SelectionOf(full))
	}
	// Cached once per worker: the selection never changes.
	cs := &countingSelections{Store: st}
	var c records.PlanCache
	for range 3 {
		sel, err := c.Selection(ctx, cs, "acme", "sc_1")
		if err != nil {
			t.Fatal(err)
		}
		if !cmp.Equal(sel.CaseIDs, []string{"b", "a"}) {
			t.Errorf("PlanCache.Selection case ids = %q", sel.CaseIDs)
		}
	}
	if cs.reads != 1 {
		t.Errorf("PlanCache.Selection read the store %d times, want once", cs.reads)
	}
}

// TestSelectionOfAnOlderRecord: a record written before the selection
// moved out of it (its document carries it) still reads whole, and moves
// the selection out on its next write.
func TestSelectionOfAnOlderRecord(t *testing.T) {
	ctx := t.Context()
	st := sqlitetest.New(t)
	at := time.Date(2026, 11, 23, 8, 0, 0, 0, time.UTC)
	sc := selectedBatch(at)
	doc, err := json.Marshal(sc)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.CreateScorecard(ctx, store.Scorecard{ID: sc.ID, Workspace: sc.Tenant, Kind: sc.Kind, Status: string(sc.Status), Doc: doc, CreatedAt: at}); err != nil {
		t.Fatal(err)
	}
	full, row, err := records.LoadScorecardFull(ctx, st, "acme", "sc_1")
	if err != nil {
		t.Fatal(err)
	}
	if row.HasSelection || !cmp.Equal(records.SelectionOf(sc), records.SelectionOf(full)) {
		t.Errorf("an older record: HasSelection %v, selection %+v", row.HasSelection, records.SelectionOf(full))
	}
	if _, err := records.UpdateScorecard(ctx, st, "acme", "sc_1", func(x *eval.Scorecard) error { return nil }); err != nil {
		t.Fatal(err)
	}
	row, err = st.GetScorecard(ctx, "acme", "sc_1")
	if err != nil {
		t.Fatal(err)
	}
	if !row.HasSelection || strings.Contains(string(row.Doc), "caseIds") {
		t.Errorf("after a write the selection is still in the document (HasSelection %v): %s", row.HasSelection, row.Doc)
	}
	full, _, err = records.LoadScorecardFull(ctx, st, "acme", "sc_1")
	if err != nil {
		t.Fatal(err)
	}
	if !cmp.Equal(records.SelectionOf(sc), records.SelectionOf(full)) {
		t.Errorf("after the write: selection %+v", records.SelectionOf(full))
	}
}

// TestSelectionOnly: a page's share of the selection.
func TestSelectionOnly(t *testing.T) {
	sel := records.SelectionOf(selectedBatch(time.Time{}))
	got := sel.Only([]string{"b", "zz"})
	want := records.Selection{Cases: map[string]string{"b": "sha256:2"}, GradingCases: map[string]string{"b": "sha256:4"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Only (-want +got):\n%s", diff)
	}
}

// TestLoadSelectionOf: the scanned page of a stored selection equals the
// decoded selection restricted with Only, including ids that need JSON
// escapes, and an undecodable stored selection is an error.
func TestLoadSelectionOf(t *testing.T) {
	ctx := t.Context()
	st := sqlitetest.New(t)
	sc := selectedBatch(time.Date(2026, 11, 23, 8, 0, 0, 0, time.UTC))
	odd := "c \"quoted\" <é>\u2028"
	sc.Manifest.Cases[odd], sc.Manifest.GradingCases[odd] = "sha256:5", "sha256:6"
	sc.Orchestration.CaseIDs = append(sc.Orchestration.CaseIDs, odd)
	row, err := records.ScorecardRow(sc, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.CreateScorecard(ctx, row); err != nil {
		t.Fatal(err)
	}
	light, row, err := records.LoadScorecard(ctx, st, "acme", "sc_1")
	if err != nil {
		t.Fatal(err)
	}
	full, err := records.LoadSelection(ctx, st, light, row)
	if err != nil {
		t.Fatal(err)
	}
	for _, ids := range [][]string{{"b", odd, "zz"}, {}, {"a", "b", odd}} {
		got, err := records.LoadSelectionOf(ctx, st, light, row, ids)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(full.Only(ids), got); diff != "" {
			t.Errorf("LoadSelectionOf(%q) (-want +got):\n%s", ids, diff)
		}
	}
	bad := &brokenSelection{Store: st}
	if _, err := records.LoadSelectionOf(ctx, bad, light, row, []string{"a"}); err == nil {
		t.Errorf("LoadSelectionOf of a broken stored selection: no error")
	}
}

// brokenSelection answers a stored selection that does not decode.
type brokenSelection struct{ store.Store }

func (brokenSelection) GetScorecardSelection(context.Context, string, string) ([]byte, error) {
	return []byte(`{"cases":{"a":"sha256:1",`), nil
}
