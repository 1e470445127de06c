package gate

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"svc/internal/platform/derrors"
)

func TestMinPValue(t *testing.T) {
	for _, tt := range []struct {
		n1, n2 int
		want   float64
	}{
		{1, 1, 0.5}, {2, 2, 1.0 / 6}, {3, 3, 0.05}, {4, 4, 1.0 / 70}, {5, 5, 1.0 / 252},
		{6, 6, 1.0 / 924}, {7, 7, 1.0 / 3432}, {3, 5, 1.0 / 56}, {1, 3, 0.25},
	} {
		if got := MinPValue(tt.n1, tt.n2); !near(got, tt.want, 1e-12) {
			t.Errorf("MinPValue(%d, %d) = %v, want %v", tt.n1, tt.n2, got, tt.want)
		}
		// It is the minimum: no table with these trial counts does better.
		for bp := 0; bp <= tt.n1; bp++ {
			for cp := 0; cp <= tt.n2; cp++ {
				if _, _, g := FisherExact(bp, tt.n1-bp, cp, tt.n2-cp); g < MinPValue(tt.n1, tt.n2) {
					t.Errorf("table [[%d, %d], [%d, %d]] gives p = %v, below MinPValue(%d, %d)", bp, tt.n1-bp, cp, tt.n2-cp, g, tt.n1, tt.n2)
				}
			}
		}
	}
}

// TestPowerNewcomerScenario holds the numbers of the issue: 30 cases,
// 3 trials a side, the old docs/ci.md policy (alpha 0.05, fdrAlpha 0.1).
// A case reaches at best p = 0.05; a lone regression needs p <= 0.1/30;
// 6 trials a side give 1/924 (30/924 = 0.032 <= 0.1) and 5 give 1/252
// (30/252 = 0.119 > 0.1); 15 cases broken together reach q = 30/15 * 0.05.
func TestPowerNewcomerScenario(t *testing.T) {
	tests := make([]CaseTest, 30)
	for i := range tests {
		tests[i] = CaseTest{BaselinePasses: 3, BaselineTrials: 3, CandidatePasses: 3, CandidateTrials: 3}
	}
	p := GatePolicy{Alpha: 0.05, FDRAlpha: ptr(0.1), MinDelta: 0.02}.withDefaults()
	got := power(tests, p)
	want := &Power{CaseTests: 30, TrialsPerSide: 3, MinPValue: 0.05, RequiredPValue: 0.1 / 30, Underpowered: 30, TrialsNeeded: 6, JointRegressions: 15}
	if diff := cmp.Diff(want, got, cmpopts.EquateApprox(0, 1e-12)); diff != "" {
		t.Errorf("power (-want +got):\n%s", diff)
	}
	wantMsg := "with 3 trials per side the smallest p-value a case can reach is 0.05; over 30 cases fdrAlpha 0.1 needs p <= 0.003333: " +
		"no case regression can be significant on its own (15 cases failing every trial together could be). " +
		"Use at least 6 trials per side, or gate on alpha 0.05 without fdrAlpha. " +
		"Until then only critical cases and the metric rule (casePass, minDelta 0.02) can block."
	if diff := cmp.Diff(wantMsg, got.message(p)); diff != "" {
		t.Errorf("message (-want +got):\n%s", diff)
	}
}

