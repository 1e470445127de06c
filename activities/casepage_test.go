package activities

import (
	"context"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	"go.temporal.io/sdk/testsuite"

	"svc/internal/domain/eval"
	"svc/internal/domain/registry"
	"svc/store"
	"svc/store/records"
	"svc/store/sqlite/sqlitetest"
)

// countingStore counts the reads of a scorecard's record and of its
// selection.
type countingStore struct {
	store.Store
	gets, sels int
}

func (s *countingStore) GetScorecardSelection(ctx context.Context, ws, id string) ([]byte, error) {
	s.sels++
	return s.Store.GetScorecardSelection(ctx, ws, id)
}

func (s *countingStore) GetScorecard(ctx context.Context, ws, id string) (store.Scorecard, error) {
	s.gets++
	return s.Store.GetScorecard(ctx, ws, id)
}

// TestCasePageDecodesTheSelectionOnce: the workflow reads a batch's case
// selection a page at a time; the selection (stored apart from the
// record, about 20 MB at 100,000 cases) is read and decoded once per
// worker, not once per page, so a page costs its own size.
func TestCasePageDecodesTheSelectionOnce(t *testing.T) {
	ctx := t.Context()
	st := &countingStore{Store: sqlitetest.New(t)}
	const ws, n = "acme", 2000
	ids := make([]string, n)
	for i := range ids {
		ids[i] = fmt.Sprintf("case-%05d", i)
	}
	sc := eval.Scorecard{ID: "sc_pages", Tenant: ws, Kind: eval.KindScorecard, Status: eval.ScorecardRunning,
		Dataset: registry.Ref{ID: "ds", Version: "1.0.0"}, Harness: registry.Ref{ID: "h", Version: "1.0.0"},
		CreatedAt: progressT0, UpdatedAt: progressT0, Trials: 1, Orchestration: &eval.Orchestration{CaseIDs: ids}}
	row, err := records.ScorecardRow(sc, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.CreateScorecard(ctx, row); err != nil {
		t.Fatal(err)
	}
	a := &Activities{Store: st}
	env := (&testsuite.WorkflowTestSuite{}).NewTestActivityEnvironment()
	env.RegisterActivity(a)
	ref := ScorecardRef{Workspace: ws, ScorecardID: sc.ID}
	var got []string
	for from := 0; ; from += 300 {
		v, err := env.ExecuteActivity(a.CasePage, CasePageInput{ScorecardRef: ref, From: from, Limit: 300})
		if err != nil {
			t.Fatal(err)
		}
		var page []string
		if err := v.Get(&page); err != nil {
			t.Fatal(err)
		}
		if len(page) == 0 {
			break
		}
		got = append(got, page...)
	}
	if diff := cmp.Diff(ids, got); diff != "" {
		t.Errorf("the pages' case ids (-want +got):\n%s", diff)
	}
	if st.gets != 1 {
		t.Errorf("%d pages read the record %d times, want once", n/300+1, st.gets)
	}
	// A new version of the record (a cancel, a finish) does not read the
	// selection again: it never changes after the submit.
	if _, err := records.UpdateScorecard(ctx, st, ws, sc.ID, func(sc *eval.Scorecard) error { return nil }); err != nil {
		t.Fatal(err)
	}
	before, sels := st.gets, st.sels
	if _, err := env.ExecuteActivity(a.CasePage, CasePageInput{ScorecardRef: ref, From: 0, Limit: 300}); err != nil {
		t.Fatal(err)
	}
	if st.gets != before || st.sels != sels {
		t.Errorf("a page after the record changed read it %d times and the selection %d, want neither", st.gets-before, st.sels-sels)
	}
	if sels != 1 {
		t.Errorf("the pages read the stored selection %d times, want once", sels)
	}
}
