package activities

import (
	"context"

	"svc/internal/domain/eval"
	"svc/internal/domain/flows"
	"svc/internal/domain/scoring"
	"svc/store"
	"svc/store/records"
)

// ChildPageInput is flows.ChildPageInput: the workflows' contract (package flows).
type ChildPageInput = flows.ChildPageInput

// ChildPage is flows.ChildPage: the workflows' contract (package flows).
type ChildPage = flows.ChildPage

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

// childReadPage is the store page tallyChildren reads at a time.
const childReadPage = 1000

// batchTally is what ending a batch needs of its children, read without
// holding them: each child's case row under the batch's policy, the run
// ids, the counts, and, when no child reached its harness, why. A child
// run decodes to several KB (its case, result and trace summary); its row
// is a few hundred bytes, so a 100,000-case batch ends in tens of MB
// rather than hundreds.
type batchTally struct {
	rows   []eval.CaseRow
	runIDs []string
	counts store.RunCounts
	// dispatchFailed is the first child's error message when every child
	// failed to be dispatched (and there is one), else "".
	dispatchFailed string
}

// tallyChildren reads every canonical child run of a batch that the
// system may read, in run-id order, by keyset pages (ListChildRunPage),
// heartbeating between pages, and tallies them under policy.
func (a *Activities) tallyChildren(ctx context.Context, ws, scorecardID string, policy eval.VerdictPolicy) (batchTally, error) {
	t := batchTally{counts: records.NewRunCounts()}
	allDispatch := true
	err := records.EachChild(ctx, a.Store, ws, scorecardID, "", childReadPage, func() { heartbeat(ctx) }, func(r eval.Run) (bool, error) {
		t.rows = append(t.rows, scoring.TallyRow(policy, r))
		t.runIDs = append(t.runIDs, r.ID)
		records.CountChild(&t.counts, r)
		switch {
		case r.Error == nil || r.Error.Code != eval.CodeDispatch:
			allDispatch = false
		case len(t.runIDs) == 1:
			t.dispatchFailed = r.Error.Message
		}
		return true, nil
	})
	if !allDispatch {
		t.dispatchFailed = ""
	}
	return t, err
}
