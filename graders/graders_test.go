package graders

import (
	"encoding/json"
	"errors"
	"math"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"

	"svc/derrors"
	"svc/eval"
	"svc/registry"
)

func TestKinds(t *testing.T) {
	want := []string{"contains", "exact", "exit_code", "json_match", "regex", "span", "tool_calls", "usd"}
	if diff := cmp.Diff(want, Kinds()); diff != "" {
		t.Errorf("Kinds() (-want +got):\n%s", diff)
	}
	for _, k := range TraceOnly {
		if _, ok := kinds[k]; !ok {
			t.Errorf("TraceOnly names %q, which is not a built-in kind", k)
		}
	}
	// Kinds hands out a copy.
	Kinds()[0] = "mutated"
	if Kinds()[0] != "contains" {
		t.Error("Kinds() returned shared storage")
	}
}

func TestKindOf(t *testing.T) {
	for _, tc := range []struct {
		doc       string
		kind      string
		traceOnly bool
	}{
		{`{"id":"exit_code"}`, "exit_code", false},
		{`{"id":"answer","kind":"exact"}`, "exact", false},
		{`{"id":"answer","type":"regex"}`, "regex", false},
		{`{"id":"calls","kind":"tool_calls"}`, "tool_calls", true},
		{`{"id":"usd"}`, "usd", true},
		{`{"id":"s","type":"span"}`, "span", true},
		{`{"id":"x","kind":7}`, "", false},
		{`{"id":"x","kind":"exact","type":"regex"}`, "", false},
		{`{"id":"x","kind":"exact","type":"exact"}`, "exact", false},
	} {
		g := grader(t, tc.doc)
		if got := KindOf(g); got != tc.kind {
			t.Errorf("KindOf(%s) = %q, want %q", tc.doc, got, tc.kind)
		}
		if got := IsTraceOnly(g); got != tc.traceOnly {
			t.Errorf("IsTraceOnly(%s) = %v, want %v", tc.doc, got, tc.traceOnly)
		}
	}
}

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
		{name: "unknown kind by id", docs: []string{`{"id":"tests"}`}, want: []string{`grader "tests" (graders[0]): kind: unknown grader kind "tests" (built-in kinds: contains, exact`, "; with no kind given, the id names the kind"}},
		{name: "unknown kind by kind", docs: []string{`{"id":"a","kind":"llm"}`}, want: []string{`grader "a" (graders[0]): kind: unknown grader kind "llm"`}},
		{name: "unknown kind by type", docs: []string{`{"id":"a","type":"llm"}`}, want: []string{`type: unknown grader kind "llm"`}},
		{name: "kind not a string", docs: []string{`{"id":"a","kind":["exact"]}`}, want: []string{"kind: must be a string naming the grader kind, not a list"}},
		{name: "kind and type disagree", docs: []string{`{"id":"a","kind":"exact","type":"regex"}`}, want: []string{`kind: "exact" disagrees with type "regex"`}},
		{name: "missing id", docs: []string{`{"kind":"exact","value":"x"}`}, want: []string{"id: a grader needs an id"}},
		{name: "misspelt param", docs: []string{`{"id":"t","kind":"tool_calls","mx":3}`}, want: []string{`grader "t" (graders[0]): mx: is not a parameter of tool_calls graders (they take name, min, max, expect)`}},
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
		{name: "regex lookahead unsupported", docs: []string{`{"id":"r","kind":"regex","pattern":"(?=x)"}`}, want: []string{"pattern: is not a valid Go regular expression"}},
		{name: "exact trim not a bool", docs: []string{`{"id":"x","kind":"exact","value":"a","trim":0}`}, want: []string{"trim: must be true or false, not a number"}},
		{name: "exact array value", docs: []string{`{"id":"x","kind":"exact","value":["a"]}`}, want: []string{"value: must be a string, not a list"}},
		{name: "json path empty segment", docs: []string{`{"id":"j","kind":"json_match","path":"a..b","value":1}`}, want: []string{`path: "a..b" must be a dot path`}},
		{name: "json path not a string", docs: []string{`{"id":"j","kind":"json_match","path":3,"value":1}`}, want: []string{"path: must be a string, not a number"}},
		{name: "every problem is reported", docs: []string{`{"id":"ok","kind":"exact","value":"a"}`, `{"id":"r","kind":"regex","pattern":"("}`, `{"id":"nope"}`},
			want: []string{`grader "r" (graders[1]): pattern:`, `; grader "nope" (graders[2]): kind: unknown grader kind`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var gs []registry.Grader
			for _, d := range tc.docs {
				gs = append(gs, grader(t, d))
			}
			err := Check(gs)
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

func TestGradeOrderAndSkips(t *testing.T) {
	gs := []registry.Grader{
		grader(t, `{"id":"exit_code"}`),
		grader(t, `{"id":"llm-judge","kind":"llm"}`),
		grader(t, `{"id":"answer","kind":"exact","value":"4"}`),
		grader(t, `{"id":"r","kind":"regex","pattern":"("}`),
		grader(t, `{"id":"k","kind":false}`),
		grader(t, `{"id":"tests"}`),
	}
	got := Grade(gs, Input{FinalAnswer: "4"})
	no := false
	yes := true
	want := []eval.Score{
		{GraderID: "exit_code", Metric: "exit_code", Value: 0, Pass: &yes},
		{GraderID: "llm-judge", Metric: "llm-judge", Pass: &no, Detail: `skipped: unknown grader kind "llm" (built-in kinds: contains, exact, exit_code, json_match, regex, span, tool_calls, usd)`},
		{GraderID: "answer", Metric: "answer", Value: 1, Pass: &yes},
		{GraderID: "r", Metric: "r", Pass: &no, Detail: "skipped: bad params: pattern: is not a valid Go regular expression: error parsing regexp: missing closing ): `(`"},
		{GraderID: "k", Metric: "k", Pass: &no, Detail: "skipped: bad params: kind: must be a string naming the grader kind, not a boolean"},
		{GraderID: "tests", Metric: "tests", Pass: &no, Detail: `skipped: unknown grader kind "tests" (built-in kinds: contains, exact, exit_code, json_match, regex, span, tool_calls, usd)`},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Grade (-want +got):\n%s", diff)
	}
	if got := Grade(nil, Input{}); len(got) != 0 {
		t.Errorf("Grade(nil) = %v, want no scores", got)
	}
}

// TestGradeIgnoresUnknownParams: Check refuses a misspelt member, but a
// case that reached grading anyway still grades on the members it has.
func TestGradeIgnoresUnknownParams(t *testing.T) {
	runGradeCases(t, []gradeCase{
		{name: "extra member", grader: `{"id":"x","kind":"exact","value":"a","weight":2}`, in: Input{FinalAnswer: "a"}, value: 1, pass: "pass"},
	})
}

// TestNumberForms feeds one limit in every representation a caller may
// hold: json.Number from the registry, float64 from plain encoding/json
// and Go integers from code.
func TestNumberForms(t *testing.T) {
	in := Input{Trace: calls("a", "b", "c")}
	for _, v := range []any{json.Number("2"), json.Number("2.0"), json.Number("2e0"), float64(2), float32(2), 2, int8(2), int64(2), uint(2), uint64(2)} {
		g := registry.Grader{ID: "t", Params: map[string]any{"kind": "tool_calls", "max": v}}
		if err := Check([]registry.Grader{g}); err != nil {
			t.Errorf("Check(max %T %v) = %v", v, v, err)
		}
		s := Grade([]registry.Grader{g}, in)[0]
		if s.Pass == nil || *s.Pass || s.Detail != "3 tool calls, want at most 2" {
			t.Errorf("max %T %v: got pass %s detail %q, want fail with 3 > 2", v, v, passWord(s.Pass), s.Detail)
		}
	}
	for _, v := range []any{json.Number("2.5"), 2.5, json.Number("1e400"), math.Inf(1), math.NaN(), "2", uint64(math.MaxUint64)} {
		g := registry.Grader{ID: "t", Params: map[string]any{"kind": "tool_calls", "max": v}}
		if err := Check([]registry.Grader{g}); err == nil {
			t.Errorf("Check(max %T %v) = nil, want an error", v, v)
		}
	}
}

// TestGoBuiltParams covers graders built in Go rather than decoded.
func TestGoBuiltParams(t *testing.T) {
	gs := []registry.Grader{
		{ID: "c", Params: map[string]any{"kind": "contains", "values": []string{"a", "b"}}},
		{ID: "t", Params: map[string]any{"kind": "tool_calls", "expect": []string{"x"}}},
		{ID: "j", Params: map[string]any{"kind": "json_match", "value": map[string]int{"n": 1}}},
	}
	if err := Check(gs); err != nil {
		t.Fatalf("Check = %v", err)
	}
	for _, s := range Grade(gs, Input{FinalAnswer: `a b {"n": 1.0}`, Trace: calls("x")}) {
		if s.Pass == nil || !*s.Pass {
			t.Errorf("%s: pass %s, detail %q; want pass", s.GraderID, passWord(s.Pass), s.Detail)
		}
	}
}

func TestDetailIsBoundedAndStorable(t *testing.T) {
	long := strings.Repeat("é", 5000) + "\x00\xff"
	gs := []registry.Grader{
		{ID: "x", Params: map[string]any{"kind": "exact", "value": long}},
		{ID: "t", Params: map[string]any{"kind": "tool_calls", "expect": []any{long}}},
		{ID: "r", Params: map[string]any{"kind": "regex", "pattern": "\xff("}},
		{ID: long, Params: map[string]any{"kind": long}},
	}
	for _, s := range Grade(gs, Input{FinalAnswer: long + "!", Trace: calls("other", long+"!")}) {
		if n := utf8.RuneCountInString(s.Detail); n > maxDetail {
			t.Errorf("%.10s: detail has %d runes, want at most %d", s.GraderID, n, maxDetail)
		}
		if !utf8.ValidString(s.Detail) || strings.ContainsRune(s.Detail, 0) {
			t.Errorf("%.10s: detail %q is not valid UTF-8 without NUL", s.GraderID, s.Detail)
		}
		if s.Pass == nil || *s.Pass {
			t.Errorf("%.10s: pass %s, want fail", s.GraderID, passWord(s.Pass))
		}
	}
}

func TestNonFiniteValue(t *testing.T) {
	runGradeCases(t, []gradeCase{
		{name: "infinite cost", grader: `{"id":"usd"}`, in: Input{Usage: eval.Usage{CostUSD: math.Inf(1)}}, value: 0, pass: "fail", detail: "value is not a finite number"},
	})
	s := Grade([]registry.Grader{grader(t, `{"id":"usd"}`)}, Input{Trace: []eval.TraceEvent{{CostUSD: math.MaxFloat64}, {CostUSD: math.MaxFloat64}}})
	if _, err := json.Marshal(s); err != nil {
		t.Errorf("an overflowing cost makes an unencodable score: %v", err)
	}
}

func TestPanicBecomesSkip(t *testing.T) {
	kinds["boom"] = kindDef{parse: func(*params) (gradeFunc, error) {
		return func(*Input) outcome { panic("kaboom") }, nil
	}}
	defer delete(kinds, "boom")
	got := Grade([]registry.Grader{{ID: "boom"}, {ID: "exit_code"}}, Input{})
	if len(got) != 2 || got[0].Detail != "skipped: boom grader failed: kaboom" || got[1].Pass == nil || !*got[1].Pass {
		t.Errorf("Grade with a panicking grader = %+v; want a skip then the exit code score", got)
	}
}
