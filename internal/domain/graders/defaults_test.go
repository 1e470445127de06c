package graders

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"

	"svc/internal/domain/registry"
)

// TestForCase: a case without graders is graded by the base defaults and,
// when it has an expected answer, by the answer grader that compares it;
// a case's own graders or a batch's override are used as they are.
func TestForCase(t *testing.T) {
	exitCode := []registry.Grader{{ID: KindExitCode}}
	own := []registry.Grader{{ID: "answer", Params: map[string]any{"kind": "contains"}}}
	override := []registry.Grader{{ID: KindRegex, Params: map[string]any{"pattern": "ok"}}}
	tests := []struct {
		name     string
		c        registry.EvalCase
		override []registry.Grader
		want     []string
	}{
		{"no expected", registry.EvalCase{}, nil, []string{"exit_code"}},
		{"string expected", registry.EvalCase{Expected: "391"}, nil, []string{"exit_code", "exact"}},
		{"number expected", registry.EvalCase{Expected: json.Number("18")}, nil, []string{"exit_code", "exact"}},
		{"boolean expected", registry.EvalCase{Expected: false}, nil, []string{"exit_code", "exact"}},
		{"object expected", registry.EvalCase{Expected: map[string]any{"a": 1.0}}, nil, []string{"exit_code", "json_match"}},
		{"list expected", registry.EvalCase{Expected: []any{"a"}}, nil, []string{"exit_code", "json_match"}},
		{"empty graders list", registry.EvalCase{Expected: "x", Graders: []registry.Grader{}}, nil, []string{"exit_code", "exact"}},
		{"own graders", registry.EvalCase{Expected: "x", Graders: own}, nil, []string{"answer"}},
		{"batch override", registry.EvalCase{Expected: "x", Graders: own}, override, []string{"regex"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, g := range ForCase(tt.c, tt.override, exitCode) {
				got = append(got, g.ID)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("ForCase graders (-want +got):\n%s", diff)
			}
		})
	}
	if len(exitCode) != 1 {
		t.Errorf("ForCase changed its base: %v", exitCode)
	}
}

// TestAnswerDefaultGrades: the default answer grader fails a wrong answer
// naming both, and passes the right one, trimmed.
func TestAnswerDefaultGrades(t *testing.T) {
	for _, tt := range []struct {
		expected any
		answer   string
		pass     bool
		detail   string
	}{
		{"391", " 391\n", true, ""},
		{"391", "392", false, `expected "391", got "392"`},
		{json.Number("4"), "4", true, ""},
		{map[string]any{"ok": true}, `{"ok": true, "n": 2}`, true, ""},
		{map[string]any{"ok": true}, `{"ok": false}`, false, "at ok: expected true, got false"},
	} {
		c := registry.EvalCase{ID: "c", Expected: tt.expected}
		s := Grade(ForCase(c, nil, nil), Input{Case: c, FinalAnswer: tt.answer})
		if len(s) != 1 || s[0].Pass == nil || *s[0].Pass != tt.pass || s[0].Detail != tt.detail {
			t.Errorf("expected %v, answer %q: scores %+v, want pass %v detail %q", tt.expected, tt.answer, s, tt.pass, tt.detail)
		}
	}
}
