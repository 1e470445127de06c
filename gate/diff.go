package gate

import (
	"cmp"
	"encoding/hex"
	"hash/fnv"
	"maps"
	"math"
	"slices"
	"strings"

	"gonum.org/v1/gonum/stat"

	"svc/derrors"
	"svc/eval"
	"svc/registry"
	"svc/scoring"
)

// The axes of an experiment, in the order Diff reads them.
const (
	AxisDataset = "dataset"
	AxisHarness = "harness" // the treatment: what a comparison is meant to vary
	AxisGrading = "grading"
	AxisJudges  = "judges"
	AxisPolicy  = "policy"
	AxisRuntime = "runtime"
)

// Axes returns the experiment axes in reading order.
func Axes() []string {
	return []string{AxisDataset, AxisHarness, AxisGrading, AxisJudges, AxisPolicy, AxisRuntime}
}

// Readings of an axis: held, treatment (the harness varied), unverified,
// or a named confound.
const (
	Held       = "held"
	Treatment  = "treatment"
	Unverified = "unverified"

	ConfoundDifferentDataset = "different_dataset" // the dataset ids differ: never comparable
	ConfoundDatasetChanged   = "dataset_changed"   // same dataset, other content (version or cases)
	ConfoundGradingChanged   = "grading_changed"
	ConfoundJudgesChanged    = "judges_changed"
	ConfoundPolicyChanged    = "policy_changed"
	ConfoundRuntimeChanged   = "runtime_changed"
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

// Case transitions.
const (
	ChangeBroke        = "broke"
	ChangeFixed        = "fixed"
	ChangeStillPassing = "still_passing"
	ChangeStillFailing = "still_failing"
	ChangeAdded        = "added"
	ChangeRemoved      = "removed"
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

// The bootstrap behind every MetricDelta.CI.
const (
	BootstrapResamples = 2000
	BootstrapLevel     = 0.95
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

// Transition is how one case changed between the sides.
type Transition struct {
	CaseID          string `json:"caseId"`
	Change          string `json:"change"`
	BaselinePasses  int    `json:"baselinePasses"`
	BaselineTrials  int    `json:"baselineTrials"`
	CandidatePasses int    `json:"candidatePasses"`
	CandidateTrials int    `json:"candidateTrials"`
	Critical        bool   `json:"critical,omitempty"`
	// CaseChanged is set when both manifests seal the case and their
	// digests differ: the case itself changed, not only the agent.
	CaseChanged bool `json:"caseChanged,omitempty"`
}

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
		for metric, score := range rowOutcomes(row) {
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

// rowOutcomes is a row's score per metric, the last of a metric winning,
// from Scores when the row carries no Outcomes (as scoring.Summarize).
func rowOutcomes(row eval.CaseRow) map[string]eval.Score {
	if row.Outcomes != nil || len(row.Scores) == 0 {
		return row.Outcomes
	}
	m := make(map[string]eval.Score, len(row.Scores))
	for _, s := range row.Scores {
		m[s.Metric] = s
	}
	return m
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

// passing reports whether a strict majority of trials passed.
func passing(passes, trials int) bool { return 2*passes > trials }

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

// isConfound reports whether an axis reading names a confound.
func isConfound(v string) bool { return v != Held && v != Treatment && v != Unverified }

// criticalCase reports whether either side marks the case critical.
func criticalCase(id string, b, c *side) bool {
	for _, s := range []*side{b, c} {
		if scoring.IsCritical(s.policy, id) {
			return true
		}
		if cd := s.cases[id]; cd != nil && cd.critical {
			return true
		}
	}
	return false
}

// transitions lists every case decided on either side, by case id.
func transitions(b, c *side) []Transition {
	ids := slices.Sorted(maps.Keys(b.cases))
	for id := range c.cases {
		if _, ok := b.cases[id]; !ok {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	out := make([]Transition, 0, len(ids))
	for _, id := range ids {
		t := Transition{CaseID: id, Critical: criticalCase(id, b, c)}
		bc, cc := b.cases[id], c.cases[id]
		if bc != nil {
			t.BaselinePasses, t.BaselineTrials = bc.passes, bc.trials
		}
		if cc != nil {
			t.CandidatePasses, t.CandidateTrials = cc.passes, cc.trials
		}
		switch {
		case bc == nil:
			t.Change = ChangeAdded
		case cc == nil:
			t.Change = ChangeRemoved
		default:
			bp, cp := passing(bc.passes, bc.trials), passing(cc.passes, cc.trials)
			switch {
			case bp && !cp:
				t.Change = ChangeBroke
			case !bp && cp:
				t.Change = ChangeFixed
			case bp:
				t.Change = ChangeStillPassing
			default:
				t.Change = ChangeStillFailing
			}
		}
		if bm, cm := b.sc.Manifest, c.sc.Manifest; bm != nil && cm != nil {
			t.CaseChanged = compareDigest(bm.Cases[id], cm.Cases[id]) == digestDiffer
		}
		out = append(out, t)
	}
	return out
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

// bootstrapSeed derives a metric's bootstrap seed from the pair of
// scorecards, so the same comparison always reports the same interval.
func bootstrapSeed(baseID, candID, metric string) uint64 {
	h := fnv.New64a()
	for _, s := range []string{baseID, candID, metric} {
		h.Write([]byte(s))
		h.Write([]byte{0})
	}
	return h.Sum64()
}

// digestCmp is the result of comparing two stamps.
type digestCmp int

const (
	digestUnknown digestCmp = iota // a stamp is absent, unresolved or malformed
	digestEqual
	digestDiffer
)

// compareDigest compares two stamps of possibly different generations: a
// legacy bare 16-hex stamp is the first 16 hex digits of the sha256, so it
// compares with a full one by prefix.
func compareDigest(a, b string) digestCmp {
	ha, oka := digestHex(a)
	hb, okb := digestHex(b)
	if !oka || !okb {
		return digestUnknown
	}
	n := min(len(ha), len(hb))
	if ha[:n] == hb[:n] {
		return digestEqual
	}
	return digestDiffer
}

// digestHex returns the lower-case hex of a stamp, or false when it is not
// a sha256 or legacy stamp.
func digestHex(s string) (string, bool) {
	h, full := strings.CutPrefix(s, registry.DigestPrefix)
	if (full && len(h) != 64) || (!full && len(h) != 16) {
		return "", false
	}
	if _, err := hex.DecodeString(h); err != nil {
		return "", false
	}
	return strings.ToLower(h), true
}

// experiment reads every axis from the two scorecards' manifests.
func experiment(b, c *side) map[string]string {
	return map[string]string{
		AxisDataset: datasetAxis(b, c),
		AxisHarness: harnessAxis(b.sc, c.sc),
		AxisGrading: gradingAxis(b.sc, c.sc),
		AxisJudges:  judgesAxis(b.sc, c.sc),
		AxisPolicy:  policyAxis(b, c),
		AxisRuntime: runtimeAxis(b.sc, c.sc),
	}
}

// datasetAxis compares the dataset: other ids are different datasets; the
// dataset version digest decides, else the versions and the digests of the
// cases decided on both sides.
func datasetAxis(b, c *side) string {
	if b.sc.Dataset.ID != c.sc.Dataset.ID {
		return ConfoundDifferentDataset
	}
	bm, cm := b.sc.Manifest, c.sc.Manifest
	if bm != nil && cm != nil {
		switch compareDigest(bm.Dataset, cm.Dataset) {
		case digestEqual:
			return Held
		case digestDiffer:
			return ConfoundDatasetChanged
		}
	}
	if b.sc.Dataset.Version != c.sc.Dataset.Version {
		return ConfoundDatasetChanged
	}
	// No dataset digest (_adhoc, _traces, an old seal): the cases decide.
	if bm == nil || cm == nil {
		return Unverified
	}
	return combine(func(yield func(digestCmp) bool) {
		for id := range b.cases {
			if _, ok := c.cases[id]; ok && !yield(compareDigest(bm.Cases[id], cm.Cases[id])) {
				return
			}
		}
	}, ConfoundDatasetChanged)
}

// combine folds digest comparisons: any difference is the confound, then
// any unknown is unverified; all equal is held, and none at all unverified.
func combine(cmps func(yield func(digestCmp) bool), confound string) string {
	seen, unknown := false, false
	for r := range cmps {
		switch r {
		case digestDiffer:
			return confound
		case digestUnknown:
			unknown = true
		}
		seen = true
	}
	if !seen || unknown {
		return Unverified
	}
	return Held
}

// harnessAxis is held when the harness spec digests agree and treatment
// when they or the references differ. The harness model closure follows
// from the spec, so the spec digest covers it.
func harnessAxis(b, c *eval.Scorecard) string {
	if b.Manifest != nil && c.Manifest != nil {
		switch compareDigest(b.Manifest.Harness, c.Manifest.Harness) {
		case digestEqual:
			return Held
		case digestDiffer:
			return Treatment
		}
	}
	if b.Harness != c.Harness {
		return Treatment
	}
	return Unverified
}

// gradingAxis compares the grading plans: per case over the cases both
// sides seal, when both grade each case by its own graders; the plan
// digest when both override graders for the batch. One overriding and the
// other not, or one stripping grading (an experiment), is a change.
func gradingAxis(b, c *eval.Scorecard) string {
	if ungraded(b) != ungraded(c) {
		return ConfoundGradingChanged
	}
	bm, cm := b.Manifest, c.Manifest
	if bm == nil || cm == nil {
		return Unverified
	}
	switch {
	case bm.GradingCases != nil && cm.GradingCases != nil:
		return combine(func(yield func(digestCmp) bool) {
			for id, d := range bm.GradingCases {
				if e, ok := cm.GradingCases[id]; ok && !yield(compareDigest(d, e)) {
					return
				}
			}
		}, ConfoundGradingChanged)
	case bm.GradingCases == nil && cm.GradingCases == nil:
		return combine(func(yield func(digestCmp) bool) {
			yield(compareDigest(bm.GradingPlan, cm.GradingPlan))
		}, ConfoundGradingChanged)
	default:
		return ConfoundGradingChanged
	}
}

func ungraded(sc *eval.Scorecard) bool { return sc.Orchestration != nil && sc.Orchestration.Ungraded }

// judgeSeal is the seal of the judge whose verdicts a batch holds now.
type judgeSeal struct {
	version, digest string
	// rescored is set when a later scoring revision sealed it; such seals
	// are registry spec digests, not the manifest's closure digests, so
	// the two kinds cannot be compared byte for byte.
	rescored bool
}

// effectiveJudges returns the judges behind a batch's current scores: the
// manifest's, each replaced by its seal in later scoring revisions (a
// re-score replaces that judge's verdicts and keeps the others). known is
// false when the batch has neither a manifest nor a revision.
func effectiveJudges(sc *eval.Scorecard) (judges map[string]judgeSeal, known bool) {
	judges = map[string]judgeSeal{}
	if sc.Manifest != nil {
		for _, j := range sc.Manifest.Judges {
			judges[j.ID] = judgeSeal{version: j.Version, digest: j.Digest}
		}
	}
	for _, rev := range sc.Scoring {
		for _, j := range rev.Judges {
			if cur, ok := judges[j.ID]; ok && !cur.rescored && compareDigest(cur.digest, j.Digest) == digestEqual {
				continue // the initial revision re-seals the manifest's judges
			}
			judges[j.ID] = judgeSeal{version: j.Version, digest: j.Digest, rescored: true}
		}
	}
	return judges, sc.Manifest != nil || len(sc.Scoring) > 0
}

// judgesAxis compares the judges behind both sides' scores.
func judgesAxis(b, c *eval.Scorecard) string {
	bj, bk := effectiveJudges(b)
	cj, ck := effectiveJudges(c)
	if !bk || !ck {
		return Unverified
	}
	if !slices.Equal(slices.Sorted(maps.Keys(bj)), slices.Sorted(maps.Keys(cj))) {
		return ConfoundJudgesChanged
	}
	unknown := false
	for id, x := range bj {
		y := cj[id]
		if x.rescored != y.rescored {
			// Seals of two kinds: only the versions can tell a change.
			if exactVersion(x.version) && exactVersion(y.version) && x.version != y.version {
				return ConfoundJudgesChanged
			}
			unknown = true
			continue
		}
		switch compareDigest(x.digest, y.digest) {
		case digestDiffer:
			return ConfoundJudgesChanged
		case digestUnknown:
			unknown = true
		}
	}
	if unknown {
		return Unverified
	}
	return Held
}

// exactVersion reports whether a recorded version names one version.
func exactVersion(v string) bool { return v != "" && v != "latest" }

// policyAxis compares what decides verdicts: the policies' metrics as a
// set. Critical markers decide no verdict, so they are not compared.
func policyAxis(b, c *side) string {
	if b.unresolvable() || c.unresolvable() {
		return Unverified
	}
	norm := func(p eval.VerdictPolicy) []string {
		m := slices.Clone(p.Metrics)
		slices.Sort(m)
		return slices.Compact(m)
	}
	if slices.Equal(norm(b.policy), norm(c.policy)) {
		return Held
	}
	return ConfoundPolicyChanged
}

// runtimeAxis compares the sealed runtimes.
func runtimeAxis(b, c *eval.Scorecard) string {
	if b.Manifest == nil || c.Manifest == nil {
		return Unverified
	}
	if b.Manifest.Runtime == c.Manifest.Runtime {
		return Held
	}
	return ConfoundRuntimeChanged
}
