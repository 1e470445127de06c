package judges

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"unicode"
	"unicode/utf8"

	"svc/internal/domain/eval"
	"svc/internal/integrations/modeljudge"
)

// Limits on what one judge may print, so that a runaway judge cannot fill
// a case result.
const (
	// MaxScores is the most scores one judge execution may return.
	MaxScores = 1000
	// MaxMetricLen bounds a printed metric, in bytes, before rewriting.
	MaxMetricLen = 256
	// MaxDetail bounds a score's detail, in runes; a longer one is cut
	// and ends with an ellipsis.
	MaxDetail = modeljudge.MaxDetail
)

// ParseOutput reads a judge's scores from its stdout: the last thing
// printed must be a Score object or an array of Scores; what comes before
// (debug prints) is ignored. The last non-empty line is tried first; when
// it is not JSON on its own (pretty-printed output, or text before the
// value on the same line), the JSON object or array that ends the output
// is used. Each score needs a non-empty metric and a finite number value;
// pass is an optional bool, detail and graderId optional strings, other
// members are ignored. Details are cut to MaxDetail runes.
func ParseOutput(stdout string) ([]eval.Score, error) {
	text := strings.TrimRight(stdout, " \t\r\n")
	if text == "" {
		return nil, errors.New("stdout is empty: print a Score or Score[] as JSON as the last thing")
	}
	line := strings.TrimSpace(text[strings.LastIndexByte(text, '\n')+1:])
	if json.Valid([]byte(line)) {
		return decodeScores([]byte(line))
	}
	start, err := lastValueStart(text)
	if err != nil {
		return nil, err
	}
	value := []byte(text[start:])
	if !json.Valid(value) {
		var v any
		err := json.Unmarshal(value, &v)
		return nil, fmt.Errorf("the JSON at the end of stdout is malformed: %v", err)
	}
	return decodeScores(value)
}

// lastValueStart returns where the JSON object or array that ends text
// begins, matching brackets backwards and skipping strings. It does not
// validate: the caller decodes what it finds.
func lastValueStart(text string) (int, error) {
	if last := text[len(text)-1]; last != '}' && last != ']' {
		return 0, fmt.Errorf("stdout does not end with a JSON object or array (it ends %q)", tailRunes(text, 40))
	}
	var open []byte // the closers still waiting for their opener
	for i := len(text) - 1; i >= 0; i-- {
		switch c := text[i]; c {
		case '}', ']':
			open = append(open, c)
		case '{', '[':
			want := byte('}')
			if c == '[' {
				want = ']'
			}
			if open[len(open)-1] != want {
				return 0, errors.New("the JSON at the end of stdout has unbalanced brackets")
			}
			open = open[:len(open)-1]
			if len(open) == 0 {
				return i, nil
			}
		case '"':
			// Outside a string a quote ends one; find where it starts.
			j := i - 1
			for j >= 0 && (text[j] != '"' || escaped(text, j)) {
				j--
			}
			if j < 0 {
				return 0, errors.New("the JSON at the end of stdout has an unterminated string")
			}
			i = j
		}
	}
	return 0, errors.New("the JSON at the end of stdout has unbalanced brackets")
}

// escaped reports whether the byte at i is preceded by an odd number of
// backslashes.
func escaped(text string, i int) bool {
	n := 0
	for j := i - 1; j >= 0 && text[j] == '\\'; j-- {
		n++
	}
	return n%2 == 1
}

// decodeScores decodes and checks a valid JSON value that should be a
// Score or a Score[].
func decodeScores(value []byte) ([]eval.Score, error) {
	value = bytes.TrimSpace(value)
	if value[0] != '[' {
		s, err := decodeScore(value)
		if err != nil {
			return nil, err
		}
		return []eval.Score{s}, nil
	}
	var items []json.RawMessage
	if err := json.Unmarshal(value, &items); err != nil {
		return nil, fmt.Errorf("the last JSON value: %v", err)
	}
	switch {
	case len(items) == 0:
		return nil, errors.New("the last JSON value is an empty array: print at least one Score")
	case len(items) > MaxScores:
		return nil, fmt.Errorf("the last JSON value holds %d scores; a judge may return at most %d", len(items), MaxScores)
	}
	scores := make([]eval.Score, 0, len(items))
	for i, raw := range items {
		s, err := decodeScore(raw)
		if err != nil {
			return nil, fmt.Errorf("score [%d]: %w", i, err)
		}
		scores = append(scores, s)
	}
	return scores, nil
}

