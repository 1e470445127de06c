package graders

import (
	"errors"
	"fmt"
	"regexp/syntax"
	"slices"
	"strings"

	"svc/internal/domain/registry"
	"svc/internal/platform/derrors"
)

// Problem is one thing the checker refuses in one grader: which grader, the
// member to fix and what is wrong with it.
type Problem struct {
	// Index is the grader's position in the list checked.
	Index int
	// ID is the grader's id; "" when it has none.
	ID string
	// Field names the member to fix ("mx", "kind", "expect[1]").
	Field string
	// Message says what is wrong and how to fix it.
	Message string
	// Skips is true when grading turns the grader into a skip score; false
	// when grading goes on regardless (a member the kind does not know is
	// ignored, so a misspelt limit is silently never applied).
	Skips bool
}

// String renders the problem without its position: `grader "calls": mx:
// is not a parameter ...`.
func (p Problem) String() string {
	s := p.Field + ": " + p.Message
	if p.ID != "" {
		s = fmt.Sprintf("grader %q: %s", clip(p.ID, 60), s)
	}
	return s
}

// maxProblems bounds the problems one refusal lists, as the registry does:
// a client fixes the first few and resubmits, and a dataset with one mistake
// per case must not produce a megabyte of error text.
const maxProblems = 20

// Problems checks every grader of gs and returns every problem, in grader
// order. Check (request bodies) and CheckCases (dataset cases) report them;
// a caller may also list the problems of graders already stored, which
// grading keeps scoring leniently (see Grade).
func Problems(gs []registry.Grader) []Problem {
	var out []Problem
	seen := make(map[string]int, len(gs))
	for i, g := range gs {
		if j, dup := seen[g.ID]; dup && g.ID != "" {
			out = append(out, Problem{Index: i, ID: g.ID, Field: "id",
				Message: fmt.Sprintf("is also the id of graders[%d]; ids name the scores, so give each grader its own", j)})
		} else {
			seen[g.ID] = i
		}
		for _, e := range check(g) {
			out = append(out, Problem{Index: i, ID: g.ID, Field: e.field, Message: e.msg, Skips: !e.member})
		}
	}
	return out
}

// Check validates a list of graders in a request body (the `case.graders`
// of POST /runs, the `graders` override of POST /scorecards); at is the
// list's path in the body. The error wraps derrors.ErrInvalid (callers
// answer 400) and lists every problem, up to maxProblems, each with the
// grader's position in the list as sent, its id and the member to fix:
//
//	case.graders[1]: grader "calls": mx: is not a parameter of tool_calls graders (...); did you mean "max"?
//
// Unlike Grade, Check refuses unknown kinds and members a kind does not
// know, since a misspelt limit would otherwise never be applied.
func Check(at string, gs []registry.Grader) error {
	ps := Problems(gs)
	if len(ps) == 0 {
		return nil
	}
	msgs := make([]string, 0, min(len(ps), maxProblems))
	for _, p := range ps[:min(len(ps), maxProblems)] {
		msgs = append(msgs, fmt.Sprintf("%s[%d]: %s", at, p.Index, p))
	}
	if n := len(ps) - maxProblems; n > 0 {
		msgs = append(msgs, fmt.Sprintf("and %d more", n))
	}
	return derrors.Invalidf("%s", strings.Join(msgs, "; "))
}

// CheckCases checks the graders of a dataset's cases and returns up to
// maxProblems problems, with paths from the dataset's root
// ("cases[3].graders[1]") and messages naming the case and the grader
// (`case "c4", grader "calls": mx: ...`), plus how many more were left out.
// A grader with no id or a duplicate one is left to the registry's own
// rules, which report it already. Package registry cannot run this check
// itself (this package imports it), so the dataset routes add these
// problems to the registry's.
func CheckCases(cases []registry.EvalCase) (ps []registry.Problem, more int) {
	for i, c := range cases {
		for _, p := range Problems(c.Graders) {
			if p.Field == "id" {
				continue
			}
			if len(ps) == maxProblems {
				more++
				continue
			}
			ps = append(ps, registry.Problem{
				Path:    fmt.Sprintf("cases[%d].graders[%d]", i, p.Index),
				Message: fmt.Sprintf("case %q, %s", clip(c.ID, 60), p),
			})
		}
	}
	return ps, more
}

