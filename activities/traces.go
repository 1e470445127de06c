package activities

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"sync"
	"time"

	"svc/derrors"
	"svc/store"

	"svc/eval"
	"svc/redact"
	"svc/traceingest"
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
func (a *Activities) withRunSpans(ctx context.Context, run eval.Run, trace []byte, secrets map[string]string) (_ []byte, found bool, err error) {
	events, err := traceingest.RunSpanEvents(ctx, a.Store, run.Tenant, run.ID)
	if err != nil || len(events) == 0 {
		return trace, false, err
	}
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
	if result != nil && result.TraceSealed && a.thresholds.has(ctx, a.Store, run.Tenant, a.now()) {
		var processMs int64
		if result.Usage != nil {
			processMs = result.Usage.DurationMs
		}
		if _, err := traceingest.LandCrossings(ctx, a.Store, run.Tenant, run.ID, "svc", result.Trace, processMs); err != nil {
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
