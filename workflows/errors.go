package workflows

import (
	"errors"
	"strings"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/temporal"

	"svc/internal/domain/flows"
	"svc/internal/platform/derrors"
)

// errorType is the type of the outermost application error in err's
// chain, "" when there is none.
func errorType(err error) flows.ErrorType {
	var ae *temporal.ApplicationError
	if !errors.As(err, &ae) {
		return ""
	}
	return flows.ErrorType(ae.Type())
}

// failureMessage is what a record's error or a step says of a failed
// activity: the application errors' own messages, outermost first, without
// Temporal's wrapping ("activity error (type: RunCases, scheduledEventID:
// 11, ..., identity: 16480@vm@)") or its annotations ("(type: NotFound,
// retryable: false)"), and without the internal operations derrors.Wrap
// added. The worker's interceptor (orchestration.ActivityErrors) already
// gives an activity's error its derrors.Message; the full chain is in the
// worker's log under the workflow id.
func failureMessage(err error) string {
	var parts []string
	for e := err; e != nil; {
		var next error // the cause to read after e, when e is Temporal's
		switch x := e.(type) {
		case *temporal.ActivityError:
			next = x.Unwrap()
		case *temporal.ChildWorkflowExecutionError:
			next = x.Unwrap()
		case *temporal.ApplicationError:
			parts = append(parts, x.Message())
			next = x.Unwrap()
		case *temporal.TimeoutError:
			parts = append(parts, timeoutText(x.TimeoutType()))
			next = x.Unwrap()
		case *temporal.CanceledError:
			parts = append(parts, "cancelled")
		case *temporal.PanicError:
			parts = append(parts, "the activity panicked; the worker's log has its stack")
		case *temporal.TerminatedError:
			parts = append(parts, "terminated")
		default:
			parts = append(parts, derrors.Message(x))
		}
		e = next
	}
	return strings.Join(parts, ": ")
}

// timeoutText words an activity's timeout for a record.
func timeoutText(t enumspb.TimeoutType) string {
	switch t {
	case enumspb.TIMEOUT_TYPE_HEARTBEAT:
		return "the activity stopped heartbeating (its worker stopped or died)"
	case enumspb.TIMEOUT_TYPE_SCHEDULE_TO_START:
		return "no worker took the activity in time"
	case enumspb.TIMEOUT_TYPE_START_TO_CLOSE, enumspb.TIMEOUT_TYPE_SCHEDULE_TO_CLOSE:
		return "the activity ran past its time limit"
	}
	return "the activity timed out"
}
