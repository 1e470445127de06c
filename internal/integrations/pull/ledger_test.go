package pull

import (
	"testing"
	"time"

	"svc/internal/domain/eval"
)

func TestLedgerEventsCarryTheAnswer(t *testing.T) {
	t0 := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	at := func(d time.Duration) *time.Time { v := t0.Add(d); return &v }
	span := func(name string, from, to time.Duration, attrs map[string]any) eval.TraceEvent {
		return eval.TraceEvent{Kind: eval.EventSpan, Name: name, StartTime: at(from), EndTime: at(to), Attributes: attrs}
	}
	chat := func(from time.Duration, ms float64, attrs map[string]any) eval.TraceEvent {
		return eval.TraceEvent{Kind: eval.EventLLMCall, Name: "chat", TS: at(from), DurationMs: ms, Attributes: attrs}
	}
	for _, tc := range []struct {
		name   string
		events []eval.TraceEvent
		answer string // the run's recorded answer
		want   string // the final answer of the result
		added  bool   // an assistant message is appended
	}{
		{
			name: "root span's output.value",
			events: []eval.TraceEvent{
				span("invoke_agent", 0, 3*time.Second, map[string]any{"output.value": "4"}),
				chat(time.Second, 500, map[string]any{"gen_ai.completion": "thinking"}),
			},
			want: "4", added: true,
		},
		{
			name: "no root output: the output that ended last",
			events: []eval.TraceEvent{
				span("invoke_agent", 0, 3*time.Second, nil),
				chat(time.Second, 500, map[string]any{"gen_ai.completion": "first"}),
				chat(2*time.Second, 500, map[string]any{"gen_ai.output.messages": `[{"role":"assistant","content":"second"}]`}),
			},
			want: "second", added: true,
		},
		{
			name: "an assistant message already answers",
			events: []eval.TraceEvent{
				span("invoke_agent", 0, 3*time.Second, map[string]any{"output.value": "4"}),
				{Kind: eval.EventMessage, Role: "assistant", Content: "5"},
			},
			want: "5",
		},
		{
			name:   "the run's recorded answer wins",
			events: []eval.TraceEvent{{Kind: eval.EventMessage, Role: "assistant", Content: "draft"}},
			answer: "final", want: "final", added: true,
		},
		{
			name:   "the run's answer already last",
			events: []eval.TraceEvent{{Kind: eval.EventMessage, Role: "assistant", Content: "final"}},
			answer: "final", want: "final",
		},
		{
			name:   "no answer anywhere",
			events: []eval.TraceEvent{span("work", 0, time.Second, map[string]any{"k": "v"})},
			want:   "",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := LedgerEvents(tc.events, tc.answer)
			if a := eval.FinalAnswer(got); a != tc.want {
				t.Errorf("final answer = %q, want %q", a, tc.want)
			}
			if added := len(got) == len(tc.events)+1; added != tc.added {
				t.Errorf("%d events from %d, appended = %v, want %v", len(got), len(tc.events), added, tc.added)
			}
		})
	}
}
