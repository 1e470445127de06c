package gate

import (
	"math"

	"svc/internal/domain/eval"
	"svc/internal/domain/registry"
	"svc/internal/domain/scoring"
	"svc/internal/platform/derrors"
)

// Comparability of a diff.
const (
	ComparabilityFull    = "full"
	ComparabilityPartial = "partial"
	ComparabilityNone    = "none"
)

// The two sides, as PolicyUnresolvable and reasons name them.
const (
	SideBaseline  = "baseline"
	SideCandidate = "candidate"
)

// eps is the difference below which two rates or means are equal: sums of
// float64 fractions differ by rounding.
const eps = 1e-12

// ScorecardDiff is what changed between a baseline and a candidate
// scorecard (spec §2.8).
type ScorecardDiff struct {
	Baseline  SideRef `json:"baseline"`
	Candidate SideRef `json:"candidate"`
	// Metrics holds every metric of either side: casePass first, then by name.
	Metrics      []MetricDelta `json:"metrics"`
	Regressions  []MetricDelta `json:"regressions"`
	Improvements []MetricDelta `json:"improvements"`
	// CaseTransitions holds every case decided on either side, by case id.
	CaseTransitions []Transition `json:"caseTransitions"`
	// Experiment maps each axis to held, treatment, unverified or a confound.
	Experiment    map[string]string `json:"experiment"`
	Comparability string            `json:"comparability"`
	// PolicyUnresolvable names the sides ("baseline", "candidate") whose
	// stamped verdict policy cannot be restored.
	PolicyUnresolvable []string `json:"policyUnresolvable"`
}

// SideRef identifies one side of a comparison.
type SideRef struct {
	ID      string       `json:"id"`
	Kind    string       `json:"kind"`
	Status  eval.Status  `json:"status"`
	Dataset registry.Ref `json:"dataset"`
	Harness registry.Ref `json:"harness"`
	// Scoring pins the latest scoring revision; zero when the batch has none.
	Scoring          ScoringPin            `json:"scoring"`
	PolicyResolution eval.PolicyResolution `json:"policyResolution"`
	// Cases counts the cases with at least one decided trial.
	Cases int `json:"cases"`
}

// ScoringPin names the scoring revision a comparison read.
type ScoringPin struct {
	Revision         int    `json:"revision"`
	ScorePlaneDigest string `json:"scorePlaneDigest"`
}

// Diff compares a baseline and a candidate scorecard, each as the detail
// read serves it. A cancelled or superseded side is ErrInvalid naming it:
// a stopped batch says nothing about its harness (spec §4.5).
func Diff(base, cand eval.Scorecard) (ScorecardDiff, error) {
	if err := comparable(SideBaseline, base); err != nil {
		return ScorecardDiff{}, err
	}
	if err := comparable(SideCandidate, cand); err != nil {
		return ScorecardDiff{}, err
	}
	return diff(readSide(SideBaseline, &base), readSide(SideCandidate, &cand)), nil
}

// comparable refuses a side that was stopped before it finished.
func comparable(name string, sc eval.Scorecard) error {
	switch sc.Status {
	case eval.ScorecardCancelled, eval.ScorecardSuperseded:
		return derrors.Invalidf("the %s scorecard %s is %s: a stopped batch cannot be compared", name, sc.ID, sc.Status)
	}
	return nil
}

// side is one scorecard read for comparison.
type side struct {
	name       string
	sc         *eval.Scorecard
	policy     eval.VerdictPolicy
	resolution eval.PolicyResolution
	summary    map[string]eval.MetricSummary
	cases      map[string]*caseData // cases with at least one decided trial
}

// caseData is one case's decided trials on a side.
type caseData struct {
	trials, passes int
	critical       bool
	metrics        map[string]*metricAcc
}

// metricAcc accumulates one metric of one case over its trials.
type metricAcc struct {
	sum                float64
	n                  int // measured values
	verdicts, verdictN int // passes among measured values with a verdict, and their count
}

