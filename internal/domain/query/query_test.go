package query

import (
	"encoding/json"
	"errors"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"svc/internal/domain/eval"
	"svc/internal/domain/registry"
	"svc/internal/platform/derrors"
)

func f(x float64) *float64 { return &x }

// approx compares the weighted averages, whose last bits depend on the
// order of the sums.
var approx = cmp.Comparer(func(a, b float64) bool { return math.Abs(a-b) < 1e-9 })

func at(s string) time.Time {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return t
}

func batch(id, harness, dataset string, status eval.Status, createdBy, createdAt string, summary map[string]eval.MetricSummary) eval.Scorecard {
	h, hv, _ := strings.Cut(harness, "@")
	d, dv, _ := strings.Cut(dataset, "@")
	return eval.Scorecard{
		ID: id, Kind: eval.KindScorecard, Status: status, CreatedBy: createdBy, CreatedAt: at(createdAt),
		Harness: registry.Ref{ID: h, Version: hv}, Dataset: registry.Ref{ID: d, Version: dv}, Summary: summary,
	}
}

func casePass(count int, rate float64) eval.MetricSummary {
	return eval.MetricSummary{Count: count, Mean: rate, PassRate: f(rate)}
}

// fixture: 2026-03-02 is the Monday of ISO week 10, 2026-03-10 is in week 11.
func fixture() []eval.Scorecard {
	x := batch("sc_x", "beta@2.0.0", "qa@1", eval.ScorecardSucceeded, "bob", "2026-03-11T08:00:00Z", nil)
	x.Kind = eval.KindExperiment
	return []eval.Scorecard{
		batch("sc_a1", "alpha@1.0.0", "qa@1", eval.ScorecardSucceeded, "ann", "2026-03-02T10:00:00Z", map[string]eval.MetricSummary{
			"casePass": casePass(10, 0.5), "latency": {Count: 10, Mean: 100}}),
		batch("sc_a2", "alpha@1.1.0", "qa@1", eval.ScorecardSucceeded, "bob", "2026-03-03T09:00:00Z", map[string]eval.MetricSummary{
			"casePass": casePass(30, 0.9), "latency": {Count: 10, Skipped: 5, Mean: 200}}),
		batch("sc_b1", "beta@2.0.0", "qa@1", eval.ScorecardSucceeded, "ann", "2026-03-02T12:00:00Z", map[string]eval.MetricSummary{
			"casePass": casePass(20, 0.25)}),
		batch("sc_b2", "beta@2.0.0", "code@3", eval.ScorecardSucceeded, "", "2026-03-10T08:00:00Z", map[string]eval.MetricSummary{
			"casePass": casePass(10, 1)}),
		x,
		batch("sc_f", "alpha@1.1.0", "qa@1", eval.ScorecardFailed, "ann", "2026-03-04T00:00:00Z", map[string]eval.MetricSummary{
			"casePass": casePass(4, 0)}),
		batch("sc_r", "alpha@1.1.0", "qa@1", eval.ScorecardRunning, "ann", "2026-03-12T00:00:00Z", map[string]eval.MetricSummary{
			"casePass": casePass(2, 1)}),
		batch("sc_c", "alpha@1.1.0", "qa@1", eval.ScorecardCancelled, "ann", "2026-03-04T00:00:00Z", map[string]eval.MetricSummary{
			"casePass": casePass(100, 1)}),
		batch("sc_s", "beta@2.0.0", "qa@1", eval.ScorecardSuperseded, "ann", "2026-03-04T00:00:00Z", map[string]eval.MetricSummary{
			"casePass": casePass(100, 0)}),
	}
}

func row(group map[string]string, value *float64, count, measured int) Row {
	if group == nil {
		group = map[string]string{}
	}
	return Row{Group: group, Value: value, Count: count, Measured: measured}
}

func g(kv ...string) map[string]string {
	m := map[string]string{}
	for i := 0; i < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return m
}

