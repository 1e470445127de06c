package graders_test

import (
	"encoding/json"
	"fmt"
	"strings"

	"svc/internal/domain/eval"
	"svc/internal/domain/graders"
	"svc/internal/domain/registry"
)

// A case's graders as a dataset declares them, checked at submit and then
// scored on the finished case.
func Example() {
	var c registry.EvalCase
	_ = json.Unmarshal([]byte(`{
		"id": "math-1", "task": "What is 2+2?", "expected": "4",
		"graders": [
			{"id": "exit_code"},
			{"id": "answer", "kind": "exact"},
			{"id": "calc-used", "kind": "tool_calls", "name": "calculator"},
			{"id": "budget", "kind": "usd", "max": 0.01}
		]}`), &c)
	if err := graders.Check("graders", c.Graders); err != nil {
		fmt.Println(err)
		return
	}
	trace := []eval.TraceEvent{
		{Kind: eval.EventLLMCall, CostUSD: 0.002},
		{Kind: eval.EventMessage, Role: "assistant", Content: "5"},
	}
	for _, s := range graders.Grade(c.Graders, graders.Input{Case: c, FinalAnswer: "5", Trace: trace}) {
		fmt.Println(strings.TrimSpace(fmt.Sprintf("%s value=%g pass=%v %s", s.Metric, s.Value, *s.Pass, s.Detail)))
	}
	// Output:
	// exit_code value=0 pass=true
	// answer value=0 pass=false expected "4", got "5"
	// calc-used value=0 pass=false 0 calls to "calculator", want at least 1
	// budget value=0.002 pass=true
}
