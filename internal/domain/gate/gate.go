package gate

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"

	"svc/internal/domain/eval"
	"svc/internal/domain/scoring"
	"svc/internal/platform/derrors"
)

// Gate outcomes (spec §2.8).
const (
	OutcomePass           = "pass"
	OutcomeBlock          = "block"
	OutcomeBlockedMissing = "blocked_missing"
	OutcomeNotComparable  = "not_comparable"
)

// Reason codes. A code in Decision.Reasons decided the outcome; the same
// code in Decision.Notes was found but tolerated by the policy.
const (
	ReasonPolicyUnresolvable  = "policy_unresolvable"
	ReasonDifferentDataset    = "different_dataset"
	ReasonConfound            = "confound"
	ReasonNoCommonCases       = "no_common_cases"
	ReasonMetricMissing       = "metric_missing"
	ReasonMissingCase         = "missing_case"
	ReasonCriticalCaseMissing = "critical_case_missing"
	ReasonCriticalCaseBroke   = "critical_case_broke"
	ReasonCaseRegression      = "case_regression"
	ReasonRegressionsExceeded = "regressions_exceeded"
	ReasonMetricRegression    = "metric_regression"
)

// Note codes: findings that never decide an outcome.
const (
	NoteAxisUnverified         = "axis_unverified"
	NoteConfoundAllowed        = "confound_allowed"
	NoteUnderpowered           = "underpowered"
	NoteScoringDrift           = "scoring_drift"
	NoteMetricDirectionAssumed = "metric_direction_assumed"
)

// DefaultAlpha is the per-case significance level when a policy sets none.
const DefaultAlpha = 0.05

// GatePolicy is what a gate request asks (spec §2.8). Zero values are the
// defaults: alpha 0.05, maxRegressions 0, minDelta 0, metric casePass, no
// FDR control, no confound allowed, every baseline case required.
type GatePolicy struct {
	// MaxRegressions is how many significant case regressions pass.
	MaxRegressions *int `json:"maxRegressions,omitempty"`
	// MinDelta is how far the gate metric's paired delta may fall below 0
	// before a (bootstrap-significant) drop blocks.
	MinDelta float64 `json:"minDelta,omitempty"`
	// Alpha is the per-case significance level, in (0, 1).
	Alpha float64 `json:"alpha,omitempty"`
	// FDRAlpha, when set, also requires a case's Benjamini-Hochberg
	// q-value to be at most it; in (0, 1).
	FDRAlpha *float64 `json:"fdrAlpha,omitempty"`
	// AllowConfounds names the axes (dataset, grading, judges, policy,
	// runtime) that may differ between the sides.
	AllowConfounds []string `json:"allowConfounds,omitempty"`
	// AllowPartial lets baseline cases be missing from the candidate
	// (critical cases excepted). UnmarshalJSON also reads allow_partial,
	// the spec's spelling.
	AllowPartial bool `json:"allowPartial,omitempty"`
	// Metric is the gate metric; default casePass.
	Metric string `json:"metric,omitempty"`
}

// UnmarshalJSON decodes a policy strictly: an unknown field is refused
// (json's "unknown field" error), so a typo cannot silently loosen a gate
// even where the caller's decoder would not check. allowPartial, camelCase
// like every other field, is the name; allow_partial is kept as an alias,
// and both given with different values is ErrInvalid.
func (p *GatePolicy) UnmarshalJSON(b []byte) error {
	type fields GatePolicy // the same fields, without this method
	var in struct {
		fields
		AllowPartial      *bool `json:"allowPartial"` // shadows fields.AllowPartial, to tell absent from false
		AllowPartialAlias *bool `json:"allow_partial"`
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&in); err != nil {
		// Name a mistyped field as the client wrote it (alpha, not
		// fields.alpha); an enclosing decoder prefixes its own path.
		var typ *json.UnmarshalTypeError
		if errors.As(err, &typ) {
			typ.Struct, typ.Field = "GatePolicy", strings.TrimPrefix(typ.Field, "fields.")
		}
		return err
	}
	*p = GatePolicy(in.fields)
	switch a, alias := in.AllowPartial, in.AllowPartialAlias; {
	case a != nil && alias != nil && *a != *alias:
		return derrors.Invalidf("gate policy: allowPartial %t and its alias allow_partial %t disagree; send allowPartial alone", *a, *alias)
	case a != nil:
		p.AllowPartial = *a
	case alias != nil:
		p.AllowPartial = *alias
	}
	return nil
}

