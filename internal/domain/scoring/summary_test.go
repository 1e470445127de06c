package scoring

import (
	"math"
	"testing"

	"github.com/google/go-cmp/cmp"

	"svc/internal/domain/eval"
	"svc/internal/domain/registry"
)

// row is a decided row with the given scores, built as CaseRow builds it.
func row(caseID string, trial int, verdict string, scores ...eval.Score) eval.CaseRow {
	r := eval.CaseRow{CaseID: caseID, Trial: trial, Verdict: verdict, Scores: scores, Outcomes: map[string]eval.Score{}}
	for _, s := range scores {
		r.Outcomes[s.Metric] = s
	}
	return r
}

func f(x float64) *float64 { return &x }

func TestSummarize(t *testing.T) {
	tests := []struct {
		name string
		rows []eval.CaseRow
		want map[string]eval.MetricSummary
	}{
		{name: "no rows", rows: nil, want: map[string]eval.MetricSummary{}},
		{
			// 1..10: mean 5.5; empirical p50 is the 5th value (5 >= 0.5*10),
			// p95 the 10th (10 >= 0.95*10 = 9.5).
			name: "numeric quantiles, one to ten",
			rows: func() []eval.CaseRow {
				var rows []eval.CaseRow
				for _, v := range []float64{7, 3, 10, 1, 5, 9, 2, 8, 4, 6} { // unsorted on purpose
					rows = append(rows, row("c", int(v), VerdictPass, score("latency", v, nil, "")))
				}
				return rows
			}(),
			want: map[string]eval.MetricSummary{
				"latency":      {Count: 10, Mean: 5.5, P50: f(5), P95: f(10)},
				CasePassMetric: {Count: 10, Mean: 1, PassRate: f(1)},
			},
		},
		{
			// 0.2 0.4 0.6 0.8: mean 0.5; p50 is the 2nd value (2 >= 2), p95
			// the 4th (4 >= 3.8). Pass rate 2 of 4.
			name: "fractional scores with verdicts",
			rows: []eval.CaseRow{
				row("a", 0, VerdictFail, score("judge:q", 0.2, pass(false), "")),
				row("b", 0, VerdictPass, score("judge:q", 0.8, pass(true), "")),
				row("c", 0, VerdictFail, score("judge:q", 0.4, pass(false), "")),
				row("d", 0, VerdictPass, score("judge:q", 0.6, pass(true), "")),
			},
			want: map[string]eval.MetricSummary{
				"judge:q":      {Count: 4, Mean: 0.5, PassRate: f(0.5), P50: f(0.4), P95: f(0.8)},
				CasePassMetric: {Count: 4, Mean: 0.5, PassRate: f(0.5)},
			},
		},
		{
			name: "binary metric has no quantiles; skips are counted, not measured",
			rows: []eval.CaseRow{
				row("a", 0, VerdictPass, score("exact", 1, pass(true), "")),
				row("b", 0, VerdictPass, score("exact", 1, pass(true), "")),
				row("c", 0, VerdictFail, score("exact", 0, pass(false), "")),
				row("d", 0, VerdictFail, score("exact", 0, pass(false), "skipped: no expected")),
			},
			want: map[string]eval.MetricSummary{
				"exact":        {Count: 4, Skipped: 1, Mean: 2.0 / 3, PassRate: f(2.0 / 3)},
				CasePassMetric: {Count: 4, Mean: 0.5, PassRate: f(0.5)},
			},
		},
		{
			name: "every score skipped",
			rows: []eval.CaseRow{
				row("a", 0, VerdictError, score("judge:h", 0, pass(false), "skipped: no key")),
			},
			want: map[string]eval.MetricSummary{
				"judge:h":      {Count: 1, Skipped: 1},
				CasePassMetric: {Count: 1, Mean: 0, PassRate: f(0)},
			},
		},
		{
			name: "pending rows are not decided; errors count against casePass",
			rows: []eval.CaseRow{
				row("a", 0, VerdictPass, score("exit_code", 0, pass(true), "")),
				row("b", 0, VerdictError),
				row("c", 0, VerdictPending),
				row("d", 0, VerdictPending),
			},
			want: map[string]eval.MetricSummary{
				"exit_code":    {Count: 1, Mean: 0, PassRate: f(1)},
				CasePassMetric: {Count: 2, Mean: 0.5, PassRate: f(0.5)},
			},
		},
		{
			name: "non-finite values are not measurements; last outcome of a metric wins",
			rows: []eval.CaseRow{
				row("a", 0, VerdictPass, score("cost", 5, nil, ""), score("cost", 0.5, nil, "")),
				row("b", 0, VerdictPass, score("cost", math.NaN(), nil, "")),
				row("c", 0, VerdictPass, score("cost", 1.5, nil, "")),
			},
			want: map[string]eval.MetricSummary{
				"cost":         {Count: 3, Skipped: 1, Mean: 1, P50: f(0.5), P95: f(1.5)},
				CasePassMetric: {Count: 3, Mean: 1, PassRate: f(1)},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Summarize(tt.rows)
			if diff := cmp.Diff(tt.want, got, cmpFloat); diff != "" {
				t.Errorf("Summarize (-want +got):\n%s", diff)
			}
		})
	}
}

