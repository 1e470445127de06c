package workflows

import (
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"svc/internal/domain/flows"
)

// snapshotOptions run a world snapshot on the session's host: a capture
// and push of up to SVC_WORLD_MAX_CAPTURE_BYTES, a few attempts (a
// retry after a crash mid-push publishes whole or not at all).
func snapshotOptions(hostQueue string) workflow.ActivityOptions {
	return workflow.ActivityOptions{
		TaskQueue:           hostQueue,
		StartToCloseTimeout: time.Hour,
		// The host's queue has no poller once its worker is gone: fail
		// rather than wait for ever.
		ScheduleToStartTimeout: 2 * time.Minute,
		RetryPolicy:            &temporal.RetryPolicy{InitialInterval: time.Second, MaximumInterval: 30 * time.Second, MaximumAttempts: 3},
	}
}

// SandboxSnapshotWorkflow publishes one requested world snapshot
// (flows.SandboxSnapshotWorkflow).
func SandboxSnapshotWorkflow(ctx workflow.Context, in flows.SnapshotRequest) (flows.SnapshotResult, error) {
	var res flows.SnapshotResult
	ctx = workflow.WithActivityOptions(ctx, snapshotOptions(in.HostQueue))
	err := workflow.ExecuteActivity(ctx, flows.ActivitySnapshotSession, in.SnapshotInput).Get(ctx, &res)
	return res, err
}