func pts(kv ...any) []Point {
	var out []Point
	for i := 0; i < len(kv); i += 2 {
		p := Point{X: kv[i].(string)}
		if y, ok := kv[i+1].(float64); ok {
			p.Y = f(y)
		}
		out = append(out, p)
	}
	return out
}

func TestRun(t *testing.T) {
	tests := []struct {
		name string
		req  Request
		want Result
	}{
		{
			name: "defaults: one row, succeeded batches, weighted casePass",
			req:  Request{},
			want: Result{Metric: "casePass", Measure: "passRate", Viz: "table", GroupBy: []string{},
				// (10*.5 + 30*.9 + 20*.25 + 10*1) / 70; the experiment has no summary.
				Rows:    []Row{row(nil, f(47.0/70), 5, 4)},
				Scanned: 9, Matched: 5, Groups: 1},
		},
		{
			name: "passRate by harness",
			req:  Request{GroupBy: []string{"harness"}},
			want: Result{Metric: "casePass", Measure: "passRate", Viz: "table", GroupBy: []string{"harness"},
				Rows: []Row{
					row(g("harness", "alpha"), f(32.0/40), 2, 2),
					row(g("harness", "beta"), f(15.0/30), 3, 2),
				},
				Scanned: 9, Matched: 5, Groups: 2},
		},
		{
			name: "mean is weighted by measured scores, skips left out",
			req:  Request{GroupBy: []string{"harness"}, Metric: "latency", Measure: "mean"},
			want: Result{Metric: "latency", Measure: "mean", Viz: "table", GroupBy: []string{"harness"},
				Rows: []Row{
					row(g("harness", "alpha"), f((10*100.0+5*200)/15), 2, 2),
					row(g("harness", "beta"), nil, 3, 0),
				},
				Scanned: 9, Matched: 5, Groups: 2},
		},
		{
			name: "passRate of a metric without verdicts is null",
			req:  Request{Metric: "latency"},
			want: Result{Metric: "latency", Measure: "passRate", Viz: "table", GroupBy: []string{},
				Rows:    []Row{row(nil, nil, 5, 0)},
				Scanned: 9, Matched: 5, Groups: 1},
		},
		{
			name: "count is batches, with or without the metric",
			req:  Request{GroupBy: []string{"harness"}, Measure: "count", Metric: "latency"},
			want: Result{Metric: "latency", Measure: "count", Viz: "table", GroupBy: []string{"harness"},
				Rows: []Row{
					row(g("harness", "alpha"), f(2), 2, 2),
					row(g("harness", "beta"), f(3), 3, 3),
				},
				Scanned: 9, Matched: 5, Groups: 2},
		},
		{
			name: "latest is the newest batch that has the metric",
			req:  Request{GroupBy: []string{"harness"}, Measure: "latest"},
			want: Result{Metric: "casePass", Measure: "latest", Viz: "table", GroupBy: []string{"harness"},
				Rows: []Row{
					{Group: g("harness", "alpha"), Value: f(0.9), Count: 2, Measured: 2, LatestID: "sc_a2"},
					// sc_x is newer but has no summary.
					{Group: g("harness", "beta"), Value: f(1), Count: 3, Measured: 2, LatestID: "sc_b2"},
				},
				Scanned: 9, Matched: 5, Groups: 2},
		},
		{
			name: "latest falls back to the mean when there is no pass rate",
			req:  Request{GroupBy: []string{"harness"}, Measure: "latest", Metric: "latency"},
			want: Result{Metric: "latency", Measure: "latest", Viz: "table", GroupBy: []string{"harness"},
				Rows: []Row{
					{Group: g("harness", "alpha"), Value: f(200), Count: 2, Measured: 2, LatestID: "sc_a2"},
					row(g("harness", "beta"), nil, 3, 0),
				},
				Scanned: 9, Matched: 5, Groups: 2},
		},
		{
			name: "two dimensions",
			req:  Request{GroupBy: []string{"harness", "dataset"}},
			want: Result{Metric: "casePass", Measure: "passRate", Viz: "table", GroupBy: []string{"harness", "dataset"},
				Rows: []Row{
					row(g("harness", "alpha", "dataset", "qa"), f(0.8), 2, 2),
					row(g("harness", "beta", "dataset", "code"), f(1), 1, 1),
					row(g("harness", "beta", "dataset", "qa"), f(0.25), 2, 1),
				},
				Scanned: 9, Matched: 5, Groups: 3},
		},
		{
			name: "versions, kind and createdBy as dimensions",
			req:  Request{GroupBy: []string{"harnessVersion", "createdBy"}, Filters: &Filters{Kind: Values{"scorecard"}}},
			want: Result{Metric: "casePass", Measure: "passRate", Viz: "table", GroupBy: []string{"harnessVersion", "createdBy"},
				Rows: []Row{
					row(g("harnessVersion", "alpha@1.0.0", "createdBy", "ann"), f(0.5), 1, 1),
					row(g("harnessVersion", "alpha@1.1.0", "createdBy", "bob"), f(0.9), 1, 1),
					row(g("harnessVersion", "beta@2.0.0", "createdBy", ""), f(1), 1, 1),
					row(g("harnessVersion", "beta@2.0.0", "createdBy", "ann"), f(0.25), 1, 1),
				},
				Scanned: 9, Matched: 4, Groups: 4},
		},
		{
			name: "pivot: a value per pivot column, null where no batch",
			req:  Request{GroupBy: []string{"harness"}, PivotBy: "dataset"},
			want: Result{Metric: "casePass", Measure: "passRate", Viz: "table", GroupBy: []string{"harness"},
				PivotBy: "dataset", PivotValues: []string{"code", "qa"},
				Rows: []Row{
					{Group: g("harness", "alpha"), Value: f(0.8), Count: 2, Measured: 2,
						Pivot: map[string]*float64{"code": nil, "qa": f(0.8)}},
					{Group: g("harness", "beta"), Value: f(0.5), Count: 3, Measured: 2,
						Pivot: map[string]*float64{"code": f(1), "qa": f(0.25)}},
				},
				Scanned: 9, Matched: 5, Groups: 2},
		},
		{
			name: "bars: one value series over the group labels",
			req:  Request{GroupBy: []string{"harness", "dataset"}, Viz: "bars", Sort: "-value"},
			want: Result{Metric: "casePass", Measure: "passRate", Viz: "bars", GroupBy: []string{"harness", "dataset"},
				Rows: []Row{
					row(g("harness", "beta", "dataset", "code"), f(1), 1, 1),
					row(g("harness", "alpha", "dataset", "qa"), f(0.8), 2, 2),
					row(g("harness", "beta", "dataset", "qa"), f(0.25), 2, 1),
				},
				Series:  []Series{{Name: "value", Points: pts("beta / code", 1.0, "alpha / qa", 0.8, "beta / qa", 0.25)}},
				Scanned: 9, Matched: 5, Groups: 3},
		},
		{
			name: "bars: a series per pivot value",
			req:  Request{GroupBy: []string{"harness"}, PivotBy: "dataset", Viz: "bars"},
			want: Result{Metric: "casePass", Measure: "passRate", Viz: "bars", GroupBy: []string{"harness"},
				PivotBy: "dataset", PivotValues: []string{"code", "qa"},
				Rows: []Row{
					{Group: g("harness", "alpha"), Value: f(0.8), Count: 2, Measured: 2,
						Pivot: map[string]*float64{"code": nil, "qa": f(0.8)}},
					{Group: g("harness", "beta"), Value: f(0.5), Count: 3, Measured: 2,
						Pivot: map[string]*float64{"code": f(1), "qa": f(0.25)}},
				},
				Series: []Series{
					{Name: "code", Points: pts("alpha", nil, "beta", 1.0)},
					{Name: "qa", Points: pts("alpha", 0.8, "beta", 0.25)},
				},
				Scanned: 9, Matched: 5, Groups: 2},
		},
		{
			name: "bars without groupBy: the group is all",
			req:  Request{Viz: "bars", Measure: "count"},
			want: Result{Metric: "casePass", Measure: "count", Viz: "bars", GroupBy: []string{},
				Rows:    []Row{row(nil, f(5), 5, 5)},
				Series:  []Series{{Name: "value", Points: pts("all", 5.0)}},
				Scanned: 9, Matched: 5, Groups: 1},
		},
		{
			name: "line by week: one value line",
			req:  Request{GroupBy: []string{"week"}, Viz: "line"},
			want: Result{Metric: "casePass", Measure: "passRate", Viz: "line", GroupBy: []string{"week"},
				Rows: []Row{
					row(g("week", "2026-W10"), f(37.0/60), 3, 3),
					row(g("week", "2026-W11"), f(1), 2, 1),
				},
				Series:  []Series{{Name: "value", Points: pts("2026-W10", 37.0/60, "2026-W11", 1.0)}},
				Scanned: 9, Matched: 5, Groups: 2},
		},
		{
			name: "line by day and harness: time first, a line per harness, gaps null",
			req:  Request{GroupBy: []string{"harness", "day"}, Viz: "line"},
			want: Result{Metric: "casePass", Measure: "passRate", Viz: "line", GroupBy: []string{"harness", "day"},
				Rows: []Row{
					row(g("harness", "alpha", "day", "2026-03-02"), f(0.5), 1, 1),
					row(g("harness", "beta", "day", "2026-03-02"), f(0.25), 1, 1),
					row(g("harness", "alpha", "day", "2026-03-03"), f(0.9), 1, 1),
					row(g("harness", "beta", "day", "2026-03-10"), f(1), 1, 1),
					row(g("harness", "beta", "day", "2026-03-11"), nil, 1, 0),
				},
				Series: []Series{
					{Name: "alpha", Points: pts("2026-03-02", 0.5, "2026-03-03", 0.9, "2026-03-10", nil, "2026-03-11", nil)},
					{Name: "beta", Points: pts("2026-03-02", 0.25, "2026-03-03", nil, "2026-03-10", 1.0, "2026-03-11", nil)},
				},
				Scanned: 9, Matched: 5, Groups: 5},
		},
		{
			name: "line with a pivot: a line per pivot value; x ascending whatever the row sort",
			req:  Request{GroupBy: []string{"week"}, PivotBy: "harness", Viz: "line", Sort: "-group"},
			want: Result{Metric: "casePass", Measure: "passRate", Viz: "line", GroupBy: []string{"week"},
				PivotBy: "harness", PivotValues: []string{"alpha", "beta"},
				Rows: []Row{
					{Group: g("week", "2026-W11"), Value: f(1), Count: 2, Measured: 1,
						Pivot: map[string]*float64{"alpha": nil, "beta": f(1)}},
					{Group: g("week", "2026-W10"), Value: f(37.0 / 60), Count: 3, Measured: 3,
						Pivot: map[string]*float64{"alpha": f(0.8), "beta": f(0.25)}},
				},
				Series: []Series{
					{Name: "alpha", Points: pts("2026-W10", 0.8, "2026-W11", nil)},
					{Name: "beta", Points: pts("2026-W10", 0.25, "2026-W11", 1.0)},
				},
				Scanned: 9, Matched: 5, Groups: 2},
		},
		{
			name: "line with a second dimension and a pivot: a line per pair; empty lines left out",
			req:  Request{GroupBy: []string{"day", "dataset"}, PivotBy: "harness", Viz: "line", Filters: &Filters{To: "2026-03-10T00:00:00Z"}},
			want: Result{Metric: "casePass", Measure: "passRate", Viz: "line", GroupBy: []string{"day", "dataset"},
				PivotBy: "harness", PivotValues: []string{"alpha", "beta"},
				Rows: []Row{
					{Group: g("day", "2026-03-02", "dataset", "qa"), Value: f(10.0 / 30), Count: 2, Measured: 2,
						Pivot: map[string]*float64{"alpha": f(0.5), "beta": f(0.25)}},
					{Group: g("day", "2026-03-03", "dataset", "qa"), Value: f(0.9), Count: 1, Measured: 1,
						Pivot: map[string]*float64{"alpha": f(0.9), "beta": nil}},
				},
				Series: []Series{
					{Name: "qa / alpha", Points: pts("2026-03-02", 0.5, "2026-03-03", 0.9)},
					{Name: "qa / beta", Points: pts("2026-03-02", 0.25, "2026-03-03", nil)},
				},
				Scanned: 9, Matched: 3, Groups: 2},
		},
		{
			name: "sort value: null last, ties by group",
			req:  Request{GroupBy: []string{"dataset"}, Metric: "latency", Measure: "mean", Sort: "value"},
			want: Result{Metric: "latency", Measure: "mean", Viz: "table", GroupBy: []string{"dataset"},
				Rows: []Row{
					row(g("dataset", "qa"), f(2000.0/15), 4, 2),
					row(g("dataset", "code"), nil, 1, 0),
				},
				Scanned: 9, Matched: 5, Groups: 2},
		},
		{
			name: "sort -value: null still last",
			req:  Request{GroupBy: []string{"dataset"}, Metric: "latency", Measure: "mean", Sort: "-value"},
			want: Result{Metric: "latency", Measure: "mean", Viz: "table", GroupBy: []string{"dataset"},
				Rows: []Row{
					row(g("dataset", "qa"), f(2000.0/15), 4, 2),
					row(g("dataset", "code"), nil, 1, 0),
				},
				Scanned: 9, Matched: 5, Groups: 2},
		},
		{
			name: "sort -group",
			req:  Request{GroupBy: []string{"harness"}, Measure: "count", Sort: "-group"},
			want: Result{Metric: "casePass", Measure: "count", Viz: "table", GroupBy: []string{"harness"},
				Rows: []Row{
					row(g("harness", "beta"), f(3), 3, 3),
					row(g("harness", "alpha"), f(2), 2, 2),
				},
				Scanned: 9, Matched: 5, Groups: 2},
		},
		{
			name: "limit truncates after sorting; series follow the rows shown",
			req:  Request{GroupBy: []string{"day"}, Measure: "count", Viz: "bars", Sort: "-group", Limit: 2},
			want: Result{Metric: "casePass", Measure: "count", Viz: "bars", GroupBy: []string{"day"},
				Rows: []Row{
					row(g("day", "2026-03-11"), f(1), 1, 1),
					row(g("day", "2026-03-10"), f(1), 1, 1),
				},
				Series:  []Series{{Name: "value", Points: pts("2026-03-11", 1.0, "2026-03-10", 1.0)}},
				Scanned: 9, Matched: 5, Groups: 4, Truncated: true},
		},
		{
			name: "search: case-insensitive over batch id",
			req:  Request{Search: "SC_B1", Measure: "count"},
			want: Result{Metric: "casePass", Measure: "count", Viz: "table", GroupBy: []string{},
				Rows: []Row{row(nil, f(1), 1, 1)}, Scanned: 9, Matched: 1, Groups: 1},
		},
		{
			name: "search: harness id",
			req:  Request{Search: "Alph", GroupBy: []string{"harnessVersion"}, Measure: "count"},
			want: Result{Metric: "casePass", Measure: "count", Viz: "table", GroupBy: []string{"harnessVersion"},
				Rows: []Row{
					row(g("harnessVersion", "alpha@1.0.0"), f(1), 1, 1),
					row(g("harnessVersion", "alpha@1.1.0"), f(1), 1, 1),
				},
				Scanned: 9, Matched: 2, Groups: 2},
		},
		{
			name: "search: dataset id",
			req:  Request{Search: "cod", GroupBy: []string{"datasetVersion"}},
			want: Result{Metric: "casePass", Measure: "passRate", Viz: "table", GroupBy: []string{"datasetVersion"},
				Rows: []Row{row(g("datasetVersion", "code@3"), f(1), 1, 1)}, Scanned: 9, Matched: 1, Groups: 1},
		},
		{
			name: "search matching nothing: no rows",
			req:  Request{Search: "nope", Viz: "bars"},
			want: Result{Metric: "casePass", Measure: "passRate", Viz: "bars", GroupBy: []string{},
				Rows: []Row{}, Scanned: 9},
		},
		{
			name: "incomplete: failed and running join; cancelled and superseded never",
			req:  Request{GroupBy: []string{"status"}, IncludeIncomplete: true},
			want: Result{Metric: "casePass", Measure: "passRate", Viz: "table", GroupBy: []string{"status"},
				Rows: []Row{
					row(g("status", "failed"), f(0), 1, 1),
					row(g("status", "running"), f(1), 1, 1),
					row(g("status", "succeeded"), f(47.0/70), 5, 4),
				},
				Scanned: 9, Matched: 7, Groups: 3},
		},
		{
			name: "status filter within incomplete",
			req:  Request{IncludeIncomplete: true, Filters: &Filters{Status: Values{"failed", "running"}}, Measure: "count"},
			want: Result{Metric: "casePass", Measure: "count", Viz: "table", GroupBy: []string{},
				Rows: []Row{row(nil, f(2), 2, 2)}, Scanned: 9, Matched: 2, Groups: 1},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Run(tt.req, fixture())
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
			if diff := cmp.Diff(tt.want, got, approx); diff != "" {
				t.Errorf("Run (-want +got):\n%s", diff)
			}
		})
	}
}

