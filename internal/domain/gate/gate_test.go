package gate

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"svc/internal/domain/eval"
	"svc/internal/domain/scoring"
	"svc/internal/platform/derrors"
)

// codes lists the codes of reasons, with the case or axis they name.
func codes(rs []Reason) []string {
	out := []string{}
	for _, r := range rs {
		c := r.Code
		switch {
		case r.CaseID != "":
			c += ":" + r.CaseID
		case r.Axis != "":
			c += ":" + r.Axis
		case r.Side != "":
			c += ":" + r.Side
		}
		out = append(out, c)
	}
	return out
}

func TestGateOutcomes(t *testing.T) {
	ten := same(10, "PPP") // caa..caj, three trials each
	one := same(20, "P")   // caa..cat, one trial each
	brokeHalf := map[string]string{}
	for id, v := range one {
		brokeHalf[id] = v
	}
	for i := range 10 {
		brokeHalf[caseName(i)] = "F"
	}
	tests := []struct {
		name        string
		base, cand  eval.Scorecard
		policy      GatePolicy
		outcome     string
		reasons     []string
		notes       []string
		regressions int
	}{
		{
			name: "nothing changed", base: card("b", ten), cand: card("c", ten, harness2),
			outcome: OutcomePass, reasons: []string{}, notes: []string{},
		},
		{
			name: "policy unresolvable on the candidate", base: card("b", ten), cand: card("c", ten, harness2, unresolvablePolicy),
			outcome: OutcomeNotComparable, reasons: []string{"policy_unresolvable:candidate"}, notes: []string{},
		},
		{
			// Checked before comparability: a confound is not reported.
			name: "policy unresolvable on both, and another runtime", base: card("b", ten, unresolvablePolicy),
			cand:    card("c", ten, harness2, unresolvablePolicy, func(sc *eval.Scorecard) { sc.Manifest.Runtime = "k8s" }),
			outcome: OutcomeNotComparable, reasons: []string{"policy_unresolvable:baseline", "policy_unresolvable:candidate"}, notes: []string{},
		},
		{
			name: "different datasets", base: card("b", ten), cand: card("c", ten, harness2, func(sc *eval.Scorecard) { sc.Dataset.ID = "other" }),
			policy:  GatePolicy{AllowConfounds: []string{AxisDataset}}, // cannot allow a different dataset
			outcome: OutcomeNotComparable, reasons: []string{"different_dataset:dataset"}, notes: []string{},
		},
		{
			name: "a confound not allowed", base: card("b", ten), cand: card("c", ten, harness2, func(sc *eval.Scorecard) {
				sc.Manifest.Runtime = "k8s"
				sc.Manifest.GradingCases["caa"] = digest("stricter")
			}),
			outcome: OutcomeNotComparable, reasons: []string{"confound:grading", "confound:runtime"}, notes: []string{},
		},
		{
			name: "the confound allowed", base: card("b", ten), cand: card("c", ten, harness2, func(sc *eval.Scorecard) { sc.Manifest.Runtime = "k8s" }),
			policy:  GatePolicy{AllowConfounds: []string{AxisRuntime}},
			outcome: OutcomePass, reasons: []string{}, notes: []string{"confound_allowed:runtime"},
		},
		{
			name: "no manifests: unverified axes are notes", base: card("b", ten, noManifest), cand: card("c", ten, harness2, noManifest),
			outcome: OutcomePass, reasons: []string{},
			notes: []string{"axis_unverified:dataset", "axis_unverified:grading", "axis_unverified:judges", "axis_unverified:runtime"},
		},
		{
			name: "no case on both sides", base: card("b", map[string]string{"x": "P"}), cand: card("c", map[string]string{"y": "P"}, harness2),
			outcome: OutcomeNotComparable, reasons: []string{"no_common_cases"}, notes: []string{"axis_unverified:grading"},
		},
		{
			name: "gate metric absent", base: card("b", ten), cand: card("c", ten, harness2), policy: GatePolicy{Metric: "judge:tone"},
			outcome: OutcomeNotComparable, reasons: []string{"metric_missing"}, notes: []string{},
		},
		{
			name: "a baseline case missing", base: card("b", ten), cand: card("c", with(ten, "caj", ""), harness2),
			outcome: OutcomeBlockedMissing, reasons: []string{"missing_case:caj"}, notes: []string{},
		},
		{
			name: "a baseline case missing, allow_partial", base: card("b", ten), cand: card("c", with(ten, "caj", ""), harness2),
			policy:  GatePolicy{AllowPartial: true},
			outcome: OutcomePass, reasons: []string{}, notes: []string{"missing_case:caj"},
		},
		{
			name: "a critical case missing, allow_partial", base: card("b", ten, withPolicy(critical(t, "caj"))),
			cand: card("c", with(ten, "caj", ""), harness2), policy: GatePolicy{AllowPartial: true},
			outcome: OutcomeBlockedMissing, reasons: []string{"critical_case_missing:caj"}, notes: []string{},
		},
		{
			name: "a case still pending in the candidate is missing", base: card("b", ten), cand: card("c", with(ten, "caa", "..."), harness2),
			outcome: OutcomeBlockedMissing, reasons: []string{"missing_case:caa"}, notes: []string{},
		},
		{
			// Missing outranks block; every reason is still listed.
			name: "missing and a critical break", base: card("b", ten, withPolicy(critical(t, "caa"))),
			cand:    card("c", with(ten, "caa", "FFF", "caj", ""), harness2),
			outcome: OutcomeBlockedMissing,
			reasons: []string{"missing_case:caj", "critical_case_broke:caa", "regressions_exceeded", "case_regression:caa"}, notes: []string{},
			regressions: 1,
		},
		{
			name: "a critical case broke on one trial", base: card("b", one, withPolicy(critical(t, "caa"))),
			cand: card("c", with(one, "caa", "F"), harness2), outcome: OutcomeBlock,
			reasons: []string{"critical_case_broke:caa"}, notes: []string{"underpowered"},
		},
		{
			// The candidate's own marker counts as much as the baseline's.
			name: "critical only in the candidate's policy", base: card("b", one),
			cand: card("c", with(one, "caa", "F"), harness2, withPolicy(critical(t, "caa"))), outcome: OutcomeBlock,
			reasons: []string{"critical_case_broke:caa"}, notes: []string{"underpowered"},
		},
		{
			name: "a perfect critical case lost one trial", base: card("b", ten, withPolicy(critical(t, "caa"))),
			cand: card("c", with(ten, "caa", "PPF"), harness2), outcome: OutcomeBlock,
			reasons: []string{"critical_case_broke:caa"}, notes: []string{},
		},
		{
			name: "a flaky critical case lost one trial but kept its majority", base: card("b", with(ten, "caa", "PPPPF"), withPolicy(critical(t, "caa"))),
			cand: card("c", with(ten, "caa", "PPPFF"), harness2), outcome: OutcomePass, reasons: []string{}, notes: []string{},
		},
		{
			name: "a non-critical case broke on one trial: not significant", base: card("b", one), cand: card("c", with(one, "caa", "F"), harness2),
			outcome: OutcomePass, reasons: []string{}, notes: []string{"underpowered"},
		},
		{
			// 3 of 3 to 0 of 3 gives p = 1/20 exactly, which meets alpha 0.05.
			name: "a significant case regression", base: card("b", ten), cand: card("c", with(ten, "cac", "FFF"), harness2),
			outcome: OutcomeBlock, reasons: []string{"regressions_exceeded", "case_regression:cac"}, notes: []string{}, regressions: 1,
		},
		{
			name: "a significant case regression within maxRegressions", base: card("b", ten), cand: card("c", with(ten, "cac", "FFF"), harness2),
			policy:  GatePolicy{MaxRegressions: ptr(1)},
			outcome: OutcomePass, reasons: []string{}, notes: []string{"case_regression:cac"}, regressions: 1,
		},
		{
			name: "the same regression is not significant at alpha 0.01", base: card("b", ten), cand: card("c", with(ten, "cac", "FFF"), harness2),
			policy:  GatePolicy{Alpha: 0.01},
			outcome: OutcomePass, reasons: []string{}, notes: []string{"underpowered"},
		},
		{
			// Ten tests, one at p = 0.05: q = 0.5. No case could reach 0.1
			// (10 * 0.05 > 0.1), and the decision says so.
			name: "the regression does not survive the FDR control", base: card("b", ten), cand: card("c", with(ten, "cac", "FFF"), harness2),
			policy:  GatePolicy{FDRAlpha: ptr(0.1)},
			outcome: OutcomePass, reasons: []string{}, notes: []string{"underpowered"},
		},
		{
			name: "half the cases broke on one trial each: the metric rule", base: card("b", one), cand: card("c", brokeHalf, harness2),
			outcome: OutcomeBlock, reasons: []string{"metric_regression"}, notes: []string{"underpowered"},
		},
		{
			name: "half the cases broke, within minDelta", base: card("b", one), cand: card("c", brokeHalf, harness2),
			policy:  GatePolicy{MinDelta: 0.6},
			outcome: OutcomePass, reasons: []string{}, notes: []string{"underpowered"},
		},
		{
			name: "gate on a metric without verdicts", base: card("b", ten, func(sc *eval.Scorecard) { addScore(sc, "tokens", 100, nil) }),
			cand:    card("c", ten, harness2, func(sc *eval.Scorecard) { addScore(sc, "tokens", 90, nil) }),
			policy:  GatePolicy{Metric: "tokens"},
			outcome: OutcomeBlock, reasons: []string{"metric_regression"}, notes: []string{"metric_direction_assumed"},
		},
		{
			name: "rows that do not hash to the pinned revision", base: card("b", ten, func(sc *eval.Scorecard) { sc.Scoring[0].ScorePlaneDigest = digest("older") }),
			cand:    card("c", ten, harness2),
			outcome: OutcomePass, reasons: []string{}, notes: []string{"scoring_drift:baseline"},
		},
		{
			name: "a failed candidate with every case", base: card("b", ten), cand: card("c", ten, harness2, func(sc *eval.Scorecard) { sc.Status = eval.ScorecardFailed }),
			outcome: OutcomePass, reasons: []string{}, notes: []string{},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dec, err := Gate(tt.base, tt.cand, tt.policy)
			if err != nil {
				t.Fatal(err)
			}
			if dec.Outcome != tt.outcome {
				t.Errorf("outcome %q, want %q; reasons %v", dec.Outcome, tt.outcome, dec.Reasons)
			}
			if diff := cmp.Diff(tt.reasons, codes(dec.Reasons)); diff != "" {
				t.Errorf("reasons (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.notes, codes(dec.Notes)); diff != "" {
				t.Errorf("notes (-want +got):\n%s", diff)
			}
			if dec.Regressions != tt.regressions {
				t.Errorf("regressions %d, want %d", dec.Regressions, tt.regressions)
			}
			for _, r := range append(dec.Reasons, dec.Notes...) {
				if r.Message == "" {
					t.Errorf("reason %s has no message", r.Code)
				}
			}
		})
	}
}

