package gate

import (
	"fmt"
	"strconv"
	"strings"
)

// Power is what a decision's case tests can detect under its policy: the
// smallest p-value a case can reach with its trial counts, against the
// p-value a lone significant regression needs. A gate never fails open
// silently: when some case cannot be significant on its own, the decision
// also carries an underpowered note saying so and how many trials would do.
type Power struct {
	// CaseTests counts the case tests: m, the Benjamini-Hochberg family.
	CaseTests int `json:"caseTests"`
	// TrialsPerSide is the trial count of every tested case on both
	// sides when they all agree; absent when they differ.
	TrialsPerSide int `json:"trialsPerSide,omitempty"`
	// MinPValue is the smallest p-value the best-powered case test can
	// reach: every baseline trial passing, every candidate trial failing.
	MinPValue float64 `json:"minPValue"`
	// RequiredPValue is what a lone regression needs: alpha, or with
	// fdrAlpha the smaller of alpha and fdrAlpha / caseTests (a lone
	// smallest p-value has BH rank 1, so its q-value is caseTests * p).
	RequiredPValue float64 `json:"requiredPValue"`
	// Underpowered counts the case tests that cannot be significant on
	// their own, whatever the candidate does.
	Underpowered int `json:"underpowered"`
	// TrialsNeeded is the smallest trial count per side with which a
	// lone regression among caseTests can be significant; absent when no
	// case test is underpowered.
	TrialsNeeded int `json:"trialsNeeded,omitempty"`
	// JointRegressions is, with fdrAlpha and the best-powered trial
	// counts, the fewest cases that must fail every candidate trial
	// together for their q-values to reach fdrAlpha; absent when a lone
	// case can, or when no number of cases can.
	JointRegressions int `json:"jointRegressions,omitempty"`
}

// maxTrialsSearched bounds the search for TrialsNeeded: 64 trials a side
// reach p = 1/C(128, 64), about 4e-38, below any level a policy can ask
// of any number of cases a batch can hold.
const maxTrialsSearched = 64

// MinPValue is the smallest p-value the per-case test can give a case
// with n1 baseline and n2 candidate trials: FisherExact's greater on the
// most extreme table [[n1, 0], [0, n2]], 1/C(n1+n2, n1). It is computed by
// the test itself, so that the power analysis and the decision agree to
// the last bit. One trial a side gives 0.5, three give 0.05.
func MinPValue(n1, n2 int) float64 {
	_, _, greater := FisherExact(n1, 0, 0, n2)
	return greater
}

// loneReachable reports whether a case test whose smallest p-value is
// minP can be a significant regression on its own among m tests under p:
// minP <= alpha and, with fdrAlpha, its q-value at BH rank 1 (m * minP,
// as BenjaminiHochberg computes it) <= fdrAlpha.
func loneReachable(minP float64, m int, p GatePolicy) bool {
	if !atMost(minP, p.Alpha) {
		return false
	}
	return p.FDRAlpha == nil || atMost(float64(m)/1*minP, *p.FDRAlpha)
}

// requiredPValue is the p-value a lone regression among m tests needs.
func requiredPValue(m int, p GatePolicy) float64 {
	if p.FDRAlpha != nil && *p.FDRAlpha/float64(m) < p.Alpha {
		return *p.FDRAlpha / float64(m)
	}
	return p.Alpha
}

// trialsNeeded is the smallest trial count per side with which a lone
// regression among m tests can be significant under p; 0 when none up to
// maxTrialsSearched can.
func trialsNeeded(m int, p GatePolicy) int {
	for n := 1; n <= maxTrialsSearched; n++ {
		if loneReachable(MinPValue(n, n), m, p) {
			return n
		}
	}
	return 0
}

