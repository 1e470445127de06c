package activities

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"go.temporal.io/sdk/temporal"

	"svc/internal/domain/eval"
	"svc/internal/domain/flows"
	"svc/internal/domain/registry"
	"svc/internal/platform/derrors"
	"svc/store"
	"svc/store/records"
)

// CaseChunk is flows.CaseChunk: the workflows' contract (package flows).
type CaseChunk = flows.CaseChunk

// ChunkItem is flows.ChunkItem: the workflows' contract (package flows).
type ChunkItem = flows.ChunkItem

// ChunkResult is flows.ChunkResult: the workflows' contract (package flows).
type ChunkResult = flows.ChunkResult

// RunCases runs a chunk of a batch's items, each as RunCase would (the
// child run created or found by its derived id, dispatched unless already
// terminal, so every (case, trial) finishes exactly once whatever
// restarts), then judged when the batch has judges. A case failure fails
// the case; an infrastructure error stops the chunk from starting more
// items and is returned, once the items in flight have ended, for
// Temporal to retry the chunk: the items that finished are not run again.
// The activity heartbeats while any item runs.
func (a *Activities) RunCases(ctx context.Context, in CaseChunk) (ChunkResult, error) {
	sc, err := a.batchPlan(ctx, in.Workspace, in.ScorecardID)
	if err != nil {
		return ChunkResult{}, err
	}
	if sc.Status == eval.ScorecardCancelled || sc.Status == eval.ScorecardSuperseded {
		return ChunkResult{}, temporal.NewCanceledError("batch stopped")
	}
	cases, err := a.chunkCases(ctx, sc, in.Items)
	if err != nil {
		return ChunkResult{}, err
	}
	width := max(1, in.Concurrency)
	memo := &a.harnesses
	var (
		mu       sync.Mutex
		out      ChunkResult
		firstErr error
		wg       sync.WaitGroup
		slots    = make(chan struct{}, width)
	)
	ctx, stop := keepLease(ctx, func() any {
		mu.Lock()
		defer mu.Unlock()
		return out.Succeeded + out.Failed
	})
	defer stop()
	failed := func() bool {
		mu.Lock()
		defer mu.Unlock()
		return firstErr != nil
	}
	for _, it := range in.Items {
		if failed() || ctx.Err() != nil {
			break
		}
		select {
		case slots <- struct{}{}:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
		item := CaseItem{ScorecardRef: in.ScorecardRef, CaseID: it.CaseID, Trial: it.Trial}
		wg.Go(func() {
			defer func() { <-slots }()
			st, err := a.runItem(ctx, sc, item, cases, memo, in.Judged)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err != nil:
				if firstErr == nil {
					firstErr = err
				}
			case st == string(eval.StatusSucceeded):
				out.Succeeded++
			default:
				out.Failed++
			}
		})
	}
	wg.Wait()
	if firstErr != nil {
		return out, firstErr
	}
	if ctx.Err() != nil {
		if cancelRequested(ctx) {
			return out, temporal.NewCanceledError("batch stopped")
		}
		return out, temporal.NewApplicationErrorWithCause("the chunk stopped with its activity", string(flows.WorkerGone), context.Cause(ctx))
	}
	return out, nil
}

