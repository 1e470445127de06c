package activities

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"go.temporal.io/sdk/temporal"

	"svc/internal/domain/eval"
	"svc/internal/domain/flows"
	"svc/internal/domain/registry"
	"svc/internal/platform/derrors"
	"svc/store"
	"svc/store/records"
)

// ScorecardRef is flows.ScorecardRef: the workflows' contract (package flows).
type ScorecardRef = flows.ScorecardRef

// CaseItem is flows.CaseItem: the workflows' contract (package flows).
type CaseItem = flows.CaseItem

// CasePageInput is flows.CasePageInput: the workflows' contract (package flows).
type CasePageInput = flows.CasePageInput

func (a *Activities) update(ctx context.Context, ref ScorecardRef, fn func(sc *eval.Scorecard) error) (eval.Scorecard, error) {
	return records.UpdateScorecard(ctx, a.Store, ref.Workspace, ref.ScorecardID, func(sc *eval.Scorecard) error {
		if err := fn(sc); err != nil {
			return err
		}
		sc.UpdatedAt = a.now()
		return nil
	})
}

func (a *Activities) step(ctx context.Context, ref ScorecardRef, key, phase, status, msg, caseID string) error {
	return a.Store.AppendScorecardSteps(ctx, []store.ScorecardStep{{
		Workspace: ref.Workspace, ScorecardID: ref.ScorecardID, Key: key, TS: a.now(),
		Phase: phase, Status: status, Message: clip(msg, 1000), CaseID: caseID,
	}})
}

// batchPlan returns the batch's record, decoded once per version. Callers must
// not modify what it returns.
func (a *Activities) batchPlan(ctx context.Context, ws, id string) (eval.Scorecard, error) {
	return a.plans.Plan(ctx, a.Store, ws, id)
}

// errStop is returned by an update function that decided to change nothing.
var errStop = errors.New("no change")

// StartScorecard marks a queued batch running.
func (a *Activities) StartScorecard(ctx context.Context, ref ScorecardRef) error {
	_, err := a.update(ctx, ref, func(sc *eval.Scorecard) error {
		if sc.Status != eval.ScorecardQueued {
			return errStop
		}
		sc.Status = eval.ScorecardRunning
		return nil
	})
	if err != nil && !errors.Is(err, errStop) {
		return err
	}
	return a.step(ctx, ref, "dispatch:started", "dispatch", "started", "dispatching cases", "")
}

// CasePage returns the case ids of the batch's selection from in.From.
func (a *Activities) CasePage(ctx context.Context, in CasePageInput) ([]string, error) {
	sel, err := a.plans.Selection(ctx, a.Store, in.Workspace, in.ScorecardID)
	if err != nil {
		return nil, err
	}
	ids := sel.CaseIDs
	if in.From >= len(ids) {
		return nil, nil
	}
	return ids[in.From:min(len(ids), in.From+in.Limit)], nil
}

// RunCase runs one (case, trial) of a batch: it creates the child run (or
// finds the one a previous attempt made) and dispatches it as DispatchRun
// does, so a case finishes exactly once whatever restarts.
func (a *Activities) RunCase(ctx context.Context, item CaseItem) (RunStatus, error) {
	ctx, stop := keepLease(ctx, nil)
	defer stop()
	sc, err := a.batchPlan(ctx, item.Workspace, item.ScorecardID)
	if err != nil {
		return RunStatus{}, err
	}
	id := eval.ChildRunID(item.Workspace, item.ScorecardID, item.CaseID, item.Trial)
	row, err := a.Store.GetRun(ctx, item.Workspace, id)
	var run eval.Run
	switch {
	case err == nil:
		if run, err = records.FromRow(row); err != nil {
			return RunStatus{}, err
		}
	case errors.Is(err, derrors.ErrNotFound):
		if run, err = a.newChild(ctx, sc, item, id); err != nil {
			return RunStatus{}, err
		}
	default:
		return RunStatus{}, err
	}
	if sc.Status == eval.ScorecardCancelled || sc.Status == eval.ScorecardSuperseded {
		// The batch was stopped: no further case fires.
		return RunStatus{Status: string(run.Status)}, temporal.NewCanceledError("batch stopped")
	}
	o := sc.Orchestration
	if o == nil {
		o = &eval.Orchestration{}
	}
	st, err := a.dispatch(ctx, run, grading{graders: o.Graders, ungraded: o.Ungraded})
	if err != nil {
		return st, err
	}
	if st.Status == string(eval.StatusFailed) {
		a.stepFailedCase(ctx, item, id)
	}
	return st, nil
}

