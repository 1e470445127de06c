package activities

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"slices"
	"sync"
	"time"

	"svc/internal/platform/derrors"
	"svc/store"
	"svc/store/records"

	"svc/internal/domain/eval"
	"svc/internal/domain/redact"
)

// Where a run's trajectory meets the OTLP door (issue 16): the spans an
// instrumented harness exported under svc.run_id=<run id> wait in the
// store until the run ends; dispatch seals them with the run's
// SVC_TRACE_FILE events, then evaluates the workspace's thresholds.

// withRunSpans appends the run's received spans, as TraceEvent lines
// after the harness's own, to trace (the content of SVC_TRACE_FILE), so
// that they are parsed, graded and sealed as one trajectory. The job's
// secrets are masked in them as in the trace file.
// found reports whether there were any.
// The read joins those of the runs finishing at the same time on this
// worker (pendingReads): a batch of cases whose harnesses sent no span
// costs one statement per round of finishes rather than one per case.
func (a *Activities) withRunSpans(ctx context.Context, run eval.Run, trace []byte, secrets map[string]string) (_ []byte, found bool, err error) {
	spans, err := a.spanReads.read(ctx, a.Store, store.PendingGroupRef{Workspace: run.Tenant, Group: run.ID})
	if err != nil || len(spans) == 0 {
		return trace, false, err
	}
	events := records.SpanEvents(spans)
	mask := redact.New(secretValues(secrets))
	var b bytes.Buffer
	b.Grow(len(trace) + 256*len(events))
	b.Write(trace)
	if len(trace) > 0 && trace[len(trace)-1] != '\n' {
		b.WriteByte('\n')
	}
	for _, e := range events {
		line, err := json.Marshal(e)
		if err != nil {
			return nil, false, err
		}
		if !mask.Empty() {
			line = mask.Bytes(line)
		}
		b.Write(line)
		b.WriteByte('\n')
	}
	return b.Bytes(), true, nil
}

// afterSeal lands the threshold crossings of the run's sealed trajectory
// and drops its pending spans, now sealed (spans says withRunSpans found
// some). Both are after the fact: a failure is logged (the trace sweep
// drops the spans of ended runs), and the crossing events' ids are
// deterministic. A case of a batch costs no statement here unless its
// workspace has thresholds or its harness sent spans: which workspaces
// have thresholds is read at most every thresholdTTL.
func (a *Activities) afterSeal(ctx context.Context, run eval.Run, result *eval.CaseResult, spans bool) {
	ctx, cancel := detached(ctx, afterSealTimeout)
	defer cancel()
	if result != nil && result.TraceSealed && a.thresholds.has(ctx, a.Store, run.Tenant, a.now()) {
		var processMs int64
		if result.Usage != nil {
			processMs = result.Usage.DurationMs
		}
		if err := a.landCrossings(ctx, run, "svc", result.Trace, processMs); err != nil {
			a.logger().WarnContext(ctx, "evaluating trace thresholds", append(activityAttrs(ctx), "run", run.ID, "error", err)...)
		}
	}
	if !spans {
		return
	}
	if err := a.Store.DeletePendingSpans(ctx, run.Tenant, run.ID); err != nil {
		a.logger().WarnContext(ctx, "dropping the sealed spans of a run", append(activityAttrs(ctx), "run", run.ID, "error", err)...)
	}
}

// landCrossings lands the threshold crossings of run's trajectory just
// sealed from source (TraceSealer.LandCrossings).
func (a *Activities) landCrossings(ctx context.Context, run eval.Run, source string, events []eval.TraceEvent, processMs int64) error {
	ingest, err := a.traceIngest()
	if err != nil {
		return err
	}
	_, err = ingest.LandCrossings(ctx, run.Tenant, run.ID, source, events, processMs)
	return err
}

// thresholdTTL is how long a worker trusts what it read of a workspace's
// thresholds: a threshold set or removed applies to the runs sealed from
// at most this long after.
const thresholdTTL = 10 * time.Second

// thresholdCache remembers which workspaces have trace thresholds; its
// zero value is ready to use.
type thresholdCache struct {
	mu sync.Mutex
	m  map[string]thresholdEntry
}

type thresholdEntry struct {
	has bool
	at  time.Time
}

