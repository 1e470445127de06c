package activities

import (
	"context"

	"svc/eval"
	"svc/records"
)

// ChildPageInput pages a batch's canonical child runs.
type ChildPageInput struct {
	ScorecardRef
	After string `json:"after,omitempty"` // cursor: the last child run id of the previous page
	Limit int    `json:"limit"`
}

// ChildPage is one page of child runs that have results.
type ChildPage struct {
	Items []CaseItem `json:"items"`
	More  bool       `json:"more"`
}

// maxChildReadPage bounds one store read of ChildRunPage (the store's
// largest page).
const maxChildReadPage = 5000

// ChildRunPage returns a page of the batch's canonical child runs that have
// results, in run-id order, after in.After. It reads the store by keyset
// pages from the cursor (store.ListChildRunPage), one more run than the
// page needs so it can tell whether more follow, and further pages only
// while children it skips (superseded attempts, runs without a result)
// leave the page short: a page costs about its own size, not the batch's.
func (a *Activities) ChildRunPage(ctx context.Context, in ChildPageInput) (ChildPage, error) {
	read := min(max(in.Limit+1, 1), maxChildReadPage)
	var out ChildPage
	err := records.EachChild(ctx, a.Store, in.Workspace, in.ScorecardID, in.After, read, nil, func(r eval.Run) (bool, error) {
		if r.Result == nil {
			return true, nil
		}
		if len(out.Items) == in.Limit {
			out.More = true
			return false, nil
		}
		out.Items = append(out.Items, CaseItem{ScorecardRef: in.ScorecardRef, CaseID: r.CaseID, Trial: r.Trial, RunID: r.ID})
		return true, nil
	})
	if err != nil {
		return ChildPage{}, err
	}
	return out, nil
}

// childReadPage is the store page batchChildren reads at a time.
const childReadPage = 1000

// batchChildren returns every canonical child run of a batch that the
// system may read, in run-id order, as records.ListChildren does, reading
// the store by keyset pages (ListChildRunPage) so that the whole read costs
// the batch's size once; it heartbeats between pages.
func (a *Activities) batchChildren(ctx context.Context, ws, scorecardID string) ([]eval.Run, error) {
	var out []eval.Run
	err := records.EachChild(ctx, a.Store, ws, scorecardID, "", childReadPage, func() { heartbeat(ctx) }, func(r eval.Run) (bool, error) {
		out = append(out, r)
		return true, nil
	})
	return out, err
}
