package graders

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"svc/internal/domain/registry"
)

func TestJSONMatch(t *testing.T) {
	answer := `{"name":"Ada","age":36,"langs":["en","fr"],"address":{"city":"London","zip":"N1"},"score":1.50,"ok":true,"none":null}`
	runGradeCases(t, []gradeCase{
		{name: "object subset", grader: `{"id":"j","kind":"json_match","value":{"name":"Ada","address":{"city":"London"}}}`, in: Input{FinalAnswer: answer}, value: 1, pass: "pass"},
		{name: "numbers by value", grader: `{"id":"j","kind":"json_match","value":{"age":36.0,"score":1.5}}`, in: Input{FinalAnswer: answer}, value: 1, pass: "pass"},
		{name: "number mismatch", grader: `{"id":"j","kind":"json_match","value":{"age":37}}`, in: Input{FinalAnswer: answer}, value: 0, pass: "fail", detail: "at age: expected 37, got 36"},
		{name: "a string is not a number", grader: `{"id":"j","kind":"json_match","value":{"age":"36"}}`, in: Input{FinalAnswer: answer}, value: 0, pass: "fail", detail: `at age: expected "36", got 36`},
		{name: "missing member", grader: `{"id":"j","kind":"json_match","value":{"address":{"country":"UK"}}}`, in: Input{FinalAnswer: answer}, value: 0, pass: "fail", detail: `at address: missing member "country"`},
		{name: "array equal", grader: `{"id":"j","kind":"json_match","value":{"langs":["en","fr"]}}`, in: Input{FinalAnswer: answer}, value: 1, pass: "pass"},
		{name: "array order matters", grader: `{"id":"j","kind":"json_match","value":{"langs":["fr","en"]}}`, in: Input{FinalAnswer: answer}, value: 0, pass: "fail", detail: `at langs.0: expected "fr", got "en"`},
		{name: "array length matters", grader: `{"id":"j","kind":"json_match","value":{"langs":["en"]}}`, in: Input{FinalAnswer: answer}, value: 0, pass: "fail", detail: "at langs: expected 1 items, got 2"},
		{name: "null and booleans", grader: `{"id":"j","kind":"json_match","value":{"none":null,"ok":true}}`, in: Input{FinalAnswer: answer}, value: 1, pass: "pass"},
		{name: "null is not missing", grader: `{"id":"j","kind":"json_match","value":{"absent":null}}`, in: Input{FinalAnswer: answer}, value: 0, pass: "fail", detail: `missing member "absent"`},
		{name: "type mismatch", grader: `{"id":"j","kind":"json_match","value":{"address":"London"}}`, in: Input{FinalAnswer: answer}, value: 0, pass: "fail", detail: `at address: expected "London", got {"city":"London","zip":"N1"}`},
		{name: "object expected", grader: `{"id":"j","kind":"json_match","value":{"a":1}}`, in: Input{FinalAnswer: `[1]`}, value: 0, pass: "fail", detail: "at the top level: expected an object, got [1]"},
		{name: "objects in arrays match by subset", grader: `{"id":"j","kind":"json_match","value":[{"id":1},{"id":2}]}`, in: Input{FinalAnswer: `[{"id":1,"x":0},{"id":2}]`}, value: 1, pass: "pass"},
		{name: "whole scalar answer", grader: `{"id":"j","kind":"json_match","value":42}`, in: Input{FinalAnswer: " 42\n"}, value: 1, pass: "pass"},
		{name: "explicit null value", grader: `{"id":"j","kind":"json_match","value":null}`, in: Input{FinalAnswer: "null"}, value: 1, pass: "pass"},
		{name: "big integers compare exactly", grader: `{"id":"j","kind":"json_match","value":{"n":9007199254740993}}`, in: Input{FinalAnswer: `{"n":9007199254740992}`}, value: 0, pass: "fail", detail: "expected 9007199254740993, got 9007199254740992"},
		{name: "last JSON in prose", grader: `{"id":"j","kind":"json_match","value":{"a":2}}`, in: Input{FinalAnswer: `First try: {"a":1}. Final answer: {"a":2} -- done.`}, value: 1, pass: "pass"},
		{name: "code fence", grader: `{"id":"j","kind":"json_match","value":{"ok":true}}`, in: Input{FinalAnswer: "Here you go:\n```json\n{\"ok\": true, \"items\": [1, {\"x\": 2}]}\n```\n"}, value: 1, pass: "pass"},
		{name: "nested objects are not later values", grader: `{"id":"j","kind":"json_match","value":{"outer":{"inner":1}}}`, in: Input{FinalAnswer: `Result: {"outer":{"inner":1}} {broken`}, value: 1, pass: "pass"},
		{name: "array in prose", grader: `{"id":"j","kind":"json_match","value":[1,2,3]}`, in: Input{FinalAnswer: "sorted: [1, 2, 3]"}, value: 1, pass: "pass"},
		{name: "no JSON", grader: `{"id":"j","kind":"json_match","value":{"a":1}}`, in: Input{FinalAnswer: "I don't know {really"}, value: 0, pass: "fail", detail: `no JSON value in answer "I don't know {really"`},
		{name: "path", grader: `{"id":"j","kind":"json_match","path":"address.city","value":"London"}`, in: Input{FinalAnswer: answer}, value: 1, pass: "pass"},
		{name: "path into array", grader: `{"id":"j","kind":"json_match","path":"langs.1","value":"fr"}`, in: Input{FinalAnswer: answer}, value: 1, pass: "pass"},
		{name: "path mismatch names the path", grader: `{"id":"j","kind":"json_match","path":"address.city","value":"Paris"}`, in: Input{FinalAnswer: answer}, value: 0, pass: "fail", detail: `at address.city: expected "Paris", got "London"`},
		{name: "path missing member", grader: `{"id":"j","kind":"json_match","path":"address.country","value":"UK"}`, in: Input{FinalAnswer: answer}, value: 0, pass: "fail", detail: `path "address.country": no member "country" at address`},
		{name: "path index out of range", grader: `{"id":"j","kind":"json_match","path":"langs.2","value":"de"}`, in: Input{FinalAnswer: answer}, value: 0, pass: "fail", detail: `no item "2" at langs (2 items)`},
		{name: "path through a scalar", grader: `{"id":"j","kind":"json_match","path":"age.x","value":1}`, in: Input{FinalAnswer: answer}, value: 0, pass: "fail", detail: "age is 36, not an object or array"},
		{name: "expected from the case", grader: `{"id":"json_match"}`, in: Input{FinalAnswer: `{"sum":4,"extra":1}`, Case: registry.EvalCase{Expected: map[string]any{"sum": json.Number("4")}}}, value: 1, pass: "pass"},
		{name: "expected built in Go", grader: `{"id":"json_match"}`, in: Input{FinalAnswer: `{"xs":[1,2]}`, Case: registry.EvalCase{Expected: map[string][]int{"xs": {1, 2}}}}, value: 1, pass: "pass"},
		{name: "no value and no expected", grader: `{"id":"json_match"}`, in: Input{FinalAnswer: `{}`}, value: 0, pass: "fail", detail: "skipped: json_match has no value, and the case has no expected"},
		{name: "timed out", grader: `{"id":"j","kind":"json_match","value":{"a":1}}`, in: Input{FinalAnswer: `{"a":`, TimedOut: true}, value: 0, pass: "fail", detail: "case timed out; no JSON value"},
	})
}

