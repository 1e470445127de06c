package query

import (
	"cmp"
	"slices"
	"strings"
)

// bars draws one bar per row, x being the row's group label: one series
// per pivot value, or the single series "value". The bars keep the rows'
// order, so sort=-value draws a ranking.
func bars(rows []groupRow, pivotValues []string) []Series {
	xs := make([]string, len(rows))
	for i, r := range rows {
		xs[i] = label(r.vals)
	}
	if len(pivotValues) == 0 {
		ys := make([]*float64, len(rows))
		for i, r := range rows {
			ys[i] = r.Value
		}
		return keep(nil, labelValue, xs, ys)
	}
	var out []Series
	for _, pv := range pivotValues {
		ys := make([]*float64, len(rows))
		for i, r := range rows {
			ys[i] = r.Pivot[pv]
		}
		out = keep(out, display(pv), xs, ys)
	}
	return out
}

// lines draws the time dimension (groupBy[timeIndex]) on the x axis,
// ascending whatever the rows' sort, and one line per value of the other
// groupBy dimension, per pivot value, or per pair of them ("a / b"); the
// single line "value" when there is neither. Series are in name order.
func lines(rows []groupRow, pivotValues []string, timeIndex int) []Series {
	var xs []string
	ys := map[string]map[string]*float64{} // series name -> x -> y
	put := func(name, x string, y *float64) {
		if ys[name] == nil {
			ys[name] = map[string]*float64{}
		}
		ys[name][x] = y
	}
	for _, r := range rows {
		x := r.vals[timeIndex]
		xs = append(xs, x)
		var prefix []string
		for i, v := range r.vals {
			if i != timeIndex {
				prefix = append(prefix, display(v))
			}
		}
		if len(pivotValues) == 0 {
			put(cmp.Or(strings.Join(prefix, " / "), labelValue), x, r.Value)
			continue
		}
		for _, pv := range pivotValues {
			put(strings.Join(append(slices.Clone(prefix), display(pv)), " / "), x, r.Pivot[pv])
		}
	}
	slices.Sort(xs)
	xs = slices.Compact(xs)
	names := make([]string, 0, len(ys))
	for name := range ys {
		names = append(names, name)
	}
	slices.Sort(names)
	var out []Series
	for _, name := range names {
		line := make([]*float64, len(xs))
		for i, x := range xs {
			line[i] = ys[name][x]
		}
		out = keep(out, name, xs, line)
	}
	return out
}

// keep appends the series name over xs and ys to out unless every y is
// null: such a series draws nothing, and a legend entry for it misleads.
func keep(out []Series, name string, xs []string, ys []*float64) []Series {
	if !slices.ContainsFunc(ys, func(y *float64) bool { return y != nil }) {
		return out
	}
	s := Series{Name: name, Points: make([]Point, len(xs))}
	for i := range xs {
		s.Points[i] = Point{X: xs[i], Y: ys[i]}
	}
	return append(out, s)
}

// label names a group on a chart: its values joined by " / ", or "all"
// for the one group of a query without groupBy.
func label(vals []string) string {
	if len(vals) == 0 {
		return labelAll
	}
	shown := make([]string, len(vals))
	for i, v := range vals {
		shown[i] = display(v)
	}
	return strings.Join(shown, " / ")
}

// display is a dimension value as a chart shows it: "(none)" for empty.
func display(v string) string {
	if v == "" {
		return labelNone
	}
	return v
}