// readSide restores a side's policy and tallies its decided rows.
func readSide(name string, sc *eval.Scorecard) *side {
	s := &side{name: name, sc: sc, cases: map[string]*caseData{}}
	s.policy, s.resolution = scoring.ResolvePolicy(sc.VerdictPolicy, sc.Manifest)
	// The served resolution is the service's own reading; trust the worse.
	if r := sc.PolicyResolution; r != nil && r.Status == scoring.PolicyUnresolvable && s.resolution.Status != scoring.PolicyUnresolvable {
		s.resolution = *r
	}
	s.summary = scoring.Summarize(sc.Scorecard)
	if len(sc.Scorecard) == 0 && sc.Summary != nil {
		s.summary = sc.Summary // a record without its table: means only
	}
	for _, row := range sc.Scorecard {
		switch row.Verdict {
		case scoring.VerdictPass, scoring.VerdictFail, scoring.VerdictError:
		default:
			continue
		}
		c := s.cases[row.CaseID]
		if c == nil {
			c = &caseData{metrics: map[string]*metricAcc{}}
			s.cases[row.CaseID] = c
		}
		c.trials++
		if row.Verdict == scoring.VerdictPass {
			c.passes++
		}
		c.critical = c.critical || row.Critical
		for metric, score := range scoring.Outcomes(row) {
			if scoring.IsSkip(score) || math.IsNaN(score.Value) || math.IsInf(score.Value, 0) {
				continue // as Summarize: a skip measures nothing
			}
			a := c.metrics[metric]
			if a == nil {
				a = &metricAcc{}
				c.metrics[metric] = a
			}
			a.sum += score.Value
			a.n++
			if score.Pass != nil {
				a.verdictN++
				if *score.Pass {
					a.verdicts++
				}
			}
		}
	}
	return s
}

// unresolvable reports whether the side's stamped policy cannot be restored.
func (s *side) unresolvable() bool { return s.resolution.Status == scoring.PolicyUnresolvable }

// pin is the side's latest scoring revision.
func (s *side) pin() ScoringPin {
	if n := len(s.sc.Scoring); n > 0 {
		r := s.sc.Scoring[n-1]
		return ScoringPin{Revision: r.Revision, ScorePlaneDigest: r.ScorePlaneDigest}
	}
	return ScoringPin{}
}

func (s *side) ref() SideRef {
	return SideRef{
		ID: s.sc.ID, Kind: s.sc.Kind, Status: s.sc.Status, Dataset: s.sc.Dataset, Harness: s.sc.Harness,
		Scoring: s.pin(), PolicyResolution: s.resolution, Cases: len(s.cases),
	}
}

// value is the case's basis quantity for metric: its pass fraction (of
// trials for casePass, of verdicts otherwise) or its mean measured value.
func (c *caseData) value(metric, basis string) (float64, bool) {
	if metric == scoring.CasePassMetric {
		return float64(c.passes) / float64(c.trials), c.trials > 0
	}
	a := c.metrics[metric]
	switch {
	case a == nil:
		return 0, false
	case basis == BasisPassRate:
		return float64(a.verdicts) / float64(a.verdictN), a.verdictN > 0
	default:
		return a.sum / float64(a.n), a.n > 0
	}
}

// diff builds the ScorecardDiff of two read sides.
func diff(b, c *side) ScorecardDiff {
	d := ScorecardDiff{
		Baseline:           b.ref(),
		Candidate:          c.ref(),
		Metrics:            []MetricDelta{},
		Regressions:        []MetricDelta{},
		Improvements:       []MetricDelta{},
		CaseTransitions:    []Transition{},
		PolicyUnresolvable: []string{},
		Experiment:         experiment(b, c),
	}
	for _, s := range []*side{b, c} {
		if s.unresolvable() {
			d.PolicyUnresolvable = append(d.PolicyUnresolvable, s.name)
		}
	}
	d.CaseTransitions = transitions(b, c)
	d.Metrics = metricDeltas(b, c)
	for _, m := range d.Metrics {
		switch m.Change {
		case MetricRegressed:
			d.Regressions = append(d.Regressions, m)
		case MetricImproved:
			d.Improvements = append(d.Improvements, m)
		}
	}
	common, oneSided := 0, false
	for _, t := range d.CaseTransitions {
		if t.Change == ChangeAdded || t.Change == ChangeRemoved {
			oneSided = true
		} else {
			common++
		}
	}
	confounded := false
	for _, v := range d.Experiment {
		confounded = confounded || isConfound(v)
	}
	switch {
	case len(d.PolicyUnresolvable) > 0, d.Experiment[AxisDataset] == ConfoundDifferentDataset, common == 0:
		d.Comparability = ComparabilityNone
	case confounded, oneSided:
		d.Comparability = ComparabilityPartial
	default:
		d.Comparability = ComparabilityFull
	}
	return d
}
