package traces

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"svc/internal/domain/eval"
	"svc/internal/domain/trace"
	"svc/internal/platform/derrors"
	"svc/store"
	"svc/store/records"
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
	return records.SpanEvents(spans), nil
}

// formerEventPrefix starts every event encoding/json wrote for a pending
// span before issue 16 (kind is TraceEvent's first member and never
// omitted). Canonical events start with their alphabetically first
// member, which is kind only when the event has no attributes, code,
// content, cost, duration, end time, input or input tokens.
var formerEventPrefix = []byte(`{"kind":`)

// canonicalSpanEvents is the canonical JSON of each pending span's event,
// in the trajectory's order: that of traces.SortEvents, which keeps the
// listing order (start_unix_nano, span_key) of the events with a start
// time and puts those without one last. Spans stored as canonical JSON
// (Export) are taken as they are; spans stored by earlier versions, and
// anything that is not an object, are read back as sealing always read
// them (a canonical event that happens to start like a former one reads
// back to the same bytes). The result is the
// elements of what traces.SealEvents(records.SpanEvents(spans)) seals.
func canonicalSpanEvents(spans []store.PendingSpan) ([][]byte, error) {
	out := make([][]byte, 0, len(spans))
	var untimed [][]byte
	for _, sp := range spans {
		if len(sp.Event) > 0 && sp.Event[0] == '{' && !bytes.HasPrefix(sp.Event, formerEventPrefix) {
			if sp.StartUnixNano != 0 {
				out = append(out, sp.Event)
			} else {
				untimed = append(untimed, sp.Event)
			}
			continue
		}
		e := records.SpanEvent(sp)
		c, err := trace.AppendCanonicalEvent(nil, &e)
		if err != nil {
			return nil, fmt.Errorf("sealing the trace: %w", err)
		}
		if e.TS != nil || e.StartTime != nil {
			out = append(out, c)
		} else {
			untimed = append(untimed, c)
		}
	}
	return append(out, untimed...), nil
}

// decodeEvents reads canonical events back, for thresholds.
func decodeEvents(elems [][]byte) ([]eval.TraceEvent, error) {
	events := make([]eval.TraceEvent, len(elems))
	for i, c := range elems {
		if err := json.Unmarshal(c, &events[i]); err != nil {
			return nil, fmt.Errorf("reading a sealed event back: %w", err)
		}
	}
	return events, nil
}

// LandCrossings evaluates the workspace's thresholds on a trajectory just
// sealed and lands one trace.threshold_crossed per crossed bound, naming
// the run (or external trajectory) and the bound. Event ids are
// deterministic, so a retried seal lands nothing twice. processMs is a
// managed run's process time (0 for an external trajectory).
func LandCrossings(ctx context.Context, tx crossingStore, workspace, runID, source string, events []eval.TraceEvent, processMs int64) ([]trace.Crossing, error) {
	return landCrossings(ctx, tx, workspace, runID, source, func() ([]eval.TraceEvent, error) { return events, nil }, processMs)
}

// crossingStore is what landing a run's threshold crossings touches: the
// workspace's trace settings and the event log.
type crossingStore interface {
	store.TraceIngest
	store.Events
}

// LandCrossings is the package's LandCrossings in the service's store:
// what the worker calls when it seals a run's trajectory.
func (s *Service) LandCrossings(ctx context.Context, workspace, runID, source string, events []eval.TraceEvent, processMs int64) ([]trace.Crossing, error) {
	return LandCrossings(ctx, s.o.Store, workspace, runID, source, events, processMs)
}

