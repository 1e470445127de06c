package activities

import (
	"context"
	"errors"
	"testing"

	"go.temporal.io/sdk/temporal"

	"svc/drivers"
)

// TestJobContext: a remote job's context ends with its activity's; when
// the attempt lost its lease (its worker is stopping, its heartbeats timed
// out) the cause is one drivers.Detach, which every remote driver (nomad,
// k8s, runner) reads to leave its job for the next attempt; when a cancel
// was requested it is not, and the driver stops the job.
func TestJobContext(t *testing.T) {
	lost := errors.New("the activity attempt lost its lease")
	for _, tc := range []struct {
		name   string
		cause  error
		detach bool
	}{
		{"lost lease", lost, true},
		{"cancel requested", temporal.NewCanceledError("cancelled"), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithCancelCause(t.Context())
			jctx, release := jobContext(ctx)
			defer release()
			cancel(tc.cause)
			<-jctx.Done()
			if got := drivers.Detaching(jctx); got != tc.detach {
				t.Errorf("drivers.Detaching = %v, want %v (cause %v)", got, tc.detach, context.Cause(jctx))
			}
			if !errors.Is(context.Cause(jctx), tc.cause) {
				t.Errorf("the job context's cause %v does not wrap the activity's %v", context.Cause(jctx), tc.cause)
			}
		})
	}
	t.Run("released", func(t *testing.T) {
		jctx, release := jobContext(t.Context())
		release()
		<-jctx.Done()
		if drivers.Detaching(jctx) {
			t.Error("drivers.Detaching after release = true, want false: a job that ended is not left to anyone")
		}
	})
}
