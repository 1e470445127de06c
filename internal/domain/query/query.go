// Package query answers POST /scorecards/query (spec §4.5): it filters a
// workspace's batches, groups them by up to two dimensions (and pivots by
// one more), reduces each group to one number per metric and measure, and
// shapes the answer as table rows plus the series a bar or line chart
// draws. It is pure: the caller loads the batches, Run does the rest, so
// the same answer comes from either store and from tests without one.
package query

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"svc/internal/domain/eval"
	"svc/internal/domain/scoring"
	"svc/internal/platform/derrors"
)

// Dimensions a query groups or pivots by.
const (
	DimHarness        = "harness"        // harness id
	DimHarnessVersion = "harnessVersion" // harness "id@version"
	DimDataset        = "dataset"        // dataset id
	DimDatasetVersion = "datasetVersion" // dataset "id@version"
	DimKind           = "kind"           // scorecard or experiment
	DimStatus         = "status"         // batch status
	DimCreatedBy      = "createdBy"      // submitter subject
	DimDay            = "day"            // UTC date of createdAt, "2006-01-02"
	DimWeek           = "week"           // ISO week of createdAt (UTC), "2006-W01"
)

// Measures: how a group's batches reduce to one value.
const (
	MeasurePassRate = "passRate"
	MeasureMean     = "mean"
	MeasureCount    = "count"
	MeasureLatest   = "latest"
)

// Visualisations: which series the answer carries besides its rows.
const (
	VizTable = "table"
	VizBars  = "bars"
	VizLine  = "line"
)

// Row limits.
const (
	DefaultLimit = 100
	MaxLimit     = 1000
)

// maxText bounds the free-text fields (metric, search, filter values): a
// name or id is far shorter, and the bound keeps a query's cost linear in
// the batches rather than in what a client chose to send.
const maxText = 200

var (
	dimensions = []string{DimHarness, DimHarnessVersion, DimDataset, DimDatasetVersion,
		DimKind, DimStatus, DimCreatedBy, DimDay, DimWeek}
	measures = []string{MeasurePassRate, MeasureMean, MeasureCount, MeasureLatest}
	vizzes   = []string{VizTable, VizBars, VizLine}
	sorts    = []string{"value", "-value", "group", "-group"}
	kinds    = []string{eval.KindScorecard, eval.KindExperiment}
	// complete is what a query reads by default; incomplete is what
	// includeIncomplete adds. Cancelled and superseded batches are in
	// neither: spec §3 has trend and leaderboard ignore them, and a query
	// is both.
	complete   = []string{string(eval.ScorecardSucceeded)}
	incomplete = []string{string(eval.ScorecardFailed), string(eval.ScorecardRunning), string(eval.ScorecardQueued)}
)

// Request is the body of POST /scorecards/query.
type Request struct {
	Filters *Filters `json:"filters,omitempty"`
	// GroupBy is 0 to 2 dimensions; none makes one row of every matched batch.
	GroupBy []string `json:"groupBy,omitempty"`
	// PivotBy is one more dimension, not in GroupBy: each row gets one
	// value per pivot value, and a chart one series per pivot value.
	PivotBy string `json:"pivotBy,omitempty"`
	// Metric is a summary metric name; default "casePass".
	Metric string `json:"metric,omitempty"`
	// Measure is passRate (default), mean, count or latest.
	Measure string `json:"measure,omitempty"`
	// Viz is table (default), bars or line.
	Viz string `json:"viz,omitempty"`
	// Sort is value, -value, group or -group; default group ascending,
	// with the time dimension first for line.
	Sort string `json:"sort,omitempty"`
	// Search is a case-insensitive substring of the batch id, harness id
	// or dataset id.
	Search string `json:"search,omitempty"`
	// IncludeIncomplete adds failed, running and queued batches to the
	// succeeded ones; cancelled and superseded batches are never read.
	IncludeIncomplete bool `json:"includeIncomplete,omitempty"`
	// Limit caps the rows: default 100, at most 1000.
	Limit int `json:"limit,omitempty"`
}

// Filters narrow the batches a query reads. Each list matches any of its
// values; the fields combine with AND. From and To bound createdAt.
type Filters struct {
	DatasetID      Values `json:"datasetId,omitempty"`
	HarnessID      Values `json:"harnessId,omitempty"`
	Kind           Values `json:"kind,omitempty"`
	Status         Values `json:"status,omitempty"`
	CreatedBy      Values `json:"createdBy,omitempty"`
	HarnessVersion Values `json:"harnessVersion,omitempty"`
	DatasetVersion Values `json:"datasetVersion,omitempty"`
	// From (inclusive) and To (exclusive) are RFC 3339 times.
	From string `json:"from,omitempty"`
	To   string `json:"to,omitempty"`
}

