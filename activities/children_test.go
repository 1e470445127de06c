package activities

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.temporal.io/sdk/testsuite"

	"svc/internal/domain/eval"
	"svc/internal/domain/registry"
	"svc/store/records"
	"svc/store/sqlite/sqlitetest"
)

// TestChildRunPageWalksKeysetPages: walking a batch's children page by
// page, as ScoreWorkflow does, visits every canonical child with a result
// once, in run-id order, and says More exactly while one follows, however
// many children it skips (superseded attempts, runs without a result,
// runs restricted to a member) between two pages.
func TestChildRunPageWalksKeysetPages(t *testing.T) {
	ctx := t.Context()
	st := sqlitetest.New(t)
	const ws = "acme"
	sc := eval.Scorecard{ID: "sc_k", Tenant: ws, Kind: eval.KindScorecard, Status: eval.ScorecardSucceeded,
		Dataset: registry.Ref{ID: "ds", Version: "1.0.0"}, Harness: registry.Ref{ID: "h", Version: "1.0.0"},
		CreatedAt: progressT0, UpdatedAt: progressT0, Trials: 1}
	row, err := records.ScorecardRow(sc, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.CreateScorecard(ctx, row); err != nil {
		t.Fatal(err)
	}
	var want []string
	for i := range 40 {
		canonical := i%7 != 3
		r := eval.Run{CaseID: fmt.Sprintf("case-%02d", i), Status: eval.StatusSucceeded, Result: &eval.CaseResult{Pass: true}}
		if i%5 == 1 {
			r.Status, r.Result = eval.StatusRunning, nil
		}
		r.ID, r.Tenant, r.Harness, r.Kind, r.Trigger = eval.ChildRunID(ws, sc.ID, r.CaseID, 0), ws, sc.Harness, eval.KindEval, eval.TriggerScorecard
		if !canonical {
			// A superseded attempt: its id is not the derived one.
			r.ID += "-old"
		}
		at := progressT0.Add(time.Duration(i) * time.Second)
		r.ParentScorecardID, r.Canonical, r.CreatedAt, r.UpdatedAt = sc.ID, &canonical, at, at
		row, err := records.Row(r)
		if err != nil {
			t.Fatal(err)
		}
		if i%11 == 4 {
			// A run restricted to one member is not the batch's to judge.
			row.Audience = "user:bob"
		}
		if _, err := st.CreateRun(ctx, row); err != nil {
			t.Fatal(err)
		}
		if canonical && r.Result != nil && row.Audience == "" {
			want = append(want, r.ID)
		}
	}
	slices.Sort(want)

	a := &Activities{Store: st}
	env := (&testsuite.WorkflowTestSuite{}).NewTestActivityEnvironment()
	env.RegisterActivity(a)
	for _, limit := range []int{1, 3, len(want), 500} {
		var got []string
		in := ChildPageInput{ScorecardRef: ScorecardRef{Workspace: ws, ScorecardID: sc.ID}, Limit: limit}
		for pages := 0; ; pages++ {
			if pages > len(want)+1 {
				t.Fatalf("limit %d: the walk does not end", limit)
			}
			v, err := env.ExecuteActivity(a.ChildRunPage, in)
			if err != nil {
				t.Fatalf("limit %d: ChildRunPage(after %q): %v", limit, in.After, err)
			}
			var page ChildPage
			if err := v.Get(&page); err != nil {
				t.Fatal(err)
			}
			for _, it := range page.Items {
				got = append(got, it.RunID)
				if it.RunID != eval.ChildRunID(ws, sc.ID, it.CaseID, it.Trial) {
					t.Errorf("limit %d: item %+v does not name its case's run", limit, it)
				}
			}
			if len(page.Items) > limit {
				t.Errorf("limit %d: a page of %d items", limit, len(page.Items))
			}
			if !page.More {
				break
			}
			if len(page.Items) == 0 {
				t.Fatalf("limit %d: an empty page says more follow", limit)
			}
			in.After = page.Items[len(page.Items)-1].RunID
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("limit %d: children walked (-want +got):\n%s", limit, diff)
		}
	}
}