// jointRegressions is the fewest cases (2 or more) at p-value minP whose
// shared q-value, m/k * minP at BH rank k, reaches fdrAlpha; 0 when alpha
// already rules minP out or no k <= m does.
func jointRegressions(minP float64, m int, p GatePolicy) int {
	if p.FDRAlpha == nil || !atMost(minP, p.Alpha) {
		return 0
	}
	for k := 2; k <= m; k++ {
		if atMost(float64(m)/float64(k)*minP, *p.FDRAlpha) {
			return k
		}
	}
	return 0
}

// power analyses the case tests of a decision under p (defaults filled
// in); nil without tests.
func power(tests []CaseTest, p GatePolicy) *Power {
	m := len(tests)
	if m == 0 {
		return nil
	}
	pw := &Power{CaseTests: m, RequiredPValue: requiredPValue(m, p), MinPValue: 1, TrialsPerSide: tests[0].BaselineTrials}
	for _, t := range tests {
		minP := MinPValue(t.BaselineTrials, t.CandidateTrials)
		pw.MinPValue = min(pw.MinPValue, minP)
		if !loneReachable(minP, m, p) {
			pw.Underpowered++
		}
		if t.BaselineTrials != pw.TrialsPerSide || t.CandidateTrials != pw.TrialsPerSide {
			pw.TrialsPerSide = 0
		}
	}
	if pw.Underpowered > 0 {
		pw.TrialsNeeded = trialsNeeded(m, p)
		if !loneReachable(pw.MinPValue, m, p) {
			pw.JointRegressions = jointRegressions(pw.MinPValue, m, p)
		}
	}
	return pw
}

// message is the underpowered note: what the trials allow, what the
// policy needs, and what would reach it. Numbers have four significant
// digits, so no rounding noise (0.30000000000000004) reaches a reader.
func (pw *Power) message(p GatePolicy) string {
	var b strings.Builder
	fdrBinds := p.FDRAlpha != nil && pw.RequiredPValue < p.Alpha
	need := fmt.Sprintf("alpha %s needs p <= %s", num(p.Alpha), num(pw.RequiredPValue))
	if fdrBinds {
		need = fmt.Sprintf("over %d %s fdrAlpha %s needs p <= %s",
			pw.CaseTests, plural(pw.CaseTests, "case"), num(*p.FDRAlpha), num(pw.RequiredPValue))
	}
	all := pw.Underpowered == pw.CaseTests
	switch {
	case all && pw.TrialsPerSide > 0:
		fmt.Fprintf(&b, "with %d %s per side the smallest p-value a case can reach is %s; %s: no case regression can be significant on its own",
			pw.TrialsPerSide, plural(pw.TrialsPerSide, "trial"), num(pw.MinPValue), need)
	case all:
		fmt.Fprintf(&b, "with these trial counts the smallest p-value a case can reach is %s; %s: no case regression can be significant on its own",
			num(pw.MinPValue), need)
	default:
		fmt.Fprintf(&b, "%d of %d case tests cannot be significant on their own with their trial counts; %s",
			pw.Underpowered, pw.CaseTests, need)
	}
	if pw.JointRegressions > 0 {
		fmt.Fprintf(&b, " (%d cases failing every trial together could be)", pw.JointRegressions)
	}
	b.WriteString(".")
	if pw.TrialsNeeded > 0 {
		fmt.Fprintf(&b, " Use at least %d trials per side", pw.TrialsNeeded)
		if fdrBinds && atMost(pw.MinPValue, p.Alpha) {
			fmt.Fprintf(&b, ", or gate on alpha %s without fdrAlpha", num(p.Alpha))
		}
		b.WriteString(".")
	}
	rule := fmt.Sprintf("the metric rule (%s, minDelta %s)", p.Metric, num(p.MinDelta))
	if all {
		fmt.Fprintf(&b, " Until then only critical cases and %s can block.", rule)
	} else {
		fmt.Fprintf(&b, " Until then those cases can block only as critical cases or through %s.", rule)
	}
	return b.String()
}

// num formats a statistic for a message with four significant digits:
// 0.05, 0.003333, 0.3 (not 0.30000000000000004).
func num(f float64) string { return strconv.FormatFloat(f, 'g', 4, 64) }