// Values is a filter's list of accepted values. In JSON it is an array of
// strings or, for the common case of one value, a bare string.
type Values []string

// UnmarshalJSON accepts "x" as well as ["x", "y"].
func (v *Values) UnmarshalJSON(b []byte) error {
	if b = bytes.TrimSpace(b); len(b) > 0 && b[0] == '"' {
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		*v = Values{s}
		return nil
	}
	var ss []string
	if err := json.Unmarshal(b, &ss); err != nil {
		var typ *json.UnmarshalTypeError
		if errors.As(err, &typ) {
			// Returned bare, encoding/json adds the field's path
			// (filters.harnessId); wrapped, a client reads "the request
			// body must be an array". Its offset counts from this value,
			// not from the body: drop it.
			typ.Offset = 0
			return typ
		}
		return fmt.Errorf("want a string or an array of strings: %w", err)
	}
	*v = ss
	return nil
}

// Result is the answer of a query.
type Result struct {
	// Metric, Measure and Viz are the effective ones, defaults applied.
	Metric  string   `json:"metric"`
	Measure string   `json:"measure"`
	Viz     string   `json:"viz"`
	GroupBy []string `json:"groupBy"`
	PivotBy string   `json:"pivotBy,omitempty"`
	// PivotValues are the pivot's columns, ascending: the keys of every
	// row's Pivot.
	PivotValues []string `json:"pivotValues,omitempty"`
	Rows        []Row    `json:"rows"`
	// Series are what a bars or line chart draws; none for a table.
	Series []Series `json:"series,omitempty"`
	// Scanned is the batches the caller passed; Matched those that passed
	// the status rule, the filters and the search, with or without the
	// metric; Groups the rows before Limit, Truncated whether Limit cut.
	Scanned   int  `json:"scanned"`
	Matched   int  `json:"matched"`
	Groups    int  `json:"groups"`
	Truncated bool `json:"truncated,omitempty"`
}

// Row is one group of batches.
type Row struct {
	// Group maps each GroupBy dimension to this row's value of it; empty
	// when the query has no GroupBy.
	Group map[string]string `json:"group"`
	// Value is the measure over the whole group; null when no batch of the
	// group has the metric (or, for passRate, a pass rate of it).
	Value *float64 `json:"value"`
	// Count is the batches in the group; Measured those of them that gave
	// Value (every one for the count measure).
	Count    int `json:"count"`
	Measured int `json:"measured"`
	// Pivot maps every one of Result.PivotValues to the measure over the
	// group's batches with that pivot value; null where none gives one.
	Pivot map[string]*float64 `json:"pivot,omitempty"`
	// LatestID is, for the latest measure, the batch whose value Value is.
	LatestID string `json:"latestId,omitempty"`
}

// Series is one line or one set of bars of a chart.
type Series struct {
	Name   string  `json:"name"`
	Points []Point `json:"points"`
}

// Point is one x of a series; Y is null where the cell has no value, so
// every series of a chart has the same x's in the same order.
type Point struct {
	X string   `json:"x"`
	Y *float64 `json:"y"`
}

// plan is a validated request with its defaults applied.
type plan struct {
	groupBy   []string
	pivot     string
	metric    string
	measure   string
	viz       string
	sort      string
	search    string // lower-cased
	limit     int
	statuses  []string
	filters   Filters
	from, to  time.Time // zero: unbounded
	timeIndex int       // index in groupBy of day or week; -1 when none
}

// Validate checks the request; its error wraps derrors.ErrInvalid and
// names the bad field and what it accepts.
func (r *Request) Validate() error {
	_, err := r.plan()
	return err
}

