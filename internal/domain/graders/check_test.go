package graders

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"svc/internal/domain/registry"
	"svc/internal/platform/derrors"
)

func TestCheck(t *testing.T) {
	for _, tc := range []struct {
		name string
		docs []string
		want []string // substrings of the error; none means valid
	}{
		{name: "no graders"},
		{name: "every kind, minimal", docs: []string{
			`{"id":"exit_code"}`, `{"id":"tool_calls"}`, `{"id":"usd"}`, `{"id":"s","kind":"span","name":"plan"}`,
			`{"id":"contains"}`, `{"id":"r","kind":"regex","pattern":"x"}`, `{"id":"exact"}`, `{"id":"json_match"}`,
		}},
		{name: "every param", docs: []string{
			`{"id":"e","kind":"exit_code","expect":3,"description":"fails on purpose"}`,
			`{"id":"t","kind":"tool_calls","name":"search","min":1,"max":3,"expect":["search","answer"]}`,
			`{"id":"u","type":"usd","max":0.25}`,
			`{"id":"s","kind":"span","name":"db","attributes":{"rows":3}}`,
			`{"id":"c","kind":"contains","values":["a","b"],"ignoreCase":true}`,
			`{"id":"x","kind":"exact","value":"4","trim":false,"ignoreCase":true}`,
			`{"id":"j","kind":"json_match","path":"a.b.0","value":null}`,
		}},
		{name: "unknown kind by id", docs: []string{`{"id":"tests"}`}, want: []string{`graders[0]: grader "tests": kind: unknown grader kind "tests" (built-in kinds: contains, exact`, "; with no kind given, the id names the kind"}},
		{name: "unknown kind by kind", docs: []string{`{"id":"a","kind":"llm"}`}, want: []string{`graders[0]: grader "a": kind: unknown grader kind "llm"`}},
		{name: "unknown kind by type", docs: []string{`{"id":"a","type":"llm"}`}, want: []string{`type: unknown grader kind "llm"`}},
		{name: "kind not a string", docs: []string{`{"id":"a","kind":["exact"]}`}, want: []string{"kind: must be a string naming the grader kind, not a list"}},
		{name: "kind and type disagree", docs: []string{`{"id":"a","kind":"exact","type":"regex"}`}, want: []string{`kind: "exact" disagrees with type "regex"`}},
		{name: "missing id", docs: []string{`{"kind":"exact","value":"x"}`}, want: []string{"id: a grader needs an id"}},
		{name: "misspelt param", docs: []string{`{"id":"t","kind":"tool_calls","mx":3}`}, want: []string{`graders[0]: grader "t": mx: is not a parameter of tool_calls graders (they take name, min, max, expect)`}},
		{name: "min above max", docs: []string{`{"id":"t","kind":"tool_calls","min":4,"max":3}`}, want: []string{"min: 4 is above max 3"}},
		{name: "negative min", docs: []string{`{"id":"t","kind":"tool_calls","min":-1}`}, want: []string{"min: must be between 0 and"}},
		{name: "fractional max", docs: []string{`{"id":"t","kind":"tool_calls","max":1.5}`}, want: []string{"max: must be a whole number, not a number"}},
		{name: "max as string", docs: []string{`{"id":"t","kind":"tool_calls","max":"3"}`}, want: []string{"max: must be a whole number, not a string"}},
		{name: "empty expect", docs: []string{`{"id":"t","kind":"tool_calls","expect":[]}`}, want: []string{"expect: must list at least one string"}},
		{name: "bad expect item", docs: []string{`{"id":"t","kind":"tool_calls","expect":["a",2]}`}, want: []string{"expect[1]: must be a non-empty string, not a number"}},
		{name: "empty tool name", docs: []string{`{"id":"t","kind":"tool_calls","name":""}`}, want: []string{"name: must not be empty"}},
		{name: "negative usd max", docs: []string{`{"id":"u","kind":"usd","max":-0.01}`}, want: []string{"max: must be at least 0, not -0.01"}},
		{name: "usd max not a number", docs: []string{`{"id":"u","kind":"usd","max":true}`}, want: []string{"max: must be a number, not a boolean"}},
		{name: "span without name", docs: []string{`{"id":"s","kind":"span"}`}, want: []string{"name: is required"}},
		{name: "span attributes not an object", docs: []string{`{"id":"s","kind":"span","name":"a","attributes":["x"]}`}, want: []string{"attributes: must be an object"}},
		{name: "exit expect fractional", docs: []string{`{"id":"e","kind":"exit_code","expect":0.5}`}, want: []string{"expect: must be a whole number"}},
		{name: "exit expect huge", docs: []string{`{"id":"e","kind":"exit_code","expect":1e12}`}, want: []string{"expect: must be between"}},
		{name: "contains both", docs: []string{`{"id":"c","kind":"contains","value":"a","values":["b"]}`}, want: []string{"values: give value or values, not both"}},
		{name: "contains empty value", docs: []string{`{"id":"c","kind":"contains","value":""}`}, want: []string{"value: must not be empty"}},
		{name: "contains object value", docs: []string{`{"id":"c","kind":"contains","value":{"a":1}}`}, want: []string{"value: must be a string, not an object"}},
		{name: "contains values not a list", docs: []string{`{"id":"c","kind":"contains","values":"ab"}`}, want: []string{"values: must be a list of strings, not a string"}},
		{name: "ignoreCase not a bool", docs: []string{`{"id":"c","kind":"contains","value":"a","ignoreCase":"yes"}`}, want: []string{"ignoreCase: must be true or false, not a string"}},
		{name: "regex without pattern", docs: []string{`{"id":"r","kind":"regex"}`}, want: []string{"pattern: is required"}},
		{name: "regex bad pattern", docs: []string{`{"id":"r","kind":"regex","pattern":"a(b"}`}, want: []string{"pattern: is not a valid Go regular expression: error parsing regexp: missing closing )"}},
		{name: "regex lookahead unsupported", docs: []string{`{"id":"r","kind":"regex","pattern":"(?=x)"}`}, want: []string{"pattern: is not a valid Go regular expression: RE2, Go's syntax, has no look-ahead such as (?=...) or (?!...) (at `(?=`)"}},
		{name: "exact trim not a bool", docs: []string{`{"id":"x","kind":"exact","value":"a","trim":0}`}, want: []string{"trim: must be true or false, not a number"}},
		{name: "exact array value", docs: []string{`{"id":"x","kind":"exact","value":["a"]}`}, want: []string{"value: must be a string, not a list"}},
		{name: "json path empty segment", docs: []string{`{"id":"j","kind":"json_match","path":"a..b","value":1}`}, want: []string{`path: "a..b" must be a dot path`}},
		{name: "json path not a string", docs: []string{`{"id":"j","kind":"json_match","path":3,"value":1}`}, want: []string{"path: must be a string, not a number"}},
		{name: "every problem is reported", docs: []string{`{"id":"ok","kind":"exact","value":"a"}`, `{"id":"r","kind":"regex","pattern":"("}`, `{"id":"nope"}`},
			want: []string{`graders[1]: grader "r": pattern:`, `; graders[2]: grader "nope": kind: unknown grader kind`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var gs []registry.Grader
			for _, d := range tc.docs {
				gs = append(gs, grader(t, d))
			}
			err := Check("graders", gs)
			if len(tc.want) == 0 {
				if err != nil {
					t.Fatalf("Check() = %v, want nil", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("Check() = nil, want an error containing %q", tc.want)
			}
			if !errors.Is(err, derrors.ErrInvalid) {
				t.Errorf("Check() = %v, which is not ErrInvalid", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Check() = %q\nwant it to contain %q", err, w)
				}
			}
		})
	}
}

// TestCheckIssueGraders holds the graders of the issue that found the
// checker bypassed: each must be refused with a message saying what to fix.
func TestCheckIssueGraders(t *testing.T) {
	builtin := "(built-in kinds: contains, exact, exit_code, json_match, regex, span, tool_calls, usd)"
	for _, tc := range []struct {
		name string
		docs []string
		want string // the whole error
	}{
		{"mx on tool_calls", []string{`{"id":"calls","kind":"tool_calls","mx":0}`},
			`invalid argument: graders[0]: grader "calls": mx: is not a parameter of tool_calls graders (they take name, min, max, expect); did you mean "max"?`},
		{"ignorecase on contains", []string{`{"id":"c","kind":"contains","value":"paris","ignorecase":true}`},
			`invalid argument: graders[0]: grader "c": ignorecase: is not a parameter of contains graders (they take value, values, ignoreCase); did you mean "ignoreCase"?`},
		{"ignorecase on exact", []string{`{"id":"x","kind":"exact","value":"Paris","ignorecase":true}`},
			`invalid argument: graders[0]: grader "x": ignorecase: is not a parameter of exact graders (they take value, trim, ignoreCase); did you mean "ignoreCase"?`},
		{"kind exactly", []string{`{"id":"answer","kind":"exactly"}`},
			`invalid argument: graders[0]: grader "answer": kind: unknown grader kind "exactly" ` + builtin + `; did you mean "exact"?`},
		{"regex lookahead", []string{`{"id":"r","kind":"regex","pattern":"(?=x)"}`},
			"invalid argument: graders[0]: grader \"r\": pattern: is not a valid Go regular expression: RE2, Go's syntax, has no look-ahead such as (?=...) or (?!...) (at `(?=`); match the text itself, or check what must not appear with a second grader"},
		{"llm first, bad second: positions as sent", []string{`{"id":"a","kind":"llm"}`, `{"id":"b","kind":"tool_calls","mx":1}`},
			`invalid argument: graders[0]: grader "a": kind: unknown grader kind "llm" ` + builtin +
				`; graders[1]: grader "b": mx: is not a parameter of tool_calls graders (they take name, min, max, expect); did you mean "max"?`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var gs []registry.Grader
			for _, d := range tc.docs {
				gs = append(gs, grader(t, d))
			}
			err := Check("graders", gs)
			if err == nil {
				t.Fatalf("Check(%s) = nil, want %q", tc.docs, tc.want)
			}
			if diff := cmp.Diff(tc.want, err.Error()); diff != "" {
				t.Errorf("Check(%s) (-want +got):\n%s", tc.docs, diff)
			}
		})
	}
}

// kindRows is one grader each kind accepts and one it refuses, with the
// message's field and text; TestCheckEveryKind fails when a kind has none.
var kindRows = []struct {
	kind, good, bad, want string
}{
	{KindExitCode, `{"id":"e","kind":"exit_code","expect":1}`, `{"id":"e","kind":"exit_code","expect":"1"}`, "expect: must be a whole number, not a string"},
	{KindContains, `{"id":"c","kind":"contains","values":["a","b"],"ignoreCase":true}`, `{"id":"c","kind":"contains","value":"a","values":["b"]}`, "values: give value or values, not both"},
	{KindRegex, `{"id":"r","kind":"regex","pattern":"(?i)^a+$"}`, `{"id":"r","kind":"regex"}`, "pattern: is required"},
	{KindExact, `{"id":"x","kind":"exact","value":"4","trim":false}`, `{"id":"x","kind":"exact","trim":"no"}`, "trim: must be true or false, not a string"},
	{KindJSONMatch, `{"id":"j","kind":"json_match","path":"a.0","value":{"b":1}}`, `{"id":"j","kind":"json_match","path":"a..b"}`, `path: "a..b" must be a dot path`},
	{KindToolCalls, `{"id":"t","kind":"tool_calls","name":"search","max":0}`, `{"id":"t","kind":"tool_calls","min":3,"max":1}`, "min: 3 is above max 1"},
	{KindUSD, `{"id":"u","kind":"usd","max":0.05}`, `{"id":"u","kind":"usd","max":-1}`, "max: must be at least 0, not -1"},
	{KindSpan, `{"id":"s","kind":"span","name":"retrieve","attributes":{"k":5}}`, `{"id":"s","kind":"span","attributes":{"k":5}}`, "name: is required"},
}

func TestCheckEveryKind(t *testing.T) {
	covered := map[string]bool{}
	for _, r := range kindRows {
		covered[r.kind] = true
		t.Run(r.kind, func(t *testing.T) {
			if err := Check("graders", []registry.Grader{grader(t, r.good)}); err != nil {
				t.Errorf("Check(%s) = %v, want nil", r.good, err)
			}
			err := Check("graders", []registry.Grader{grader(t, r.bad)})
			if err == nil || !strings.Contains(err.Error(), r.want) {
				t.Errorf("Check(%s) = %v, want an error containing %q", r.bad, err, r.want)
			}
		})
	}
	for _, k := range Kinds() {
		if !covered[k] {
			t.Errorf("kind %s has no row in kindRows", k)
		}
	}
}

func TestProblems(t *testing.T) {
	gs := []registry.Grader{
		grader(t, `{"id":"t","kind":"tool_calls","mx":0,"mn":1,"min":-1}`),
		grader(t, `{"id":"t","kind":"usd"}`),
		grader(t, `{"kind":"exact"}`),
		grader(t, `{"id":"ok","kind":"usd"}`),
		grader(t, `{"id":"k","kind":"regex","pattern":"("}`),
	}
	got := Problems(gs)
	want := []Problem{
		{Index: 0, ID: "t", Field: "mn", Message: `is not a parameter of tool_calls graders (they take name, min, max, expect); did you mean "min"?`},
		{Index: 0, ID: "t", Field: "mx", Message: `is not a parameter of tool_calls graders (they take name, min, max, expect); did you mean "max"?`},
		{Index: 0, ID: "t", Field: "min", Message: "must be between 0 and 2147483647, not -1", Skips: true},
		{Index: 1, ID: "t", Field: "id", Message: "is also the id of graders[0]; ids name the scores, so give each grader its own"},
		{Index: 2, Field: "id", Message: "a grader needs an id (it names the grader's score)", Skips: true},
		{Index: 4, ID: "k", Field: "pattern", Message: "is not a valid Go regular expression: error parsing regexp: missing closing ): `(`", Skips: true},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Problems (-want +got):\n%s", diff)
	}
	// Skips says what grading does: a grader with any problem that Skips
	// grades as a skip score, and one whose problems all do not still grades.
	skips := map[int]bool{}
	for _, p := range got {
		skips[p.Index] = skips[p.Index] || p.Skips
	}
	for i, s := range Grade(gs, Input{}) {
		if skipped := strings.HasPrefix(s.Detail, "skipped:"); skipped != skips[i] {
			t.Errorf("graders[%d]: problems say skip %v, but Grade's detail is %q", i, skips[i], s.Detail)
		}
	}
	if s := Grade(gs[:1], Input{})[0]; s.Detail != "skipped: bad params: min: must be between 0 and 2147483647, not -1" {
		t.Errorf("graders[0] grades with detail %q; want the bad min (the misspelt members ignored)", s.Detail)
	}
	if s := Grade([]registry.Grader{grader(t, `{"id":"t","kind":"tool_calls","mx":0}`)}, Input{Trace: calls("a", "b")}); s[0].Value != 2 || s[0].Pass != nil {
		t.Errorf("a misspelt max grades as %+v; want the count 2 and no verdict (the member is ignored)", s[0])
	}
}

func TestCheckCapsProblems(t *testing.T) {
	var gs []registry.Grader
	for i := range 25 {
		gs = append(gs, grader(t, fmt.Sprintf(`{"id":"g%d","kind":"nope"}`, i)))
	}
	err := Check("case.graders", gs)
	if err == nil {
		t.Fatal("Check = nil, want an error")
	}
	msg := err.Error()
	if n := strings.Count(msg, "unknown grader kind"); n != maxProblems {
		t.Errorf("the message lists %d problems, want %d", n, maxProblems)
	}
	for _, w := range []string{`case.graders[0]: grader "g0": kind:`, `case.graders[19]: grader "g19"`, "; and 5 more"} {
		if !strings.Contains(msg, w) {
			t.Errorf("Check = %q\nwant it to contain %q", msg, w)
		}
	}
	if strings.Contains(msg, "g20") {
		t.Errorf("Check = %q lists more than %d problems", msg, maxProblems)
	}
}

func TestCheckCases(t *testing.T) {
	var cases []registry.EvalCase
	for _, doc := range []string{
		`{"id":"c1","task":"t","graders":[{"id":"exit_code"}]}`,
		`{"id":"c2","task":"t"}`,
		`{"id":"c3","task":"t","graders":[{"id":"a","kind":"llm"},{"id":"calls","kind":"tool_calls","mx":0}]}`,
		`{"id":"c4","task":"t","graders":[{"kind":"exact"},{"id":"x"},{"id":"x"}]}`,
	} {
		var c registry.EvalCase
		if err := json.Unmarshal([]byte(doc), &c); err != nil {
			t.Fatal(err)
		}
		cases = append(cases, c)
	}
	got, more := CheckCases(cases)
	want := []registry.Problem{
		{Path: "cases[2].graders[0]", Message: `case "c3", grader "a": kind: unknown grader kind "llm" (built-in kinds: contains, exact, exit_code, json_match, regex, span, tool_calls, usd)`},
		{Path: "cases[2].graders[1]", Message: `case "c3", grader "calls": mx: is not a parameter of tool_calls graders (they take name, min, max, expect); did you mean "max"?`},
		// The missing and duplicate ids of c4 are the registry's to report.
		{Path: "cases[3].graders[1]", Message: `case "c4", grader "x": kind: unknown grader kind "x" (built-in kinds: contains, exact, exit_code, json_match, regex, span, tool_calls, usd); with no kind given, the id names the kind, so add "kind" naming a built-in one`},
		{Path: "cases[3].graders[2]", Message: `case "c4", grader "x": kind: unknown grader kind "x" (built-in kinds: contains, exact, exit_code, json_match, regex, span, tool_calls, usd); with no kind given, the id names the kind, so add "kind" naming a built-in one`},
	}
	if diff := cmp.Diff(want, got, cmpopts.IgnoreUnexported(registry.Problem{})); diff != "" || more != 0 {
		t.Errorf("CheckCases (-want +got):\n%s\nmore = %d, want 0", diff, more)
	}

	// A large dataset with a mistake in every case: the first maxProblems
	// are listed and the rest counted.
	cases = nil
	for i := range 30 {
		cases = append(cases, registry.EvalCase{ID: fmt.Sprintf("c%d", i), Graders: []registry.Grader{{ID: "t", Params: map[string]any{"kind": "tool_calls", "mx": 1}}}})
	}
	got, more = CheckCases(cases)
	if len(got) != maxProblems || more != 10 || got[19].Path != "cases[19].graders[0]" {
		t.Errorf("CheckCases over 30 bad cases = %d problems (last %+v), %d more; want %d and 10 more", len(got), got[len(got)-1], more, maxProblems)
	}
}

func TestSuggest(t *testing.T) {
	for _, tc := range []struct {
		name string
		want string
	}{
		{"mx", "max"}, {"ignorecase", "ignoreCase"}, {"IGNORECASE", "ignoreCase"}, {"exactly", "exact"},
		{"exit-code", "exit_code"}, {"toolcalls", "tool_calls"}, {"jsonmatch", "json_match"},
		{"llm", ""}, {"tests", ""}, {"g", ""}, {strings.Repeat("m", 500), ""},
	} {
		cands := append(Kinds(), "max", "min", "ignoreCase", "value")
		got := suggest(tc.name, cands)
		want := ""
		if tc.want != "" {
			want = fmt.Sprintf("; did you mean %q?", tc.want)
		}
		if got != want {
			t.Errorf("suggest(%.20q) = %q, want %q", tc.name, got, want)
		}
	}
}

func TestRE2Hints(t *testing.T) {
	for _, tc := range []struct {
		pattern string
		want    string // "" means the regexp package's own message
	}{
		{"a(?=b)", "has no look-ahead"},
		{"a(?!b)", "has no look-ahead"},
		{"(?<=a)b", "has no look-behind"},
		{"(?<!a)b", "has no look-behind"},
		{`(a)\1`, `has no back-references such as \1 (at ` + "`\\1`)"},
		{"a++", "has no possessive quantifiers"},
		{"a**", ""},
		{"a(b", ""},
	} {
		err := Check("graders", []registry.Grader{{ID: "r", Params: map[string]any{"kind": "regex", "pattern": tc.pattern}}})
		if err == nil {
			t.Errorf("pattern %q: Check = nil, want an error", tc.pattern)
			continue
		}
		want := tc.want
		if want == "" {
			want = "is not a valid Go regular expression: error parsing regexp:"
		}
		if !strings.Contains(err.Error(), want) {
			t.Errorf("pattern %q: Check = %q\nwant it to contain %q", tc.pattern, err, want)
		}
	}
}

// TestCheckErrIsInvalid: every refusal answers 400.
func TestCheckErrIsInvalid(t *testing.T) {
	err := Check("graders", []registry.Grader{{ID: "tests"}})
	if !errors.Is(err, derrors.ErrInvalid) {
		t.Errorf("Check = %v, which is not ErrInvalid", err)
	}
}
