package graders

import (
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"sort"
	"strconv"
)

// paramError names the param to fix and what is wrong with it.
type paramError struct {
	field string
	msg   string
}

// Error renders the problem as "field: message".
func (e *paramError) Error() string { return e.field + ": " + e.msg }

// params reads a grader's members. Numbers may arrive as json.Number (the
// registry decodes with UseNumber), float64 (plain encoding/json) or a Go
// integer (callers building graders in code); every accessor takes all.
type params struct {
	m map[string]any
}

// newParams wraps a grader's Params (nil is fine).
func newParams(m map[string]any) *params { return &params{m: m} }

// keys returns the members present, sorted.
func (p *params) keys() []string {
	ks := make([]string, 0, len(p.m))
	for k := range p.m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// lookup returns a member; an explicit null counts as absent, except where
// a caller asks with has (json_match's value may be null on purpose).
func (p *params) lookup(name string) (any, bool) {
	v, ok := p.m[name]
	if !ok || v == nil {
		return nil, false
	}
	return v, true
}

// has reports whether the member is present at all, null included.
func (p *params) has(name string) bool {
	_, ok := p.m[name]
	return ok
}

// str reads an optional non-empty string.
func (p *params) str(name string) (string, bool, error) {
	v, ok := p.lookup(name)
	if !ok {
		return "", false, nil
	}
	s, isStr := v.(string)
	if !isStr {
		return "", false, &paramError{name, "must be a string, not " + describe(v)}
	}
	if s == "" {
		return "", false, &paramError{name, "must not be empty"}
	}
	return s, true, nil
}

// boolean reads an optional boolean with its default.
func (p *params) boolean(name string, def bool) (bool, error) {
	v, ok := p.lookup(name)
	if !ok {
		return def, nil
	}
	b, isBool := v.(bool)
	if !isBool {
		return def, &paramError{name, "must be true or false, not " + describe(v)}
	}
	return b, nil
}

// number reads an optional finite number that is at least min.
func (p *params) number(name string, min float64) (float64, bool, error) {
	v, ok := p.lookup(name)
	if !ok {
		return 0, false, nil
	}
	f, isNum := toFloat(v)
	if !isNum {
		return 0, false, &paramError{name, "must be a number, not " + describe(v)}
	}
	if f < min {
		return 0, false, &paramError{name, fmt.Sprintf("must be at least %g, not %g", min, f)}
	}
	return f, true, nil
}

// integer reads an optional whole number within [min, max].
func (p *params) integer(name string, min, max int64) (int64, bool, error) {
	v, ok := p.lookup(name)
	if !ok {
		return 0, false, nil
	}
	n, isInt := toInt(v)
	if !isInt {
		return 0, false, &paramError{name, "must be a whole number, not " + describe(v)}
	}
	if n < min || n > max {
		return 0, false, &paramError{name, fmt.Sprintf("must be between %d and %d, not %d", min, max, n)}
	}
	return n, true, nil
}

// names reads an optional non-empty list of non-empty strings.
func (p *params) names(name string) ([]string, bool, error) {
	v, ok := p.lookup(name)
	if !ok {
		return nil, false, nil
	}
	var items []any
	switch l := v.(type) {
	case []any:
		items = l
	case []string:
		for _, s := range l {
			items = append(items, s)
		}
	default:
		return nil, false, &paramError{name, "must be a list of strings, not " + describe(v)}
	}
	if len(items) == 0 {
		return nil, false, &paramError{name, "must list at least one string"}
	}
	out := make([]string, len(items))
	for i, it := range items {
		s, isStr := it.(string)
		if !isStr || s == "" {
			return nil, false, &paramError{fmt.Sprintf("%s[%d]", name, i), "must be a non-empty string, not " + describe(it)}
		}
		out[i] = s
	}
	return out, true, nil
}

// toFloat reads any numeric representation as a finite float64.
func toFloat(v any) (float64, bool) {
	var f float64
	switch n := v.(type) {
	case json.Number:
		var err error
		if f, err = strconv.ParseFloat(string(n), 64); err != nil {
			return 0, false
		}
	case float64:
		f = n
	case float32:
		f = float64(n)
	default:
		rv := reflect.ValueOf(v)
		switch {
		case rv.CanInt():
			f = float64(rv.Int())
		case rv.CanUint():
			f = float64(rv.Uint())
		default:
			return 0, false
		}
	}
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, false
	}
	return f, true
}

// toInt reads any numeric representation of a whole number as an int64;
// 3.0 counts, 3.5 does not.
func toInt(v any) (int64, bool) {
	if n, ok := v.(json.Number); ok {
		if i, err := strconv.ParseInt(string(n), 10, 64); err == nil {
			return i, true
		}
	}
	rv := reflect.ValueOf(v)
	switch {
	case v == nil:
		return 0, false
	case rv.CanInt():
		return rv.Int(), true
	case rv.CanUint():
		if rv.Uint() > math.MaxInt64 {
			return 0, false
		}
		return int64(rv.Uint()), true
	}
	f, ok := toFloat(v)
	// 2^63 itself is not representable as an int64.
	if !ok || f != math.Trunc(f) || f < math.MinInt64 || f >= math.MaxInt64 {
		return 0, false
	}
	return int64(f), true
}

// describe names a JSON value's type for a message.
func describe(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case string:
		return "a string"
	case bool:
		return "a boolean"
	case map[string]any:
		return "an object"
	case []any:
		return "a list"
	}
	if _, ok := toFloat(v); ok {
		return "a number"
	}
	if _, ok := v.(json.Number); ok {
		return "a number out of range"
	}
	return fmt.Sprintf("a %T", v)
}