func TestRunFilters(t *testing.T) {
	tests := []struct {
		name    string
		filters Filters
		want    []string // ids of the batches matched, in fixture order
	}{
		{"datasetId", Filters{DatasetID: Values{"code"}}, []string{"sc_b2"}},
		{"harnessId any of", Filters{HarnessID: Values{"alpha", "gamma"}}, []string{"sc_a1", "sc_a2"}},
		{"kind", Filters{Kind: Values{"experiment"}}, []string{"sc_x"}},
		{"createdBy", Filters{CreatedBy: Values{"ann"}}, []string{"sc_a1", "sc_b1"}},
		{"harnessVersion", Filters{HarnessVersion: Values{"1.1.0"}}, []string{"sc_a2"}},
		{"datasetVersion", Filters{DatasetVersion: Values{"3"}}, []string{"sc_b2"}},
		{"from inclusive, to exclusive", Filters{From: "2026-03-03T09:00:00Z", To: "2026-03-10T08:00:00Z"}, []string{"sc_a2"}},
		{"from with an offset", Filters{From: "2026-03-10T09:00:00+01:00"}, []string{"sc_b2", "sc_x"}},
		{"fields combine with AND", Filters{HarnessID: Values{"beta"}, DatasetID: Values{"qa"}}, []string{"sc_b1", "sc_x"}},
		{"status succeeded", Filters{Status: Values{"succeeded"}, CreatedBy: Values{"bob"}}, []string{"sc_a2", "sc_x"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// One batch at a time: Matched says whether the filter took it.
			var got []string
			for _, b := range fixture() {
				fl := tt.filters
				res, err := Run(Request{Filters: &fl}, []eval.Scorecard{b})
				if err != nil {
					t.Fatalf("Run: %v", err)
				}
				if res.Matched == 1 {
					got = append(got, b.ID)
				}
			}
			if !cmp.Equal(tt.want, got) {
				t.Errorf("matched %v, want %v", got, tt.want)
			}
		})
	}
}

