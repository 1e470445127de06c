package graders

import (
	"encoding/json"
	"testing"

	"svc/internal/domain/registry"
)

func TestExitCode(t *testing.T) {
	runGradeCases(t, []gradeCase{
		{name: "zero by default", grader: `{"id":"exit_code"}`, in: Input{ExitCode: 0}, value: 0, pass: "pass"},
		{name: "non-zero fails", grader: `{"id":"exit_code"}`, in: Input{ExitCode: 2}, value: 2, pass: "fail", detail: "exit code 2, want 0"},
		{name: "expected failure", grader: `{"id":"fails","kind":"exit_code","expect":1}`, in: Input{ExitCode: 1}, value: 1, pass: "pass"},
		{name: "expected failure, got success", grader: `{"id":"fails","kind":"exit_code","expect":1}`, in: Input{ExitCode: 0}, value: 0, pass: "fail", detail: "exit code 0, want 1"},
		{name: "negative code", grader: `{"id":"sig","kind":"exit_code","expect":-1}`, in: Input{ExitCode: -1}, value: -1, pass: "pass"},
		{name: "timed out fails even at zero", grader: `{"id":"exit_code"}`, in: Input{ExitCode: 0, TimedOut: true}, value: 0, pass: "fail", detail: "timed out (exit code 0)"},
		{name: "timed out with kill code", grader: `{"id":"exit_code"}`, in: Input{ExitCode: 137, TimedOut: true}, value: 137, pass: "fail", detail: "timed out (exit code 137)"},
	})
}

func TestContains(t *testing.T) {
	runGradeCases(t, []gradeCase{
		{name: "substring", grader: `{"id":"c","kind":"contains","value":"Paris"}`, in: Input{FinalAnswer: "The capital is Paris."}, value: 1, pass: "pass"},
		{name: "case matters by default", grader: `{"id":"c","kind":"contains","value":"paris"}`, in: Input{FinalAnswer: "The capital is Paris."}, value: 0, pass: "fail", detail: `missing "paris" in answer "The capital is Paris."`},
		{name: "ignoreCase", grader: `{"id":"c","kind":"contains","value":"PARIS","ignoreCase":true}`, in: Input{FinalAnswer: "The capital is Paris."}, value: 1, pass: "pass"},
		{name: "all values", grader: `{"id":"c","kind":"contains","values":["red","green"]}`, in: Input{FinalAnswer: "red, green and blue"}, value: 1, pass: "pass"},
		{name: "some values missing", grader: `{"id":"c","kind":"contains","values":["red","cyan","pink","blue"]}`, in: Input{FinalAnswer: "red, green and blue"}, value: 0.5, pass: "fail", detail: `missing "cyan" (and 1 more)`},
		{name: "number value is its text", grader: `{"id":"c","kind":"contains","value":42}`, in: Input{FinalAnswer: "the answer is 42"}, value: 1, pass: "pass"},
		{name: "empty answer", grader: `{"id":"c","kind":"contains","value":"x"}`, in: Input{FinalAnswer: ""}, value: 0, pass: "fail", detail: `missing "x" in answer ""`},
		{name: "falls back to expected", grader: `{"id":"contains"}`, in: Input{FinalAnswer: "so 4.", Case: registry.EvalCase{Expected: "4"}}, value: 1, pass: "pass"},
		{name: "no value and no expected", grader: `{"id":"contains"}`, in: Input{FinalAnswer: "so 4."}, value: 0, pass: "fail", detail: "skipped: contains has no value or values"},
		{name: "timed out still graded", grader: `{"id":"c","kind":"contains","value":"done"}`, in: Input{FinalAnswer: "half done", TimedOut: true}, value: 1, pass: "pass"},
		{name: "timed out failure says so", grader: `{"id":"c","kind":"contains","value":"done"}`, in: Input{FinalAnswer: "half", TimedOut: true}, value: 0, pass: "fail", detail: `case timed out; missing "done"`},
	})
}

