package traces

import (
	"context"
	"errors"
	"fmt"
	"time"

	"svc/internal/domain/eval"
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
// received but not sealed yet: a NOT_FOUND (there is no trajectory yet)
// saying how many spans wait and when they are sealed.
type PendingError struct {
	RunID string
	// Spans received so far, and when the last one was.
	Spans        int
	LastReceived time.Time
	// External: no run of the workspace; the trajectory is sealed at
	// SealsAt, the end of the idle window (IdleWindow after the last
	// span), by the next sweep. A run's spans are sealed when the run
	// ends (RunStatus is its status now).
	External   bool
	IdleWindow time.Duration
	SealsAt    time.Time
	RunStatus  string
}

func (e *PendingError) Error() string {
	if !e.External {
		return fmt.Sprintf("run %s is %s: its trajectory is sealed when it ends, with the %d span(s) received so far (the last at %s); read GET /runs/%s/trajectory then",
			e.RunID, e.RunStatus, e.Spans, e.LastReceived.Format(time.RFC3339), e.RunID)
	}
	return fmt.Sprintf("trajectory %s is not sealed yet: %d span(s) received, the last at %s; it is sealed once no span arrives for %s (SVC_INGEST_IDLE_WINDOW), at %s or within a minute after (the trace sweep runs every minute); a pull from the svc source waits for it",
		e.RunID, e.Spans, e.LastReceived.Format(time.RFC3339), e.IdleWindow, e.SealsAt.Format(time.RFC3339))
}

// Unwrap makes a PendingError a derrors.ErrNotFound: no trajectory yet.
func (e *PendingError) Unwrap() error { return derrors.ErrNotFound }

// ErrorDetails are the facts of e for the error body's details (derrors.Details).
func (e *PendingError) ErrorDetails() map[string]any {
	d := map[string]any{"pending": true, "runId": e.RunID, "spans": e.Spans, "lastReceivedAt": e.LastReceived}
	if e.External {
		d["sealsAt"], d["idleWindowSeconds"] = e.SealsAt, e.IdleWindow.Seconds()
	} else {
		d["runStatus"] = e.RunStatus
	}
	return d
}

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