// Validate reports every problem of a policy at once, as ErrInvalid.
func (p GatePolicy) Validate() error {
	var problems []string
	if p.MaxRegressions != nil && *p.MaxRegressions < 0 {
		problems = append(problems, fmt.Sprintf("maxRegressions: %d is negative", *p.MaxRegressions))
	}
	if p.MinDelta < 0 || math.IsNaN(p.MinDelta) || math.IsInf(p.MinDelta, 0) {
		problems = append(problems, fmt.Sprintf("minDelta: %v must be a finite number >= 0", p.MinDelta))
	}
	if p.Alpha != 0 && !(p.Alpha > 0 && p.Alpha < 1) {
		problems = append(problems, fmt.Sprintf("alpha: %v must be in (0, 1)", p.Alpha))
	}
	if p.FDRAlpha != nil && !(*p.FDRAlpha > 0 && *p.FDRAlpha < 1) {
		problems = append(problems, fmt.Sprintf("fdrAlpha: %v must be in (0, 1)", *p.FDRAlpha))
	}
	for i, a := range p.AllowConfounds {
		switch a {
		case AxisDataset, AxisGrading, AxisJudges, AxisPolicy, AxisRuntime:
		case AxisHarness:
			problems = append(problems, fmt.Sprintf("allowConfounds[%d]: harness is the treatment, not a confound", i))
		default:
			problems = append(problems, fmt.Sprintf("allowConfounds[%d]: %q is not an axis (dataset, grading, judges, policy, runtime)", i, a))
		}
	}
	if p.Metric != "" && strings.TrimSpace(p.Metric) == "" {
		problems = append(problems, "metric: must not be blank")
	}
	if len(problems) > 0 {
		return derrors.Invalidf("gate policy: %s", strings.Join(problems, "; "))
	}
	return nil
}

// withDefaults fills the zero values with the defaults, so a decision
// shows the policy it applied.
func (p GatePolicy) withDefaults() GatePolicy {
	if p.Alpha == 0 {
		p.Alpha = DefaultAlpha
	}
	if p.Metric == "" {
		p.Metric = scoring.CasePassMetric
	}
	if p.MaxRegressions == nil {
		zero := 0
		p.MaxRegressions = &zero
	}
	p.AllowConfounds = slices.Clone(p.AllowConfounds)
	return p
}

// Decision is a GateDecision (spec §2.8).
type Decision struct {
	Outcome string `json:"outcome"`
	// Reasons are what decided the outcome, in rule order, then by case.
	Reasons []Reason `json:"reasons"`
	// Notes are findings that did not decide it.
	Notes []Reason `json:"notes"`
	// Tests holds one per-case test for every case decided on both sides,
	// by case id; empty when the sides are not comparable.
	Tests []CaseTest `json:"tests"`
	// Regressions counts the significant case regressions.
	Regressions int `json:"regressions"`
	// Metric is the gate metric's comparison, with its paired interval.
	Metric *MetricDelta `json:"metric,omitempty"`
	// Power is what the case tests can detect under the policy; absent
	// when no case was tested. Underpowered > 0 comes with an underpowered
	// note.
	Power            *Power            `json:"power,omitempty"`
	Comparability    string            `json:"comparability"`
	Experiment       map[string]string `json:"experiment"`
	Baseline         SideRef           `json:"baseline"`
	Candidate        SideRef           `json:"candidate"`
	BaselineScoring  ScoringPin        `json:"baselineScoring"`
	CandidateScoring ScoringPin        `json:"candidateScoring"`
	// Policy is the policy applied, defaults filled in.
	Policy GatePolicy `json:"policy"`
}

// Reason explains one finding of a gate.
type Reason struct {
	Code    string `json:"code"`
	Message string `json:"message"`
	CaseID  string `json:"caseId,omitempty"`
	Axis    string `json:"axis,omitempty"`
	Side    string `json:"side,omitempty"`
}