func (r *Request) plan() (plan, error) {
	p := plan{
		groupBy:   r.GroupBy,
		pivot:     r.PivotBy,
		metric:    cmp.Or(strings.TrimSpace(r.Metric), scoring.CasePassMetric),
		measure:   cmp.Or(r.Measure, MeasurePassRate),
		viz:       cmp.Or(r.Viz, VizTable),
		sort:      r.Sort,
		search:    strings.ToLower(strings.TrimSpace(r.Search)),
		limit:     cmp.Or(r.Limit, DefaultLimit),
		timeIndex: -1,
	}
	if len(p.groupBy) > 2 {
		return p, derrors.Invalidf("groupBy: at most 2 dimensions, got %d", len(p.groupBy))
	}
	for i, d := range p.groupBy {
		if !slices.Contains(dimensions, d) {
			return p, derrors.Invalidf("groupBy[%d]: unknown dimension %q; allowed: %s", i, d, list(dimensions))
		}
		if slices.Index(p.groupBy, d) != i {
			return p, derrors.Invalidf("groupBy[%d]: dimension %q given twice", i, d)
		}
		if isTime(d) {
			if p.timeIndex >= 0 {
				return p, derrors.Invalidf("groupBy[%d]: at most one of day and week", i)
			}
			p.timeIndex = i
		}
	}
	if p.pivot != "" {
		if !slices.Contains(dimensions, p.pivot) {
			return p, derrors.Invalidf("pivotBy: unknown dimension %q; allowed: %s", p.pivot, list(dimensions))
		}
		if slices.Contains(p.groupBy, p.pivot) {
			return p, derrors.Invalidf("pivotBy: %q is already in groupBy; pivot by another dimension", p.pivot)
		}
	}
	if len(p.metric) > maxText {
		return p, derrors.Invalidf("metric: at most %d characters", maxText)
	}
	if !slices.Contains(measures, p.measure) {
		return p, derrors.Invalidf("measure: unknown %q; allowed: %s", p.measure, list(measures))
	}
	if !slices.Contains(vizzes, p.viz) {
		return p, derrors.Invalidf("viz: unknown %q; allowed: %s", p.viz, list(vizzes))
	}
	if p.viz == VizLine {
		// A line's x axis is time; a pivot by the other time dimension
		// would put time on the series too.
		if p.timeIndex < 0 {
			return p, derrors.Invalidf("viz: line needs day or week in groupBy (its x axis)")
		}
		if isTime(p.pivot) {
			return p, derrors.Invalidf("pivotBy: %q is a time dimension; a line already has time on its x axis", p.pivot)
		}
	}
	if p.sort != "" && !slices.Contains(sorts, p.sort) {
		return p, derrors.Invalidf("sort: unknown %q; allowed: %s", p.sort, list(sorts))
	}
	if len(p.search) > maxText {
		return p, derrors.Invalidf("search: at most %d characters", maxText)
	}
	if r.Limit < 0 || r.Limit > MaxLimit {
		return p, derrors.Invalidf("limit: %d is out of range; allowed: 1 to %d (default %d)", r.Limit, MaxLimit, DefaultLimit)
	}
	p.statuses = complete
	if r.IncludeIncomplete {
		p.statuses = slices.Concat(complete, incomplete)
	}
	if f := r.Filters; f != nil {
		p.filters = *f
		if err := p.checkFilters(r.IncludeIncomplete); err != nil {
			return p, err
		}
	}
	return p, nil
}

// checkFilters checks p.filters and parses its time bounds.
func (p *plan) checkFilters(includeIncomplete bool) error {
	f := &p.filters
	lists := []struct {
		name string
		vals Values
	}{
		{"datasetId", f.DatasetID}, {"harnessId", f.HarnessID}, {"kind", f.Kind}, {"status", f.Status},
		{"createdBy", f.CreatedBy}, {"harnessVersion", f.HarnessVersion}, {"datasetVersion", f.DatasetVersion},
	}
	for _, l := range lists {
		for i, v := range l.vals {
			if v == "" || len(v) > maxText {
				return derrors.Invalidf("filters.%s[%d]: want 1 to %d characters", l.name, i, maxText)
			}
		}
	}
	for i, k := range f.Kind {
		if !slices.Contains(kinds, k) {
			return derrors.Invalidf("filters.kind[%d]: unknown %q; allowed: %s", i, k, list(kinds))
		}
	}
	// A status the query never reads is refused rather than matched to
	// nothing, so an empty answer never hides a forgotten includeIncomplete.
	for i, s := range f.Status {
		switch {
		case slices.Contains(p.statuses, s):
		case slices.Contains(incomplete, s) && !includeIncomplete:
			return derrors.Invalidf("filters.status[%d]: %q needs includeIncomplete: true", i, s)
		case s == string(eval.ScorecardCancelled) || s == string(eval.ScorecardSuperseded):
			return derrors.Invalidf("filters.status[%d]: %s batches are never queried; allowed: %s",
				i, s, list(slices.Concat(complete, incomplete)))
		default:
			return derrors.Invalidf("filters.status[%d]: unknown %q; allowed: %s",
				i, s, list(slices.Concat(complete, incomplete)))
		}
	}
	var err error
	if f.From != "" {
		if p.from, err = time.Parse(time.RFC3339, f.From); err != nil {
			return derrors.Invalidf("filters.from: %q is not an RFC 3339 time (2006-01-02T15:04:05Z)", f.From)
		}
	}
	if f.To != "" {
		if p.to, err = time.Parse(time.RFC3339, f.To); err != nil {
			return derrors.Invalidf("filters.to: %q is not an RFC 3339 time (2006-01-02T15:04:05Z)", f.To)
		}
	}
	if f.From != "" && f.To != "" && !p.to.After(p.from) {
		return derrors.Invalidf("filters.to: must be after filters.from")
	}
	return nil
}

func isTime(d string) bool { return d == DimDay || d == DimWeek }

func list(vs []string) string { return strings.Join(vs, ", ") }