func TestPower(t *testing.T) {
	uniform := func(m, n int) []CaseTest {
		tests := make([]CaseTest, m)
		for i := range tests {
			tests[i] = CaseTest{BaselinePasses: n, BaselineTrials: n, CandidatePasses: n, CandidateTrials: n}
		}
		return tests
	}
	tests := []struct {
		name    string
		tests   []CaseTest
		policy  GatePolicy
		want    *Power
		message []string // fragments; nil when not underpowered
	}{
		{"no tests", nil, GatePolicy{}, nil, nil},
		{"3 trials reach alpha 0.05", uniform(30, 3), GatePolicy{},
			&Power{CaseTests: 30, TrialsPerSide: 3, MinPValue: 0.05, RequiredPValue: 0.05}, nil},
		{"one trial a side", uniform(20, 1), GatePolicy{},
			&Power{CaseTests: 20, TrialsPerSide: 1, MinPValue: 0.5, RequiredPValue: 0.05, Underpowered: 20, TrialsNeeded: 3},
			[]string{"with 1 trial per side the smallest p-value a case can reach is 0.5; alpha 0.05 needs p <= 0.05: no case regression can be significant on its own.", "Use at least 3 trials per side."}},
		{"alpha 0.01 with 3 trials", uniform(10, 3), GatePolicy{Alpha: 0.01},
			&Power{CaseTests: 10, TrialsPerSide: 3, MinPValue: 0.05, RequiredPValue: 0.01, Underpowered: 10, TrialsNeeded: 5},
			[]string{"alpha 0.01 needs p <= 0.01", "Use at least 5 trials per side."}},
		{"fdrAlpha 0.1 over 100 cases (docs/gate.md)", uniform(100, 6), GatePolicy{FDRAlpha: ptr(0.1)},
			&Power{CaseTests: 100, TrialsPerSide: 6, MinPValue: 1.0 / 924, RequiredPValue: 0.001, Underpowered: 100, TrialsNeeded: 7, JointRegressions: 2},
			[]string{"over 100 cases fdrAlpha 0.1 needs p <= 0.001", "(2 cases failing every trial together could be)", "Use at least 7 trials per side"}},
		{"fdrAlpha reachable with 2 cases and 3 trials", uniform(2, 3), GatePolicy{FDRAlpha: ptr(0.1)},
			&Power{CaseTests: 2, TrialsPerSide: 3, MinPValue: 0.05, RequiredPValue: 0.05}, nil},
		{"fdrAlpha above alpha: alpha binds", uniform(4, 1), GatePolicy{FDRAlpha: ptr(0.9)},
			&Power{CaseTests: 4, TrialsPerSide: 1, MinPValue: 0.5, RequiredPValue: 0.05, Underpowered: 4, TrialsNeeded: 3},
			[]string{"alpha 0.05 needs p <= 0.05"}},
		{"some cases with fewer trials", append(uniform(8, 3), CaseTest{BaselinePasses: 1, BaselineTrials: 1, CandidatePasses: 1, CandidateTrials: 1},
			CaseTest{BaselinePasses: 3, BaselineTrials: 3, CandidatePasses: 0, CandidateTrials: 1}), GatePolicy{},
			&Power{CaseTests: 10, MinPValue: 0.05, RequiredPValue: 0.05, Underpowered: 2, TrialsNeeded: 3},
			[]string{"2 of 10 case tests cannot be significant on their own with their trial counts; alpha 0.05 needs p <= 0.05.", "those cases can block only as critical cases"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := tt.policy.withDefaults()
			got := power(tt.tests, p)
			if diff := cmp.Diff(tt.want, got, cmpopts.EquateApprox(0, 1e-12)); diff != "" {
				t.Fatalf("power (-want +got):\n%s", diff)
			}
			if got == nil || tt.message == nil {
				return
			}
			msg := got.message(p)
			for _, frag := range tt.message {
				if !strings.Contains(msg, frag) {
					t.Errorf("message %q lacks %q", msg, frag)
				}
			}
		})
	}
}

// TestPowerAgreesWithTheDecision holds the analysis to the gate itself:
// for every case count, trial count and policy of a grid, a lone case that
// fails every candidate trial is a significant regression exactly when
// the power analysis says a lone regression is reachable, and, when it
// is not, the decision carries the underpowered note; with fdrAlpha,
// JointRegressions broken cases are significant and one fewer are not.
func TestPowerAgreesWithTheDecision(t *testing.T) {
	policies := []GatePolicy{{}, {Alpha: 0.01}, {Alpha: 0.1}, {FDRAlpha: ptr(0.1)}, {FDRAlpha: ptr(0.05)}, {Alpha: 0.01, FDRAlpha: ptr(0.2)}}
	for _, m := range []int{1, 2, 3, 10, 30} {
		for _, n := range []int{1, 2, 3, 4, 5, 6} {
			for _, policy := range policies {
				name := fmt.Sprintf("%d cases, %d trials, alpha %v, fdrAlpha %v", m, n, policy.Alpha, deref(policy.FDRAlpha))
				ok := same(m, strings.Repeat("P", n))
				bad := strings.Repeat("F", n)
				dec := gateT(t, ok, with(ok, caseName(0), bad), policy)
				pw := dec.Power
				if pw == nil {
					t.Fatalf("%s: no power", name)
				}
				reachable := pw.Underpowered == 0
				if got := dec.Tests[0].Significant; got != reachable {
					t.Errorf("%s: the broken case significant %v, but the power analysis says reachable %v (%+v)", name, got, reachable, *pw)
				}
				if noted := hasNote(dec, NoteUnderpowered); noted == reachable {
					t.Errorf("%s: underpowered note %v with %d underpowered tests", name, noted, pw.Underpowered)
				}
				if reachable {
					continue
				}
				// TrialsNeeded trials a side make the lone break significant.
				if n2 := pw.TrialsNeeded; n2 > 0 {
					ok2 := same(m, strings.Repeat("P", n2))
					if d2 := gateT(t, ok2, with(ok2, caseName(0), strings.Repeat("F", n2)), policy); !d2.Tests[0].Significant || d2.Power.Underpowered != 0 {
						t.Errorf("%s: with the %d trials needed the lone break is not significant", name, n2)
					}
					if n2 > 1 {
						ok3 := same(m, strings.Repeat("P", n2-1))
						if d3 := gateT(t, ok3, with(ok3, caseName(0), strings.Repeat("F", n2-1)), policy); d3.Tests[0].Significant {
							t.Errorf("%s: %d trials, fewer than the %d needed, already make the lone break significant", name, n2-1, n2)
						}
					}
				}
				if k := pw.JointRegressions; k > 0 {
					broken := func(k int) map[string]string {
						c := same(m, strings.Repeat("P", n))
						for i := range k {
							c[caseName(i)] = bad
						}
						return c
					}
					if d := gateT(t, ok, broken(k), policy); d.Regressions != k {
						t.Errorf("%s: %d cases broken together give %d significant regressions, want %d", name, k, d.Regressions, k)
					}
					if d := gateT(t, ok, broken(k-1), policy); d.Regressions != 0 {
						t.Errorf("%s: %d cases broken together give %d significant regressions, want 0", name, k-1, d.Regressions)
					}
				}
			}
		}
	}
}