// checkError is one problem of one grader; member marks a member the
// kind does not know, which grading ignores rather than skips.
type checkError struct {
	*paramError
	member bool
}

// check validates one grader and returns every problem it finds: each
// member its kind does not know, then the first bad parameter. A grader
// with no id, or whose kind cannot be resolved, has only that problem,
// since its members cannot be judged without a kind.
func check(g registry.Grader) []checkError {
	if g.ID == "" {
		return []checkError{{paramError: &paramError{"id", "a grader needs an id (it names the grader's score)"}}}
	}
	kind, err := kindOf(g)
	if err != nil {
		return []checkError{{paramError: asParamError(err)}}
	}
	def, ok := kinds[kind]
	if !ok {
		msg := unknownKind(kind) + suggest(kind, Kinds())
		_, hasKind := g.Params["kind"]
		_, hasType := g.Params["type"]
		switch {
		case hasKind:
			return []checkError{{paramError: &paramError{"kind", msg}}}
		case hasType:
			return []checkError{{paramError: &paramError{"type", msg}}}
		}
		return []checkError{{paramError: &paramError{"kind", msg + `; with no kind given, the id names the kind, so add "kind" naming a built-in one`}}}
	}
	var out []checkError
	p := newParams(g.Params)
	allowed := append(slices.Clone(commonParams), def.params...)
	for _, k := range p.keys() {
		if !slices.Contains(allowed, k) {
			msg := fmt.Sprintf("is not a parameter of %s graders (they take %s)", kind, strings.Join(def.params, ", "))
			out = append(out, checkError{paramError: &paramError{clip(k, 60), msg + suggest(k, allowed)}, member: true})
		}
	}
	if _, err := def.parse(p); err != nil {
		out = append(out, checkError{paramError: asParamError(err)})
	}
	return out
}

// asParamError reads a parse error as a *paramError; a parser returns
// nothing else, but an error without a field still says what is wrong.
func asParamError(err error) *paramError {
	var pe *paramError
	if errors.As(err, &pe) {
		return pe
	}
	return &paramError{"params", err.Error()}
}

// suggest returns `; did you mean "x"?` naming the candidate closest to
// name, when one is a likely misspelling: equal but for case, or within
// an edit distance of a third of its length (at least 1).
func suggest(name string, candidates []string) string {
	best, bestD := "", len(name)/3
	bestD = max(bestD, 1)
	for _, c := range candidates {
		if d := editDistance(strings.ToLower(name), strings.ToLower(c)); d < bestD || (d == bestD && best == "") {
			best, bestD = c, d
		}
	}
	if best == "" {
		return ""
	}
	return fmt.Sprintf("; did you mean %q?", best)
}

// editDistance is the Levenshtein distance between a and b, in bytes
// (names are ASCII; anything else is far from every candidate anyway).
func editDistance(a, b string) int {
	if len(a) > 64 || len(b) > 64 {
		return max(len(a), len(b))
	}
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// re2Hint explains a pattern Go's regexp refuses because it uses a
// feature of other regex engines that RE2, Go's syntax, lacks, so the
// message says what to change; "" for other errors.
func re2Hint(err error) string {
	var se *syntax.Error
	if !errors.As(err, &se) {
		return ""
	}
	at := fmt.Sprintf(" (at `%s`)", clip(se.Expr, 40))
	switch {
	case strings.HasPrefix(se.Expr, "(?=") || strings.HasPrefix(se.Expr, "(?!"):
		return "RE2, Go's syntax, has no look-ahead such as (?=...) or (?!...)" + at + "; match the text itself, or check what must not appear with a second grader"
	case strings.HasPrefix(se.Expr, "(?<=") || strings.HasPrefix(se.Expr, "(?<!"):
		return "RE2, Go's syntax, has no look-behind such as (?<=...) or (?<!...)" + at + "; match the text itself, or check what must not appear with a second grader"
	case se.Code == syntax.ErrInvalidEscape && len(se.Expr) == 2 && se.Expr[1] >= '1' && se.Expr[1] <= '9':
		return "RE2, Go's syntax, has no back-references such as \\1" + at + "; spell the repeated text out"
	case se.Code == syntax.ErrInvalidRepeatOp && strings.HasSuffix(se.Expr, "+"):
		return "RE2, Go's syntax, has no possessive quantifiers such as ++ or *+" + at + "; drop the extra +"
	}
	return ""
}
