package traceingest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"svc/derrors"
	"svc/eval"
	"svc/store"
	"svc/traces"
)

// SourceOTel is the source of a trajectory sealed from OTLP spans that
// belong to no run of the workspace (spec §2.10 Trajectory meta).
const SourceOTel = "otel"

// ThresholdEvent is the event type landed when a sealed trajectory
// crosses a bound (spec §6).
const ThresholdEvent = "trace.threshold_crossed"

// RunSpanEvents returns the events of the spans received for a run, in
// start order, for sealing with its SVC_TRACE_FILE events. A span whose
// stored event no longer decodes becomes an error event saying so.
func RunSpanEvents(ctx context.Context, st store.TraceIngest, workspace, runID string) ([]eval.TraceEvent, error) {
	spans, err := st.ListPendingSpans(ctx, workspace, runID)
	if err != nil {
		return nil, err
	}
	return spanEvents(spans), nil
}

func spanEvents(spans []store.PendingSpan) []eval.TraceEvent {
	events := make([]eval.TraceEvent, 0, len(spans))
	for _, sp := range spans {
		var e eval.TraceEvent
		if err := json.Unmarshal(sp.Event, &e); err != nil {
			e = eval.TraceEvent{Kind: eval.EventError, Code: "BAD_SPAN", Message: fmt.Sprintf("span %s could not be read back: %v", sp.Key, err)}
		}
		events = append(events, e)
	}
	traces.SortEvents(events)
	return events
}

// LandCrossings evaluates the workspace's thresholds on a trajectory just
// sealed and lands one trace.threshold_crossed per crossed bound, naming
// the run (or external trajectory) and the bound. Event ids are
// deterministic, so a retried seal lands nothing twice. processMs is a
// managed run's process time (0 for an external trajectory).
func LandCrossings(ctx context.Context, tx store.Tx, workspace, runID, source string, events []eval.TraceEvent, processMs int64) ([]traces.Crossing, error) {
	st, err := settings(ctx, tx, workspace)
	if err != nil {
		return nil, err
	}
	t, err := thresholds(st)
	if err != nil {
		return nil, err
	}
	crossed := t.Crossings(traces.Measure(events, processMs))
	for _, c := range crossed {
		data, _ := json.Marshal(map[string]any{"runId": runID, "source": source, "bound": c.Bound, "limit": c.Limit, "value": c.Value})
		if _, err := tx.AppendEvent(ctx, store.Event{
			ID: ThresholdEvent + ":" + workspace + ":" + runID + ":" + c.Bound, Workspace: workspace, Type: ThresholdEvent,
			Subject: "trajectory:" + runID, Data: data,
		}); err != nil {
			return nil, err
		}
	}
	return crossed, nil
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

// sweepGroups bounds the idle groups one sweep handles; the rest wait for
// the next one.
const sweepGroups = 500

// Sweep is the trace sweep, run periodically by a durable workflow: it
// seals the external trajectories whose spans have been idle for the idle
// window (source otel), drops the pending spans of runs that have ended
// (they were merged when the run's trajectory was sealed, or arrived
// late), and deletes the trajectories older than their workspace's
// retention. Each step is idempotent, so a retried sweep is harmless.
func (s *Service) Sweep(ctx context.Context) (SweepReport, error) {
	var rep SweepReport
	now := s.now()
	groups, err := s.o.Store.ListPendingGroups(ctx, now.Add(-s.o.IdleWindow), sweepGroups)
	if err != nil {
		return rep, err
	}
	if len(groups) == sweepGroups {
		rep.Remaining = 1
	}
	for _, g := range groups {
		if err := ctx.Err(); err != nil {
			return rep, err
		}
		if err := s.sweepGroup(ctx, g, now, &rep); err != nil {
			return rep, fmt.Errorf("sealing the spans of %s in workspace %s: %w", g.Group, g.Workspace, err)
		}
	}
	if err := s.expire(ctx, now, &rep); err != nil {
		return rep, err
	}
	return rep, nil
}

// sweepGroup seals or drops one idle group.
func (s *Service) sweepGroup(ctx context.Context, g store.PendingGroup, now time.Time, rep *SweepReport) error {
	return s.o.Store.Transact(ctx, func(tx store.Tx) error {
		row, err := tx.GetRun(ctx, g.Workspace, g.Group)
		switch {
		case err == nil && !g.External:
			if !eval.Status(row.Status).Terminal() {
				rep.RunsPending++
				return nil // sealed with the run when it ends
			}
			rep.Dropped++
			return tx.DeletePendingSpans(ctx, g.Workspace, g.Group)
		case err == nil || errors.Is(err, derrors.ErrNotFound):
		default:
			return err
		}
		if !g.External {
			// The run is gone: nothing will seal its spans.
			rep.Dropped++
			return tx.DeletePendingSpans(ctx, g.Workspace, g.Group)
		}
		spans, err := tx.ListPendingSpans(ctx, g.Workspace, g.Group)
		if err != nil {
			return err
		}
		events := spanEvents(spans)
		if len(events) > eval.MaxTraceEvents {
			events = append(events[:eval.MaxTraceEvents-1], eval.TraceEvent{Kind: eval.EventError, Code: "TRACE_TRUNCATED",
				Message: fmt.Sprintf("the trajectory received %d spans; the first %d are kept", len(spans), eval.MaxTraceEvents-1)})
		}
		canonical, digest, err := traces.SealEvents(events)
		if err != nil {
			return err
		}
		_, _, err = tx.SealTrajectory(ctx, store.Trajectory{Workspace: g.Workspace, RunID: g.Group, Source: SourceOTel,
			EventCount: len(events), Digest: digest, SealedAt: now, Events: canonical})
		switch {
		case errors.Is(err, derrors.ErrConflict):
			// Sealed before with other events: these arrived late.
			rep.Dropped++
			return tx.DeletePendingSpans(ctx, g.Workspace, g.Group)
		case err != nil:
			return err
		}
		crossed, err := LandCrossings(ctx, tx, g.Workspace, g.Group, SourceOTel, events, 0)
		if err != nil {
			return err
		}
		rep.Sealed++
		rep.Crossings += len(crossed)
		return tx.DeletePendingSpans(ctx, g.Workspace, g.Group)
	})
}

// expireBatch is how many trajectories one delete statement removes.
const expireBatch = 1000

// expire deletes the trajectories past each workspace's retention.
func (s *Service) expire(ctx context.Context, now time.Time, rep *SweepReport) error {
	wss, err := s.o.Store.ListWorkspaces(ctx, nil)
	if err != nil {
		return err
	}
	for _, ws := range wss {
		st, err := settings(ctx, s.o.Store, ws.ID)
		if err != nil {
			return err
		}
		days := s.retention(st)
		if days <= 0 {
			continue
		}
		rep.Workspaces++
		cutoff := now.AddDate(0, 0, -days)
		for {
			n, err := s.o.Store.DeleteTrajectoriesBefore(ctx, ws.ID, cutoff, expireBatch)
			if err != nil {
				return err
			}
			rep.Expired += n
			if n < expireBatch {
				break
			}
		}
	}
	return nil
}
