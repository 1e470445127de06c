package query

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"svc/internal/domain/eval"
)

// Labels for chart names and x values: the group of a query without
// groupBy, the one series without a pivot or second dimension, and an
// empty dimension value (a batch with no createdBy).
const (
	labelAll   = "all"
	labelValue = "value"
	labelNone  = "(none)"
)

// Run answers req over batches, which the caller has already limited to
// what the principal may read. It errs only when req is invalid. The
// answer does not depend on the order of batches: they are reduced oldest
// first (createdAt, then id), so even floating-point sums come out the same.
func Run(req Request, batches []eval.Scorecard) (Result, error) {
	p, err := req.plan()
	if err != nil {
		return Result{}, err
	}
	res := Result{
		Metric:  p.metric,
		Measure: p.measure,
		Viz:     p.viz,
		GroupBy: append([]string{}, p.groupBy...),
		PivotBy: p.pivot,
		Rows:    []Row{},
		Scanned: len(batches),
	}

	var matched []*eval.Scorecard
	for i := range batches {
		if p.match(&batches[i]) {
			matched = append(matched, &batches[i])
		}
	}
	res.Matched = len(matched)
	slices.SortFunc(matched, func(a, b *eval.Scorecard) int {
		return cmp.Or(a.CreatedAt.Compare(b.CreatedAt), cmp.Compare(a.ID, b.ID))
	})

	type group struct {
		vals    []string
		batches []*eval.Scorecard
		cells   map[string][]*eval.Scorecard // by pivot value
	}
	byKey := map[string]*group{}
	var groups []*group
	for _, b := range matched {
		vals := make([]string, len(p.groupBy))
		for i, d := range p.groupBy {
			vals[i] = dimValue(b, d)
		}
		key := strings.Join(vals, "\x00")
		g := byKey[key]
		if g == nil {
			g = &group{vals: vals, cells: map[string][]*eval.Scorecard{}}
			byKey[key] = g
			groups = append(groups, g)
		}
		g.batches = append(g.batches, b)
		if p.pivot != "" {
			pv := dimValue(b, p.pivot)
			g.cells[pv] = append(g.cells[pv], b)
		}
	}

	rows := make([]groupRow, len(groups))
	for i, g := range groups {
		r := groupRow{vals: g.vals, cells: g.cells}
		r.Group = make(map[string]string, len(g.vals))
		for j, d := range p.groupBy {
			r.Group[d] = g.vals[j]
		}
		r.Count = len(g.batches)
		r.Value, r.Measured, r.LatestID = reduce(g.batches, p.metric, p.measure)
		rows[i] = r
	}

	// Group order: groupBy order, except that a line with the default sort
	// reads along its x axis first.
	order := make([]int, 0, len(p.groupBy))
	if p.viz == VizLine && p.sort == "" {
		order = append(order, p.timeIndex)
	}
	for i := range p.groupBy {
		if !slices.Contains(order, i) {
			order = append(order, i)
		}
	}
	byGroup := func(a, b groupRow) int {
		for _, i := range order {
			if c := cmp.Compare(a.vals[i], b.vals[i]); c != 0 {
				return c
			}
		}
		return 0
	}
	slices.SortFunc(rows, func(a, b groupRow) int {
		switch p.sort {
		case "-group":
			return byGroup(b, a)
		case "value", "-value":
			// A group without a value goes last either way: it is the
			// least interesting row of a ranking.
			if (a.Value == nil) != (b.Value == nil) {
				if a.Value == nil {
					return 1
				}
				return -1
			}
			c := 0
			if a.Value != nil {
				c = cmp.Compare(*a.Value, *b.Value)
			}
			if p.sort == "-value" {
				c = -c
			}
			return cmp.Or(c, byGroup(a, b))
		}
		return byGroup(a, b)
	})
	res.Groups = len(rows)
	if len(rows) > p.limit {
		rows, res.Truncated = rows[:p.limit], true
	}

	if p.pivot != "" {
		seen := map[string]bool{}
		for _, r := range rows {
			for pv := range r.cells {
				if !seen[pv] {
					seen[pv] = true
					res.PivotValues = append(res.PivotValues, pv)
				}
			}
		}
		slices.Sort(res.PivotValues)
		for i := range rows {
			rows[i].Pivot = make(map[string]*float64, len(res.PivotValues))
			for _, pv := range res.PivotValues {
				rows[i].Pivot[pv], _, _ = reduce(rows[i].cells[pv], p.metric, p.measure)
			}
		}
	}

	for _, r := range rows {
		res.Rows = append(res.Rows, r.Row)
	}
	switch p.viz {
	case VizBars:
		res.Series = bars(rows, res.PivotValues)
	case VizLine:
		res.Series = lines(rows, res.PivotValues, p.timeIndex)
	}
	return res, nil
}

