package runs

import (
	"context"
	"encoding/json"
	"errors"

	"svc/auth"
	"svc/internal/domain/eval"
	"svc/internal/domain/judge"
	"svc/internal/domain/registry"
	"svc/internal/platform/derrors"
	"svc/store"
	"svc/store/records"
)

// JudgeTryRequest is a code-judge try (POST /judges/try): one real
// execution of the judge over one case, as a run of its own.
type JudgeTryRequest struct {
	// Judge is the judge to run; Ref names it when it is registered.
	Judge *registry.JudgeSpec
	Ref   *registry.Ref
	// Record is the judge and its input as the worker reads them.
	Record judge.TryRecord
	// Runtime is where the judge runs: the spec's runtime, else the
	// source case's placement; "" is the deployment's local runtime,
	// which only a source case that ran there may choose.
	Runtime string
	// AudienceTeam is the source run's (eval.Run.AudienceTeam): the try's
	// input holds the source's case, so its readers are the source's.
	AudienceTeam string
}

// SubmitJudgeTry admits, records and starts a code-judge try: a first-class
// run with trigger judge-preview (its logs on /runs/:id/logs, its scores in
// its result), the try record beside it, and the run's workflow, which
// runs the judge instead of a harness. Budget and queue admission are a
// run's. A workflow that cannot start fails the run, as Submit does.
func (s *Service) SubmitJudgeTry(ctx context.Context, p auth.Principal, req JudgeTryRequest, source string) (eval.Run, error) {
	if req.Judge == nil || req.Judge.Kind != registry.JudgeCode {
		return eval.Run{}, derrors.Invalidf("only code judges run as a try run; model judges answer inline")
	}
	if req.Runtime != "" {
		rt, err := s.o.Registries.Resolve(ctx, p, registry.Runtime, req.Runtime, "latest")
		if errors.Is(err, derrors.ErrNotFound) {
			return eval.Run{}, derrors.NotFoundf("runtime %q is not registered in this workspace or among shared ones; register it (POST /runtimes), or set another runtime on the judge", req.Runtime)
		}
		if err != nil {
			return eval.Run{}, err
		}
		if spec := rt.Spec.Runtime(); spec == nil {
			return eval.Run{}, derrors.Invalidf("runtime %q is not a runtime", req.Runtime)
		}
	}
	if s.o.Starter == nil {
		return eval.Run{}, derrors.Unavailablef("no workflow orchestrator is configured, so a code judge cannot be tried; run `svc dev`, or `svc serve` with TEMPORAL_ADDRESS")
	}
	harness := registry.Ref{ID: req.Judge.ID, Version: req.Judge.Version}
	if req.Ref != nil {
		harness = *req.Ref
	}
	c := req.Record.Input.Case
	if req.Runtime != "" {
		if c.Placement == nil {
			c.Placement = &registry.Placement{}
		}
		c.Placement.Target = req.Runtime
	}
	now := s.o.Now().UTC()
	run := eval.Run{
		ID:        eval.NewID("run"),
		Tenant:    p.Workspace,
		Harness:   harness,
		CaseID:    c.ID,
		Status:    eval.StatusQueued,
		CreatedAt: now,
		UpdatedAt: now,
		Kind:      eval.KindEval,
		Trigger:   eval.TriggerJudgePreview,
		CreatedBy: p.Subject,
		Origin:    &eval.Origin{Source: source},
		Runtime:   req.Runtime,
		Case:      &c,

		AudienceTeam: req.AudienceTeam,
	}
	row, err := records.Row(run)
	if err != nil {
		return eval.Run{}, err
	}
	rec, err := json.Marshal(req.Record)
	if err != nil {
		return eval.Run{}, err
	}
	return s.admitAndStart(ctx, p, now, run, row, func(tx store.Tx) error {
		_, _, err := tx.RegisterVersion(ctx, store.EntityVersion{Kind: judge.TryStoreKind, Owner: p.Workspace, ID: run.ID,
			Version: judge.TryVersion, Digest: registry.Digest(rec), Spec: rec, CreatedBy: p.Subject, CreatedAt: now}, "", nil)
		return err
	})
}
