package orchestration

import (
	"context"
	"errors"
	"fmt"

	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"

	"svc/internal/domain/flows"
)

// StartTraceSweep starts the trace sweep's cron workflow on taskQueue
// (flows.TraceSweepIDFor) unless it runs already (every worker calls it
// at start; the first wins, and Temporal keeps it on schedule across
// restarts).
func StartTraceSweep(ctx context.Context, c client.Client, taskQueue string) error {
	_, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
		ID: flows.TraceSweepIDFor(taskQueue), TaskQueue: taskQueue, CronSchedule: flows.TraceSweepCron,
	}, flows.TraceSweepWorkflow)
	var started *serviceerror.WorkflowExecutionAlreadyStarted
	if err != nil && !errors.As(err, &started) {
		return fmt.Errorf("starting the trace sweep: %w", err)
	}
	return nil
}
