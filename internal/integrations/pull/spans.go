package pull

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"svc/internal/domain/trace"
)

// Limits of what a converted span keeps, as the OTLP door keeps them.
const (
	maxDepth     = 16
	maxString    = 64 << 10
	maxAttrs     = 256
	maxSpans     = 10000
	maxNameBytes = 256
)

// spanOf builds a traces.Span; attrs are sanitised (valid UTF-8, no NUL,
// bounded depth and size) and numbers that are whole become int64, as
// OTLP integer attributes do.
func spanOf(traceID, spanID, name string, start, end time.Time, failed bool, status string, attrs map[string]any) trace.Span {
	clean := make(map[string]any, len(attrs))
	for k, v := range attrs {
		if len(clean) >= maxAttrs {
			break
		}
		if k == "" || len(k) > maxNameBytes || v == nil {
			continue
		}
		clean[sanitize(k)] = cleanValue(v, 0)
	}
	traceID, spanID = clip(sanitize(traceID), 128), clip(sanitize(spanID), 128)
	return trace.Span{
		TraceID: traceID, SpanID: spanID, Key: traceID + "/" + spanID,
		Name: clip(sanitize(name), maxNameBytes), Start: start, End: end,
		Error: failed, StatusMessage: clip(sanitize(status), 4096), Attributes: clean,
	}
}

// cleanValue is v (a decoded JSON value) as a span attribute.
func cleanValue(v any, depth int) any {
	if depth >= maxDepth {
		return "…"
	}
	switch x := v.(type) {
	case string:
		return clip(sanitize(x), maxString)
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return strconv.FormatFloat(x, 'g', -1, 64)
		}
		if x == math.Trunc(x) && math.Abs(x) < 1<<53 {
			return int64(x)
		}
		return x
	case json.Number:
		if n, err := x.Int64(); err == nil {
			return n
		}
		f, _ := x.Float64()
		return cleanValue(f, depth)
	case bool, int64:
		return x
	case int:
		return int64(x)
	case []any:
		out := make([]any, 0, len(x))
		for _, e := range x {
			out = append(out, cleanValue(e, depth+1))
		}
		return out
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[sanitize(k)] = cleanValue(e, depth+1)
		}
		return out
	case nil:
		return nil
	}
	return fmt.Sprint(v)
}

// flatten copies a metadata object into attrs under prefix ("metadata.").
func flatten(attrs map[string]any, prefix string, meta map[string]any) {
	for k, v := range meta {
		if v != nil {
			attrs[prefix+k] = v
		}
	}
}

// parseTime reads the timestamps platforms write: RFC 3339 with or
// without a zone (LangSmith omits it: UTC), or nothing.
func parseTime(s string) time.Time {
	s = strings.TrimSpace(s)
	if s == "" {
		return time.Time{}
	}
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05.999999999", "2006-01-02 15:04:05.999999999Z07:00", "2006-01-02 15:04:05.999999999"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t.UTC()
		}
	}
	return time.Time{}
}

// unixNano reads a nanosecond timestamp written as a number or a string.
func unixNano(v any) time.Time {
	var n int64
	switch x := v.(type) {
	case float64:
		n = int64(x)
	case string:
		n, _ = strconv.ParseInt(strings.TrimSpace(x), 10, 64)
	case json.Number:
		n, _ = x.Int64()
	}
	if n <= 0 {
		return time.Time{}
	}
	return time.Unix(0, n).UTC()
}

// answerText is a trace's output as an answer grader reads it: a string
// as is; an object's answer-like member ("output", "answer", "content",
// "text", "response", "result"), recursively, or the last message's
// content of "messages"/"choices"; else the JSON text.
func answerText(v any) string {
	return clip(answer(v, 0), 64<<10)
}

func answer(v any, depth int) string {
	if depth > 6 {
		return ""
	}
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		t := strings.TrimSpace(x)
		if strings.HasPrefix(t, "{") || strings.HasPrefix(t, "[") {
			var inner any
			if json.Unmarshal([]byte(t), &inner) == nil {
				if s := answer(inner, depth+1); s != "" {
					return s
				}
			}
		}
		return sanitize(x)
	case map[string]any:
		for _, k := range []string{"output", "answer", "content", "text", "response", "result", "message"} {
			if e, ok := x[k]; ok {
				if s := answer(e, depth+1); s != "" {
					return s
				}
			}
		}
		for _, k := range []string{"messages", "choices", "generations"} {
			if arr, ok := x[k].([]any); ok && len(arr) > 0 {
				if s := answer(arr[len(arr)-1], depth+1); s != "" {
					return s
				}
			}
		}
	case []any:
		if len(x) > 0 {
			return answer(x[len(x)-1], depth+1)
		}
		return ""
	case float64, bool, int64:
		return fmt.Sprint(x)
	}
	b, err := json.Marshal(v)
	if err != nil {
		return ""
	}
	return sanitize(string(b))
}

// num reads a number member.
func num(v any) float64 {
	switch x := v.(type) {
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) || x < 0 {
			return 0
		}
		return x
	case string:
		f, _ := strconv.ParseFloat(strings.TrimSpace(x), 64)
		return num(f)
	case json.Number:
		f, _ := x.Float64()
		return num(f)
	}
	return 0
}

// summarize computes a listing's metrics of spans.
func summarize(s *Summary, spans []trace.Span) {
	s.Spans = len(spans)
	var first, last time.Time
	for _, sp := range spans {
		e := trace.Normalize(sp, trace.SpanAttrMapping{})
		s.InputTokens += e.InputTokens
		s.OutputTokens += e.OutputTokens
		s.CostUSD += e.CostUSD
		if sp.Error && s.Status == "" {
			s.Status = "error"
		}
		if !sp.Start.IsZero() && (first.IsZero() || sp.Start.Before(first)) {
			first = sp.Start
		}
		if sp.End.After(last) {
			last = sp.End
		}
	}
	if s.Start == nil && !first.IsZero() {
		s.Start = &first
	}
	if s.DurationMs == 0 && !first.IsZero() && last.After(first) {
		s.DurationMs = float64(last.Sub(first).Microseconds()) / 1000
	}
	if s.Status == "" && len(spans) > 0 {
		s.Status = "ok"
	}
}

func timePtr(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}

func str(v any) string {
	s, _ := v.(string)
	return s
}