// CaseTest is the significance test of one case decided on both sides.
type CaseTest struct {
	CaseID          string `json:"caseId"`
	BaselinePasses  int    `json:"baselinePasses"`
	BaselineTrials  int    `json:"baselineTrials"`
	CandidatePasses int    `json:"candidatePasses"`
	CandidateTrials int    `json:"candidateTrials"`
	// PValue is Fisher's exact one-sided p-value for "the candidate passes
	// less often"; QValue its Benjamini-Hochberg q-value, when the policy
	// sets fdrAlpha.
	PValue float64  `json:"pValue"`
	QValue *float64 `json:"qValue,omitempty"`
	// Significant marks a significant regression.
	Significant bool   `json:"significant"`
	Critical    bool   `json:"critical,omitempty"`
	Change      string `json:"change"`
}

// Gate decides whether cand may replace base under p, by the rules of the
// package comment. An invalid policy and a cancelled or superseded side are
// ErrInvalid; a side still queued or running, or with a scoring pass in
// flight, is ErrConflict: its verdicts may still change.
func Gate(base, cand eval.Scorecard, p GatePolicy) (Decision, error) {
	if err := p.Validate(); err != nil {
		return Decision{}, err
	}
	p = p.withDefaults()
	for _, s := range []struct {
		name string
		sc   *eval.Scorecard
	}{{SideBaseline, &base}, {SideCandidate, &cand}} {
		if err := comparable(s.name, *s.sc); err != nil {
			return Decision{}, err
		}
		if !eval.ScorecardTerminal(s.sc.Status) {
			return Decision{}, derrors.Conflictf("the %s scorecard %s is %s: gate a finished batch", s.name, s.sc.ID, s.sc.Status)
		}
		if s.sc.ScoringInFlight != "" {
			return Decision{}, derrors.Conflictf("the %s scorecard %s has scoring pass %s in flight: gate it once the pass settles", s.name, s.sc.ID, s.sc.ScoringInFlight)
		}
	}
	b, c := readSide(SideBaseline, &base), readSide(SideCandidate, &cand)
	d := diff(b, c)
	g := &gating{
		dec: Decision{
			Reasons: []Reason{}, Notes: []Reason{}, Tests: []CaseTest{},
			Comparability: d.Comparability, Experiment: d.Experiment,
			Baseline: d.Baseline, Candidate: d.Candidate,
			BaselineScoring: d.Baseline.Scoring, CandidateScoring: d.Candidate.Scoring,
			Policy: p,
		},
		p: p,
	}
	g.decide(b, c, d)
	return g.dec, nil
}

// gating accumulates a decision.
type gating struct {
	dec Decision
	p   GatePolicy
}

func (g *gating) reason(r Reason) { g.dec.Reasons = append(g.dec.Reasons, r) }
func (g *gating) note(r Reason)   { g.dec.Notes = append(g.dec.Notes, r) }

// decide applies the rules in order; each early return is an outcome
// that later rules cannot change.
func (g *gating) decide(b, c *side, d ScorecardDiff) {
	// Rule 1: a side's verdicts cannot be trusted.
	for _, s := range []*side{b, c} {
		if s.unresolvable() {
			why := ""
			if s.resolution.Reason != "" {
				why = " (" + s.resolution.Reason + ")"
			}
			g.reason(Reason{Code: ReasonPolicyUnresolvable, Side: s.name,
				Message: fmt.Sprintf("the %s's verdict policy cannot be restored%s: its verdicts are not comparable", s.name, why)})
		}
	}
	if len(g.dec.Reasons) > 0 {
		g.dec.Outcome = OutcomeNotComparable
		return
	}

	// Rule 2: the sides must measure the same thing.
	g.comparability(d)
	metric := g.gateMetric(d)
	if len(g.dec.Reasons) > 0 {
		g.dec.Outcome = OutcomeNotComparable
		return
	}
	g.drift(b)
	g.drift(c)

	// Rule 3: the candidate must have run what the baseline ran.
	missing := false
	for _, t := range d.CaseTransitions {
		if t.Change != ChangeRemoved {
			continue
		}
		switch {
		case t.Critical:
			g.reason(Reason{Code: ReasonCriticalCaseMissing, CaseID: t.CaseID,
				Message: fmt.Sprintf("critical case %s has no decided trial in the candidate", t.CaseID)})
			missing = true
		case g.p.AllowPartial:
			g.note(Reason{Code: ReasonMissingCase, CaseID: t.CaseID,
				Message: fmt.Sprintf("case %s has no decided trial in the candidate; allowed by allowPartial", t.CaseID)})
		default:
			g.reason(Reason{Code: ReasonMissingCase, CaseID: t.CaseID,
				Message: fmt.Sprintf("case %s has no decided trial in the candidate", t.CaseID)})
			missing = true
		}
	}

	// Rules 4 and 5: per-case tests, critical cases, the regression count.
	blocked := g.caseTests(d)

	// Rule 6: the gate metric.
	if g.metricRegressed(metric) {
		blocked = true
	}

	switch {
	case missing:
		g.dec.Outcome = OutcomeBlockedMissing
	case blocked:
		g.dec.Outcome = OutcomeBlock
	default:
		g.dec.Outcome = OutcomePass
	}
}