func TestGateTests(t *testing.T) {
	base := card("b", map[string]string{"a": "PPP", "b": "PPP", "c": "PFF", "d": "FFF", "e": "PPP"})
	cand := card("c", map[string]string{"a": "FFF", "b": "PPF", "c": "PPP", "d": "FFF", "f": "PPP"}, harness2)
	dec, err := Gate(base, cand, GatePolicy{FDRAlpha: ptr(0.2), AllowPartial: true})
	if err != nil {
		t.Fatal(err)
	}
	p := func(a, b, c, d int) float64 { _, _, g := FisherExact(a, b, c, d); return g }
	ps := []float64{p(3, 0, 0, 3), p(3, 0, 2, 1), p(1, 2, 3, 0), p(0, 3, 0, 3)}
	qs := BenjaminiHochberg(ps)
	want := []CaseTest{
		{CaseID: "a", BaselinePasses: 3, BaselineTrials: 3, CandidatePasses: 0, CandidateTrials: 3, PValue: ps[0], QValue: &qs[0], Change: ChangeBroke},
		{CaseID: "b", BaselinePasses: 3, BaselineTrials: 3, CandidatePasses: 2, CandidateTrials: 3, PValue: ps[1], QValue: &qs[1], Change: ChangeStillPassing},
		{CaseID: "c", BaselinePasses: 1, BaselineTrials: 3, CandidatePasses: 3, CandidateTrials: 3, PValue: ps[2], QValue: &qs[2], Change: ChangeFixed},
		{CaseID: "d", BaselinePasses: 0, BaselineTrials: 3, CandidatePasses: 0, CandidateTrials: 3, PValue: ps[3], QValue: &qs[3], Change: ChangeStillFailing},
	}
	// p = 0.05 and q = 4 * 0.05 / 1 = 0.2: significant at alpha 0.05 and fdrAlpha 0.2.
	want[0].Significant = true
	if diff := cmp.Diff(want, dec.Tests); diff != "" {
		t.Errorf("tests (-want +got):\n%s", diff)
	}
	if !near(qs[0], 0.2, 1e-12) {
		t.Errorf("q of case a = %v, want 0.2", qs[0])
	}
	if dec.Outcome != OutcomeBlock || dec.Regressions != 1 {
		t.Errorf("outcome %q with %d regressions, want block with 1", dec.Outcome, dec.Regressions)
	}
	if got := codes(dec.Notes); !cmp.Equal(got, []string{"missing_case:e"}) {
		t.Errorf("notes %v, want the tolerated missing case e", got)
	}
}