// landCrossings is LandCrossings with the events read only when the
// workspace has thresholds to measure them against.
func landCrossings(ctx context.Context, tx crossingStore, workspace, runID, source string, events func() ([]eval.TraceEvent, error), processMs int64) ([]trace.Crossing, error) {
	st, err := settings(ctx, tx, workspace)
	if err != nil {
		return nil, err
	}
	t, err := thresholds(st)
	if err != nil {
		return nil, err
	}
	if t == (trace.Thresholds{}) {
		return nil, nil // nothing to cross
	}
	evs, err := events()
	if err != nil {
		return nil, err
	}
	crossed := t.Crossings(trace.Measure(evs, processMs))
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

// SweepReport says what one trace sweep did (trace.SweepReport).
type SweepReport = trace.SweepReport

// sweepGroups is the page of idle groups a sweep lists at a time.
const sweepGroups = 500

// sweepBudget bounds the time one sweep spends on pages of idle groups,
// so that it ends well before the next run of its cron schedule (every
// minute); what is left waits for that run.
const sweepBudget = 40 * time.Second

// Sweep is the trace sweep, run periodically by a durable workflow: it
// seals the external trajectories whose spans have been idle for the idle
// window (source otel), drops the pending spans of runs that have ended
// (they were merged when the run's trajectory was sealed, or arrived
// late), and deletes the trajectories older than their workspace's
// retention. It goes on to the next page of idle groups while a full page
// sealed or dropped some and its budget lasts: a door busy with many
// small trajectories is not held to one page a minute. Each step is
// idempotent, so a retried sweep is harmless.
func (s *Service) Sweep(ctx context.Context) (SweepReport, error) {
	var rep SweepReport
	now := s.now()
	start := time.Now()
	for {
		groups, err := s.o.Store.ListPendingGroups(ctx, now.Add(-s.o.IdleWindow), sweepGroups)
		if err != nil {
			return rep, err
		}
		before := rep.Sealed + rep.Dropped
		rep.Remaining, rep.RunsPending = 0, 0
		for _, g := range groups {
			if err := ctx.Err(); err != nil {
				return rep, err
			}
			if err := s.sweepGroup(ctx, g, now, &rep); err != nil {
				return rep, fmt.Errorf("sealing the spans of %s in workspace %s: %w", g.Group, g.Workspace, err)
			}
		}
		if len(groups) < sweepGroups {
			break
		}
		// A full page: more may be idle. The groups of live runs stay
		// listed, so only a page that removed some is followed by
		// another.
		rep.Remaining = 1
		if rep.Sealed+rep.Dropped == before || time.Since(start) > sweepBudget {
			break
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
		if !g.External {
			row, err := tx.GetRun(ctx, g.Workspace, g.Group)
			switch {
			case err == nil:
				if !eval.Status(row.Status).Terminal() {
					rep.RunsPending++
					return nil // sealed with the run when it ends
				}
				rep.Dropped++
				return tx.DeletePendingSpans(ctx, g.Workspace, g.Group)
			case errors.Is(err, derrors.ErrNotFound):
				// The run is gone: nothing will seal its spans.
				rep.Dropped++
				return tx.DeletePendingSpans(ctx, g.Workspace, g.Group)
			default:
				return err
			}
		}
		// The common external trajectory, one export's spans with no
		// thresholds to measure, is sealed inside the store: its events
		// are stored as the trajectory keeps them, with their digest.
		st, err := settings(ctx, tx, g.Workspace)
		if err != nil {
			return err
		}
		t, err := thresholds(st)
		if err != nil {
			return err
		}
		if t == (trace.Thresholds{}) {
			_, sealed, err := tx.SealPendingGroup(ctx, store.Trajectory{Workspace: g.Workspace, RunID: g.Group, Source: SourceOTel, SealedAt: now}, eval.MaxTraceEvents)
			if err != nil {
				return err
			}
			if sealed {
				rep.Sealed++
				return nil
			}
		}
		spans, err := tx.ListPendingSpans(ctx, g.Workspace, g.Group)
		if err != nil {
			return err
		}
		elems, err := canonicalSpanEvents(spans)
		if err != nil {
			return err
		}
		if len(elems) > eval.MaxTraceEvents {
			trunc, err := trace.AppendCanonicalEvent(nil, &eval.TraceEvent{Kind: eval.EventError, Code: "TRACE_TRUNCATED",
				Message: fmt.Sprintf("the trajectory received %d spans; the first %d are kept", len(spans), eval.MaxTraceEvents-1)})
			if err != nil {
				return err
			}
			elems = append(elems[:eval.MaxTraceEvents-1], trunc)
		}
		canonical, digest := trace.SealCanonical(elems)
		events := func() ([]eval.TraceEvent, error) { return decodeEvents(elems) }
		_, _, err = tx.SealTrajectory(ctx, store.Trajectory{Workspace: g.Workspace, RunID: g.Group, Source: SourceOTel,
			EventCount: len(elems), Digest: digest, SealedAt: now, Events: canonical})
		switch {
		case errors.Is(err, derrors.ErrConflict):
			// Sealed before with other events: these arrived late.
			rep.Dropped++
			return tx.DeletePendingSpans(ctx, g.Workspace, g.Group)
		case err != nil:
			return err
		}
		crossed, err := landCrossings(ctx, tx, g.Workspace, g.Group, SourceOTel, events, 0)
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