func gateT(t *testing.T, base, cand map[string]string, p GatePolicy) Decision {
	t.Helper()
	dec, err := Gate(card("b", base), card("c", cand, harness2), p)
	if err != nil {
		t.Fatal(err)
	}
	return dec
}

func hasNote(dec Decision, code string) bool {
	for _, n := range dec.Notes {
		if n.Code == code {
			return true
		}
	}
	return false
}

func deref[T any](p *T) any {
	if p == nil {
		return nil
	}
	return *p
}

// TestGateNewcomerScenario is the batch pair: 30 cases of 3
// trials, 5 of them broken (3/3 to 0/3, their metric from 1 to 0).
// docs/ci.md's old policy (fdrAlpha 0.1) cannot make any case significant
// (each p = 0.05, q = 30/5 * 0.05 = 0.3): it blocks on the metric rule
// alone, with the underpowered note, and with a minDelta above the drop it
// passed with nothing but that note. The current docs/ci.md policy (alpha
// 0.05 alone) blocks on the five cases and the metric. The metric rule is
// checked over many id pairs, since they seed the bootstrap.
func TestGateNewcomerScenario(t *testing.T) {
	base := same(30, "PPP")
	cand := same(30, "PPP")
	for i := range 5 {
		cand[caseName(i)] = "FFF"
	}
	old := GatePolicy{Alpha: 0.05, FDRAlpha: ptr(0.1), MaxRegressions: ptr(0), MinDelta: 0.02, AllowConfounds: []string{AxisRuntime}}
	current := GatePolicy{Alpha: 0.05, MaxRegressions: ptr(0), MinDelta: 0.02, AllowConfounds: []string{AxisRuntime}}
	loose := old
	loose.MinDelta = 0.2 // the drop is 1/6

	for seed := range 200 {
		b, c := card(fmt.Sprintf("sc_base%d", seed), base), card(fmt.Sprintf("sc_cand%d", seed), cand, harness2)
		dec, err := Gate(b, c, old)
		if err != nil {
			t.Fatal(err)
		}
		if dec.Outcome != OutcomeBlock || !cmp.Equal(codes(dec.Reasons), []string{ReasonMetricRegression}) || dec.Regressions != 0 {
			t.Fatalf("ids %s, %s, old policy: outcome %s, reasons %v, %d regressions; want block on metric_regression alone",
				b.ID, c.ID, dec.Outcome, codes(dec.Reasons), dec.Regressions)
		}
		if m := dec.Metric; m.Change != MetricRegressed || m.CI.Hi >= 0 || !near(*m.PairedDelta, -1.0/6, 1e-12) {
			t.Fatalf("ids %s, %s: metric %+v %+v, want regressed by 1/6 with an interval below 0", b.ID, c.ID, *m, *m.CI)
		}
		if seed > 0 {
			continue
		}
		for _, ct := range dec.Tests[:5] {
			if !near(ct.PValue, 0.05, 1e-12) || !near(*ct.QValue, 0.3, 1e-12) || ct.Significant {
				t.Errorf("broken case %s: p %v, q %v, significant %v; want 0.05, 0.3, no", ct.CaseID, ct.PValue, *ct.QValue, ct.Significant)
			}
		}
		if !hasNote(dec, NoteUnderpowered) || dec.Power.TrialsNeeded != 6 {
			t.Errorf("old policy: notes %v, power %+v; want underpowered, 6 trials needed", codes(dec.Notes), dec.Power)
		}
		for _, r := range dec.Reasons {
			if strings.Contains(r.Message, "0000000") {
				t.Errorf("reason %q shows rounding noise", r.Message)
			}
		}

		dec, _ = Gate(b, c, loose)
		if dec.Outcome != OutcomePass || !cmp.Equal(codes(dec.Notes), []string{NoteUnderpowered}) {
			t.Errorf("old policy with minDelta 0.2: outcome %s, notes %v; want pass with the underpowered note", dec.Outcome, codes(dec.Notes))
		}

		dec, _ = Gate(b, c, current)
		wantReasons := []string{ReasonRegressionsExceeded, "case_regression:caa", "case_regression:cab", "case_regression:cac",
			"case_regression:cad", "case_regression:cae", ReasonMetricRegression}
		if diff := cmp.Diff(wantReasons, codes(dec.Reasons)); diff != "" || dec.Outcome != OutcomeBlock || len(dec.Notes) != 0 {
			t.Errorf("current policy: outcome %s, notes %v; reasons (-want +got):\n%s", dec.Outcome, codes(dec.Notes), diff)
		}
	}
}