func TestGatePinsAndPolicy(t *testing.T) {
	base := card("b", same(3, "P"))
	cand := card("c", same(3, "P"), harness2, func(sc *eval.Scorecard) {
		sc.Scoring = append(sc.Scoring, eval.ScoringRevision{Revision: 2, Kind: "rescore", ScorePlaneDigest: scoring.ScorePlaneDigest(sc.Scorecard)})
	})
	dec, err := Gate(base, cand, GatePolicy{})
	if err != nil {
		t.Fatal(err)
	}
	wantBase := ScoringPin{Revision: 1, ScorePlaneDigest: base.Scoring[0].ScorePlaneDigest}
	wantCand := ScoringPin{Revision: 2, ScorePlaneDigest: cand.Scoring[1].ScorePlaneDigest}
	if dec.BaselineScoring != wantBase || dec.CandidateScoring != wantCand {
		t.Errorf("pins %+v, %+v; want %+v, %+v", dec.BaselineScoring, dec.CandidateScoring, wantBase, wantCand)
	}
	wantPolicy := GatePolicy{MaxRegressions: ptr(0), Alpha: DefaultAlpha, Metric: scoring.CasePassMetric}
	if diff := cmp.Diff(wantPolicy, dec.Policy); diff != "" {
		t.Errorf("applied policy (-want +got):\n%s", diff)
	}
	if dec.Metric == nil || dec.Metric.Metric != scoring.CasePassMetric || dec.Metric.CI == nil {
		t.Errorf("gate metric %+v, want casePass with an interval", dec.Metric)
	}
}

