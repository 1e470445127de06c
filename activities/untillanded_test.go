package activities

import (
	"context"
	"errors"
	"testing"

	"go.temporal.io/sdk/temporal"

	"svc/internal/orchestration"
	"svc/internal/platform/derrors"
)

// TestRecordEndsAreRetriedUntilTheyLand: the worker makes a not-found or an
// invalid non-retryable, but an activity that writes a record's end keeps
// its error retryable, so its last attempts' fallbacks (phase offload,
// phase persist) are reached and nothing is left running; the message
// stays the one a record may show.
func TestRecordEndsAreRetriedUntilTheyLand(t *testing.T) {
	var op error = &derrors.Op{Op: "Store.PutAnalysis(ctx, \"ws\", \"sc-1\")", Err: derrors.NotFoundf("no such record")}
	for _, tc := range []struct {
		name          string
		err           error
		wantRetryable bool
	}{
		{"a store not-found", op, true},
		{"an invalid", derrors.Invalidf("bad"), true},
		{"a plain error", errors.New("boom"), true},
		{"an application error made on purpose", temporal.NewNonRetryableApplicationError("stop", "Stop", nil), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.err
			untilLanded(&err)
			out := orchestration.ActivityError(err)
			var ae *temporal.ApplicationError
			if !errors.As(out, &ae) {
				t.Fatalf("ActivityError = %T %v, want an application error", out, out)
			}
			if ae.NonRetryable() == tc.wantRetryable {
				t.Errorf("non-retryable = %v, want retryable %v", ae.NonRetryable(), tc.wantRetryable)
			}
			if tc.err == op && ae.Message() != "not found: no such record" {
				t.Errorf("message %q still names the store's call", ae.Message())
			}
		})
	}
	var err error = context.Canceled
	untilLanded(&err)
	if err != context.Canceled {
		t.Errorf("a cancel became %v", err)
	}
}
