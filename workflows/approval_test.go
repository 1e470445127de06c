package workflows

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"svc/activities"
	"svc/internal/domain/flows"
)

// Unit tests of ApprovalWorkflow with the SDK's test environment (its
// clock skips ahead, so an hour's expiry takes no time): a decide signal
// settles it (approve runs the call once, deny runs nothing), the expiry
// timer asks the store (expired runs nothing; a decision the store holds
// but whose signal was lost still runs), and a signal after the first
// decision, or after the expiry, changes nothing. The history replayed
// in replay_test.go comes from a real approval
// (TestRecordApprovalHistories, approval_integration_test.go).

var apStart = time.Date(2026, 3, 4, 10, 0, 0, 0, time.UTC)

func apInput() flows.ApprovalInput {
	return flows.ApprovalInput{Workspace: "ws", ID: "ap_1", ExpiresAt: apStart.Add(time.Hour)}
}

func apRef() flows.ApprovalRef { return flows.ApprovalRef{Workspace: "ws", ID: "ap_1"} }

func newApprovalEnv(t *testing.T) *testsuite.TestWorkflowEnvironment {
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	env.SetStartTime(apStart)
	env.RegisterWorkflowWithOptions(ApprovalWorkflow, workflow.RegisterOptions{Name: flows.ApprovalWorkflow})
	env.RegisterActivity(&activities.Activities{})
	t.Cleanup(func() { env.AssertExpectations(t) })
	return env
}

func apOutcome(t *testing.T, env *testsuite.TestWorkflowEnvironment) flows.ApprovalOutcome {
	t.Helper()
	if !env.IsWorkflowCompleted() {
		t.Fatal("the workflow did not complete")
	}
	if err := env.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	var out flows.ApprovalOutcome
	if err := env.GetWorkflowResult(&out); err != nil {
		t.Fatal(err)
	}
	return out
}

func decideAfter(env *testsuite.TestWorkflowEnvironment, d time.Duration, status flows.ApprovalStatus) {
	env.RegisterDelayedCallback(func() {
		env.SignalWorkflow(flows.SignalApprovalDecide, flows.ApprovalDecision{Status: status, DecidedBy: "alice"})
	}, d)
}

// TestApprovalWorkflowApproveRunsOnce: approve runs the call once through
// ExecuteApproval, and a later deny (a second signal) changes nothing.
func TestApprovalWorkflowApproveRunsOnce(t *testing.T) {
	env := newApprovalEnv(t)
	env.OnActivity(a.ExecuteApproval, mock.Anything, apRef()).Return(flows.ApprovalExecuted{Status: 201, Resumed: true}, nil).Once()
	decideAfter(env, time.Minute, flows.ApprovalApproved)
	decideAfter(env, time.Minute, flows.ApprovalDenied)
	env.ExecuteWorkflow(flows.ApprovalWorkflow, apInput())
	out := apOutcome(t, env)
	if out.Status != flows.ApprovalApproved || out.Executed == nil || out.Executed.Status != 201 || !out.Executed.Resumed {
		t.Errorf("outcome %+v, want approved, run once (201, resumed)", out)
	}
}

// TestApprovalWorkflowDenyRunsNothing: a denial ends the workflow without
// running or expiring anything.
func TestApprovalWorkflowDenyRunsNothing(t *testing.T) {
	env := newApprovalEnv(t)
	decideAfter(env, time.Minute, flows.ApprovalDenied)
	env.ExecuteWorkflow(flows.ApprovalWorkflow, apInput())
	if out := apOutcome(t, env); out.Status != flows.ApprovalDenied || out.Executed != nil {
		t.Errorf("outcome %+v, want denied, nothing run", out)
	}
}

// TestApprovalWorkflowExpiry: with no decision the timer fires at
// ExpiresAt and asks the store, which settles it expired (whether the
// policy says deny or halt is the store's: the workflow runs nothing
// either way); an approve signal arriving while the expiry is being
// settled is ignored.
func TestApprovalWorkflowExpiry(t *testing.T) {
	env := newApprovalEnv(t)
	var at time.Time
	env.OnActivity(a.ExpireApproval, mock.Anything, apRef()).Return(func(ctx context.Context, _ flows.ApprovalRef) (flows.ApprovalSettled, error) {
		at = env.Now()
		return flows.ApprovalSettled{Status: flows.ApprovalExpired}, nil
	}).After(time.Minute).Once()
	decideAfter(env, time.Hour+time.Second, flows.ApprovalApproved)
	env.ExecuteWorkflow(flows.ApprovalWorkflow, apInput())
	if out := apOutcome(t, env); out.Status != flows.ApprovalExpired || out.Executed != nil {
		t.Errorf("outcome %+v, want expired, nothing run", out)
	}
	if at.Before(apStart.Add(time.Hour)) {
		t.Errorf("the expiry was settled at %s, before ExpiresAt %s", at, apStart.Add(time.Hour))
	}
}

// TestApprovalWorkflowLostSignal: a decision recorded in the store whose
// signal never arrived is found at the timer, and an approved call still
// runs once.
func TestApprovalWorkflowLostSignal(t *testing.T) {
	env := newApprovalEnv(t)
	env.OnActivity(a.ExpireApproval, mock.Anything, apRef()).Return(flows.ApprovalSettled{Status: flows.ApprovalApproved}, nil).Once()
	env.OnActivity(a.ExecuteApproval, mock.Anything, apRef()).Return(flows.ApprovalExecuted{Status: 204, Resumed: true}, nil).Once()
	env.ExecuteWorkflow(flows.ApprovalWorkflow, apInput())
	if out := apOutcome(t, env); out.Status != flows.ApprovalApproved || out.Executed == nil || out.Executed.Status != 204 {
		t.Errorf("outcome %+v, want approved and run once", out)
	}
}

// TestApprovalWorkflowPastExpiry: an input whose expiry has passed (the
// API was slow to start it) settles at once rather than waiting.
func TestApprovalWorkflowPastExpiry(t *testing.T) {
	env := newApprovalEnv(t)
	env.OnActivity(a.ExpireApproval, mock.Anything, apRef()).Return(flows.ApprovalSettled{Status: flows.ApprovalExpired}, nil).Once()
	in := apInput()
	in.ExpiresAt = apStart.Add(-time.Minute)
	env.ExecuteWorkflow(flows.ApprovalWorkflow, in)
	if out := apOutcome(t, env); out.Status != flows.ApprovalExpired {
		t.Errorf("outcome %+v, want expired", out)
	}
}
