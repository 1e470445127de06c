package workflows

import (
	"errors"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"svc/activities"
)

// RunInput starts RunWorkflow. Everything the workflow decides on is in
// it, fixed at start, so that a replay decides the same.
type RunInput struct {
	Workspace string `json:"workspace"`
	RunID     string `json:"runId"`
	// WebhookAttempts bounds delivery attempts (SVC_WEBHOOK_ATTEMPTS).
	WebhookAttempts int `json:"webhookAttempts"`
}

// RunOutput is the final status of the run.
type RunOutput struct {
	Status string `json:"status"`
}

// Timeouts of the run activities. The case's own deadline is enforced by
// the driver inside DispatchRun; the heartbeat timeout is what notices a
// worker that died mid-case, so the next attempt starts soon after a
// restart.
const (
	dispatchStartToClose = 7*24*time.Hour + 10*time.Minute // above the longest case timeout a case may declare
	dispatchHeartbeat    = 5 * time.Second
	shortActivity        = time.Minute
	webhookTimeout       = 30 * time.Second
)

// RunWorkflow runs one single eval run (spec §3): dispatch the case through
// the driver (which records running, the result and the sealed trajectory
// itself, exactly once), notify the creator, then deliver the signed
// webhook with retries. The workflow id is the run id.
func RunWorkflow(ctx workflow.Context, in RunInput) (RunOutput, error) {
	var a *activities.Activities
	ref := activities.RunRef{Workspace: in.Workspace, RunID: in.RunID}

	dctx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: dispatchStartToClose,
		HeartbeatTimeout:    dispatchHeartbeat,
		// Cancel waits for the activity to kill the job and record it.
		WaitForCancellation: true,
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval:    time.Second,
			BackoffCoefficient: 2,
			MaximumInterval:    30 * time.Second,
			MaximumAttempts:    5,
		},
	})
	var out activities.RunStatus
	err := workflow.ExecuteActivity(dctx, a.DispatchRun, ref).Get(ctx, &out)

	// What follows must run even when the workflow was cancelled, so it
	// uses a context the cancel does not reach.
	after, _ := workflow.NewDisconnectedContext(ctx)
	short := workflow.WithActivityOptions(after, workflow.ActivityOptions{
		StartToCloseTimeout: shortActivity,
		RetryPolicy:         &temporal.RetryPolicy{InitialInterval: time.Second, MaximumInterval: 30 * time.Second},
	})
	if err != nil {
		f := activities.FailInput{RunRef: ref, Code: "INTERNAL", Message: "the run could not be dispatched: " + err.Error()}
		var cancelled *temporal.CanceledError
		if errors.As(err, &cancelled) || ctx.Err() != nil {
			f.Code, f.Message = "CANCELLED", "the run was cancelled"
		}
		if ferr := workflow.ExecuteActivity(short, a.FailRun, f).Get(after, &out); ferr != nil {
			return RunOutput{}, ferr
		}
	}
	if err := workflow.ExecuteActivity(short, a.FinalizeRun, ref).Get(after, nil); err != nil {
		return RunOutput{Status: out.Status}, err
	}
	if out.WebhookURL != "" {
		attempts := in.WebhookAttempts
		if attempts <= 0 {
			attempts = 8
		}
		wctx := workflow.WithActivityOptions(after, workflow.ActivityOptions{
			StartToCloseTimeout: webhookTimeout,
			RetryPolicy: &temporal.RetryPolicy{
				InitialInterval:        time.Second,
				BackoffCoefficient:     2,
				MaximumInterval:        5 * time.Minute,
				MaximumAttempts:        int32(attempts),
				NonRetryableErrorTypes: []string{activities.ErrTypeWebhookRefused},
			},
		})
		// A webhook that never lands does not fail the run: the attempts
		// are recorded, and the record is final either way.
		if err := workflow.ExecuteActivity(wctx, a.DeliverWebhook, ref).Get(after, nil); err != nil {
			workflow.GetLogger(ctx).Warn("webhook not delivered", "run", in.RunID, "error", err)
		}
	}
	return RunOutput{Status: out.Status}, nil
}
