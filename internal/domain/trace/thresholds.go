package trace

import (
	"fmt"
	"math"
	"time"

	"svc/internal/domain/eval"
)

// Thresholds are a workspace's bounds on a sealed trajectory (spec §4.2,
// GET/PUT /workspace/trace-thresholds). Each is optional; a trajectory
// crosses a bound when its value is strictly above it.
type Thresholds struct {
	MaxEvents     *int64   `json:"maxEvents,omitempty"`
	MaxErrors     *int64   `json:"maxErrors,omitempty"`
	MaxToolCalls  *int64   `json:"maxToolCalls,omitempty"`
	MaxTokens     *int64   `json:"maxTokens,omitempty"` // input plus output tokens
	MaxCostUSD    *float64 `json:"maxCostUsd,omitempty"`
	MaxDurationMs *int64   `json:"maxDurationMs,omitempty"`
}

// Validate refuses a negative or non-finite bound, naming it.
func (t Thresholds) Validate() error {
	for _, b := range []struct {
		name string
		v    *int64
	}{{"maxEvents", t.MaxEvents}, {"maxErrors", t.MaxErrors}, {"maxToolCalls", t.MaxToolCalls}, {"maxTokens", t.MaxTokens}, {"maxDurationMs", t.MaxDurationMs}} {
		if b.v != nil && *b.v < 0 {
			return fmt.Errorf("%s: %d is negative", b.name, *b.v)
		}
	}
	if t.MaxCostUSD != nil && (*t.MaxCostUSD < 0 || math.IsNaN(*t.MaxCostUSD) || math.IsInf(*t.MaxCostUSD, 0)) {
		return fmt.Errorf("maxCostUsd: %v is not a non-negative number", *t.MaxCostUSD)
	}
	return nil
}

// Crossing is one bound a trajectory crossed.
type Crossing struct {
	Bound string  `json:"bound"` // the Thresholds field, e.g. maxErrors
	Limit float64 `json:"limit"`
	Value float64 `json:"value"`
}

// TraceMetrics are what thresholds bound, measured on a trajectory.
type TraceMetrics struct {
	Events     int64   `json:"events"`
	Errors     int64   `json:"errors"`
	ToolCalls  int64   `json:"toolCalls"`
	Tokens     int64   `json:"tokens"`
	CostUSD    float64 `json:"costUsd"`
	DurationMs int64   `json:"durationMs"`
}

// Measure measures events. processMs, when larger, is the duration (a
// managed run's process time); otherwise it is the span from the first
// event's start to the last event's end.
func Measure(events []eval.TraceEvent, processMs int64) TraceMetrics {
	m := TraceMetrics{Events: int64(len(events))}
	var first, last time.Time
	see := func(t time.Time) {
		if first.IsZero() || t.Before(first) {
			first = t
		}
		if t.After(last) {
			last = t
		}
	}
	for _, e := range events {
		switch e.Kind {
		case eval.EventError:
			m.Errors++
		case eval.EventToolCall:
			m.ToolCalls++
		}
		m.Tokens += e.InputTokens + e.OutputTokens
		m.CostUSD += e.CostUSD
		if e.TS != nil {
			see(*e.TS)
			see(e.TS.Add(time.Duration(e.DurationMs * float64(time.Millisecond))))
		}
		if e.StartTime != nil {
			see(*e.StartTime)
		}
		if e.EndTime != nil {
			see(*e.EndTime)
		}
	}
	if !first.IsZero() {
		m.DurationMs = last.Sub(first).Milliseconds()
	}
	m.DurationMs = max(m.DurationMs, processMs)
	return m
}

// Crossings are the bounds of t that m crosses, in the order of the
// Thresholds fields.
func (t Thresholds) Crossings(m TraceMetrics) []Crossing {
	var out []Crossing
	check := func(bound string, limit *int64, v int64) {
		if limit != nil && v > *limit {
			out = append(out, Crossing{Bound: bound, Limit: float64(*limit), Value: float64(v)})
		}
	}
	check("maxEvents", t.MaxEvents, m.Events)
	check("maxErrors", t.MaxErrors, m.Errors)
	check("maxToolCalls", t.MaxToolCalls, m.ToolCalls)
	check("maxTokens", t.MaxTokens, m.Tokens)
	if t.MaxCostUSD != nil && m.CostUSD > *t.MaxCostUSD {
		out = append(out, Crossing{Bound: "maxCostUsd", Limit: *t.MaxCostUSD, Value: m.CostUSD})
	}
	check("maxDurationMs", t.MaxDurationMs, m.DurationMs)
	return out
}
