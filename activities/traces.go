package activities

import (
	"bytes"
	"context"
	"encoding/json"

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
func (a *Activities) withRunSpans(ctx context.Context, run eval.Run, trace []byte, secrets map[string]string) ([]byte, error) {
	events, err := traceingest.RunSpanEvents(ctx, a.Store, run.Tenant, run.ID)
	if err != nil || len(events) == 0 {
		return trace, err
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
			return nil, err
		}
		if !mask.Empty() {
			line = mask.Bytes(line)
		}
		b.Write(line)
		b.WriteByte('\n')
	}
	return b.Bytes(), nil
}

// afterSeal lands the threshold crossings of the run's sealed trajectory
// and drops its pending spans, now sealed. Both are after the fact: a
// failure is logged (the trace sweep drops the spans of ended runs), and
// the crossing events' ids are deterministic.
func (a *Activities) afterSeal(ctx context.Context, run eval.Run, result *eval.CaseResult) {
	if result != nil && result.TraceSealed {
		var processMs int64
		if result.Usage != nil {
			processMs = result.Usage.DurationMs
		}
		if _, err := traceingest.LandCrossings(ctx, a.Store, run.Tenant, run.ID, "svc", result.Trace, processMs); err != nil {
			a.logger().WarnContext(ctx, "evaluating trace thresholds", append(activityAttrs(ctx), "run", run.ID, "error", err)...)
		}
	}
	if err := a.Store.DeletePendingSpans(ctx, run.Tenant, run.ID); err != nil {
		a.logger().WarnContext(ctx, "dropping the sealed spans of a run", append(activityAttrs(ctx), "run", run.ID, "error", err)...)
	}
}
