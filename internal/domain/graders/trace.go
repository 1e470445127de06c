package graders

import (
	"fmt"
	"math"
	"strings"

	"svc/internal/domain/eval"
)

// parseToolCalls decodes a tool_calls grader: counts tool_call events
// (only those of `name` when given) against `min`/`max`, and checks that
// `expect` appears in order among all tool calls.
func parseToolCalls(p *params) (gradeFunc, error) {
	name, hasName, err := p.str("name")
	if err != nil {
		return nil, err
	}
	lo, hasMin, err := p.integer("min", 0, math.MaxInt32)
	if err != nil {
		return nil, err
	}
	hi, hasMax, err := p.integer("max", 0, math.MaxInt32)
	if err != nil {
		return nil, err
	}
	if hasMin && hasMax && lo > hi {
		return nil, &paramError{"min", fmt.Sprintf("%d is above max %d", lo, hi)}
	}
	expect, hasExpect, err := p.names("expect")
	if err != nil {
		return nil, err
	}
	// A grader naming a tool and nothing else asks "was it used?".
	if hasName && !hasMin && !hasMax && !hasExpect {
		lo, hasMin = 1, true
	}
	judged := hasMin || hasMax || hasExpect
	return func(in *Input) outcome {
		var calls []string
		count := 0
		for _, e := range in.Trace {
			if e.Kind != eval.EventToolCall {
				continue
			}
			calls = append(calls, e.Name)
			if !hasName || e.Name == name {
				count++
			}
		}
		o := outcome{value: float64(count)}
		if !judged {
			return o
		}
		what := "tool calls"
		if hasName {
			what = "calls to " + quote(name)
		}
		switch {
		case hasMin && int64(count) < lo:
			o.detail = fmt.Sprintf("%d %s, want at least %d", count, what, lo)
		case hasMax && int64(count) > hi:
			o.detail = fmt.Sprintf("%d %s, want at most %d", count, what, hi)
		case hasExpect:
			n := subsequence(expect, calls)
			switch {
			case n == len(expect):
			case n == 0:
				o.detail = fmt.Sprintf("tool %s never called; calls were %s", quote(expect[0]), listing(calls))
			default:
				o.detail = fmt.Sprintf("tool %s not called after %s; calls were %s", quote(expect[n]), listing(expect[:n]), listing(calls))
			}
		}
		o.pass = verdict(o.detail == "")
		return o
	}, nil
}

// subsequence returns how many of want's leading items appear in order in
// got (len(want) when all do).
func subsequence(want, got []string) int {
	n := 0
	for _, g := range got {
		if n < len(want) && g == want[n] {
			n++
		}
	}
	return n
}

// listing renders names for a detail, clipped: [a b c].
func listing(names []string) string {
	return "[" + clip(strings.Join(names, " "), 80) + "]"
}

// parseUSD decodes a usd grader: the case's cost, at most `max` dollars.
func parseUSD(p *params) (gradeFunc, error) {
	limit, hasMax, err := p.number("max", 0)
	if err != nil {
		return nil, err
	}
	return func(in *Input) outcome {
		cost := traceCost(in)
		o := outcome{value: cost}
		if hasMax {
			o.pass = verdict(cost <= limit)
			if cost > limit {
				o.detail = fmt.Sprintf("cost $%s is over the max $%s", dollars(cost), dollars(limit))
			}
		}
		return o
	}, nil
}

// traceCost is the larger of the trace's summed costUsd and the usage's
// costUsd: usage is normally derived from the same trace, but a harness may
// report a cost in only one of them, and a budget check must not undercount.
func traceCost(in *Input) float64 {
	sum := 0.0
	for _, e := range in.Trace {
		sum += e.CostUSD
	}
	return math.Max(sum, in.Usage.CostUSD)
}

// dollars formats an amount without trailing noise.
func dollars(f float64) string { return fmt.Sprintf("%.6g", f) }

// parseSpan decodes a span grader: a span named `name` exists whose
// attributes include `attributes` (matched as json_match matches values).
func parseSpan(p *params) (gradeFunc, error) {
	name, ok, err := p.str("name")
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, &paramError{"name", "is required: the span name to look for"}
	}
	var want map[string]any
	if v, ok := p.lookup("attributes"); ok {
		m, isObj := normalize(v).(map[string]any)
		if !isObj {
			return nil, &paramError{"attributes", "must be an object of attribute name -> value, not " + describe(v)}
		}
		want = m
	}
	return func(in *Input) outcome {
		seen := 0
		firstMiss := ""
		for _, e := range in.Trace {
			if e.Kind != eval.EventSpan || e.Name != name {
				continue
			}
			seen++
			if len(want) == 0 {
				return outcome{value: 1, pass: verdict(true)}
			}
			got := normalize(map[string]any(e.Attributes))
			if got == nil {
				got = map[string]any{}
			}
			miss := match(want, got, "attributes")
			if miss == "" {
				return outcome{value: 1, pass: verdict(true)}
			}
			if firstMiss == "" {
				firstMiss = miss
			}
		}
		if seen == 0 {
			return outcome{value: 0, pass: verdict(false), detail: fmt.Sprintf("no span named %s in the trace", quote(name))}
		}
		return outcome{value: 0, pass: verdict(false), detail: fmt.Sprintf("%d span(s) named %s, none with the attributes; first: %s", seen, quote(name), firstMiss)}
	}, nil
}
