package graders

import (
	"encoding/json"
	"testing"

	"svc/internal/domain/eval"
)

func TestToolCalls(t *testing.T) {
	mixed := append(calls("search", "read", "search"), eval.TraceEvent{Kind: eval.EventLLMCall}, eval.TraceEvent{Kind: eval.EventToolCall, Name: "write"})
	runGradeCases(t, []gradeCase{
		{name: "count only is a measurement", grader: `{"id":"tool_calls"}`, in: Input{Trace: mixed}, value: 4, pass: "none"},
		{name: "empty trace", grader: `{"id":"tool_calls"}`, value: 0, pass: "none"},
		{name: "name alone asks whether it was used", grader: `{"id":"searched","kind":"tool_calls","name":"search"}`, in: Input{Trace: mixed}, value: 2, pass: "pass"},
		{name: "name alone, never used", grader: `{"id":"deleted","kind":"tool_calls","name":"delete"}`, in: Input{Trace: mixed}, value: 0, pass: "fail", detail: `0 calls to "delete", want at least 1`},
		{name: "min met", grader: `{"id":"t","kind":"tool_calls","min":4}`, in: Input{Trace: mixed}, value: 4, pass: "pass"},
		{name: "min missed", grader: `{"id":"t","kind":"tool_calls","min":5}`, in: Input{Trace: mixed}, value: 4, pass: "fail", detail: "4 tool calls, want at least 5"},
		{name: "max met", grader: `{"id":"t","kind":"tool_calls","max":4}`, in: Input{Trace: mixed}, value: 4, pass: "pass"},
		{name: "max exceeded", grader: `{"id":"t","kind":"tool_calls","max":3}`, in: Input{Trace: mixed}, value: 4, pass: "fail", detail: "4 tool calls, want at most 3"},
		{name: "max zero forbids a tool", grader: `{"id":"t","kind":"tool_calls","name":"search","max":0}`, in: Input{Trace: mixed}, value: 2, pass: "fail", detail: `2 calls to "search", want at most 0`},
		{name: "max zero, tool unused", grader: `{"id":"t","kind":"tool_calls","name":"delete","max":0}`, in: Input{Trace: mixed}, value: 0, pass: "pass"},
		{name: "min and max range", grader: `{"id":"t","kind":"tool_calls","min":1,"max":10}`, in: Input{Trace: mixed}, value: 4, pass: "pass"},
		{name: "expect in order", grader: `{"id":"t","kind":"tool_calls","expect":["search","write"]}`, in: Input{Trace: mixed}, value: 4, pass: "pass"},
		{name: "expect as subsequence with repeats", grader: `{"id":"t","kind":"tool_calls","expect":["search","search"]}`, in: Input{Trace: mixed}, value: 4, pass: "pass"},
		{name: "expect out of order", grader: `{"id":"t","kind":"tool_calls","expect":["write","search"]}`, in: Input{Trace: mixed}, value: 4, pass: "fail", detail: `tool "search" not called after [write]; calls were [search read search write]`},
		{name: "expect never called", grader: `{"id":"t","kind":"tool_calls","expect":["plan"]}`, in: Input{Trace: mixed}, value: 4, pass: "fail", detail: `tool "plan" never called`},
		{name: "expect with name counts only name", grader: `{"id":"t","kind":"tool_calls","name":"read","expect":["search","read"]}`, in: Input{Trace: mixed}, value: 1, pass: "pass"},
		{name: "float-typed whole number", grader: `{"id":"t","kind":"tool_calls","min":4.0}`, in: Input{Trace: mixed}, value: 4, pass: "pass"},
		{name: "type instead of kind", grader: `{"id":"t","type":"tool_calls","max":1}`, in: Input{Trace: mixed}, value: 4, pass: "fail", detail: "want at most 1"},
	})
}