// logStepError logs a batch step that could not be written, with the
// workflow execution that wrote it and the child run it is about.
func (a *Activities) logStepError(ctx context.Context, ref ScorecardRef, runID string, err error) {
	attrs := append([]any{"workspace", ref.Workspace, "scorecard", ref.ScorecardID, "run", runID, "error", err}, activityAttrs(ctx)...)
	a.logger().Warn("recording a case step of a batch", attrs...)
}

// newChild creates the child run of item, with the case read from the
// batch's dataset version (or its ad-hoc task).
func (a *Activities) newChild(ctx context.Context, sc eval.Scorecard, item CaseItem, id string) (eval.Run, error) {
	var c registry.EvalCase
	o := sc.Orchestration
	switch {
	case o != nil && o.AdhocCase != nil && o.AdhocCase.ID == item.CaseID:
		c = *o.AdhocCase
	default:
		owner := sc.Tenant
		if o != nil && o.DatasetOwner != "" {
			owner = o.DatasetOwner
		}
		if sc.Dataset.ID == eval.IDTraces {
			// An ingest's cases are its child runs, made at submit.
			return eval.Run{}, temporal.NewNonRetryableApplicationError(fmt.Sprintf("the child run of case %s of this ingest is missing; ingest the trace again", item.CaseID), string(flows.CaseMissing), nil)
		}
		cases, err := a.Store.ListDatasetCases(ctx, owner, sc.Dataset.ID, sc.Dataset.Version, store.CaseFilter{IDs: []string{item.CaseID}})
		if err != nil {
			return eval.Run{}, a.datasetGone(ctx, sc, err)
		}
		if len(cases) == 0 {
			return eval.Run{}, temporal.NewNonRetryableApplicationError(fmt.Sprintf("case %s is not in dataset %s", item.CaseID, sc.Dataset), string(flows.CaseMissing), nil)
		}
		if err := json.Unmarshal(cases[0].Doc, &c); err != nil {
			return eval.Run{}, fmt.Errorf("case %s of dataset %s does not decode: %w", item.CaseID, sc.Dataset, err)
		}
	}
	run, _, err := a.createChild(ctx, sc, item, id, c, false)
	return run, err
}

// createChild creates the child run of item for case c: queued, or, with
// running, already running its first attempt (fresh reports that this
// call created it so; a concurrent attempt may have made it first, and
// then that run is returned as it is).
func (a *Activities) createChild(ctx context.Context, sc eval.Scorecard, item CaseItem, id string, c registry.EvalCase, running bool) (run eval.Run, fresh bool, err error) {
	if sc.Runtime != "" {
		if c.Placement == nil {
			c.Placement = &registry.Placement{}
		} else {
			p := *c.Placement
			c.Placement = &p
		}
		c.Placement.Target = sc.Runtime
	}
	now := a.now()
	canonical := true
	run = eval.Run{
		ID: id, Tenant: sc.Tenant, Harness: sc.Harness, CaseID: item.CaseID, Status: eval.StatusQueued,
		CreatedAt: now, UpdatedAt: now, Kind: eval.KindEval, Trigger: eval.TriggerScorecard,
		CreatedBy: sc.CreatedBy, Origin: &eval.Origin{Source: "scorecard"},
		ParentScorecardID: sc.ID, Trial: item.Trial, Canonical: &canonical, Runtime: sc.Runtime, Case: &c, AudienceTeam: sc.AudienceTeam,
	}
	if running {
		run.Status, run.Attempts, run.StartedAt = eval.StatusRunning, 1, &now
	}
	row, err := records.Row(run)
	if err != nil {
		return eval.Run{}, false, err
	}
	// Grouped with the other cases' writes; a concurrent attempt may
	// have made it first, and then that one is used.
	stored, created, err := a.createRun(ctx, row)
	if err != nil {
		return eval.Run{}, false, err
	}
	fresh = running && created
	run, err = records.FromRow(stored)
	return run, fresh, err
}

// stepFailedCase lands the step of case item's failure (run id) on its
// batch's timeline. The step annotates the timeline; the case's outcome is
// already stored, so a step that cannot be written is logged rather than
// failing (and rerunning) a case that finished.
func (a *Activities) stepFailedCase(ctx context.Context, item CaseItem, id string) {
	r, err := a.loadRun(ctx, RunRef{Workspace: item.Workspace, RunID: id})
	if err == nil && r.Error != nil {
		err = a.step(ctx, item.ScorecardRef, "case:"+id, "case", "failed", r.Error.Message, item.CaseID)
	}
	if err != nil {
		a.logStepError(ctx, item.ScorecardRef, id, err)
	}
}
