package scorecards

import (
	"context"
	"errors"

	"svc/auth"
	"svc/internal/domain/flows"
	"svc/internal/platform/derrors"
)

// Families of /ops/driver: the batch workflow of a scorecard, or its
// detached scoring pass.
const (
	FamilyBatch = "batch"
	FamilyScore = "score"
)

// workflowID finds the workflow of family for the caller's batch id: the
// batch's own (its id), or its scoring pass (in flight, else the last one
// that made a revision). Another workspace's batch is 404.
func (s *Service) workflowID(ctx context.Context, p auth.Principal, family, id string) (string, error) {
	if s.o.Orchestrator == nil {
		return "", derrors.NotFoundf("no durable orchestrator is configured (TEMPORAL_ADDRESS), so there is no driver to read")
	}
	if family != FamilyBatch && family != FamilyScore {
		return "", derrors.NotFoundf("no driver family %q; the families are batch and score", family)
	}
	sc, _, err := s.load(ctx, p, id)
	if err != nil {
		return "", err
	}
	if family == FamilyBatch {
		return sc.ID, nil
	}
	if sc.ScoringInFlight != "" {
		return sc.ScoringInFlight, nil
	}
	for i := len(sc.Scoring) - 1; i >= 0; i-- {
		if sc.Scoring[i].JudgeRun != "" {
			return sc.Scoring[i].JudgeRun, nil
		}
	}
	return "", derrors.NotFoundf("scorecard %s has no scoring pass", id)
}

// Driver reads the workflow behind a batch directly from Temporal (spec
// §4.7): status, history length and size, pending activities with their
// attempt and last failure. An unknown workflow, or an orchestrator that
// does not answer, is 404.
func (s *Service) Driver(ctx context.Context, p auth.Principal, family, id string) (flows.DriverView, error) {
	wid, err := s.workflowID(ctx, p, family, id)
	if err != nil {
		return flows.DriverView{}, err
	}
	v, err := s.o.Orchestrator.Describe(ctx, wid)
	if errors.Is(err, derrors.ErrNotFound) {
		return flows.DriverView{}, derrors.NotFoundf("the orchestrator has no %s workflow for %s", family, id)
	}
	if err != nil {
		return flows.DriverView{}, derrors.NotFoundf("the orchestrator did not answer for %s (%v)", id, err)
	}
	if family == FamilyBatch {
		if v.RunnerJobs, err = s.runnerJobs(ctx, p.Workspace, id); err != nil {
			return flows.DriverView{}, err
		}
		if v.Slots, err = s.batchSlots(ctx, p.Workspace, wid); err != nil {
			return flows.DriverView{}, err
		}
	}
	return v, nil
}

// batchSlots returns the admission slots the jobs of batch id hold or
// wait for: the cases a full remote runtime keeps queued show here.
func (s *Service) batchSlots(ctx context.Context, ws, id string) ([]flows.Slot, error) {
	rows, err := s.o.Store.ListSlots(ctx, ws, s.o.Now())
	if err != nil {
		return nil, err
	}
	var out []flows.Slot
	for _, r := range rows {
		if r.ScorecardID == id {
			out = append(out, flows.Slot{Runtime: r.Runtime, RunID: r.Holder, State: r.State, MemoryMb: r.MemoryMb, Since: r.Since, ExpiresAt: r.ExpiresAt})
		}
	}
	return out, nil
}

// runnerJobs are the batch's self-hosted jobs still queued or leased.
func (s *Service) runnerJobs(ctx context.Context, workspace, id string) ([]flows.RunnerJob, error) {
	js, err := s.o.Store.ListRunnerJobs(ctx, workspace)
	if err != nil {
		return nil, err
	}
	var out []flows.RunnerJob
	for _, j := range js {
		if j.ScorecardID == id {
			out = append(out, flows.RunnerJob{ID: j.ID, RunID: j.RunID, Runtime: j.Runtime, State: j.State,
				Cancelled: j.Cancelled, Runner: j.Runner, LeaseExpires: j.LeaseExpires, Leases: j.Leases})
		}
	}
	return out, nil
}

// CancelDriver asks the workflow behind a batch to stop (cooperative, admin
// only by its route's gate). It answers what the driver looks like after.
func (s *Service) CancelDriver(ctx context.Context, p auth.Principal, family, id string) (flows.DriverView, error) {
	wid, err := s.workflowID(ctx, p, family, id)
	if err != nil {
		return flows.DriverView{}, err
	}
	if _, err := s.o.Orchestrator.Describe(ctx, wid); err != nil {
		return flows.DriverView{}, derrors.NotFoundf("the orchestrator has no %s workflow for %s", family, id)
	}
	if err := s.o.Orchestrator.Cancel(ctx, wid); err != nil {
		return flows.DriverView{}, err
	}
	if family == FamilyBatch {
		// The batch's self-hosted jobs stop now, not when each activity
		// sees the cancel (spec §4.6).
		if _, err := s.o.Store.CancelRunnerJobs(ctx, p.Workspace, "", id, s.o.Now()); err != nil {
			return flows.DriverView{}, err
		}
	}
	return s.Driver(ctx, p, family, id)
}
