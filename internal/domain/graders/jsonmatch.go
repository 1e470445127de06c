package graders

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
)

// parseJSONMatch decodes a json_match grader: the JSON in the final answer
// (or the part of it at `path`) matches `value`, else the case's expected.
func parseJSONMatch(p *params) (gradeFunc, error) {
	var segs []string
	path, hasPath, err := p.str("path")
	if err != nil {
		return nil, err
	}
	if hasPath {
		segs = strings.Split(path, ".")
		for _, s := range segs {
			if s == "" {
				return nil, &paramError{"path", fmt.Sprintf("%q must be a dot path such as a.b.0, with no empty segments", clip(path, 60))}
			}
		}
	}
	// An explicit "value": null expects null; only an absent value falls
	// back to the case's expected.
	hasWant := p.has("value")
	want := normalize(p.m["value"])
	return answerGrader(func(in *Input) outcome {
		w := want
		if !hasWant {
			if in.Case.Expected == nil {
				return skip("json_match has no value, and the case has no expected")
			}
			w = normalize(in.Case.Expected)
		}
		got, ok := answerJSON(in.FinalAnswer)
		if !ok {
			return outcome{value: 0, pass: verdict(false), detail: "no JSON value in answer " + quote(in.FinalAnswer)}
		}
		at := ""
		if hasPath {
			var miss string
			if got, miss = walk(got, segs); miss != "" {
				return outcome{value: 0, pass: verdict(false), detail: miss}
			}
			at = path
		}
		if miss := match(w, got, at); miss != "" {
			return outcome{value: 0, pass: verdict(false), detail: miss}
		}
		return outcome{value: 1, pass: verdict(true)}
	}), nil
}

// maxScan bounds the bytes answerJSON reads while looking for a JSON value
// inside prose, so a hostile answer ("[[[[...") cannot make grading
// quadratic. Real answers use a tiny fraction of it.
const maxScan = 8 << 20

// answerJSON reads the final answer as JSON: the whole (trimmed) answer if
// it is one JSON value, else the last JSON object or array in the text
// (after "Here is the result:", inside a code fence, ...). Numbers stay
// json.Number so that large integers compare exactly.
func answerJSON(answer string) (any, bool) {
	if v, ok := decodeWhole(strings.TrimSpace(answer)); ok {
		return v, true
	}
	var last any
	found := false
	budget := maxScan
	for i := 0; i < len(answer) && budget > 0; i++ {
		if !plausibleStart(answer[i:]) {
			continue
		}
		r := strings.NewReader(answer[i:])
		dec := json.NewDecoder(r)
		dec.UseNumber()
		var v any
		if err := dec.Decode(&v); err == nil {
			last, found = v, true
			// Skip the value so a nested object is not taken for a later one.
			i += int(dec.InputOffset()) - 1
			continue
		}
		budget -= len(answer) - i - r.Len()
	}
	return last, found
}

// plausibleStart reports whether s may begin a JSON object or array: a
// brace then a member name or "}", a bracket then a value or "]". It keeps
// prose such as "{x}" or "[sic]" from costing a decode attempt each.
func plausibleStart(s string) bool {
	if s == "" || (s[0] != '{' && s[0] != '[') {
		return false
	}
	rest := strings.TrimLeft(s[1:], " \t\r\n")
	if rest == "" {
		return false
	}
	if s[0] == '{' {
		return rest[0] == '"' || rest[0] == '}'
	}
	return strings.IndexByte(`"{[]-0123456789tfn`, rest[0]) >= 0
}

// decodeWhole decodes s when it is exactly one JSON value.
func decodeWhole(s string) (any, bool) {
	if s == "" {
		return nil, false
	}
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, false
	}
	var extra any
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		return nil, false
	}
	return v, true
}

// walk follows a dot path: object members by name, array items by index.
// On failure it returns a detail naming the first segment not found.
func walk(v any, segs []string) (any, string) {
	for i, s := range segs {
		at := strings.Join(segs[:i], ".")
		switch t := v.(type) {
		case map[string]any:
			next, ok := t[s]
			if !ok {
				return nil, fmt.Sprintf("path %s: no member %s %s", quote(strings.Join(segs, ".")), quote(s), loc(at))
			}
			v = next
		case []any:
			n, err := strconv.Atoi(s)
			if err != nil || n < 0 || n >= len(t) {
				return nil, fmt.Sprintf("path %s: no item %s %s (%d items)", quote(strings.Join(segs, ".")), quote(s), loc(at), len(t))
			}
			v = t[n]
		default:
			return nil, fmt.Sprintf("path %s: %s is %s, not an object or array", quote(strings.Join(segs, ".")), strings.TrimPrefix(loc(at), "at "), kindName(v))
		}
	}
	return v, ""
}