// comparability applies rule 2 to the axes and the cases.
func (g *gating) comparability(d ScorecardDiff) {
	allowed := map[string]bool{}
	for _, a := range g.p.AllowConfounds {
		allowed[a] = true
	}
	for _, axis := range Axes() {
		v := d.Experiment[axis]
		switch {
		case v == ConfoundDifferentDataset:
			g.reason(Reason{Code: ReasonDifferentDataset, Axis: axis,
				Message: fmt.Sprintf("the baseline ran dataset %s and the candidate %s", d.Baseline.Dataset.ID, d.Candidate.Dataset.ID)})
		case v == Unverified:
			g.note(Reason{Code: NoteAxisUnverified, Axis: axis,
				Message: fmt.Sprintf("the %s axis cannot be verified from the manifests", axis)})
		case isConfound(v) && allowed[axis]:
			g.note(Reason{Code: NoteConfoundAllowed, Axis: axis,
				Message: fmt.Sprintf("%s: %s, allowed by allowConfounds", axis, v)})
		case isConfound(v):
			g.reason(Reason{Code: ReasonConfound, Axis: axis,
				Message: fmt.Sprintf("%s: %s; only the harness may differ unless allowConfounds names %q", axis, v, axis)})
		}
	}
	common := 0
	for _, t := range d.CaseTransitions {
		if t.Change != ChangeAdded && t.Change != ChangeRemoved {
			common++
		}
	}
	if common == 0 {
		g.reason(Reason{Code: ReasonNoCommonCases, Message: "no case has a decided trial on both sides"})
	}
}

// gateMetric finds the gate metric's comparison, or records why it has none.
func (g *gating) gateMetric(d ScorecardDiff) *MetricDelta {
	for i := range d.Metrics {
		m := d.Metrics[i]
		if m.Metric != g.p.Metric {
			continue
		}
		if m.Change == MetricAdded || m.Change == MetricRemoved || m.PairedCases == 0 {
			break
		}
		g.dec.Metric = &m
		if m.Basis == BasisMean {
			g.note(Reason{Code: NoteMetricDirectionAssumed,
				Message: fmt.Sprintf("metric %s has no pass verdicts; its mean is read as higher is better", m.Metric)})
		}
		return &m
	}
	if len(g.dec.Reasons) == 0 { // not worth saying when nothing is comparable
		g.reason(Reason{Code: ReasonMetricMissing,
			Message: fmt.Sprintf("metric %s has no measured value on a case decided on both sides", g.p.Metric)})
	}
	return nil
}

// drift notes rows whose score plane is not the pinned revision's: the
// decision read other judgments than the pin names.
func (g *gating) drift(s *side) {
	pin := s.pin()
	if pin.Revision == 0 || compareDigest(pin.ScorePlaneDigest, scoring.ScorePlaneDigest(s.sc.Scorecard)) != digestDiffer {
		return
	}
	g.note(Reason{Code: NoteScoringDrift, Side: s.name,
		Message: fmt.Sprintf("the %s's rows do not hash to scoring revision %d's score plane", s.name, pin.Revision)})
}

