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
	"svc/internal/domain/trace"
	"svc/internal/platform/derrors"
)

// gradeImported finishes a child run made from an ingested trace (POST
// /scorecards/ingest): no harness runs; the trace sealed in the ledger at
// submit (source import) is read back and graded, and the run is finished
// through the same write as a dispatched one, which re-seals the same
// events (a no-op on the ledger: same digest). A run whose trajectory is
// gone fails as a case, never the batch.
func (a *Activities) gradeImported(ctx context.Context, run eval.Run, g grading) (RunStatus, error) {
	t, err := a.Store.GetTrajectory(ctx, run.Tenant, run.ID)
	if errors.Is(err, derrors.ErrNotFound) {
		res, runErr := trace.BuildResult(run, trace.Dispatch{Harness: run.Harness}, trace.JobOutput{},
			caseErr("the ingested trace of run %s is no longer in the trace ledger (retention may have deleted it); ingest it again", run.ID), a.Host)
		res.Provenance.MarkIngested()
		return a.finish(ctx, run, res, runErr)
	}
	if err != nil {
		return RunStatus{}, err
	}
	var events []eval.TraceEvent
	if err := json.Unmarshal(t.Events, &events); err != nil {
		return RunStatus{}, temporal.NewNonRetryableApplicationError(fmt.Sprintf("the sealed trace of run %s does not decode: %v", run.ID, err), string(flows.TraceCorrupt), nil)
	}
	p := trace.Dispatch{Harness: run.Harness, Runtime: run.Runtime, Graders: g.graders, Ungraded: g.ungraded}
	if run.Case != nil {
		if d, err := registry.CaseDigest(*run.Case); err == nil {
			p.CaseDigest = d
		}
	}
	result := trace.IngestResult(run, p, events)
	st, err := a.finish(ctx, run, result, nil)
	if err != nil {
		return st, err
	}
	if result.TraceSealed {
		var ms int64
		if result.Usage != nil {
			ms = result.Usage.DurationMs
		}
		lctx, cancel := detached(ctx, afterSealTimeout)
		defer cancel()
		if err := a.landCrossings(lctx, run, trace.SourceImport, result.Trace, ms); err != nil {
			a.logger().WarnContext(ctx, "evaluating trace thresholds", append(activityAttrs(ctx), "run", run.ID, "error", err)...)
		}
	}
	return st, nil
}
