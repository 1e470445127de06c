package traces

import (
	"context"
	"errors"
	"time"

	"svc/internal/domain/eval"
	"svc/internal/domain/trace"
	"svc/internal/platform/derrors"
)

// Spans wait unsealed before they are a trajectory: an external
// trajectory's until no span arrived for the idle window and the sweep
// (every minute) seals it, a run's until the run ends. Until then GET
// /trajectories/:id finds no trajectory; PendingError says what waits and
// when it seals, and a pull from the ledger waits for it (SealIdle seals
// it as soon as its idle window is over, without waiting for the sweep).

// SweepInterval is how often the trace sweep runs (its cron schedule).
const SweepInterval = time.Minute

// PendingError is the answer for a trajectory id whose spans are
// received but not sealed yet (the domain's trace.PendingError, which the
// worker names too).
type PendingError = trace.PendingError

// Pending returns a *PendingError when spans of the trajectory id wait
// unsealed in workspace and viewer, who reads the team audiences teams
// (identity.TeamAudiences), may see them (another member's personal run,
// or another team's, reads as nothing waiting), else nil. It is what GET
// /trajectories/:id answers for an id with no sealed trajectory, and what
// a pull from the ledger waits for.
func (s *Service) Pending(ctx context.Context, workspace, viewer string, teams []string, id string) (*PendingError, error) {
	g, err := s.o.Store.GetPendingGroup(ctx, workspace, id)
	if errors.Is(err, derrors.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	pe := &PendingError{RunID: id, Spans: g.Spans, LastReceived: g.LastReceived.UTC(), External: g.External, IdleWindow: s.o.IdleWindow}
	if g.External {
		pe.SealsAt = pe.LastReceived.Add(s.o.IdleWindow)
		return pe, nil
	}
	row, err := s.o.Store.GetRun(ctx, workspace, id)
	switch {
	case errors.Is(err, derrors.ErrNotFound):
		return nil, nil // the run is gone: the sweep drops its spans
	case err != nil:
		return nil, err
	case !eval.VisibleTo(row.Audience, viewer, teams), eval.Status(row.Status).Terminal():
		// Another member's; or ended, its trajectory sealed, and these
		// late spans are dropped by the sweep.
		return nil, nil
	}
	pe.RunStatus = row.Status
	return pe, nil
}

// SealIdle seals the external trajectory id of workspace now if its idle
// window is over, as the next sweep would, and reports whether it did
// (false when nothing waits, the window is still open, or the spans are
// a run's, sealed when it ends).
func (s *Service) SealIdle(ctx context.Context, workspace, id string) (bool, error) {
	g, err := s.o.Store.GetPendingGroup(ctx, workspace, id)
	if errors.Is(err, derrors.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	now := s.now()
	if !g.External || now.Before(g.LastReceived.Add(s.o.IdleWindow)) {
		return false, nil
	}
	var rep SweepReport
	if err := s.sweepGroup(ctx, g, now, &rep); err != nil {
		return false, err
	}
	return rep.Sealed > 0, nil
}

// IdleWindow is SVC_INGEST_IDLE_WINDOW as the service applies it.
func (s *Service) IdleWindow() time.Duration { return s.o.IdleWindow }
