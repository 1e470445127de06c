package scorecards

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"svc/store"
)

// pageReads counts the child runs the store hands out.
type pageReads struct {
	store.Store
	runs, whole int
}

func (p *pageReads) ListCanonicalChildPage(ctx context.Context, ws, id string, q store.CaseTrialPage) ([]store.Run, error) {
	rs, err := p.Store.ListCanonicalChildPage(ctx, ws, id, q)
	p.runs += len(rs)
	return rs, err
}

func (p *pageReads) ListChildRunPage(ctx context.Context, ws, id string, q store.ChildRunPage) ([]store.Run, error) {
	p.whole++
	return p.Store.ListChildRunPage(ctx, ws, id, q)
}

func (p *pageReads) ListChildRunStates(ctx context.Context, ws, id string, since time.Time) ([]store.ChildRunState, error) {
	p.whole++
	return p.Store.ListChildRunStates(ctx, ws, id, since)
}

// TestLargePageReadsItsOwnRows: a batch over maxDetailChildren answers
// each page of its detail read from the store by (case, trial) keyset,
// reading about the page's rows and never the whole batch, and the pages
// hold what the cached read's pages hold: the same rows, caseRuns,
// manifest digests, progress and steps, and the same cursors.
func TestLargePageReadsItsOwnRows(t *testing.T) {
	const n = 9
	f := newDetailFixture(t, n)
	for i := range n {
		f.batch.Start(t, i, f.clk.add(time.Second))
		if i != 4 {
			f.batch.Finish(t, i, i%3 != 0, f.clk.add(time.Second))
		}
	}
	ctx := t.Context()
	counted := &pageReads{Store: f.st}
	large := New(Options{Store: counted, Now: f.clk.Now})
	for _, limit := range []int{1, 2, 4, n} {
		q := &DetailPage{Limit: limit}
		for pages := 0; ; pages++ {
			if pages > n {
				t.Fatalf("limit %d: the walk does not end", limit)
			}
			want, _, err := f.s.GetPage(ctx, f.p, f.batch.ID, q, false)
			if err != nil {
				t.Fatal(err)
			}
			func() {
				defer func(old int) { maxDetailChildren = old }(maxDetailChildren)
				maxDetailChildren = n - 1
				counted.runs = 0
				got, doc, err := large.GetPage(ctx, f.p, f.batch.ID, q, true)
				if err != nil {
					t.Fatal(err)
				}
				if counted.whole != 0 || counted.runs > limit+1 || counted.runs == 0 {
					t.Errorf("limit %d: a page read %d child runs and %d whole-batch walks, want 1 to %d and none", limit, counted.runs, counted.whole, limit+1)
				}
				want.Summary, got.Summary = nil, nil // the record's, none while the batch runs
				want.ScorecardPage.Total = got.ScorecardPage.Total
				if diff := cmp.Diff(want, got); diff != "" {
					t.Errorf("limit %d after %q: the large page differs from the cached one (-cached +large):\n%s", limit, q.CasesAfter, diff)
				}
				var written bytes.Buffer
				if _, err := doc.WriteTo(&written); err != nil {
					t.Fatal(err)
				}
				var decoded PagedScorecard
				if err := json.Unmarshal(written.Bytes(), &decoded); err != nil || decoded.ScorecardPage == nil || len(decoded.Scorecard.Scorecard) != len(got.Scorecard.Scorecard) {
					t.Errorf("limit %d: the JSON does not decode to the page: %v", limit, err)
				}
				if got.ScorecardPage.Total != n {
					t.Errorf("limit %d: total %d, want %d case-trials with a run", limit, got.ScorecardPage.Total, n)
				}
			}()
			if want.ScorecardPage.Next == "" {
				break
			}
			q = &DetailPage{Limit: limit, CasesAfter: want.ScorecardPage.Next}
		}
	}
}
