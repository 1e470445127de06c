package workflows

import (
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"svc/internal/domain/flows"
)

// approvalOptions settle or run an approval: retried until they land (the
// API may be restarting), for a day at most.
var approvalOptions = workflow.ActivityOptions{
	ScheduleToCloseTimeout: 24 * time.Hour,
	StartToCloseTimeout:    2 * time.Minute,
	RetryPolicy:            &temporal.RetryPolicy{InitialInterval: time.Second, MaximumInterval: 30 * time.Second},
}

// ApprovalWorkflow owns a parked call (flows.ApprovalWorkflow): it waits
// for the decide signal or the expiry, whichever comes first, using no
// compute meanwhile. The timer asks the store (ExpireApproval), which
// settles a still pending approval as expired and otherwise answers the
// decision recorded (so a lost signal only delays the run to the expiry).
// An approved call runs once through ExecuteApproval.
func ApprovalWorkflow(ctx workflow.Context, in flows.ApprovalInput) (flows.ApprovalOutcome, error) {
	ctx = workflow.WithActivityOptions(ctx, approvalOptions)
	var status flows.ApprovalStatus
	decide := workflow.GetSignalChannel(ctx, flows.SignalApprovalDecide)
	tctx, cancelTimer := workflow.WithCancel(ctx)
	timer := workflow.NewTimer(tctx, max(in.ExpiresAt.Sub(workflow.Now(ctx)), time.Millisecond))
	sel := workflow.NewSelector(ctx)
	sel.AddReceive(decide, func(c workflow.ReceiveChannel, _ bool) {
		var d flows.ApprovalDecision
		c.Receive(ctx, &d)
		status = d.Status
	})
	sel.AddFuture(timer, func(workflow.Future) {})
	sel.Select(ctx)
	cancelTimer()
	// A signal after the first decision (a second decide, or one racing the
	// expiry) changes nothing: the store settled the approval once. It is
	// drained on the way out so the workflow does not end with it pending.
	defer func() {
		for decide.ReceiveAsync(nil) {
		}
	}()
	ref := flows.ApprovalRef{Workspace: in.Workspace, ID: in.ID}
	if status == "" {
		var settled flows.ApprovalSettled
		if err := workflow.ExecuteActivity(ctx, flows.ActivityExpireApproval, ref).Get(ctx, &settled); err != nil {
			return flows.ApprovalOutcome{}, err
		}
		status = settled.Status
	}
	out := flows.ApprovalOutcome{Status: status}
	if status != flows.ApprovalApproved {
		return out, nil
	}
	var ex flows.ApprovalExecuted
	if err := workflow.ExecuteActivity(ctx, flows.ActivityExecuteApproval, ref).Get(ctx, &ex); err != nil {
		return out, err
	}
	out.Executed = &ex
	return out, nil
}
