package orchestration_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/interceptor"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"svc/internal/orchestration"
	"svc/internal/platform/derrors"
)

func TestActivityError(t *testing.T) {
	var notFound error = derrors.NotFoundf("dataset %s", "d@1")
	derrors.Wrap(&notFound, `Store.ListDatasetCases(ctx, "default", "d"@"1")`)
	var conflict error = derrors.Conflictf("scorecard s is at version 3, not 2")
	derrors.Wrap(&conflict, `Store.PutScorecard(ctx, "s")`)
	var down error = fmt.Errorf("%w: dial tcp: connection refused", derrors.ErrUnavailable)
	derrors.Wrap(&down, "Store.GetRun(ctx)")
	tests := []struct {
		name         string
		err          error
		wantMsg      string
		wantType     string
		nonRetryable bool
	}{
		{"not found is not retried", notFound, "not found: dataset d@1", "NotFound", true},
		{"invalid is not retried", fmt.Errorf("case c1: %w", derrors.Invalidf("bad grader")), "case c1: invalid argument: bad grader", "Invalid", true},
		{"a conflict is retried: another writer got there first", conflict, "conflict: scorecard s is at version 3, not 2", "Conflict", false},
		{"unavailable is retried", down, "unavailable: dial tcp: connection refused", "Unavailable", false},
		{"an unknown error is retried", errors.New("disk full"), "disk full", "Internal", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var ae *temporal.ApplicationError
			if !errors.As(orchestration.ActivityError(tt.err), &ae) {
				t.Fatalf("ActivityError(%v) is not an application error", tt.err)
			}
			if ae.Message() != tt.wantMsg || ae.Type() != tt.wantType || ae.NonRetryable() != tt.nonRetryable {
				t.Errorf("ActivityError = (%q, %q, non-retryable %v), want (%q, %q, %v)",
					ae.Message(), ae.Type(), ae.NonRetryable(), tt.wantMsg, tt.wantType, tt.nonRetryable)
			}
		})
	}
}

func TestActivityErrorKeepsWhatTheSDKReads(t *testing.T) {
	own := temporal.NewNonRetryableApplicationError("case c1 is not in dataset d", "CaseMissing", nil)
	cancelled := fmt.Errorf("running case c1: %w", context.Canceled)
	for _, err := range []error{nil, own, cancelled, activity.ErrResultPending, temporal.NewCanceledError()} {
		if got := orchestration.ActivityError(err); got != err {
			t.Errorf("ActivityError(%v) = %v, want it unchanged", err, got)
		}
	}

	// An application error an activity made keeps its message, type and
	// retry flag; a plain cause under it is rewritten.
	var cause error = derrors.NotFoundf("rubric r@1")
	derrors.Wrap(&cause, "Registries.Resolve(ctx)")
	got := orchestration.ActivityError(temporal.NewApplicationErrorWithCause("judging case c1 failed", "JudgesPhase", cause))
	var ae *temporal.ApplicationError
	if !errors.As(got, &ae) || ae.Message() != "judging case c1 failed" || ae.Type() != "JudgesPhase" || ae.NonRetryable() {
		t.Fatalf("ActivityError = %v, want the judges error as it was", got)
	}
	var inner *temporal.ApplicationError
	if !errors.As(ae.Unwrap(), &inner) || inner.Message() != "not found: rubric r@1" {
		t.Errorf("cause = %v, want an application error reading %q", ae.Unwrap(), "not found: rubric r@1")
	}
}

// TestActivityErrorsInterceptor runs an activity that fails with a
// not-found store error through a worker with the interceptor: it is tried
// once, not five times, and the workflow reads the message without the
// store's call.
func TestActivityErrorsInterceptor(t *testing.T) {
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	env.SetWorkerOptions(worker.Options{Interceptors: []interceptor.WorkerInterceptor{orchestration.ActivityErrors()}})
	calls := 0
	read := func(ctx context.Context) error {
		calls++
		var err error = derrors.NotFoundf("dataset %s", "d@1")
		derrors.Wrap(&err, `Store.ListDatasetCases(ctx, "default", "d"@"1")`)
		return err
	}
	env.RegisterActivityWithOptions(read, activity.RegisterOptions{Name: "ReadCases"})
	env.ExecuteWorkflow(func(ctx workflow.Context) error {
		ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
			StartToCloseTimeout: time.Minute,
			RetryPolicy:         &temporal.RetryPolicy{InitialInterval: time.Second, MaximumAttempts: 5},
		})
		return workflow.ExecuteActivity(ctx, "ReadCases").Get(ctx, nil)
	})
	err := env.GetWorkflowError()
	var ae *temporal.ApplicationError
	if !errors.As(err, &ae) {
		t.Fatalf("workflow error = %v, want an application error", err)
	}
	if calls != 1 {
		t.Errorf("the activity ran %d times, want 1: a not-found cannot succeed on retry", calls)
	}
	if want := "not found: dataset d@1"; ae.Message() != want || !ae.NonRetryable() {
		t.Errorf("activity error = (%q, non-retryable %v), want (%q, true)", ae.Message(), ae.NonRetryable(), want)
	}
}
