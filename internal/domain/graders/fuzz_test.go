package graders

import (
	"encoding/json"
	"math"
	"strings"
	"testing"
	"unicode/utf8"

	"svc/internal/domain/eval"
	"svc/internal/domain/registry"
)

// FuzzGrade feeds random graders, answers, traces and expected values and
// checks that grading never panics and always yields storable scores: one
// per grader, in order, with finite values, bounded valid details, and no
// "bad params" skip for a grader Check accepted.
func FuzzGrade(f *testing.F) {
	seeds := []struct {
		graders, answer, trace, expected string
		exit                             int
		timedOut                         bool
	}{
		{`[{"id":"exit_code"}]`, "", `[]`, `null`, 0, false},
		{`[{"id":"t","kind":"tool_calls","name":"a","min":1,"max":2,"expect":["a","b"]}]`, "", `[{"kind":"tool_call","name":"a"},{"kind":"tool_call","name":"b"}]`, `null`, 0, false},
		{`[{"id":"u","kind":"usd","max":0.5}]`, "", `[{"kind":"llm_call","costUsd":0.25}]`, `null`, 0, false},
		{`[{"id":"s","kind":"span","name":"db","attributes":{"n":1,"m":{"x":[1,"a"]}}}]`, "", `[{"kind":"span","name":"db","attributes":{"n":1.0,"m":{"x":[1,"a"]}}}]`, `null`, 0, false},
		{`[{"id":"c","kind":"contains","values":["a",1,true],"ignoreCase":true}]`, "A 1 TRUE", `[]`, `null`, 1, true},
		{`[{"id":"r","kind":"regex","pattern":"(?i)^a+$"}]`, "aAa", `[]`, `null`, 0, false},
		{`[{"id":"e","kind":"exact","trim":false},{"id":"contains"}]`, " 4 ", `[]`, `"4"`, 0, false},
		{`[{"id":"j","kind":"json_match","path":"a.0","value":{"b":1e2}}]`, "x {\"a\":[{\"b\":100}]} y", `[]`, `null`, 0, false},
		{`[{"id":"json_match"}]`, "[[[[[{", `[]`, `{"a":[1,2,{}]}`, 0, false},
		{`[{"id":"k","kind":{"x":1}},{"id":"","type":"usd"},{"kind":"nope"}]`, "", `[{"kind":"message","role":"assistant","content":"hi"}]`, `1`, -1, true},
		{`[{"id":"t","kind":"tool_calls","max":1e400,"min":"x"}]`, "", `[]`, `null`, 0, false},
	}
	for _, s := range seeds {
		f.Add(s.graders, s.answer, s.trace, s.expected, s.exit, s.timedOut)
	}
	f.Fuzz(func(t *testing.T, gradersDoc, answer, traceDoc, expectedDoc string, exit int, timedOut bool) {
		var gs []registry.Grader
		if json.Unmarshal([]byte(gradersDoc), &gs) != nil {
			return
		}
		var trace []eval.TraceEvent
		_ = json.Unmarshal([]byte(traceDoc), &trace) // a bad trace grades as empty
		var expected any
		dec := json.NewDecoder(strings.NewReader(expectedDoc))
		dec.UseNumber()
		_ = dec.Decode(&expected)
		in := Input{
			Case:        registry.EvalCase{ID: "fuzz", Expected: expected},
			ExitCode:    exit,
			TimedOut:    timedOut,
			FinalAnswer: answer,
			Trace:       trace,
		}
		_, u := eval.Extract(trace, answer)
		in.Usage = u

		checkErr := Check("graders", gs)
		scores := Grade(gs, in)
		if len(scores) != len(gs) {
			t.Fatalf("Grade gave %d scores for %d graders", len(scores), len(gs))
		}
		for i, s := range scores {
			if s.GraderID != gs[i].ID {
				t.Errorf("scores[%d].graderId = %q, want %q", i, s.GraderID, gs[i].ID)
			}
			if math.IsNaN(s.Value) || math.IsInf(s.Value, 0) {
				t.Errorf("scores[%d].value = %v", i, s.Value)
			}
			if !utf8.ValidString(s.Detail) || strings.ContainsRune(s.Detail, 0) || utf8.RuneCountInString(s.Detail) > maxDetail {
				t.Errorf("scores[%d].detail is not storable: %q", i, s.Detail)
			}
			if strings.HasPrefix(s.Detail, "skipped:") && (s.Pass == nil || *s.Pass || s.Value != 0) {
				t.Errorf("scores[%d] is a skip with value %v pass %s", i, s.Value, passWord(s.Pass))
			}
			if checkErr == nil && (strings.HasPrefix(s.Detail, "skipped: bad params") || strings.HasPrefix(s.Detail, "skipped: unknown grader kind")) {
				t.Errorf("Check accepted %v but grading skipped it: %q", gs[i], s.Detail)
			}
		}
		if _, err := json.Marshal(scores); err != nil {
			t.Errorf("scores do not encode: %v", err)
		}
	})
}
