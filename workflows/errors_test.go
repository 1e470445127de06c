package workflows

import (
	"errors"
	"strings"
	"testing"

	enumspb "go.temporal.io/api/enums/v1"
	failurepb "go.temporal.io/api/failure/v1"
	"go.temporal.io/sdk/temporal"

	"svc/internal/domain/flows"
	"svc/internal/platform/derrors"
)

// activityFailure is err as a workflow receives it from an activity that
// returned it: through the failure converter, inside Temporal's
// ActivityError, exactly as history carries it.
func activityFailure(t *testing.T, err error) error {
	t.Helper()
	fc := temporal.GetDefaultFailureConverter()
	f := &failurepb.Failure{
		Message: "activity error",
		FailureInfo: &failurepb.Failure_ActivityFailureInfo{ActivityFailureInfo: &failurepb.ActivityFailureInfo{
			ScheduledEventId: 11, StartedEventId: 12, Identity: "16480@vm@", ActivityId: "5",
			RetryState: enumspb.RETRY_STATE_NON_RETRYABLE_FAILURE,
		}},
		Cause: fc.ErrorToFailure(err),
	}
	got := fc.FailureToError(f)
	var ae *temporal.ActivityError
	if !errors.As(got, &ae) {
		t.Fatalf("converted failure is %T, want an *ActivityError", got)
	}
	return got
}

func TestFailureMessage(t *testing.T) {
	var opErr error = derrors.NotFoundf("dataset %s", "d@1")
	derrors.Wrap(&opErr, `Store.ListDatasetCases(ctx, "default", "d"@"1")`)
	tests := []struct {
		name string
		err  error
		want string
	}{
		{"an application error as the worker's interceptor makes it",
			activityFailure(t, temporal.NewNonRetryableApplicationError("not found: dataset d@1", "NotFound", nil)),
			"not found: dataset d@1"},
		{"a plain error from a worker without the interceptor keeps its text, less the operations",
			opErr, "not found: dataset d@1"},
		{"an application error with a cause",
			activityFailure(t, temporal.NewApplicationErrorWithCause("judging case c1 failed", "JudgesPhase",
				temporal.NewApplicationError("rubric r@1 is gone", "NotFound"))),
			"judging case c1 failed: rubric r@1 is gone"},
		{"a workflow's own application error around an activity's",
			temporal.NewApplicationErrorWithCause("judging failed", string(flows.JudgesPhase),
				activityFailure(t, temporal.NewApplicationError("model m answered 401", "Invalid"))),
			"judging failed: model m answered 401"},
		{"a heartbeat timeout",
			activityFailure(t, temporal.NewHeartbeatTimeoutError()),
			"the activity stopped heartbeating (its worker stopped or died)"},
		{"cancelled", activityFailure(t, temporal.NewCanceledError()), "cancelled"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := failureMessage(tt.err)
			if got != tt.want {
				t.Errorf("failureMessage = %q, want %q (from %q)", got, tt.want, tt.err.Error())
			}
			for _, internal := range []string{"(ctx", "activity error", "scheduledEventID", "16480@vm@", "retryable:"} {
				if strings.Contains(got, internal) {
					t.Errorf("failureMessage = %q keeps %q", got, internal)
				}
			}
		})
	}
}
