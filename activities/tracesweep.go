package activities

import (
	"context"

	"svc/internal/domain/flows"
)

// SweepTraces is one run of the trace sweep (traceingest.Service.Sweep):
// it seals the external trajectories of the OTLP door whose spans have
// been idle for the idle window, drops the pending spans of ended runs
// and deletes trajectories past their retention.
func (a *Activities) SweepTraces(ctx context.Context) (flows.TraceSweepOutput, error) {
	ingest, err := a.traceIngest()
	if err != nil {
		return flows.TraceSweepOutput{}, err
	}
	rep, err := ingest.Sweep(ctx)
	if err != nil {
		return flows.TraceSweepOutput{}, err
	}
	if rep.Sealed+rep.Dropped+rep.Expired > 0 {
		a.logger().InfoContext(ctx, "trace sweep", append(activityAttrs(ctx), "sealed", rep.Sealed, "dropped", rep.Dropped,
			"expired", rep.Expired, "crossings", rep.Crossings)...)
	}
	return flows.TraceSweepOutput{Sealed: rep.Sealed, Dropped: rep.Dropped, Expired: rep.Expired}, nil
}
