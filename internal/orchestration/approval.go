package orchestration

import (
	"context"
	"errors"
	"fmt"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"

	"svc/internal/domain/flows"
)

// StartApproval starts ApprovalWorkflow with id flows.ApprovalWorkflowID;
// one already started is not an error (approvals.Orchestrator).
func (s *Starter) StartApproval(ctx context.Context, in flows.ApprovalInput) error {
	id := flows.ApprovalWorkflowID(in.Workspace, in.ID)
	_, err := s.Client.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
		ID: id, TaskQueue: s.TaskQueue, WorkflowIDReusePolicy: enumspb.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE,
	}, flows.ApprovalWorkflow, in)
	var started *serviceerror.WorkflowExecutionAlreadyStarted
	if err != nil && !errors.As(err, &started) {
		return fmt.Errorf("starting the workflow of approval %s: %w", in.ID, err)
	}
	return nil
}

// SignalApproval sends the decide signal; an ended workflow is not an error.
func (s *Starter) SignalApproval(ctx context.Context, workspace, id string, d flows.ApprovalDecision) error {
	return s.signal(ctx, flows.ApprovalWorkflowID(workspace, id), flows.SignalApprovalDecide, d)
}
