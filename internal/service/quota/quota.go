// Package quota holds the admission rules a submit passes in the
// transaction that creates its runs: the workspace's run budget over a
// rolling window (SVC_TENANT_RUNS) and the scheduler's queue bound
// (SVC_SCHEDULER_QUEUE_MAX). The runs and scorecards services call it; it
// reads counts through the store's transaction and refuses with the error
// family's ErrBudgetExceeded or a rate-limit refusal with Retry-After.
package quota

import (
	"context"
	"fmt"
	"time"

	"svc/internal/platform/derrors"
	"svc/store"
)

// BudgetWindow is the rolling window SVC_TENANT_RUNS counts runs in.
const BudgetWindow = 24 * time.Hour

// AdmitRuns is the budget admission of a submit that creates n runs: a
// run (n = 1) or a batch (n = its case-trials). It fails with
// ErrBudgetExceeded when the workspace's runs of the last BudgetWindow
// (its top-level runs, and the case-trials of its batches) and the n new
// ones would pass limit; limit 0 admits everything. Call it in the
// transaction that creates the runs or the batch, so that two concurrent
// submits cannot both pass a limit that only one of them fits under.
func AdmitRuns(ctx context.Context, tx store.Runs, workspace string, now time.Time, limit, n int) error {
	if limit <= 0 {
		return nil
	}
	since := now.Add(-BudgetWindow)
	runs, err := tx.CountRuns(ctx, workspace, since)
	if err != nil {
		return err
	}
	batched, err := tx.CountBatchRuns(ctx, workspace, since)
	if err != nil {
		return err
	}
	if used := runs + batched; used+n > limit {
		what := "a run"
		if n != 1 {
			what = fmt.Sprintf("%d runs", n)
		}
		return fmt.Errorf("%w: workspace %q has submitted %d runs in the last 24 hours (%d runs and %d case-trials of batches) and its budget is %d (SVC_TENANT_RUNS), so %s more do not fit; wait for older runs to leave the window, submit fewer cases or trials, or ask an operator to raise the limit",
			derrors.ErrBudgetExceeded, workspace, used, runs, batched, limit, what)
	}
	return nil
}

// QueueRetryAfter is the Retry-After of a submit refused by the queue
// bound: about the time a few cases take to leave the queue.
const QueueRetryAfter = 30 * time.Second

// AdmitQueue is the scheduler's queue bound at a submit that adds n runs
// to the workspace's queue (a run, or a batch's case-trials): past max
// waiting (limit 0 admits everything) it is ErrRateLimited, with
// QueueRetryAfter, and nothing is created. Call it in the transaction that
// creates the runs or the batch.
func AdmitQueue(ctx context.Context, tx store.Runs, workspace string, max, n int) error {
	if max <= 0 {
		return nil
	}
	queued, err := tx.CountQueued(ctx, workspace)
	if err != nil {
		return err
	}
	if queued+n > max {
		return derrors.RateLimitedf(QueueRetryAfter, "workspace %q has %d runs and case-trials waiting or running, and its queue holds %d (SVC_SCHEDULER_QUEUE_MAX), so %d more do not fit; retry when its batches have moved on, submit fewer cases, or ask an operator to raise the bound",
			workspace, queued, max, n)
	}
	return nil
}
