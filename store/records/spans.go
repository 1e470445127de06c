package records

import (
	"encoding/json"
	"fmt"

	"svc/internal/domain/eval"
	"svc/internal/domain/trace"
	"svc/store"
)

// SpanEvents are the events of pending spans read back (a run's, as
// store.ListPendingSpansOf returns them), in start order, for sealing
// with the run's SVC_TRACE_FILE events. The trace service seals from
// them and the worker merges them into a run's trace.
func SpanEvents(spans []store.PendingSpan) []eval.TraceEvent {
	events := make([]eval.TraceEvent, 0, len(spans))
	for _, sp := range spans {
		events = append(events, SpanEvent(sp))
	}
	trace.SortEvents(events)
	return events
}

// SpanEvent is a pending span's event read back; one that no longer
// decodes becomes an error event saying so.
func SpanEvent(sp store.PendingSpan) eval.TraceEvent {
	var e eval.TraceEvent
	if err := json.Unmarshal(sp.Event, &e); err != nil {
		e = eval.TraceEvent{Kind: eval.EventError, Code: "BAD_SPAN", Message: fmt.Sprintf("span %s could not be read back: %v", sp.Key, err)}
	}
	return e
}