// caseTests applies rules 4 and 5 and reports whether they block.
func (g *gating) caseTests(d ScorecardDiff) bool {
	var ps []float64
	for _, t := range d.CaseTransitions {
		if t.Change == ChangeAdded || t.Change == ChangeRemoved {
			continue
		}
		bp, bt, cp, ct := t.BaselinePasses, t.BaselineTrials, t.CandidatePasses, t.CandidateTrials
		_, _, greater := FisherExact(bp, bt-bp, cp, ct-cp)
		g.dec.Tests = append(g.dec.Tests, CaseTest{
			CaseID: t.CaseID, BaselinePasses: bp, BaselineTrials: bt, CandidatePasses: cp, CandidateTrials: ct,
			PValue: greater, Critical: t.Critical, Change: t.Change,
		})
		ps = append(ps, greater)
	}
	var qs []float64
	if g.p.FDRAlpha != nil {
		qs = BenjaminiHochberg(ps)
	}
	blocked := false
	var regressed []Reason
	for i := range g.dec.Tests {
		t := &g.dec.Tests[i]
		if qs != nil {
			q := qs[i]
			t.QValue = &q
		}
		worse := t.CandidatePasses*t.BaselineTrials < t.BaselinePasses*t.CandidateTrials
		t.Significant = worse && atMost(t.PValue, g.p.Alpha) && (t.QValue == nil || atMost(*t.QValue, *g.p.FDRAlpha))
		if t.Critical && worse && (t.Change == ChangeBroke || t.BaselinePasses == t.BaselineTrials) {
			g.reason(Reason{Code: ReasonCriticalCaseBroke, CaseID: t.CaseID,
				Message: fmt.Sprintf("critical case %s passed %d of %d baseline trials and %d of %d candidate trials",
					t.CaseID, t.BaselinePasses, t.BaselineTrials, t.CandidatePasses, t.CandidateTrials)})
			blocked = true
		}
		if t.Significant {
			g.dec.Regressions++
			msg := fmt.Sprintf("case %s passed %d of %d baseline trials and %d of %d candidate trials (p = %s",
				t.CaseID, t.BaselinePasses, t.BaselineTrials, t.CandidatePasses, t.CandidateTrials, num(t.PValue))
			if t.QValue != nil {
				msg += ", q = " + num(*t.QValue)
			}
			regressed = append(regressed, Reason{Code: ReasonCaseRegression, CaseID: t.CaseID, Message: msg + ")"})
		}
	}
	if limit := *g.p.MaxRegressions; g.dec.Regressions > limit {
		g.reason(Reason{Code: ReasonRegressionsExceeded,
			Message: fmt.Sprintf("%d significant case %s, more than maxRegressions %d", g.dec.Regressions, plural(g.dec.Regressions, "regression"), limit)})
		for _, r := range regressed {
			g.reason(r)
		}
		blocked = true
	} else {
		for _, r := range regressed {
			r.Message += "; tolerated by maxRegressions"
			g.note(r)
		}
	}
	// The gate must not fail open silently: say when the policy's levels
	// are out of the case tests' reach.
	g.dec.Power = power(g.dec.Tests, g.p)
	if pw := g.dec.Power; pw != nil && pw.Underpowered > 0 {
		g.note(Reason{Code: NoteUnderpowered, Message: pw.message(g.p)})
	}
	return blocked
}

// atMost compares a p- or q-value with its level within relErr, so that a
// value equal to the level in exact arithmetic is not lost to rounding.
func atMost(p, level float64) bool { return p <= level*relErr }

// metricRegressed applies rule 6 to the gate metric.
func (g *gating) metricRegressed(m *MetricDelta) bool {
	if m == nil || m.PairedDelta == nil || m.CI == nil {
		return false
	}
	if *m.PairedDelta < -g.p.MinDelta-eps && m.CI.Hi < -eps {
		g.reason(Reason{Code: ReasonMetricRegression,
			Message: fmt.Sprintf("metric %s fell by %s over %d paired cases (%s%% interval %s to %s), beyond minDelta %s",
				m.Metric, num(-*m.PairedDelta), m.PairedCases, num(m.CI.Level*100), num(m.CI.Lo), num(m.CI.Hi), num(g.p.MinDelta))})
		return true
	}
	return false
}

// plural returns word, with an s unless n is 1.
func plural(n int, word string) string {
	if n == 1 {
		return word
	}
	return word + "s"
}
