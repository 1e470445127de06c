package workflows

import (
	"errors"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"svc/internal/domain/eval"
	"svc/internal/domain/flows"
)

// RunWorkflow runs one single eval run (spec §3): dispatch the case through
// the driver (which records running, the result and the sealed trajectory
// itself, exactly once), notify the creator, then deliver the signed
// webhook with retries. The workflow id is the run id.
func RunWorkflow(ctx workflow.Context, in flows.RunInput) (flows.RunOutput, error) {
	ref := flows.RunRef{Workspace: in.Workspace, RunID: in.RunID}

	dctx := workflow.WithActivityOptions(ctx, dispatchOptions)
	var out flows.RunStatus
	err := workflow.ExecuteActivity(dctx, flows.ActivityDispatchRun, ref).Get(ctx, &out)

	// What follows must run even when the workflow was cancelled, so it
	// uses a context the cancel does not reach.
	after, _ := workflow.NewDisconnectedContext(ctx)
	short := workflow.WithActivityOptions(after, runRecordOptions)
	if err != nil {
		f := flows.FailInput{RunRef: ref, Code: eval.CodeInternal, Message: "the run could not be dispatched: " + failureMessage(err)}
		var cancelled *temporal.CanceledError
		if errors.As(err, &cancelled) || ctx.Err() != nil {
			f.Code, f.Message = eval.CodeCancelled, "the run was cancelled"
		}
		if ferr := workflow.ExecuteActivity(short, flows.ActivityFailRun, f).Get(after, &out); ferr != nil {
			return flows.RunOutput{}, ferr
		}
	}
	if err := workflow.ExecuteActivity(short, flows.ActivityFinalizeRun, ref).Get(after, nil); err != nil {
		return flows.RunOutput{Status: out.Status}, err
	}
	if out.WebhookURL != "" {
		attempts := in.WebhookAttempts
		if attempts <= 0 {
			attempts = 8
		}
		wctx := workflow.WithActivityOptions(after, webhookOptions(attempts))
		// A webhook that never lands does not fail the run: the attempts
		// are recorded, and the record is final either way.
		if err := workflow.ExecuteActivity(wctx, flows.ActivityDeliverWebhook, ref).Get(after, nil); err != nil {
			workflow.GetLogger(ctx).Warn("webhook not delivered", "run", in.RunID, "error", err)
		}
	}
	return flows.RunOutput{Status: out.Status}, nil
}
