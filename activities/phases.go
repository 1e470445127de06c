package activities

import (
	"context"
	"fmt"

	"go.temporal.io/sdk/temporal"

	"svc/internal/domain/eval"
	"svc/internal/domain/flows"
)

// persistFailed is err, the failure to record run's result, as an
// application error of type flows.PersistPhase (so that the batch's error
// names the phase, spec §2.3; it is retried like any other) whose message
// names the case and not the store's error, which is logged here with the
// activity and the run.
func (a *Activities) persistFailed(ctx context.Context, run eval.Run, err error) error {
	a.logger().Error("recording a case's result", append(activityAttrs(ctx),
		"workspace", run.Tenant, "run", run.ID, "case", run.CaseID, "error", err)...)
	return temporal.NewApplicationErrorWithCause(
		fmt.Sprintf("case %s ran, but its result could not be recorded in the store (run %s); the worker's log has the store's error", run.CaseID, run.ID),
		string(flows.PersistPhase), err)
}