// has reports whether workspace has thresholds, as read at most
// thresholdTTL before now. A failed read answers true, so that
// LandCrossings reads (and reports) again rather than a bound being
// skipped.
func (c *thresholdCache) has(ctx context.Context, st store.TraceIngest, workspace string, now time.Time) bool {
	c.mu.Lock()
	e, ok := c.m[workspace]
	c.mu.Unlock()
	if ok && now.Sub(e.at) < thresholdTTL {
		return e.has
	}
	s, err := st.GetTraceSettings(ctx, workspace)
	switch {
	case errors.Is(err, derrors.ErrNotFound):
		e = thresholdEntry{has: false, at: now}
	case err != nil:
		return true
	default:
		e = thresholdEntry{has: len(s.Thresholds) > 0 && string(s.Thresholds) != "{}" && string(s.Thresholds) != "null", at: now}
	}
	c.mu.Lock()
	if c.m == nil {
		c.m = map[string]thresholdEntry{}
	}
	c.m[workspace] = e
	c.mu.Unlock()
	return e.has
}

// Coalesced reads of pending spans. Every managed run's finish asks for
// the spans its harness sent to the OTLP door, and most harnesses send
// none: read one statement per run, a batch of 2,000 cases cost 2,000
// SELECTs that found nothing. Instead a read joins a queue, and one
// caller at a time (the leader) reads every queued run's spans in one
// statement (store.ListPendingSpansOf). There is no timer: a read that
// finds no leader reads at once, alone; reads arriving while it runs form
// the next round, which the oldest of them leads.

// maxReadGroup bounds the runs of one coalesced read.
const maxReadGroup = 128

// pendingReadTimeout bounds one coalesced read, which runs on behalf of
// every run in it and so does not end with the leader's context.
const pendingReadTimeout = time.Minute

// pendingReads is the queue of one worker's pending-span reads; its zero
// value is ready to use.
type pendingReads struct {
	mu      sync.Mutex
	queue   []*pendingRead
	leading bool // a caller is reading rounds
}

// pendingRead is one run's read and its answer.
type pendingRead struct {
	ctx   context.Context
	st    store.TraceIngest
	ref   store.PendingGroupRef
	spans []store.PendingSpan
	wake  chan wake // wakeDone: answered; wakeLead: read the next round; wakeAlone: its round failed
}

// read returns the pending spans of ref (nil when none), read with the
// reads of the other runs queued at the same time.
func (p *pendingReads) read(ctx context.Context, st store.TraceIngest, ref store.PendingGroupRef) ([]store.PendingSpan, error) {
	r := &pendingRead{ctx: ctx, st: st, ref: ref, wake: make(chan wake, 1)}
	p.mu.Lock()
	p.queue = append(p.queue, r)
	w := wakeLead // the queue was empty: r is its first
	if p.leading {
		w = 0
	} else {
		p.leading = true
	}
	p.mu.Unlock()
	if w == 0 {
		select {
		case w = <-r.wake:
		case <-ctx.Done():
			// r stays queued: whatever it is woken with is taken by a
			// goroutine, which leads in its place if it is the lead.
			go func() {
				if <-r.wake == wakeLead {
					p.lead(r)
				}
			}()
			return nil, ctx.Err()
		}
	}
	if w == wakeLead {
		w = p.lead(r)
	}
	if w == wakeAlone {
		return st.ListPendingSpans(ctx, ref.Workspace, ref.Group)
	}
	return r.spans, nil
}

// lead reads the round holding mine, the oldest queued read, in one
// statement, answers the round's other reads and hands the lead to the
// oldest read queued meanwhile. It returns how mine ended.
func (p *pendingReads) lead(mine *pendingRead) wake {
	p.mu.Lock()
	n := min(len(p.queue), maxReadGroup)
	round := slices.Clone(p.queue[:n])
	p.queue = slices.Delete(p.queue, 0, n)
	p.mu.Unlock()

	refs := make([]store.PendingGroupRef, len(round))
	for i, r := range round {
		refs[i] = r.ref
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(mine.ctx), pendingReadTimeout)
	got, err := mine.st.ListPendingSpansOf(ctx, refs)
	cancel()
	mineEnded := wakeDone
	for _, r := range round {
		w := wakeDone
		if err != nil {
			w = wakeAlone // each reads its own, so one failure fails no neighbour
		} else {
			r.spans = got[r.ref]
		}
		if r == mine {
			mineEnded = w
			continue
		}
		r.wake <- w
	}

	p.mu.Lock()
	if len(p.queue) > 0 {
		p.queue[0].wake <- wakeLead
	} else {
		p.leading = false
	}
	p.mu.Unlock()
	return mineEnded
}
