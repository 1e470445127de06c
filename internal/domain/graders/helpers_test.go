package graders

import (
	"encoding/json"
	"strings"
	"testing"

	"svc/internal/domain/eval"
	"svc/internal/domain/registry"
)

// grader decodes a grader as the registry does (numbers as json.Number).
func grader(t testing.TB, doc string) registry.Grader {
	t.Helper()
	var g registry.Grader
	if err := json.Unmarshal([]byte(doc), &g); err != nil {
		t.Fatalf("decode grader %s: %v", doc, err)
	}
	return g
}

// gradeCase is one row of a per-kind table: a grader, an input and the
// score it must produce. pass is "pass", "fail" or "none" (no verdict);
// detail is a substring the detail must hold ("" means the detail is empty).
type gradeCase struct {
	name   string
	grader string
	in     Input
	value  float64
	pass   string
	detail string
}

// runGradeCases grades each row with its grader alone and checks the score.
func runGradeCases(t *testing.T, cases []gradeCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := grader(t, tc.grader)
			scores := Grade([]registry.Grader{g}, tc.in)
			if len(scores) != 1 {
				t.Fatalf("Grade returned %d scores, want 1: %+v", len(scores), scores)
			}
			s := scores[0]
			if s.GraderID != g.ID || s.Metric != g.ID {
				t.Errorf("graderId, metric = %q, %q; want %q for both", s.GraderID, s.Metric, g.ID)
			}
			if s.Value != tc.value {
				t.Errorf("value = %v, want %v (detail %q)", s.Value, tc.value, s.Detail)
			}
			if got := passWord(s.Pass); got != tc.pass {
				t.Errorf("pass = %s, want %s (detail %q)", got, tc.pass, s.Detail)
			}
			switch {
			case tc.detail == "" && s.Detail != "":
				t.Errorf("detail = %q, want none", s.Detail)
			case !strings.Contains(s.Detail, tc.detail):
				t.Errorf("detail = %q, want it to contain %q", s.Detail, tc.detail)
			}
		})
	}
}

// passWord names a Score's verdict.
func passWord(p *bool) string {
	switch {
	case p == nil:
		return "none"
	case *p:
		return "pass"
	}
	return "fail"
}

// calls builds a trace of tool calls with the given names.
func calls(names ...string) []eval.TraceEvent {
	tr := make([]eval.TraceEvent, len(names))
	for i, n := range names {
		tr[i] = eval.TraceEvent{Kind: eval.EventToolCall, Name: n}
	}
	return tr
}