func TestUSD(t *testing.T) {
	trace := []eval.TraceEvent{
		{Kind: eval.EventLLMCall, CostUSD: 0.02},
		{Kind: eval.EventToolCall, Name: "x"},
		{Kind: eval.EventLLMCall, CostUSD: 0.03},
	}
	runGradeCases(t, []gradeCase{
		{name: "measurement without max", grader: `{"id":"usd"}`, in: Input{Trace: trace}, value: 0.05, pass: "none"},
		{name: "under max", grader: `{"id":"cost","kind":"usd","max":0.1}`, in: Input{Trace: trace}, value: 0.05, pass: "pass"},
		{name: "at max", grader: `{"id":"cost","kind":"usd","max":0.05}`, in: Input{Trace: trace}, value: 0.05, pass: "pass"},
		{name: "over max", grader: `{"id":"cost","kind":"usd","max":0.04}`, in: Input{Trace: trace}, value: 0.05, pass: "fail", detail: "cost $0.05 is over the max $0.04"},
		{name: "max zero, free run", grader: `{"id":"cost","kind":"usd","max":0}`, value: 0, pass: "pass"},
		{name: "usage only", grader: `{"id":"cost","kind":"usd","max":1}`, in: Input{Usage: eval.Usage{CostUSD: 2}}, value: 2, pass: "fail", detail: "cost $2 is over the max $1"},
		{name: "larger of trace and usage", grader: `{"id":"usd"}`, in: Input{Trace: trace, Usage: eval.Usage{CostUSD: 0.01}}, value: 0.05, pass: "none"},
		{name: "integer max", grader: `{"id":"cost","kind":"usd","max":1}`, in: Input{Trace: trace}, value: 0.05, pass: "pass"},
	})
}

func TestSpan(t *testing.T) {
	trace := []eval.TraceEvent{
		{Kind: eval.EventSpan, Name: "retrieve", Attributes: map[string]any{"k": float64(3), "source": "web"}},
		{Kind: eval.EventSpan, Name: "retrieve", Attributes: map[string]any{"k": float64(5), "source": "kb", "meta": map[string]any{"shard": "a", "n": float64(1)}}},
		{Kind: eval.EventToolCall, Name: "answer"},
	}
	runGradeCases(t, []gradeCase{
		{name: "exists", grader: `{"id":"s","kind":"span","name":"retrieve"}`, in: Input{Trace: trace}, value: 1, pass: "pass"},
		{name: "absent", grader: `{"id":"s","kind":"span","name":"rerank"}`, in: Input{Trace: trace}, value: 0, pass: "fail", detail: `no span named "rerank"`},
		{name: "a tool call is not a span", grader: `{"id":"s","kind":"span","name":"answer"}`, in: Input{Trace: trace}, value: 0, pass: "fail", detail: "no span named"},
		{name: "attributes on the second span", grader: `{"id":"s","kind":"span","name":"retrieve","attributes":{"source":"kb"}}`, in: Input{Trace: trace}, value: 1, pass: "pass"},
		{name: "numbers compare by value", grader: `{"id":"s","kind":"span","name":"retrieve","attributes":{"k":5.0}}`, in: Input{Trace: trace}, value: 1, pass: "pass"},
		{name: "nested subset", grader: `{"id":"s","kind":"span","name":"retrieve","attributes":{"meta":{"shard":"a"}}}`, in: Input{Trace: trace}, value: 1, pass: "pass"},
		{name: "attributes mismatch", grader: `{"id":"s","kind":"span","name":"retrieve","attributes":{"k":4}}`, in: Input{Trace: trace}, value: 0, pass: "fail", detail: `2 span(s) named "retrieve", none with the attributes; first: at attributes.k: expected 4, got 3`},
		{name: "missing attribute", grader: `{"id":"s","kind":"span","name":"retrieve","attributes":{"model":"x"}}`, in: Input{Trace: trace}, value: 0, pass: "fail", detail: `missing member "model"`},
		{name: "span without attributes", grader: `{"id":"s","kind":"span","name":"bare","attributes":{"a":1}}`, in: Input{Trace: []eval.TraceEvent{{Kind: eval.EventSpan, Name: "bare"}}}, value: 0, pass: "fail", detail: `missing member "a"`},
		{name: "empty attributes is existence", grader: `{"id":"s","kind":"span","name":"retrieve","attributes":{}}`, in: Input{Trace: trace}, value: 1, pass: "pass"},
	})
}

// TestSpanIngestedAttributes grades a span whose attributes came through
// encoding/json without UseNumber, as an ingested trace's do.
func TestSpanIngestedAttributes(t *testing.T) {
	var trace []eval.TraceEvent
	if err := json.Unmarshal([]byte(`[{"kind":"span","name":"db","attributes":{"rows":12,"ok":true}}]`), &trace); err != nil {
		t.Fatal(err)
	}
	runGradeCases(t, []gradeCase{
		{name: "decoded attributes", grader: `{"id":"s","kind":"span","name":"db","attributes":{"rows":12,"ok":true}}`, in: Input{Trace: trace}, value: 1, pass: "pass"},
	})
}