func TestAnswerJSON(t *testing.T) {
	for _, tc := range []struct {
		name   string
		answer string
		want   any
		found  bool
	}{
		{"object", `{"a":1}`, map[string]any{"a": json.Number("1")}, true},
		{"string scalar", `"hi"`, "hi", true},
		{"scalar in prose is not taken", `the answer is 4`, nil, false},
		{"last of two", `[1] then [2]`, []any{json.Number("2")}, true},
		{"braces in strings", `x {"s":"}{]["} y`, map[string]any{"s": "}{]["}, true},
		{"two values are not one whole", `{"a":1}{"a":2}`, map[string]any{"a": json.Number("2")}, true},
		{"unclosed", `{"a":[1,2`, nil, false},
		{"empty", ``, nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, found := answerJSON(tc.answer)
			if found != tc.found {
				t.Fatalf("found = %v, want %v (got %v)", found, tc.found, got)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("answerJSON(%q) (-want +got):\n%s", tc.answer, diff)
			}
		})
	}
}

// TestAnswerJSONHostile checks that text built to defeat the scan (every
// byte starts a value that never ends) still ends, finding nothing, and
// that a real value after such text is found while the budget lasts.
func TestAnswerJSONHostile(t *testing.T) {
	deep := strings.Repeat("[", 1<<20)
	if v, found := answerJSON(deep); found {
		t.Errorf("answerJSON(1 MiB of '[') found %v, want nothing", v)
	}
	prose := strings.Repeat("{x} [sic] ", 100_000) + `{"a":1}`
	got, found := answerJSON(prose)
	if diff := cmp.Diff(map[string]any{"a": json.Number("1")}, got); !found || diff != "" {
		t.Errorf("answerJSON(prose + value) found=%v (-want +got):\n%s", found, diff)
	}
}