// match reports where got fails to match want, or "" when it matches:
// objects match when every member of want matches got's (extra members of
// got are fine), arrays when they have the same length and match item by
// item, numbers when they are numerically equal, other scalars when equal.
func match(want, got any, at string) string {
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			return fmt.Sprintf("%s: expected an object, got %s", loc(at), render(got))
		}
		keys := make([]string, 0, len(w))
		for k := range w {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			gv, ok := g[k]
			if !ok {
				return fmt.Sprintf("%s: missing member %s", loc(at), quote(k))
			}
			if miss := match(w[k], gv, join(at, k)); miss != "" {
				return miss
			}
		}
		return ""
	case []any:
		g, ok := got.([]any)
		if !ok {
			return fmt.Sprintf("%s: expected an array, got %s", loc(at), render(got))
		}
		if len(g) != len(w) {
			return fmt.Sprintf("%s: expected %d items, got %d", loc(at), len(w), len(g))
		}
		for i := range w {
			if miss := match(w[i], g[i], join(at, strconv.Itoa(i))); miss != "" {
				return miss
			}
		}
		return ""
	}
	if scalarEqual(want, got) {
		return ""
	}
	return fmt.Sprintf("%s: expected %s, got %s", loc(at), render(want), render(got))
}

// scalarEqual compares two JSON scalars; numbers by value, so 1, 1.0 and
// 1e0 are equal whatever their Go representation.
func scalarEqual(a, b any) bool {
	if isNumber(a) || isNumber(b) {
		return isNumber(a) && isNumber(b) && numEqual(a, b)
	}
	switch x := a.(type) {
	case nil:
		return b == nil
	case string:
		y, ok := b.(string)
		return ok && x == y
	case bool:
		y, ok := b.(bool)
		return ok && x == y
	}
	return false
}

// isNumber reports whether v is a number in any representation.
func isNumber(v any) bool {
	if _, ok := v.(json.Number); ok {
		return true
	}
	_, ok := toFloat(v)
	return ok
}

// numEqual compares numbers exactly when both are integers that fit int64,
// else as float64; numbers beyond float64's range compare by their text.
func numEqual(a, b any) bool {
	if x, ok := toInt(a); ok {
		if y, ok := toInt(b); ok {
			return x == y
		}
	}
	x, okx := toFloat(a)
	y, oky := toFloat(b)
	if okx && oky {
		return x == y
	}
	return fmt.Sprint(a) == fmt.Sprint(b)
}

// normalize turns a value built in Go (typed slices, maps, ints) into the
// tree encoding/json produces, so match sees one shape whatever the source.
func normalize(v any) any {
	switch t := v.(type) {
	case nil, string, bool, json.Number, float64:
		return v
	case map[string]any:
		m := make(map[string]any, len(t))
		for k, x := range t {
			m[k] = normalize(x)
		}
		return m
	case []any:
		l := make([]any, len(t))
		for i, x := range t {
			l[i] = normalize(x)
		}
		return l
	}
	if i, ok := toInt(v); ok {
		return json.Number(strconv.FormatInt(i, 10))
	}
	if f, ok := toFloat(v); ok {
		return f
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	out, ok := decodeWhole(string(b))
	if !ok {
		return fmt.Sprint(v)
	}
	return out
}

// join appends a segment to a dot path.
func join(at, seg string) string {
	if at == "" {
		return seg
	}
	return at + "." + seg
}

// loc names a dot path for a detail.
func loc(at string) string {
	if at == "" {
		return "at the top level"
	}
	return "at " + clip(at, 60)
}

// render shows a JSON value compactly for a detail.
func render(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return clip(string(b), 60)
}

// kindName names a JSON value's type for a detail.
func kindName(v any) string {
	switch v.(type) {
	case map[string]any:
		return "an object"
	case []any:
		return "an array"
	}
	return render(v)
}
