package activities

import (
	"context"
	"fmt"

	"go.temporal.io/sdk/temporal"

	"svc/internal/domain/eval"
)

// PersistPhaseError is the type of the application error a case activity
// returns when its case ran but the result could not be written to the
// store, so that the batch's error names the phase (persist, spec §2.3).
// It is retried like any other error.
const PersistPhaseError = "PersistPhase"

// persistFailed is err, the failure to record run's result, as a
// PersistPhaseError whose message names the case and not the store's
// error, which is logged here with the activity and the run.
func (a *Activities) persistFailed(ctx context.Context, run eval.Run, err error) error {
	a.logger().Error("recording a case's result", append(activityAttrs(ctx),
		"workspace", run.Tenant, "run", run.ID, "case", run.CaseID, "error", err)...)
	return temporal.NewApplicationErrorWithCause(
		fmt.Sprintf("case %s ran, but its result could not be recorded in the store (run %s); the worker's log has the store's error", run.CaseID, run.ID),
		PersistPhaseError, err)
}
