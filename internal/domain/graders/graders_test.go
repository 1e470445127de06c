package graders

import (
	"encoding/json"
	"math"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"

	"svc/internal/domain/eval"
	"svc/internal/domain/registry"
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
		if err := Check("graders", []registry.Grader{g}); err != nil {
			t.Errorf("Check(max %T %v) = %v", v, v, err)
		}
		s := Grade([]registry.Grader{g}, in)[0]
		if s.Pass == nil || *s.Pass || s.Detail != "3 tool calls, want at most 2" {
			t.Errorf("max %T %v: got pass %s detail %q, want fail with 3 > 2", v, v, passWord(s.Pass), s.Detail)
		}
	}
	for _, v := range []any{json.Number("2.5"), 2.5, json.Number("1e400"), math.Inf(1), math.NaN(), "2", uint64(math.MaxUint64)} {
		g := registry.Grader{ID: "t", Params: map[string]any{"kind": "tool_calls", "max": v}}
		if err := Check("graders", []registry.Grader{g}); err == nil {
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
	if err := Check("graders", gs); err != nil {
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
