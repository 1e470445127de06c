package workflows

import (
	"context"
	"errors"
	"fmt"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
)

// Starter starts the workflows of this package on a task queue. It
// implements runs.Starter.
type Starter struct {
	Client    client.Client
	TaskQueue string
	// WebhookAttempts is passed to every RunWorkflow (SVC_WEBHOOK_ATTEMPTS).
	WebhookAttempts int
}

// StartRun starts RunWorkflow with workflow id = run id. The id is never
// reused, so a start retried after a timeout cannot run the case twice: a
// start that finds the workflow already there is a success.
func (s *Starter) StartRun(ctx context.Context, workspace, runID string) error {
	_, err := s.Client.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
		ID:                    runID,
		TaskQueue:             s.TaskQueue,
		WorkflowIDReusePolicy: enumspb.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE,
	}, RunWorkflow, RunInput{Workspace: workspace, RunID: runID, WebhookAttempts: s.WebhookAttempts})
	var started *serviceerror.WorkflowExecutionAlreadyStarted
	if errors.As(err, &started) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("starting the workflow of run %s: %w", runID, err)
	}
	return nil
}