func TestGatePolicyJSON(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    GatePolicy
		wantErr string
	}{
		{"allowPartial", `{"allowPartial": true}`, GatePolicy{AllowPartial: true}, ""},
		{"the alias allow_partial", `{"allow_partial": true, "alpha": 0.01}`, GatePolicy{AllowPartial: true, Alpha: 0.01}, ""},
		{"both, agreeing", `{"allowPartial": true, "allow_partial": true}`, GatePolicy{AllowPartial: true}, ""},
		{"both, disagreeing", `{"allowPartial": false, "allow_partial": true}`, GatePolicy{}, "allowPartial false and its alias allow_partial true disagree"},
		{"every field", `{"maxRegressions": 1, "minDelta": 0.02, "alpha": 0.05, "fdrAlpha": 0.1, "allowConfounds": ["runtime"], "allowPartial": false, "metric": "exact"}`,
			GatePolicy{MaxRegressions: ptr(1), MinDelta: 0.02, Alpha: 0.05, FDRAlpha: ptr(0.1), AllowConfounds: []string{"runtime"}, Metric: "exact"}, ""},
		{"an unknown field", `{"alpah": 0.05}`, GatePolicy{}, `json: unknown field "alpah"`},
		{"a wrong type", `{"allowPartial": "yes"}`, GatePolicy{}, "allowPartial"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got GatePolicy
			err := json.Unmarshal([]byte(tt.in), &got)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, tt.wantErr)
				}
				if strings.Contains(tt.wantErr, "disagree") && !errors.Is(err, derrors.ErrInvalid) {
					t.Errorf("error %v is not ErrInvalid", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("policy (-want +got):\n%s", diff)
			}
		})
	}

	// Nested, as in a gate request, the strictness and the alias hold.
	var req struct {
		Policy GatePolicy `json:"policy"`
	}
	if err := json.Unmarshal([]byte(`{"policy": {"allow_partial": true}}`), &req); err != nil || !req.Policy.AllowPartial {
		t.Errorf("nested allow_partial: %+v, %v; want AllowPartial", req.Policy, err)
	}
	if err := json.Unmarshal([]byte(`{"policy": {"allowPartail": true}}`), &req); err == nil || !strings.Contains(err.Error(), `unknown field "allowPartail"`) {
		t.Errorf("nested typo: error %v, want unknown field", err)
	}
	var typ *json.UnmarshalTypeError
	if err := json.Unmarshal([]byte(`{"policy": {"alpha": "0.05"}}`), &req); !errors.As(err, &typ) || typ.Field != "policy.alpha" {
		t.Errorf("nested wrong type: error %v, want a type error naming policy.alpha", err)
	}

	// A policy is written with allowPartial, and reads back the same.
	b, err := json.Marshal(GatePolicy{AllowPartial: true, FDRAlpha: ptr(0.1)})
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"fdrAlpha":0.1,"allowPartial":true}`; string(b) != want {
		t.Errorf("marshalled %s, want %s", b, want)
	}
	var back GatePolicy
	if err := json.Unmarshal(b, &back); err != nil || !back.AllowPartial || back.FDRAlpha == nil {
		t.Errorf("round trip: %+v, %v", back, err)
	}
}

// A decision decoded from its JSON is the decision: the power and the
// policy survive the round trip, as svc gate reads them.
func TestDecisionJSONRoundTrip(t *testing.T) {
	ok := same(30, "PPP")
	dec, err := Gate(card("b", ok), card("c", with(ok, "caa", "FFF"), harness2), GatePolicy{FDRAlpha: ptr(0.1), AllowPartial: true})
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(dec)
	if err != nil {
		t.Fatal(err)
	}
	var back Decision
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(dec, back); diff != "" {
		t.Errorf("round trip (-want +got):\n%s", diff)
	}
	if !strings.Contains(string(b), `"power":{"caseTests":30,"trialsPerSide":3,"minPValue":`) {
		t.Errorf("the decision's JSON lacks its power: %s", b)
	}
}
