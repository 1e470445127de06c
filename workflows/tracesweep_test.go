package workflows

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/mock"
	"go.temporal.io/sdk/testsuite"

	"svc/activities"
	"svc/internal/domain/flows"
)

func newSweepEnv(t *testing.T) *testsuite.TestWorkflowEnvironment {
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	env.RegisterWorkflow(TraceSweepWorkflow)
	env.RegisterActivity(&activities.Activities{})
	t.Cleanup(func() { env.AssertExpectations(t) })
	return env
}

func TestTraceSweepRunsTheSweepOnce(t *testing.T) {
	env := newSweepEnv(t)
	want := flows.TraceSweepOutput{Sealed: 2, Expired: 1}
	env.OnActivity(a.SweepTraces, mock.Anything).Return(want, nil).Once()
	env.ExecuteWorkflow(TraceSweepWorkflow)
	if err := env.GetWorkflowError(); err != nil {
		t.Fatalf("workflow error: %v", err)
	}
	var got flows.TraceSweepOutput
	if err := env.GetWorkflowResult(&got); err != nil || got != want {
		t.Errorf("result = %+v, %v; want %+v", got, err, want)
	}
}

func TestTraceSweepFailureFailsTheRun(t *testing.T) {
	env := newSweepEnv(t)
	// Retried by its options, then the cron's next run tries again.
	env.OnActivity(a.SweepTraces, mock.Anything).Return(flows.TraceSweepOutput{}, errors.New("database down")).Times(3)
	env.ExecuteWorkflow(TraceSweepWorkflow)
	if env.GetWorkflowError() == nil {
		t.Error("workflow succeeded, want the sweep's error")
	}
}
