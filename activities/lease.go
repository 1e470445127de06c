package activities

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"
)

// An activity that runs jobs holds a lease on its task: its heartbeat. The
// SDK's own heartbeat (activity.RecordHeartbeat) cancels the activity's
// context when one heartbeat round trip is slower than its throttle
// interval, and such a context cannot heartbeat again, so on a busy host a
// healthy activity lost its cases (measured: heartbeats of 0.3 to 2 s while
// 64 harnesses saturated both cores). keepLease heartbeats through the
// client instead, with the task token, on a context of its own, and tells a
// cancel that someone asked for apart from a lost lease:
//
//   - the workflow asked to cancel (the run or its batch was cancelled):
//     the jobs are killed and recorded as cancelled;
//   - the server no longer knows the attempt (it timed it out, or another
//     attempt took over), or no heartbeat got through for the whole
//     heartbeat timeout, or the worker is stopping: the jobs are killed and
//     nothing is recorded, so that the next attempt runs the cases again;
//   - a slow or failed round trip otherwise: nothing happens, the next tick
//     tries again.

// leaseBeat is how often a lease heartbeats; leaseRPCTimeout bounds one
// round trip.
const (
	leaseBeat       = time.Second
	leaseRPCTimeout = 4 * time.Second
)

// leaseLost is the text that begins the cause of a lease context that
// ended because the attempt lost its task. Nothing matches on it (the
// dispatch tells a lost lease from a cancel by temporal.CanceledError), so
// it is words for the log, not a sentinel.
const leaseLost = "the activity attempt lost its lease"

type leaseKey struct{}

// keepLease returns a context for the activity's work that ends as the
// package comment above says, and a stop function to call when the work is
// done. details, when not nil, is sent with each heartbeat. Outside an
// activity (unit tests) it returns ctx as it is.
func keepLease(actx context.Context, details func() any) (context.Context, func()) {
	if !activity.IsActivity(actx) || actx.Value(leaseKey{}) != nil {
		return actx, func() {}
	}
	info := activity.GetInfo(actx)
	timeout := info.HeartbeatTimeout
	if timeout <= 0 {
		return actx, func() {}
	}
	c := activity.GetClient(actx)
	ctx, cancel := context.WithCancelCause(context.WithValue(context.WithoutCancel(actx), leaseKey{}, true))
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(leaseBeat)
		defer t.Stop()
		lastOK := time.Now()
		for {
			select {
			case <-ctx.Done():
				return
			case <-actx.Done():
				// The SDK ends the activity's context when the worker stops
				// (or, if anything used the SDK's heartbeat, on its errors).
				cancel(fmt.Errorf("%s: %w", leaseLost, context.Cause(actx)))
				return
			case <-t.C:
			}
			var d []any
			if details != nil {
				d = []any{details()}
			}
			rctx, rcancel := context.WithTimeout(ctx, leaseRPCTimeout)
			err := c.RecordActivityHeartbeat(rctx, info.TaskToken, d...)
			rcancel()
			var (
				canceled *temporal.CanceledError
				notFound *serviceerror.NotFound
			)
			switch {
			case err == nil:
				lastOK = time.Now()
			case errors.As(err, &canceled):
				cancel(err)
				return
			case errors.As(err, &notFound):
				cancel(fmt.Errorf("%s: %w", leaseLost, err))
				return
			case time.Since(lastOK) > timeout:
				cancel(fmt.Errorf("%s: no heartbeat got through for %s: %w", leaseLost, timeout, err))
				return
			}
		}
	}()
	return ctx, func() {
		cancel(nil)
		<-done
	}
}

// heartbeat records a heartbeat through the SDK for an activity that holds
// no lease (a lease beats by itself).
func heartbeat(ctx context.Context, details ...any) {
	if ctx.Value(leaseKey{}) != nil || !activity.IsActivity(ctx) {
		return
	}
	activity.RecordHeartbeat(ctx, details...)
}
