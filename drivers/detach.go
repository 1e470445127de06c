package drivers

import (
	"context"
	"errors"
)

// Detach returns the cause with which a caller cancels a remote driver's
// Run context (context.WithCancelCause) to give the job up without
// stopping it: the caller lost its hold on the work (its worker is
// stopping, its lease timed out) and a later Run of the same attempt will
// adopt the job. Run then returns an error wrapping why, leaving the job
// (and its secrets) in place for that Run. Any other cancel stops the job.
// Every remote driver (nomad, k8s, runner) reads the same cause, so the
// worker detaches a job with one cause whatever its driver; the local
// driver has no job to leave and stops it on any cancel.
func Detach(why error) error { return &detached{why: why} }

// detached is the cause Detach makes.
type detached struct{ why error }

func (e *detached) Error() string {
	const left = "the job was left for a later attempt to adopt"
	if e.why == nil {
		return left
	}
	return left + ": " + e.why.Error()
}

func (e *detached) Unwrap() error { return e.why }

// Detaching reports whether ctx ended with a cause made by Detach.
func Detaching(ctx context.Context) bool {
	var d *detached
	return errors.As(context.Cause(ctx), &d)
}