// chunkCases reads the dataset cases of a chunk's items in one query (an
// ad-hoc batch's case comes from its record).
func (a *Activities) chunkCases(ctx context.Context, sc eval.Scorecard, items []ChunkItem) (map[string]registry.EvalCase, error) {
	out := map[string]registry.EvalCase{}
	o := sc.Orchestration
	var ids []string
	seen := map[string]bool{}
	for _, it := range items {
		switch {
		case o != nil && o.AdhocCase != nil && o.AdhocCase.ID == it.CaseID:
			out[it.CaseID] = *o.AdhocCase
		case !seen[it.CaseID]:
			seen[it.CaseID] = true
			ids = append(ids, it.CaseID)
		}
	}
	if len(ids) == 0 || sc.Dataset.ID == eval.IDTraces {
		// An ingest without a dataset has no registry dataset to read:
		// its child runs, each its own case, were created at submit,
		// and runItem reads them.
		return out, nil
	}
	owner := sc.Tenant
	if o != nil && o.DatasetOwner != "" {
		owner = o.DatasetOwner
	}
	rows, err := a.Store.ListDatasetCases(ctx, owner, sc.Dataset.ID, sc.Dataset.Version, store.CaseFilter{IDs: ids})
	if err != nil {
		return nil, a.datasetGone(ctx, sc, err)
	}
	for _, r := range rows {
		var c registry.EvalCase
		if err := json.Unmarshal(r.Doc, &c); err != nil {
			return nil, fmt.Errorf("case %s of dataset %s does not decode: %w", r.CaseID, sc.Dataset, err)
		}
		out[r.CaseID] = c
	}
	return out, nil
}

// runItem runs one item of a chunk and returns its run's final status.
func (a *Activities) runItem(ctx context.Context, sc eval.Scorecard, item CaseItem, cases map[string]registry.EvalCase, memo *harnessMemo, judged bool) (string, error) {
	id := eval.ChildRunID(item.Workspace, item.ScorecardID, item.CaseID, item.Trial)
	var (
		run   eval.Run
		fresh bool
		err   error
	)
	if c, ok := cases[item.CaseID]; ok {
		// Created running: the run exists from the moment its case
		// starts, which is what the batch's progress counts. Most items
		// are new, so the insert comes first; one that exists (a retried
		// chunk) is read back and goes on from its stored state.
		if run, fresh, err = a.createChild(ctx, sc, item, id, c, true); err != nil {
			return "", err
		}
	} else {
		row, err := a.Store.GetRun(ctx, item.Workspace, id)
		switch {
		case errors.Is(err, derrors.ErrNotFound):
			return "", temporal.NewNonRetryableApplicationError(fmt.Sprintf("case %s is not in dataset %s", item.CaseID, sc.Dataset), string(flows.CaseMissing), nil)
		case err != nil:
			return "", err
		}
		if run, err = records.FromRow(row); err != nil {
			return "", err
		}
	}
	o := sc.Orchestration
	if o == nil {
		o = &eval.Orchestration{}
	}
	st, err := a.dispatchFrom(ctx, run, grading{graders: o.Graders, ungraded: o.Ungraded, harnesses: memo}, fresh)
	if err != nil {
		return "", err
	}
	if st.Status == string(eval.StatusFailed) {
		a.stepFailedCase(ctx, item, id)
	}
	if judged && st.Status == string(eval.StatusSucceeded) {
		if err := a.JudgeCase(ctx, JudgeInput{CaseItem: item}); err != nil {
			if ctx.Err() != nil {
				return "", err
			}
			return "", temporal.NewApplicationErrorWithCause("judging case "+item.CaseID+" failed", string(flows.JudgesPhase), err)
		}
	}
	return st.Status, nil
}

// datasetGone is the error of a failed read of sc's dataset cases. A
// version that is not found (deleted since the submit) or refused cannot
// be read on a retry either: the error is non-retryable, with a message
// for the user; the store's own error goes to the log. Any other error is
// returned as it is, for Temporal to retry.
func (a *Activities) datasetGone(ctx context.Context, sc eval.Scorecard, err error) error {
	if !errors.Is(err, derrors.ErrNotFound) && !errors.Is(err, derrors.ErrInvalid) {
		return err
	}
	a.logger().WarnContext(ctx, "reading a batch's dataset cases", append(activityAttrs(ctx), "scorecard", sc.ID, "dataset", sc.Dataset.String(), "error", err)...)
	return temporal.NewNonRetryableApplicationError(fmt.Sprintf("the cases of dataset %s cannot be read: that version is gone; run the batch again on a version that exists", sc.Dataset), string(flows.DatasetGone), nil)
}