func TestGateRefusals(t *testing.T) {
	ok := card("sc_ok", same(2, "P"))
	tests := []struct {
		name   string
		edit   func(*eval.Scorecard)
		policy GatePolicy
		want   error
	}{
		{"cancelled", func(sc *eval.Scorecard) { sc.Status = eval.ScorecardCancelled }, GatePolicy{}, derrors.ErrInvalid},
		{"superseded", func(sc *eval.Scorecard) { sc.Status = eval.ScorecardSuperseded }, GatePolicy{}, derrors.ErrInvalid},
		{"running", func(sc *eval.Scorecard) { sc.Status = eval.ScorecardRunning }, GatePolicy{}, derrors.ErrConflict},
		{"queued", func(sc *eval.Scorecard) { sc.Status = eval.ScorecardQueued }, GatePolicy{}, derrors.ErrConflict},
		{"scoring in flight", func(sc *eval.Scorecard) { sc.ScoringInFlight = "pass_1" }, GatePolicy{}, derrors.ErrConflict},
		{"bad policy", func(*eval.Scorecard) {}, GatePolicy{Alpha: 2}, derrors.ErrInvalid},
	}
	for _, tt := range tests {
		for _, candidate := range []bool{false, true} {
			bad := card("sc_bad", same(2, "P"))
			tt.edit(&bad)
			base, cand := ok, bad
			if !candidate {
				base, cand = bad, ok
			}
			_, err := Gate(base, cand, tt.policy)
			if !errors.Is(err, tt.want) {
				t.Errorf("%s (candidate %v): error %v, want %v", tt.name, candidate, err, tt.want)
			}
		}
	}
}

func TestGatePolicyValidate(t *testing.T) {
	tests := []struct {
		name   string
		policy GatePolicy
		want   []string // fragments of the message; nil means valid
	}{
		{"zero is the defaults", GatePolicy{}, nil},
		{"everything set", GatePolicy{MaxRegressions: ptr(2), MinDelta: 0.05, Alpha: 0.1, FDRAlpha: ptr(0.2),
			AllowConfounds: []string{"dataset", "grading", "judges", "policy", "runtime"}, AllowPartial: true, Metric: "exact"}, nil},
		{"alpha 1", GatePolicy{Alpha: 1}, []string{"alpha"}},
		{"negative alpha", GatePolicy{Alpha: -0.1}, []string{"alpha"}},
		{"fdrAlpha 0", GatePolicy{FDRAlpha: ptr(0.0)}, []string{"fdrAlpha"}},
		{"negative maxRegressions", GatePolicy{MaxRegressions: ptr(-1)}, []string{"maxRegressions"}},
		{"negative minDelta", GatePolicy{MinDelta: -0.1}, []string{"minDelta"}},
		{"harness is no confound", GatePolicy{AllowConfounds: []string{"harness"}}, []string{"allowConfounds[0]", "treatment"}},
		{"unknown axis", GatePolicy{AllowConfounds: []string{"runtime", "model"}}, []string{"allowConfounds[1]", `"model"`}},
		{"blank metric", GatePolicy{Metric: "  "}, []string{"metric"}},
		{"every problem at once", GatePolicy{Alpha: 3, FDRAlpha: ptr(1.5), MinDelta: -1}, []string{"alpha", "fdrAlpha", "minDelta"}},
	}
	for _, tt := range tests {
		err := tt.policy.Validate()
		if tt.want == nil {
			if err != nil {
				t.Errorf("%s: %v, want valid", tt.name, err)
			}
			continue
		}
		if !errors.Is(err, derrors.ErrInvalid) {
			t.Errorf("%s: error %v, want ErrInvalid", tt.name, err)
			continue
		}
		for _, frag := range tt.want {
			if !strings.Contains(err.Error(), frag) {
				t.Errorf("%s: error %q does not mention %q", tt.name, err, frag)
			}
		}
	}
}
