package workflows

import (
	"go.temporal.io/sdk/workflow"

	"svc/activities"
	"svc/internal/domain/flows"
)

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
