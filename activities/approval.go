package activities

import (
	"context"

	"go.temporal.io/sdk/temporal"

	"svc/internal/domain/flows"
)

// ApprovalRunner is what the approval activities need of the API side:
// settle an expiry, and run an approved call once (the API re-dispatches
// the stored request through its route table: POST
// /internal/approvals/:id/execute, or in process under svc dev).
// internal/app wires it.
type ApprovalRunner interface {
	ExpireApproval(ctx context.Context, workspace, id string) (flows.ApprovalStatus, error)
	ExecuteApproval(ctx context.Context, workspace, id string) (flows.ApprovalExecuted, error)
}

// ExpireApproval settles a pending approval as expired at its timer and
// answers its status after (a decision recorded meanwhile stands).
func (a *Activities) ExpireApproval(ctx context.Context, ref flows.ApprovalRef) (flows.ApprovalSettled, error) {
	if a.Approvals == nil {
		return flows.ApprovalSettled{}, temporal.NewNonRetryableApplicationError("this worker has no approvals wiring", "Unavailable", nil)
	}
	st, err := a.Approvals.ExpireApproval(ctx, ref.Workspace, ref.ID)
	return flows.ApprovalSettled{Status: st}, err
}

// ExecuteApproval runs an approved call once; a retry gets the stored
// result.
func (a *Activities) ExecuteApproval(ctx context.Context, ref flows.ApprovalRef) (flows.ApprovalExecuted, error) {
	if a.Approvals == nil {
		return flows.ApprovalExecuted{}, temporal.NewNonRetryableApplicationError("this worker has no approvals wiring", "Unavailable", nil)
	}
	return a.Approvals.ExecuteApproval(ctx, ref.Workspace, ref.ID)
}