func TestRegex(t *testing.T) {
	runGradeCases(t, []gradeCase{
		{name: "matches anywhere", grader: `{"id":"r","kind":"regex","pattern":"\\d+ apples"}`, in: Input{FinalAnswer: "I have 12 apples."}, value: 1, pass: "pass"},
		{name: "anchored", grader: `{"id":"r","kind":"regex","pattern":"^\\d+$"}`, in: Input{FinalAnswer: "12 apples"}, value: 0, pass: "fail", detail: `pattern "^\\d+$" does not match answer "12 apples"`},
		{name: "inline flags", grader: `{"id":"r","kind":"regex","pattern":"(?i)^yes\\b"}`, in: Input{FinalAnswer: "YES, it is"}, value: 1, pass: "pass"},
		{name: "multiline", grader: `{"id":"r","kind":"regex","pattern":"(?m)^Answer: B$"}`, in: Input{FinalAnswer: "Reasoning...\nAnswer: B\n"}, value: 1, pass: "pass"},
		{name: "empty answer", grader: `{"id":"r","kind":"regex","pattern":"."}`, value: 0, pass: "fail", detail: "does not match"},
		{name: "bad pattern is a skip", grader: `{"id":"r","kind":"regex","pattern":"(unclosed"}`, in: Input{FinalAnswer: "x"}, value: 0, pass: "fail", detail: "skipped: bad params: pattern: is not a valid Go regular expression"},
	})
}

func TestExact(t *testing.T) {
	runGradeCases(t, []gradeCase{
		{name: "equal", grader: `{"id":"e","kind":"exact","value":"4"}`, in: Input{FinalAnswer: "4"}, value: 1, pass: "pass"},
		{name: "differs", grader: `{"id":"e","kind":"exact","value":"4"}`, in: Input{FinalAnswer: "5"}, value: 0, pass: "fail", detail: `expected "4", got "5"`},
		{name: "trims by default", grader: `{"id":"e","kind":"exact","value":" 4\n"}`, in: Input{FinalAnswer: "\t4  "}, value: 1, pass: "pass"},
		{name: "trim false", grader: `{"id":"e","kind":"exact","value":"4","trim":false}`, in: Input{FinalAnswer: "4\n"}, value: 0, pass: "fail", detail: `expected "4", got "4\n"`},
		{name: "case matters", grader: `{"id":"e","kind":"exact","value":"Paris"}`, in: Input{FinalAnswer: "paris"}, value: 0, pass: "fail", detail: `expected "Paris", got "paris"`},
		{name: "ignoreCase", grader: `{"id":"e","kind":"exact","value":"Paris","ignoreCase":true}`, in: Input{FinalAnswer: "PARIS"}, value: 1, pass: "pass"},
		{name: "number value", grader: `{"id":"e","kind":"exact","value":4}`, in: Input{FinalAnswer: "4"}, value: 1, pass: "pass"},
		{name: "expected string", grader: `{"id":"exact"}`, in: Input{FinalAnswer: "blue", Case: registry.EvalCase{Expected: "blue"}}, value: 1, pass: "pass"},
		{name: "expected json.Number", grader: `{"id":"exact"}`, in: Input{FinalAnswer: "18", Case: registry.EvalCase{Expected: json.Number("18")}}, value: 1, pass: "pass"},
		{name: "expected float64", grader: `{"id":"exact"}`, in: Input{FinalAnswer: "0.5", Case: registry.EvalCase{Expected: 0.5}}, value: 1, pass: "pass"},
		{name: "value wins over expected", grader: `{"id":"e","kind":"exact","value":"a"}`, in: Input{FinalAnswer: "a", Case: registry.EvalCase{Expected: "b"}}, value: 1, pass: "pass"},
		{name: "expected object is a skip", grader: `{"id":"exact"}`, in: Input{FinalAnswer: "x", Case: registry.EvalCase{Expected: map[string]any{"a": 1}}}, value: 0, pass: "fail", detail: "skipped: exact has no value, and the case's expected is not a string"},
		{name: "no expected is a skip", grader: `{"id":"exact"}`, in: Input{FinalAnswer: "x"}, value: 0, pass: "fail", detail: "skipped:"},
		{name: "timed out, empty answer", grader: `{"id":"e","kind":"exact","value":"4"}`, in: Input{TimedOut: true}, value: 0, pass: "fail", detail: `case timed out; expected "4", got ""`},
	})
}