// groupRow is a row with what sorting and charting need besides.
type groupRow struct {
	Row
	vals  []string                     // by groupBy dimension
	cells map[string][]*eval.Scorecard // by pivot value
}

// match reports whether the query reads b.
func (p *plan) match(b *eval.Scorecard) bool {
	f := &p.filters
	switch {
	case !slices.Contains(p.statuses, string(b.Status)),
		!anyOf(f.Status, string(b.Status)),
		!anyOf(f.DatasetID, b.Dataset.ID),
		!anyOf(f.HarnessID, b.Harness.ID),
		!anyOf(f.Kind, b.Kind),
		!anyOf(f.CreatedBy, b.CreatedBy),
		!anyOf(f.HarnessVersion, b.Harness.Version),
		!anyOf(f.DatasetVersion, b.Dataset.Version),
		f.From != "" && b.CreatedAt.Before(p.from),
		f.To != "" && !b.CreatedAt.Before(p.to):
		return false
	}
	if p.search == "" {
		return true
	}
	for _, s := range []string{b.ID, b.Harness.ID, b.Dataset.ID} {
		if strings.Contains(strings.ToLower(s), p.search) {
			return true
		}
	}
	return false
}

// anyOf reports whether v is one of vals; no vals means no filter.
func anyOf(vals Values, v string) bool {
	return len(vals) == 0 || slices.Contains(vals, v)
}

// dimValue is b's value of dimension d.
func dimValue(b *eval.Scorecard, d string) string {
	switch d {
	case DimHarness:
		return b.Harness.ID
	case DimHarnessVersion:
		return b.Harness.String()
	case DimDataset:
		return b.Dataset.ID
	case DimDatasetVersion:
		return b.Dataset.String()
	case DimKind:
		return b.Kind
	case DimStatus:
		return string(b.Status)
	case DimCreatedBy:
		return b.CreatedBy
	case DimDay:
		return b.CreatedAt.UTC().Format("2006-01-02")
	case DimWeek:
		y, w := b.CreatedAt.UTC().ISOWeek()
		return fmt.Sprintf("%04d-W%02d", y, w)
	}
	panic("query: unchecked dimension " + d) // plan refuses every other name
}

// reduce computes measure over batches (oldest first) for metric: the
// value, how many batches gave it, and for latest the id of the batch it
// came from.
//
// passRate and mean weigh each batch by its measured scores (count minus
// skipped), since the summary's pass rate and mean leave skips out: the
// group's value is then what one summary over all its cases would say.
// For casePass, whose every score carries a verdict, that is exact.
func reduce(batches []*eval.Scorecard, metric, measure string) (value *float64, measured int, latestID string) {
	switch measure {
	case MeasureCount:
		if len(batches) == 0 {
			return nil, 0, ""
		}
		n := float64(len(batches))
		return &n, len(batches), ""
	case MeasureLatest:
		for i := len(batches) - 1; i >= 0; i-- {
			if v, ok := batchValue(batches[i], metric); ok {
				if value == nil {
					value, latestID = &v, batches[i].ID
				}
				measured++
			}
		}
		return value, measured, latestID
	}
	var sum, weight float64
	for _, b := range batches {
		ms, ok := b.Summary[metric]
		w := float64(ms.Count - ms.Skipped)
		if !ok || w <= 0 {
			continue
		}
		x := ms.Mean
		if measure == MeasurePassRate {
			if ms.PassRate == nil {
				continue
			}
			x = *ms.PassRate
		}
		sum += x * w
		weight += w
		measured++
	}
	if measured == 0 {
		return nil, 0, ""
	}
	v := sum / weight
	return &v, measured, ""
}

// batchValue is one batch's value of metric for the latest measure: its
// pass rate, else its mean; none when the metric is absent or every score
// of it was skipped.
func batchValue(b *eval.Scorecard, metric string) (float64, bool) {
	ms, ok := b.Summary[metric]
	switch {
	case !ok:
		return 0, false
	case ms.PassRate != nil:
		return *ms.PassRate, true
	case ms.Count-ms.Skipped > 0:
		return ms.Mean, true
	}
	return 0, false
}
