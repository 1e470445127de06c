package graders

import (
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
)

// answerGrader wraps a grader of the final answer. A timed-out case is
// still graded on whatever it produced (a partial answer can be right),
// but a failure says the case timed out, since that is the likely cause.
func answerGrader(fn gradeFunc) gradeFunc {
	return func(in *Input) outcome {
		o := fn(in)
		if in.TimedOut && o.pass != nil && !*o.pass && !strings.HasPrefix(o.detail, "skipped:") {
			o.detail = "case timed out; " + o.detail
		}
		return o
	}
}

// parseExitCode decodes an exit_code grader: the harness exited with
// `expect` (default 0) and did not time out.
func parseExitCode(p *params) (gradeFunc, error) {
	want, _, err := p.integer("expect", math.MinInt32, math.MaxInt32)
	if err != nil {
		return nil, err
	}
	return func(in *Input) outcome {
		o := outcome{value: float64(in.ExitCode)}
		switch {
		case in.TimedOut:
			o.detail = fmt.Sprintf("timed out (exit code %d)", in.ExitCode)
		case int64(in.ExitCode) != want:
			o.detail = fmt.Sprintf("exit code %d, want %d", in.ExitCode, want)
		}
		o.pass = verdict(o.detail == "")
		return o
	}, nil
}

// parseContains decodes a contains grader: every string of `value` or
// `values` (else the case's expected) appears in the final answer.
func parseContains(p *params) (gradeFunc, error) {
	one, hasOne, err := p.text("value")
	if err != nil {
		return nil, err
	}
	many, hasMany, err := p.texts("values")
	if err != nil {
		return nil, err
	}
	if hasOne && hasMany {
		return nil, &paramError{"values", "give value or values, not both"}
	}
	fold, err := p.boolean("ignoreCase", false)
	if err != nil {
		return nil, err
	}
	if hasOne {
		many = []string{one}
	}
	return answerGrader(func(in *Input) outcome {
		needles := many
		if len(needles) == 0 {
			want, ok := expectedText(in)
			if !ok {
				return skip("contains has no value or values, and the case's expected is not a string")
			}
			needles = []string{want}
		}
		hay := in.FinalAnswer
		if fold {
			hay = strings.ToLower(hay)
		}
		var missing []string
		for _, n := range needles {
			probe := n
			if fold {
				probe = strings.ToLower(n)
			}
			if !strings.Contains(hay, probe) {
				missing = append(missing, n)
			}
		}
		o := outcome{value: float64(len(needles)-len(missing)) / float64(len(needles)), pass: verdict(len(missing) == 0)}
		if len(missing) > 0 {
			more := ""
			if len(missing) > 1 {
				more = fmt.Sprintf(" (and %d more)", len(missing)-1)
			}
			o.detail = fmt.Sprintf("missing %s%s in answer %s", quote(missing[0]), more, quote(in.FinalAnswer))
		}
		return o
	}), nil
}

// parseRegex decodes a regex grader: the Go regular expression `pattern`
// matches somewhere in the final answer.
func parseRegex(p *params) (gradeFunc, error) {
	pat, ok, err := p.str("pattern")
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, &paramError{"pattern", "is required: a Go regular expression (RE2 syntax)"}
	}
	re, err := regexp.Compile(pat)
	if err != nil {
		if hint := re2Hint(err); hint != "" {
			return nil, &paramError{"pattern", "is not a valid Go regular expression: " + hint}
		}
		return nil, &paramError{"pattern", "is not a valid Go regular expression: " + err.Error()}
	}
	return answerGrader(func(in *Input) outcome {
		if re.MatchString(in.FinalAnswer) {
			return outcome{value: 1, pass: verdict(true)}
		}
		return outcome{value: 0, pass: verdict(false), detail: fmt.Sprintf("pattern %s does not match answer %s", quote(pat), quote(in.FinalAnswer))}
	}), nil
}

// parseExact decodes an exact grader: the final answer equals `value`
// (else the case's expected), both trimmed unless trim is false.
func parseExact(p *params) (gradeFunc, error) {
	want, hasWant, err := p.text("value")
	if err != nil {
		return nil, err
	}
	trim, err := p.boolean("trim", true)
	if err != nil {
		return nil, err
	}
	fold, err := p.boolean("ignoreCase", false)
	if err != nil {
		return nil, err
	}
	return answerGrader(func(in *Input) outcome {
		w := want
		if !hasWant {
			var ok bool
			if w, ok = expectedText(in); !ok {
				return skip("exact has no value, and the case's expected is not a string")
			}
		}
		got := in.FinalAnswer
		if trim {
			w, got = strings.TrimSpace(w), strings.TrimSpace(got)
		}
		if got == w || (fold && strings.EqualFold(got, w)) {
			return outcome{value: 1, pass: verdict(true)}
		}
		return outcome{value: 0, pass: verdict(false), detail: fmt.Sprintf("expected %s, got %s", quote(w), quote(got))}
	}), nil
}

// expectedText is the case's expected answer when it is a string (or a
// number or boolean, read as its text).
func expectedText(in *Input) (string, bool) {
	return textOf(in.Case.Expected)
}

// text reads an optional string param; a number or boolean is taken as its
// text, since `"value": 4` is a common way to write the answer "4".
func (p *params) text(name string) (string, bool, error) {
	v, ok := p.lookup(name)
	if !ok {
		return "", false, nil
	}
	s, isText := textOf(v)
	if !isText {
		return "", false, &paramError{name, "must be a string, not " + describe(v)}
	}
	if s == "" {
		return "", false, &paramError{name, "must not be empty"}
	}
	return s, true, nil
}

// texts reads an optional non-empty list of strings (numbers and booleans
// taken as their text).
func (p *params) texts(name string) ([]string, bool, error) {
	v, ok := p.lookup(name)
	if !ok {
		return nil, false, nil
	}
	if ss, isStrs := v.([]string); isStrs {
		items := make([]any, len(ss))
		for i, s := range ss {
			items[i] = s
		}
		v = items
	}
	items, isList := v.([]any)
	if !isList {
		return nil, false, &paramError{name, "must be a list of strings, not " + describe(v)}
	}
	if len(items) == 0 {
		return nil, false, &paramError{name, "must list at least one string"}
	}
	out := make([]string, len(items))
	for i, it := range items {
		s, isText := textOf(it)
		if !isText || s == "" {
			return nil, false, &paramError{fmt.Sprintf("%s[%d]", name, i), "must be a non-empty string, not " + describe(it)}
		}
		out[i] = s
	}
	return out, true, nil
}

// textOf reads a scalar as text: a string as it is, a number as written
// (json.Number) or in its shortest decimal form, a boolean as true/false.
func textOf(v any) (string, bool) {
	switch t := v.(type) {
	case string:
		return t, true
	case json.Number:
		return string(t), true
	case bool:
		return strconv.FormatBool(t), true
	case float64:
		if math.IsNaN(t) || math.IsInf(t, 0) {
			return "", false
		}
		return strconv.FormatFloat(t, 'f', -1, 64), true
	case float32:
		return textOf(float64(t))
	}
	if i, ok := toInt(v); ok {
		return strconv.FormatInt(i, 10), true
	}
	return "", false
}
