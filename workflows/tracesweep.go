package workflows

import (
	"go.temporal.io/sdk/workflow"

	"svc/internal/domain/flows"
)

// TraceSweepWorkflow runs the trace sweep once; started with a cron
// schedule (flows.TraceSweepCron), Temporal runs it again on schedule,
// across restarts of every process.
func TraceSweepWorkflow(ctx workflow.Context) (flows.TraceSweepOutput, error) {
	var out flows.TraceSweepOutput
	ctx = workflow.WithActivityOptions(ctx, traceSweepOptions)
	err := workflow.ExecuteActivity(ctx, flows.ActivitySweepTraces).Get(ctx, &out)
	return out, err
}