func TestRunIgnoresInputOrder(t *testing.T) {
	reqs := []Request{
		{},
		{GroupBy: []string{"harness", "week"}, PivotBy: "dataset", Viz: "line"},
		{GroupBy: []string{"dataset"}, Measure: "latest", Viz: "bars", Sort: "-value"},
		{GroupBy: []string{"createdBy"}, Metric: "latency", Measure: "mean", IncludeIncomplete: true},
	}
	// Same createdAt for two batches: latest breaks the tie by id.
	batches := append(fixture(), batch("sc_a3", "alpha@1.1.0", "qa@1", eval.ScorecardSucceeded, "bob", "2026-03-03T09:00:00Z",
		map[string]eval.MetricSummary{"casePass": casePass(3, 1.0/3)}))
	for _, req := range reqs {
		want, err := Run(req, batches)
		if err != nil {
			t.Fatalf("Run(%+v): %v", req, err)
		}
		reversed := slices.Clone(batches)
		slices.Reverse(reversed)
		got, err := Run(req, reversed)
		if err != nil {
			t.Fatalf("Run(%+v): %v", req, err)
		}
		// Exact equality: the sums are taken in the same order.
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("Run(%+v) depends on input order (-in order +reversed):\n%s", req, diff)
		}
	}
	res, err := Run(Request{Measure: "latest", GroupBy: []string{"harness"}}, batches)
	if err != nil {
		t.Fatal(err)
	}
	if got := res.Rows[0].LatestID; got != "sc_a3" {
		t.Errorf("latest of alpha = %s, want sc_a3 (same createdAt as sc_a2, greater id)", got)
	}
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name string
		req  Request
		want string // a part of the message: the field and what it accepts
	}{
		{"three dimensions", Request{GroupBy: []string{"harness", "dataset", "kind"}}, "groupBy: at most 2"},
		{"unknown dimension", Request{GroupBy: []string{"harness", "model"}}, `groupBy[1]: unknown dimension "model"; allowed: harness, harnessVersion`},
		{"dimension twice", Request{GroupBy: []string{"kind", "kind"}}, `groupBy[1]: dimension "kind" given twice`},
		{"day and week", Request{GroupBy: []string{"day", "week"}}, "groupBy[1]: at most one of day and week"},
		{"unknown pivot", Request{PivotBy: "tenant"}, `pivotBy: unknown dimension "tenant"`},
		{"pivot in groupBy", Request{GroupBy: []string{"harness"}, PivotBy: "harness"}, `pivotBy: "harness" is already in groupBy`},
		{"unknown measure", Request{Measure: "median"}, `measure: unknown "median"; allowed: passRate, mean, count, latest`},
		{"unknown viz", Request{Viz: "pie"}, `viz: unknown "pie"; allowed: table, bars, line`},
		{"line without time", Request{Viz: "line", GroupBy: []string{"harness"}}, "viz: line needs day or week in groupBy"},
		{"line pivoted by time", Request{Viz: "line", GroupBy: []string{"day"}, PivotBy: "week"}, `pivotBy: "week" is a time dimension`},
		{"unknown sort", Request{Sort: "name"}, `sort: unknown "name"; allowed: value, -value, group, -group`},
		{"negative limit", Request{Limit: -1}, "limit: -1 is out of range; allowed: 1 to 1000"},
		{"limit over max", Request{Limit: 1001}, "limit: 1001 is out of range"},
		{"long metric", Request{Metric: strings.Repeat("m", 201)}, "metric: at most 200"},
		{"long search", Request{Search: strings.Repeat("s", 201)}, "search: at most 200"},
		{"unknown kind", Request{Filters: &Filters{Kind: Values{"scorecard", "group"}}}, `filters.kind[1]: unknown "group"; allowed: scorecard, experiment`},
		{"empty filter value", Request{Filters: &Filters{HarnessID: Values{""}}}, "filters.harnessId[0]: want 1 to 200 characters"},
		{"incomplete status without includeIncomplete", Request{Filters: &Filters{Status: Values{"failed"}}}, `filters.status[0]: "failed" needs includeIncomplete: true`},
		{"cancelled status", Request{IncludeIncomplete: true, Filters: &Filters{Status: Values{"cancelled"}}}, "filters.status[0]: cancelled batches are never queried"},
		{"superseded status", Request{Filters: &Filters{Status: Values{"superseded"}}}, "filters.status[0]: superseded batches are never queried"},
		{"unknown status", Request{Filters: &Filters{Status: Values{"done"}}}, `filters.status[0]: unknown "done"; allowed: succeeded, failed, running, queued`},
		{"bad from", Request{Filters: &Filters{From: "2026-03-02"}}, `filters.from: "2026-03-02" is not an RFC 3339 time`},
		{"bad to", Request{Filters: &Filters{To: "yesterday"}}, `filters.to: "yesterday" is not an RFC 3339 time`},
		{"to not after from", Request{Filters: &Filters{From: "2026-03-02T00:00:00Z", To: "2026-03-02T00:00:00Z"}}, "filters.to: must be after filters.from"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.req.Validate()
			if !errors.Is(err, derrors.ErrInvalid) {
				t.Fatalf("Validate() = %v, want ErrInvalid", err)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Validate() = %q, want it to contain %q", err, tt.want)
			}
			if _, err := Run(tt.req, fixture()); !errors.Is(err, derrors.ErrInvalid) {
				t.Errorf("Run() = %v, want ErrInvalid", err)
			}
		})
	}
	for _, ok := range []Request{
		{},
		{GroupBy: []string{"week", "harness"}, PivotBy: "kind", Viz: "line", Sort: "-value", Limit: 1000},
		{IncludeIncomplete: true, Filters: &Filters{Status: Values{"queued", "succeeded"}, From: "2026-03-02T00:00:00+02:00"}},
	} {
		if err := ok.Validate(); err != nil {
			t.Errorf("Validate(%+v) = %v, want nil", ok, err)
		}
	}
}

