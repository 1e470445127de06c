package graders

import "svc/internal/domain/registry"

// A case that declares no graders is still graded: by the measurement
// defaults of where it ran (exit_code for a run, tool_calls and usd for an
// ingested trace) and, when it carries an expected answer, by an answer
// grader comparing the final answer with it. Without the answer grader a
// dataset with an `expected` column and no graders passed wrong answers on
// their exit code alone (issue 29); promptfoo grades a bare `__expected`
// the same way, with `equals`.

// AnswerDefault is the answer grader a case with no graders of its own is
// graded with: exact (the trimmed answer equals expected) when expected is
// a string, number or boolean, json_match when it is an object or a list;
// ok is false when the case has no expected answer. Its id is its kind,
// so the score names the grader that compared.
func AnswerDefault(c registry.EvalCase) (g registry.Grader, ok bool) {
	switch c.Expected.(type) {
	case nil:
		return registry.Grader{}, false
	case map[string]any, []any:
		return registry.Grader{ID: KindJSONMatch}, true
	}
	if _, ok := textOf(c.Expected); ok {
		return registry.Grader{ID: KindExact}, true
	}
	// Any other JSON value decoded some other way: compared as JSON.
	return registry.Grader{ID: KindJSONMatch}, true
}

// ForCase returns the graders that grade case c: override when it names
// any (a batch's graders), else the case's own, else base (the measurement
// defaults of where the case ran) followed by the case's AnswerDefault.
func ForCase(c registry.EvalCase, override, base []registry.Grader) []registry.Grader {
	gs := c.Graders
	if override != nil {
		gs = override
	}
	if len(gs) > 0 {
		return gs
	}
	out := make([]registry.Grader, 0, len(base)+1)
	out = append(out, base...)
	if g, ok := AnswerDefault(c); ok {
		out = append(out, g)
	}
	return out
}