// decodeScore decodes and checks one Score object.
func decodeScore(raw json.RawMessage) (eval.Score, error) {
	var s eval.Score
	if k := jsonKind(raw); k != "an object" {
		return s, fmt.Errorf("the last JSON value is %s, not a Score object {metric, value, pass?, detail?} or an array of them", k)
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		return s, err
	}
	metric, ok, err := optString(m, "metric")
	switch {
	case err != nil:
		return s, err
	case !ok || strings.TrimSpace(metric) == "":
		return s, errors.New(`"metric" is missing or empty: name the metric ("judge" for the judge's overall score)`)
	case len(metric) > MaxMetricLen:
		return s, fmt.Errorf(`"metric" is %d bytes long; at most %d`, len(metric), MaxMetricLen)
	case strings.IndexFunc(metric, unicode.IsControl) >= 0:
		return s, fmt.Errorf(`"metric" %q contains control characters`, metric)
	}
	s.Metric = strings.TrimSpace(metric)
	v, ok := m["value"]
	if !ok || jsonKind(v) != "a number" {
		k := "missing"
		if ok {
			k = jsonKind(v)
		}
		return s, fmt.Errorf(`metric %q: "value" must be a number, got %s`, metric, k)
	}
	if err := json.Unmarshal(v, &s.Value); err != nil || math.IsNaN(s.Value) || math.IsInf(s.Value, 0) {
		return s, fmt.Errorf(`metric %q: "value" %s is not a finite number`, metric, clipRunes(string(v), 40))
	}
	if p, ok := m["pass"]; ok && jsonKind(p) != "null" {
		var b bool
		if err := json.Unmarshal(p, &b); err != nil {
			return s, fmt.Errorf(`metric %q: "pass" must be true or false, got %s`, metric, jsonKind(p))
		}
		s.Pass = &b
	}
	detail, _, err := optString(m, "detail")
	if err != nil {
		return s, fmt.Errorf("metric %q: %w", metric, err)
	}
	s.Detail = cleanDetail(detail)
	if s.GraderID, _, err = optString(m, "graderId"); err != nil {
		return s, fmt.Errorf("metric %q: %w", metric, err)
	}
	s.GraderID = cleanText(s.GraderID)
	return s, nil
}

// optString reads member name of m as a string; absent and null are "",
// false.
func optString(m map[string]json.RawMessage, name string) (string, bool, error) {
	raw, ok := m[name]
	if !ok || jsonKind(raw) == "null" {
		return "", false, nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", false, fmt.Errorf("%q must be a string, got %s", name, jsonKind(raw))
	}
	return s, true, nil
}

// jsonKind names the kind of a valid JSON value, for messages.
func jsonKind(raw []byte) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return "nothing"
	}
	switch raw[0] {
	case '{':
		return "an object"
	case '[':
		return "an array"
	case '"':
		return "a string"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	}
	return "a number"
}

// RewriteMetrics namespaces a judge's metrics (score.RewriteMetrics).
func RewriteMetrics(judgeID string, scores []eval.Score) []eval.Score {
	return modeljudge.RewriteMetrics(judgeID, scores)
}

// cleanText keeps text storable: valid UTF-8 without NUL bytes (the store
// refuses both).
func cleanText(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	return strings.ReplaceAll(s, "\x00", `\x00`)
}

// cleanDetail is cleanText cut to MaxDetail runes.
func cleanDetail(s string) string {
	return clipRunes(cleanText(s), MaxDetail)
}

// clipRunes shortens s to at most n runes, marking a cut with an ellipsis.
func clipRunes(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}

// tailRunes returns the last n runes of s.
func tailRunes(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return "…" + string(r[len(r)-n:])
}
