package pull

import (
	"strings"
	"time"

	"svc/internal/domain/eval"
)

// The owned ledger (source name svc) keeps a trajectory as TraceEvents,
// not as a platform's trace: the spans the OTLP door received, or a
// managed run's events. A pull from it seals those events as they are,
// with the trace's final answer as the last assistant message, as every
// other pull does (Trace.Events): answer graders and model judges read
// that message.

// answerKeys are the span attributes that carry a span's output as an
// answer, in the order the otel pull reads a root span's: the GenAI
// output messages, the GenAI completion, OpenInference's output.value.
var answerKeys = []string{"gen_ai.output.messages", "gen_ai.completion", "output.value"}

// LedgerEvents are the events of a ledger trajectory as a pull seals
// them: events, then the final answer as the last assistant message when
// events do not already end their messages with it. answer, when not
// empty, is the answer the run recorded (a managed run's, printed on
// stdout, which its trajectory does not hold); else the answer is the
// trace's last assistant message, else what its spans carry (SpanAnswer).
func LedgerEvents(events []eval.TraceEvent, answer string) []eval.TraceEvent {
	if strings.TrimSpace(answer) == "" {
		if eval.FinalAnswer(events) != "" {
			return events
		}
		answer = SpanAnswer(events)
	}
	if strings.TrimSpace(answer) == "" || eval.FinalAnswer(events) == answer {
		return events
	}
	out := make([]eval.TraceEvent, 0, len(events)+1)
	out = append(out, events...)
	if len(out) >= eval.MaxTraceEvents {
		out = out[:eval.MaxTraceEvents-1]
	}
	return append(out, eval.TraceEvent{Kind: eval.EventMessage, Role: "assistant", Content: clip(answer, 64<<10)})
}

// SpanAnswer is the final answer the span events of a trajectory carry
// (the OTLP door's events, which keep each span's attributes): the output
// (answerKeys) of the span that encloses all the others, the root an
// agent sets its answer on (as the otel pull reads a root span's output);
// without one, the output of the span that ended last. "" when no span
// carries an output.
func SpanAnswer(events []eval.TraceEvent) string {
	var (
		first, last time.Time
		root, end   = -1, -1
		rootStart   time.Time
		rootEnd     time.Time
		lastEnd     time.Time
		outputs     = make(map[int]string)
	)
	for i, e := range events {
		s, f, ok := eventSpan(e)
		if ok {
			if first.IsZero() || s.Before(first) {
				first = s
			}
			if f.After(last) {
				last = f
			}
		}
		out := attrAnswer(e.Attributes)
		if out == "" {
			continue
		}
		outputs[i] = out
		if !ok {
			continue
		}
		if root < 0 || s.Before(rootStart) || (s.Equal(rootStart) && f.After(rootEnd)) {
			root, rootStart, rootEnd = i, s, f
		}
		if end < 0 || !f.Before(lastEnd) {
			end, lastEnd = i, f
		}
	}
	if len(outputs) == 0 {
		return ""
	}
	switch {
	case root >= 0 && !rootStart.After(first) && !rootEnd.Before(last):
		return outputs[root]
	case end >= 0:
		return outputs[end]
	}
	// No span with times: the last that carries an output.
	for i := len(events) - 1; i >= 0; i-- {
		if out, ok := outputs[i]; ok {
			return out
		}
	}
	return ""
}

// attrAnswer is the answer of a span's output attribute, or "".
func attrAnswer(attrs map[string]any) string {
	for _, k := range answerKeys {
		if v, ok := attrs[k]; ok && v != nil {
			if s := answerText(v); strings.TrimSpace(s) != "" {
				return s
			}
		}
	}
	return ""
}

// eventSpan is the time an event covers: a span event's start and end, a
// call's timestamp and duration; ok is false for an event without a time.
func eventSpan(e eval.TraceEvent) (start, end time.Time, ok bool) {
	switch {
	case e.StartTime != nil:
		start = *e.StartTime
		end = start
		if e.EndTime != nil && e.EndTime.After(start) {
			end = *e.EndTime
		}
		return start, end, true
	case e.TS != nil:
		start = *e.TS
		return start, start.Add(time.Duration(e.DurationMs * float64(time.Millisecond))), true
	}
	return time.Time{}, time.Time{}, false
}
