package trace

import (
	"fmt"
	"time"

	"svc/internal/platform/derrors"
)

// PendingError is the answer for a trajectory id whose spans are
// received but not sealed yet: a NOT_FOUND (there is no trajectory yet)
// saying how many spans wait and when they are sealed. The trace service
// answers it (GET /trajectories/:id) and a pull from the ledger waits on
// it.
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

// SweepReport says what one trace sweep did.
type SweepReport struct {
	Sealed      int `json:"sealed"`      // external trajectories sealed
	Dropped     int `json:"dropped"`     // groups of spans dropped (late for a sealed trajectory, or of a run that ended)
	Expired     int `json:"expired"`     // trajectories deleted past their retention
	Workspaces  int `json:"workspaces"`  // workspaces whose retention was applied
	Remaining   int `json:"remaining"`   // idle groups left for the next sweep
	Crossings   int `json:"crossings"`   // thresholds crossed by the sealed ones
	RunsPending int `json:"runsPending"` // idle groups of runs still running (sealed when they end)
}