// cmpFloat compares floats to 1e-12: means are computed, not exact.
var cmpFloat = cmp.Comparer(func(a, b float64) bool { return math.Abs(a-b) < 1e-12 })

func TestSummarizeFromScoresOnly(t *testing.T) {
	// A stored row may carry Scores without Outcomes.
	r := eval.CaseRow{CaseID: "a", Verdict: VerdictPass, Scores: []eval.Score{score("m", 0.25, nil, "")}}
	got := Summarize([]eval.CaseRow{r})["m"]
	if want := (eval.MetricSummary{Count: 1, Mean: 0.25, P50: f(0.25), P95: f(0.25)}); !cmp.Equal(want, got) {
		t.Errorf("summary = %+v, want %+v", got, want)
	}
}

func TestScorePlaneDigest(t *testing.T) {
	base := []eval.CaseRow{
		row("a", 1, VerdictPass, score("exact", 1, pass(true), "ok"), score("latency", 2.5, nil, "")),
		row("b", 0, VerdictFail, score("exact", 0, pass(false), "no")),
	}
	d := ScorePlaneDigest(base)

	// The document is pinned: a change of format would break every sealed
	// scoring revision.
	one := []eval.CaseRow{row("a", 1, VerdictPass, score("exact", 0.5, pass(true), ""))}
	if got, want := ScorePlaneDigest(one), registry.Digest([]byte(`[["a",1,"exact","0.5",true]]`)); got != want {
		t.Errorf("ScorePlaneDigest = %s, want %s", got, want)
	}
	if got, want := ScorePlaneDigest(nil), registry.Digest([]byte(`[]`)); got != want {
		t.Errorf("ScorePlaneDigest(nil) = %s, want %s", got, want)
	}

	tests := []struct {
		name  string
		rows  []eval.CaseRow
		equal bool
	}{
		{name: "rows reordered", equal: true, rows: []eval.CaseRow{base[1], base[0]}},
		{name: "scores reordered, details and verdicts changed", equal: true, rows: []eval.CaseRow{
			row("a", 1, VerdictFail, score("latency", 2.5, nil, "x"), score("exact", 1, pass(true), "different prose")),
			row("b", 0, VerdictError, score("exact", 0, pass(false), "")),
		}},
		{name: "a pending row adds nothing", equal: true, rows: append([]eval.CaseRow{row("c", 0, VerdictPending)}, base...)},
		{name: "negative zero is zero", equal: true, rows: []eval.CaseRow{
			base[0], row("b", 0, VerdictFail, score("exact", math.Copysign(0, -1), pass(false), "no")),
		}},
		{name: "a value changed", rows: []eval.CaseRow{
			row("a", 1, VerdictPass, score("exact", 1, pass(true), "ok"), score("latency", 2.6, nil, "")), base[1],
		}},
		{name: "a pass verdict changed", rows: []eval.CaseRow{
			base[0], row("b", 0, VerdictFail, score("exact", 0, pass(true), "no")),
		}},
		{name: "a pass verdict dropped", rows: []eval.CaseRow{
			base[0], row("b", 0, VerdictFail, score("exact", 0, nil, "no")),
		}},
		{name: "another trial", rows: []eval.CaseRow{
			base[0], row("b", 1, VerdictFail, score("exact", 0, pass(false), "no")),
		}},
		{name: "a score missing", rows: []eval.CaseRow{
			row("a", 1, VerdictPass, score("exact", 1, pass(true), "ok")), base[1],
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ScorePlaneDigest(tt.rows) == d; got != tt.equal {
				t.Errorf("digest equal = %v, want %v", got, tt.equal)
			}
		})
	}
}
