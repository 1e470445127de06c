package workflows

import (
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"svc/activities"
	"svc/internal/domain/flows"
)

// traceSweepOptions run one trace sweep: bounded, retried a few times;
// the next cron run retries anyway.
var traceSweepOptions = workflow.ActivityOptions{
	StartToCloseTimeout: 10 * time.Minute,
	RetryPolicy:         &temporal.RetryPolicy{InitialInterval: time.Second, MaximumInterval: 30 * time.Second, MaximumAttempts: 3},
}

// TraceSweepWorkflow runs the trace sweep once; started with a cron
// schedule (flows.TraceSweepCron), Temporal runs it again on schedule,
// across restarts of every process.
func TraceSweepWorkflow(ctx workflow.Context) (flows.TraceSweepOutput, error) {
	var a *activities.Activities
	var out flows.TraceSweepOutput
	ctx = workflow.WithActivityOptions(ctx, traceSweepOptions)
	err := workflow.ExecuteActivity(ctx, a.SweepTraces).Get(ctx, &out)
	return out, err
}
