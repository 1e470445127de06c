// Package graders holds the built-in graders: deterministic checks of one
// finished case (its exit code, final answer and trace) that each produce a
// Score. It is pure: no I/O, no clocks, no model calls (judges do those).
//
// A case attaches graders as `graders: [{id, kind?, ...params}]`. The kind
// is params["kind"] (or "type"), else the grader's id, so `{"id":"exit_code"}`
// works on its own. Check and CheckCases validate graders wherever they are
// declared (a dataset case at registration and validation, a run's case and
// a scorecard's override at submit) and refuse unknown kinds, bad params and
// unknown members. Grade scores a finished case and never drops a grader:
// an unknown kind or unusable params (in a dataset registered before the
// check) become a visible skip score (value 0, pass false, detail beginning
// "skipped:"). docs/graders.md is the user's reference.
package graders

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"unicode/utf8"

	"svc/internal/domain/eval"
	"svc/internal/domain/registry"
)

// Input is what a grader reads about one finished case.
type Input struct {
	Case     registry.EvalCase
	ExitCode int
	TimedOut bool
	// FinalAnswer is the harness's stdout (trimmed) or the trace's last
	// assistant message.
	FinalAnswer string
	Trace       []eval.TraceEvent
	Usage       eval.Usage
}

// The built-in kinds.
const (
	KindToolCalls = "tool_calls"
	KindUSD       = "usd"
	KindSpan      = "span"
	KindExitCode  = "exit_code"
	KindContains  = "contains"
	KindRegex     = "regex"
	KindExact     = "exact"
	KindJSONMatch = "json_match"
)

// TraceOnly names the kinds that read only the trace (and usage derived
// from it), so they can be re-derived on ingested traces.
var TraceOnly = []string{KindToolCalls, KindUSD, KindSpan}

// outcome is what one grader decided, before it becomes a Score.
type outcome struct {
	value  float64
	pass   *bool // nil: a measurement with no verdict
	detail string
}

// gradeFunc scores one case with params already decoded.
type gradeFunc func(in *Input) outcome

// kindDef decodes a kind's params. It returns a *paramError naming the
// field to fix, and must not fail on anything Check accepted.
type kindDef struct {
	params []string // accepted members besides id, kind, type, description
	parse  func(p *params) (gradeFunc, error)
}

// kinds maps a kind's name to its definition.
var kinds = map[string]kindDef{
	KindToolCalls: {[]string{"name", "min", "max", "expect"}, parseToolCalls},
	KindUSD:       {[]string{"max"}, parseUSD},
	KindSpan:      {[]string{"name", "attributes"}, parseSpan},
	KindExitCode:  {[]string{"expect"}, parseExitCode},
	KindContains:  {[]string{"value", "values", "ignoreCase"}, parseContains},
	KindRegex:     {[]string{"pattern"}, parseRegex},
	KindExact:     {[]string{"value", "trim", "ignoreCase"}, parseExact},
	KindJSONMatch: {[]string{"value", "path"}, parseJSONMatch},
}

// commonParams are members every grader may carry.
var commonParams = []string{"kind", "type", "description"}

// Kinds returns the names of the built-in kinds, sorted.
func Kinds() []string {
	names := make([]string, 0, len(kinds))
	for k := range kinds {
		names = append(names, k)
	}
	sort.Strings(names)
	return names
}

// KindOf is the kind a grader names: params "kind", else "type", else its
// id. It returns "" when kind or type is not a string, or they disagree.
func KindOf(g registry.Grader) string {
	k, _ := kindOf(g)
	return k
}

// IsTraceOnly reports whether g is a built-in grader that reads only the
// trace (see TraceOnly).
func IsTraceOnly(g registry.Grader) bool {
	return slices.Contains(TraceOnly, KindOf(g))
}

// kindOf resolves a grader's kind; the error names the field to fix.
func kindOf(g registry.Grader) (string, error) {
	kind, kok := g.Params["kind"]
	typ, tok := g.Params["type"]
	ks, kIsStr := kind.(string)
	ts, tIsStr := typ.(string)
	switch {
	case kok && !kIsStr:
		return "", &paramError{"kind", "must be a string naming the grader kind, not " + describe(kind)}
	case tok && !tIsStr:
		return "", &paramError{"type", "must be a string naming the grader kind, not " + describe(typ)}
	case kok && tok && ks != ts:
		return "", &paramError{"kind", fmt.Sprintf("%q disagrees with type %q; give one of them", clip(ks, 40), clip(ts, 40))}
	case kok:
		return ks, nil
	case tok:
		return ts, nil
	}
	return g.ID, nil
}

// unknownKind is the message for a kind that is not built in.
func unknownKind(kind string) string {
	return fmt.Sprintf("unknown grader kind %q (built-in kinds: %s)", clip(kind, 60), strings.Join(Kinds(), ", "))
}

// Grade scores one finished case with each grader, in grader order. Every
// grader yields at least one Score; one that cannot run yields a skip
// score saying why. Members Check would refuse as unknown are ignored here,
// so a case registered before a rename still grades. Grade never panics.
func Grade(gs []registry.Grader, in Input) []eval.Score {
	scores := make([]eval.Score, 0, len(gs))
	for _, g := range gs {
		scores = append(scores, gradeOne(g, &in))
	}
	return scores
}

// gradeOne runs one grader; a panic in a grader becomes a skip score so
// that one faulty grader cannot lose the others' scores.
func gradeOne(g registry.Grader, in *Input) (s eval.Score) {
	kind, kerr := kindOf(g)
	s = eval.Score{GraderID: g.ID, Metric: g.ID}
	if s.Metric == "" {
		s.Metric = kind
	}
	defer func() {
		if r := recover(); r != nil {
			s = finish(s, skip(fmt.Sprintf("%s grader failed: %v", kind, r)))
		}
	}()
	if kerr != nil {
		return finish(s, skip("bad params: "+kerr.Error()))
	}
	def, ok := kinds[kind]
	if !ok {
		return finish(s, skip(unknownKind(kind)))
	}
	fn, err := def.parse(newParams(g.Params))
	if err != nil {
		return finish(s, skip("bad params: "+err.Error()))
	}
	return finish(s, fn(in))
}

// skip is the outcome of a grader that could not judge.
func skip(reason string) outcome {
	return outcome{value: 0, pass: verdict(false), detail: "skipped: " + reason}
}

// finish copies o into s, keeping the Score storable and serialisable:
// JSON has no NaN or infinity, and the store refuses NUL and invalid UTF-8.
func finish(s eval.Score, o outcome) eval.Score {
	if math.IsNaN(o.value) || math.IsInf(o.value, 0) {
		o = outcome{value: 0, pass: verdict(false), detail: "value is not a finite number"}
	}
	s.Value, s.Pass = o.value, o.pass
	d := strings.ToValidUTF8(o.detail, "\uFFFD")
	d = strings.ReplaceAll(d, "\x00", `\x00`)
	s.Detail = clip(d, maxDetail)
	return s
}

// verdict returns a pointer to b, for Score.Pass.
func verdict(b bool) *bool { return &b }

// maxDetail bounds a Score's detail, in runes.
const maxDetail = 200

// clip shortens s to at most n runes, marking a cut with an ellipsis.
func clip(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}

// quote renders a snippet of text for a detail, clipped so that a long
// answer leaves room for the rest of the message.
func quote(s string) string {
	return fmt.Sprintf("%q", clip(s, 60))
}
