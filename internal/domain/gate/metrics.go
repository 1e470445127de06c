package gate

import (
	"cmp"
	"maps"
	"math"
	"slices"

	"gonum.org/v1/gonum/stat"

	"svc/internal/domain/scoring"
)

// Metric changes, read from the paired interval: regressed, improved or
// changed only when the interval excludes 0, else unchanged, even when the
// delta is not 0 (see MetricDelta.NotSignificant). A metric without pass
// verdicts has no known direction, so it is changed or unchanged, never a
// regression or an improvement.
const (
	MetricRegressed = "regressed"
	MetricImproved  = "improved"
	MetricUnchanged = "unchanged"
	MetricChanged   = "changed"
	MetricAdded     = "added"
	MetricRemoved   = "removed"
)

// Bases of a metric comparison.
const (
	BasisPassRate = "passRate"
	BasisMean     = "mean"
)

// MetricDelta compares one metric between the sides.
type MetricDelta struct {
	Metric string `json:"metric"`
	// Baseline and Candidate are the means of measured scores, as in the
	// summaries; Delta is Candidate - Baseline.
	Baseline          float64  `json:"baseline"`
	Candidate         float64  `json:"candidate"`
	Delta             float64  `json:"delta"`
	BaselinePassRate  *float64 `json:"baselinePassRate,omitempty"`
	CandidatePassRate *float64 `json:"candidatePassRate,omitempty"`
	PassRateDelta     *float64 `json:"passRateDelta,omitempty"`
	// BaselineCount and CandidateCount count measured scores (decided
	// rows for casePass).
	BaselineCount  int `json:"baselineCount"`
	CandidateCount int `json:"candidateCount"`
	// Basis is the quantity compared: passRate or mean; empty when the
	// metric is on one side only.
	Basis string `json:"basis,omitempty"`
	// Change is regressed, improved or changed only when CI excludes 0;
	// unchanged otherwise (NotSignificant tells a delta from none); added
	// or removed when the metric is on one side only.
	Change string `json:"change"`
	// PairedCases counts the cases with a value on both sides; PairedDelta
	// is the mean of their per-case differences of the basis quantity, and
	// CI its paired bootstrap interval. Both are absent without pairs.
	PairedCases int       `json:"pairedCases"`
	PairedDelta *float64  `json:"pairedDelta,omitempty"`
	CI          *Interval `json:"ci,omitempty"`
}

// Interval is a confidence interval.
type Interval struct {
	Lo        float64 `json:"lo"`
	Hi        float64 `json:"hi"`
	Level     float64 `json:"level"`
	Resamples int     `json:"resamples"`
}

// metricDeltas compares every metric of either side.
func metricDeltas(b, c *side) []MetricDelta {
	names := slices.Collect(maps.Keys(b.summary))
	for m := range c.summary {
		if _, ok := b.summary[m]; !ok {
			names = append(names, m)
		}
	}
	slices.SortFunc(names, func(x, y string) int {
		// casePass first: it is the metric every batch has.
		return cmp.Or(-cmp.Compare(boolInt(x == scoring.CasePassMetric), boolInt(y == scoring.CasePassMetric)), cmp.Compare(x, y))
	})
	ids := slices.Sorted(maps.Keys(b.cases)) // sorted, so the bootstrap sees one order
	out := make([]MetricDelta, 0, len(names))
	for _, name := range names {
		bs, bok := b.summary[name]
		cs, cok := c.summary[name]
		md := MetricDelta{Metric: name}
		if bok {
			md.Baseline, md.BaselinePassRate, md.BaselineCount = bs.Mean, bs.PassRate, bs.Count-bs.Skipped
		}
		if cok {
			md.Candidate, md.CandidatePassRate, md.CandidateCount = cs.Mean, cs.PassRate, cs.Count-cs.Skipped
		}
		switch {
		case !bok:
			md.Change = MetricAdded
			out = append(out, md)
			continue
		case !cok:
			md.Change = MetricRemoved
			out = append(out, md)
			continue
		}
		md.Delta = md.Candidate - md.Baseline
		md.Basis = BasisMean
		if md.BaselinePassRate != nil && md.CandidatePassRate != nil {
			md.Basis = BasisPassRate
			prd := *md.CandidatePassRate - *md.BaselinePassRate
			md.PassRateDelta = &prd
		}
		var deltas []float64
		for _, id := range ids {
			cc := c.cases[id]
			if cc == nil {
				continue
			}
			vb, okb := b.cases[id].value(name, md.Basis)
			vc, okc := cc.value(name, md.Basis)
			if okb && okc {
				deltas = append(deltas, vc-vb)
			}
		}
		md.PairedCases = len(deltas)
		if len(deltas) > 0 {
			pd := stat.Mean(deltas, nil)
			md.PairedDelta = &pd
			ci := PairedBootstrap(deltas, BootstrapResamples, BootstrapLevel, bootstrapSeed(b.sc.ID, c.sc.ID, name))
			md.CI = &ci
		}
		md.Change = metricChange(md.Basis, md.CI)
		out = append(out, md)
	}
	return out
}

// metricChange classifies a metric measured on both sides by its paired
// interval: a move only when the interval excludes 0, so that a drop one
// flaky case could explain is not called a regression. Without an
// interval (no paired case) nothing is shown to have moved.
func metricChange(basis string, ci *Interval) string {
	switch {
	case ci == nil || ci.Resamples == 0:
		return MetricUnchanged
	case ci.Hi < -eps && basis == BasisPassRate:
		return MetricRegressed
	case ci.Lo > eps && basis == BasisPassRate:
		return MetricImproved
	case ci.Hi < -eps || ci.Lo > eps:
		return MetricChanged
	}
	return MetricUnchanged
}

// NotSignificant reports whether a metric measured on both sides is
// unchanged although its delta (of the basis quantity, or paired) is not
// 0: its interval includes 0, "unchanged (n.s.)" in svc gate's table.
func (m MetricDelta) NotSignificant() bool {
	if m.Change != MetricUnchanged {
		return false
	}
	moved := math.Abs(m.Delta) > eps
	if m.Basis == BasisPassRate && m.PassRateDelta != nil {
		moved = math.Abs(*m.PassRateDelta) > eps
	}
	return moved || (m.PairedDelta != nil && math.Abs(*m.PairedDelta) > eps)
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}