func TestJSON(t *testing.T) {
	body := `{"filters":{"harnessId":"beta","datasetId":["qa","code"]},"groupBy":["dataset"],"pivotBy":"kind","viz":"bars"}`
	var req Request
	if err := json.Unmarshal([]byte(body), &req); err != nil {
		t.Fatalf("decode: %v", err)
	}
	wantFilters := &Filters{HarnessID: Values{"beta"}, DatasetID: Values{"qa", "code"}}
	if diff := cmp.Diff(wantFilters, req.Filters); diff != "" {
		t.Errorf("filters (-want +got):\n%s", diff)
	}
	if err := json.Unmarshal([]byte(`{"filters":{"harnessId":3}}`), &req); err == nil {
		t.Error("decode of a number filter: want an error")
	}

	res, err := Run(req, fixture())
	if err != nil {
		t.Fatal(err)
	}
	out, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	// Nulls stay in: a table cell and a chart gap are "no value", not 0.
	want := `{"metric":"casePass","measure":"passRate","viz":"bars","groupBy":["dataset"],"pivotBy":"kind",` +
		`"pivotValues":["experiment","scorecard"],` +
		`"rows":[{"group":{"dataset":"code"},"value":1,"count":1,"measured":1,"pivot":{"experiment":null,"scorecard":1}},` +
		`{"group":{"dataset":"qa"},"value":0.25,"count":2,"measured":1,"pivot":{"experiment":null,"scorecard":0.25}}],` +
		`"series":[{"name":"scorecard","points":[{"x":"code","y":1},{"x":"qa","y":0.25}]}],` +
		`"scanned":9,"matched":3,"groups":2}`
	if string(out) != want {
		t.Errorf("JSON:\n got %s\nwant %s", out, want)
	}

	empty, err := Run(Request{Search: "nothing"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	out, _ = json.Marshal(empty)
	if want := `{"metric":"casePass","measure":"passRate","viz":"table","groupBy":[],"rows":[],"scanned":0,"matched":0,"groups":0}`; string(out) != want {
		t.Errorf("empty JSON:\n got %s\nwant %s", out, want)
	}
}
