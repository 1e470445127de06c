package workflows

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"

	"svc/activities"
	"svc/internal/domain/flows"
)

// Unit tests of RunWorkflow's decisions with the SDK's test environment:
// activities are replaced by expectations, so each branch is exercised
// without a store or a driver. The end-to-end path with Temporal's real
// server is in integration_test.go.

func newRunEnv(t *testing.T) *testsuite.TestWorkflowEnvironment {
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	env.RegisterWorkflow(RunWorkflow)
	env.RegisterActivity(&activities.Activities{})
	t.Cleanup(func() { env.AssertExpectations(t) })
	return env
}

var a *activities.Activities

func ref() activities.RunRef { return activities.RunRef{Workspace: "ws", RunID: "run_1"} }

func TestRunWorkflowSucceedsAndDelivers(t *testing.T) {
	env := newRunEnv(t)
	env.OnActivity(a.DispatchRun, mock.Anything, ref()).Return(activities.RunStatus{Status: "succeeded", WebhookURL: "https://example.com/h"}, nil).Once()
	env.OnActivity(a.FinalizeRun, mock.Anything, ref()).Return(nil).Once()
	env.OnActivity(a.DeliverWebhook, mock.Anything, ref()).Return(nil).Once()
	env.ExecuteWorkflow(RunWorkflow, flows.RunInput{Workspace: "ws", RunID: "run_1", WebhookAttempts: 3})
	if !env.IsWorkflowCompleted() || env.GetWorkflowError() != nil {
		t.Fatalf("completed %v, error %v", env.IsWorkflowCompleted(), env.GetWorkflowError())
	}
	var out flows.RunOutput
	if err := env.GetWorkflowResult(&out); err != nil || out.Status != "succeeded" {
		t.Errorf("result %+v, %v", out, err)
	}
}

func TestRunWorkflowWithoutWebhook(t *testing.T) {
	env := newRunEnv(t)
	env.OnActivity(a.DispatchRun, mock.Anything, ref()).Return(activities.RunStatus{Status: "failed"}, nil).Once()
	env.OnActivity(a.FinalizeRun, mock.Anything, ref()).Return(nil).Once()
	env.ExecuteWorkflow(RunWorkflow, flows.RunInput{Workspace: "ws", RunID: "run_1"})
	if err := env.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	var out flows.RunOutput
	_ = env.GetWorkflowResult(&out)
	if out.Status != "failed" {
		t.Errorf("status %q, want failed", out.Status)
	}
}

// A dispatch that keeps failing (infrastructure) ends in FailRun, so the
// record is never left running, and the creator is still notified.
func TestRunWorkflowDispatchGivesUp(t *testing.T) {
	env := newRunEnv(t)
	env.OnActivity(a.DispatchRun, mock.Anything, ref()).Return(activities.RunStatus{}, errors.New("database unreachable")).Times(5)
	env.OnActivity(a.FailRun, mock.Anything, mock.MatchedBy(func(f activities.FailInput) bool {
		return f.RunRef == ref() && f.Code == "INTERNAL"
	})).Return(activities.RunStatus{Status: "failed", WebhookURL: "https://example.com/h"}, nil).Once()
	env.OnActivity(a.FinalizeRun, mock.Anything, ref()).Return(nil).Once()
	env.OnActivity(a.DeliverWebhook, mock.Anything, ref()).Return(nil).Once()
	env.ExecuteWorkflow(RunWorkflow, flows.RunInput{Workspace: "ws", RunID: "run_1"})
	if err := env.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
}

// A webhook that never lands is retried up to the attempts setting and
// does not fail the run's workflow; a refused destination is not retried.
func TestRunWorkflowWebhookRetries(t *testing.T) {
	for _, tc := range []struct {
		name  string
		err   error
		calls int
	}{
		{"receiver down", errors.New("receiver answered 503"), 4},
		{"refused", temporal.NewNonRetryableApplicationError("private address", string(flows.WebhookRefused), nil), 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := newRunEnv(t)
			env.OnActivity(a.DispatchRun, mock.Anything, ref()).Return(activities.RunStatus{Status: "succeeded", WebhookURL: "https://example.com/h"}, nil).Once()
			env.OnActivity(a.FinalizeRun, mock.Anything, ref()).Return(nil).Once()
			env.OnActivity(a.DeliverWebhook, mock.Anything, ref()).Return(tc.err).Times(tc.calls)
			env.ExecuteWorkflow(RunWorkflow, flows.RunInput{Workspace: "ws", RunID: "run_1", WebhookAttempts: 4})
			if err := env.GetWorkflowError(); err != nil {
				t.Fatalf("the workflow failed on an undelivered webhook: %v", err)
			}
		})
	}
}

// Cancelling the workflow while the case runs records the run cancelled,
// through activities that the cancel does not reach.
func TestRunWorkflowCancel(t *testing.T) {
	env := newRunEnv(t)
	env.OnActivity(a.DispatchRun, mock.Anything, ref()).Return(activities.RunStatus{}, nil).After(time.Hour)
	env.OnActivity(a.FailRun, mock.Anything, mock.MatchedBy(func(f activities.FailInput) bool {
		return f.Code == "CANCELLED"
	})).Return(activities.RunStatus{Status: "failed"}, nil).Once()
	env.OnActivity(a.FinalizeRun, mock.Anything, ref()).Return(nil).Once()
	env.RegisterDelayedCallback(env.CancelWorkflow, time.Minute)
	env.ExecuteWorkflow(RunWorkflow, flows.RunInput{Workspace: "ws", RunID: "run_1"})
	if !env.IsWorkflowCompleted() {
		t.Fatal("the workflow did not complete after cancel")
	}
}
