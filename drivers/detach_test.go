package drivers_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"svc/drivers"
)

// TestDetaching: a context ended with Detach's cause (even wrapped) is a
// detach, which every remote driver reads to leave its job for the next
// attempt; a plain cancel, or one with another cause, is not, and the
// driver stops the job. The cause keeps why, for Run's error and
// errors.Is.
func TestDetaching(t *testing.T) {
	lost := errors.New("the activity attempt lost its lease")
	for _, tc := range []struct {
		name  string
		cause error // nil: a plain cancel
		want  bool
	}{
		{"detach", drivers.Detach(lost), true},
		{"wrapped detach", fmt.Errorf("worker stopping: %w", drivers.Detach(lost)), true},
		{"detach without a why", drivers.Detach(nil), true},
		{"plain cancel", nil, false},
		{"other cause", lost, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithCancelCause(t.Context())
			if drivers.Detaching(ctx) {
				t.Fatal("Detaching of a live context = true, want false")
			}
			cancel(tc.cause)
			if got := drivers.Detaching(ctx); got != tc.want {
				t.Errorf("Detaching = %v, want %v", got, tc.want)
			}
		})
	}
	cause := drivers.Detach(lost)
	if !errors.Is(cause, lost) {
		t.Errorf("errors.Is(Detach(why), why) = false, want true")
	}
	if got, want := cause.Error(), "the job was left for a later attempt to adopt: "+lost.Error(); got != want {
		t.Errorf("Detach(why).Error() = %q, want %q", got, want)
	}
}
