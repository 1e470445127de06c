package orchestration

import (
	"context"
	"errors"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/interceptor"
	"go.temporal.io/sdk/temporal"

	"svc/internal/platform/derrors"
)

// ActivityErrors is the worker interceptor that gives every error an
// activity returns its one form before it crosses into a workflow's
// history, where workflows write it into records and steps:
//
//   - its message is derrors.Message(err): no internal call chain
//     ("Store.ListDatasetCases(ctx, ...)") reaches a record; the chain is
//     logged here through the activity's logger (the client's, see Dial),
//     which tags the workflow id, the activity and its attempt;
//   - an error of a permanent kind (derrors.Permanent: not found, invalid,
//     forbidden) is non-retryable, so Temporal does not try five times what
//     cannot succeed; other errors stay retryable, as before;
//   - its type is the kind's name ("NotFound", "Invalid", "Internal").
//
// Errors the SDK reads itself pass unchanged: cancellation, a pending
// result, Temporal's own error types. An application error an activity made
// keeps its message, type and retry flag; only a plain error under it (its
// cause) is rewritten the same way.
func ActivityErrors() interceptor.WorkerInterceptor { return &activityErrors{} }

type activityErrors struct {
	interceptor.WorkerInterceptorBase
}

func (w *activityErrors) InterceptActivity(ctx context.Context, next interceptor.ActivityInboundInterceptor) interceptor.ActivityInboundInterceptor {
	i := &activityErrorsInbound{}
	i.Next = next
	return i
}

type activityErrorsInbound struct {
	interceptor.ActivityInboundInterceptorBase
}

func (a *activityErrorsInbound) ExecuteActivity(ctx context.Context, in *interceptor.ExecuteActivityInput) (any, error) {
	res, err := a.Next.ExecuteActivity(ctx, in)
	if err == nil {
		return res, nil
	}
	out := ActivityError(err)
	if out != err {
		// The SDK's activity logger tags WorkflowID, RunID, ActivityType
		// and Attempt.
		activity.GetLogger(ctx).Warn("activity failed", "error", err.Error(), "retryable", !nonRetryable(out))
	}
	return res, out
}

// nonRetryable reports whether err, as ActivityError returns it, says not
// to retry.
func nonRetryable(err error) bool {
	var ae *temporal.ApplicationError
	return errors.As(err, &ae) && ae.NonRetryable()
}

// ActivityError is err as an activity returns it to Temporal (see
// ActivityErrors); err itself when it is already in a form the SDK reads.
func ActivityError(err error) error {
	switch e := err.(type) {
	case nil:
		return nil
	case *temporal.ApplicationError:
		cause := errors.Unwrap(e)
		if cause == nil || isTemporal(cause) || e.HasDetails() {
			return e
		}
		return temporal.NewApplicationErrorWithOptions(e.Message(), e.Type(), temporal.ApplicationErrorOptions{
			NonRetryable: e.NonRetryable(), Cause: ActivityError(cause),
			NextRetryDelay: e.NextRetryDelay(), Category: e.Category(),
		})
	}
	if isTemporal(err) || errors.Is(err, activity.ErrResultPending) ||
		errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return temporal.NewApplicationErrorWithOptions(derrors.Message(err), derrors.KindName(err),
		temporal.ApplicationErrorOptions{NonRetryable: derrors.Permanent(err)})
}

// isTemporal reports whether err is one of the SDK's own error types,
// whose form the SDK reads (a cancel, a timeout, a panic, ...).
func isTemporal(err error) bool {
	var (
		ae *temporal.ApplicationError
		ce *temporal.CanceledError
		te *temporal.TimeoutError
		pe *temporal.PanicError
	)
	switch {
	case errors.As(err, &ae), errors.As(err, &ce), errors.As(err, &te), errors.As(err, &pe):
		return true
	}
	return false
}
