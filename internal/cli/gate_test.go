package cli

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"svc/internal/client"
	"svc/internal/domain/eval"
	"svc/internal/domain/gate"
	"svc/internal/domain/registry"
	"svc/internal/service/scorecards"
)

func ptr[T any](v T) *T { return &v }

// blockDecision is a decision with one of everything the table shows: two
// significant regressions (one with a q-value above fdrAlpha would not
// be), a flaky critical case, a missing case, notes and a confound.
func blockDecision() gate.Decision {
	side := func(id, harness string) gate.SideRef {
		return gate.SideRef{ID: id, Kind: "scorecard", Status: eval.ScorecardSucceeded,
			Dataset: registry.Ref{ID: "qa", Version: "1.0.0"}, Harness: registry.Ref{ID: "answerer", Version: harness}, Cases: 5}
	}
	return gate.Decision{
		Outcome: gate.OutcomeBlock,
		Reasons: []gate.Reason{
			{Code: gate.ReasonRegressionsExceeded, Message: "2 significant case regressions, more than maxRegressions 0"},
			{Code: gate.ReasonCaseRegression, CaseID: "search-basic", Message: "case search-basic passed 3 of 3 baseline trials and 0 of 3 candidate trials (p = 0.05, q = 0.1)"},
			{Code: gate.ReasonCaseRegression, CaseID: "billing/refund", Message: "case billing/refund passed 5 of 5 baseline trials and 0 of 5 candidate trials (p = 0.003968, q = 0.01984)"},
		},
		Notes: []gate.Reason{
			{Code: gate.ReasonMissingCase, CaseID: "login-2", Message: "case login-2 has no decided trial in the candidate; allowed by allowPartial"},
			{Code: gate.NoteConfoundAllowed, Axis: gate.AxisRuntime, Message: "runtime: runtime_changed, allowed by allowConfounds"},
		},
		Tests: []gate.CaseTest{
			{CaseID: "billing/refund", BaselinePasses: 5, BaselineTrials: 5, CandidatePasses: 0, CandidateTrials: 5, PValue: 0.003968253968, QValue: ptr(0.01984126984), Significant: true, Critical: true, Change: gate.ChangeBroke},
			{CaseID: "flaky", BaselinePasses: 3, BaselineTrials: 3, CandidatePasses: 2, CandidateTrials: 3, PValue: 0.5, QValue: ptr(0.625), Change: gate.ChangeStillPassing},
			{CaseID: "search-basic", BaselinePasses: 3, BaselineTrials: 3, CandidatePasses: 0, CandidateTrials: 3, PValue: 0.05, QValue: ptr(0.1), Significant: true, Change: gate.ChangeBroke},
			{CaseID: "smalltalk", BaselinePasses: 1, BaselineTrials: 3, CandidatePasses: 3, CandidateTrials: 3, PValue: 1, QValue: ptr(1.0), Change: gate.ChangeFixed},
		},
		Regressions: 2,
		Metric: &gate.MetricDelta{Metric: "casePass", Baseline: 0.875, Candidate: 0.4167, Delta: -0.4583, BaselinePassRate: ptr(0.875), CandidatePassRate: ptr(0.4167), PassRateDelta: ptr(-0.4583),
			Basis: gate.BasisPassRate, Change: gate.MetricUnchanged, PairedCases: 4, PairedDelta: ptr(-0.4167), CI: &gate.Interval{Lo: -0.9167, Hi: 0.1667, Level: 0.95, Resamples: 2000}},
		Comparability: gate.ComparabilityPartial,
		Experiment: map[string]string{gate.AxisDataset: gate.Held, gate.AxisHarness: gate.Treatment, gate.AxisGrading: gate.Held,
			gate.AxisJudges: gate.Unverified, gate.AxisPolicy: gate.Held, gate.AxisRuntime: gate.ConfoundRuntimeChanged},
		Baseline:         side("sc_old", "1.2.0"),
		Candidate:        side("sc_new", "1.3.0"),
		BaselineScoring:  gate.ScoringPin{Revision: 1, ScorePlaneDigest: "sha256:23a1"},
		CandidateScoring: gate.ScoringPin{Revision: 2, ScorePlaneDigest: "sha256:6851"},
		Policy:           gate.GatePolicy{MaxRegressions: ptr(0), Alpha: 0.05, FDRAlpha: ptr(0.1), AllowConfounds: []string{"runtime"}, AllowPartial: true, Metric: "casePass"},
	}
}

// newcomerMessage is the underpowered note of the pair, as the
// gate writes it (gate.TestPowerNewcomerScenario holds the same text).
const newcomerMessage = "with 3 trials per side the smallest p-value a case can reach is 0.05; over 30 cases fdrAlpha 0.1 needs p <= 0.003333: " +
	"no case regression can be significant on its own (15 cases failing every trial together could be). " +
	"Use at least 6 trials per side, or gate on alpha 0.05 without fdrAlpha. " +
	"Until then only critical cases and the metric rule (casePass, minDelta 0.2) can block."

// underpoweredDecision is the pair under a policy that cannot
// reach its levels: 30 cases of 3 trials, 5 broken (p = 0.05, q = 0.3),
// fdrAlpha 0.1 and a minDelta above the drop. It passes, with the note.
func underpoweredDecision() gate.Decision {
	d := blockDecision()
	d.Outcome, d.Reasons, d.Regressions, d.Comparability = gate.OutcomePass, []gate.Reason{}, 0, gate.ComparabilityFull
	d.Experiment[gate.AxisRuntime], d.Experiment[gate.AxisJudges] = gate.Held, gate.Held
	d.Baseline.Cases, d.Candidate.Cases = 30, 30
	d.Notes = []gate.Reason{{Code: gate.NoteUnderpowered, Message: newcomerMessage}}
	d.Tests = nil
	for i := range 30 {
		ct := gate.CaseTest{CaseID: fmt.Sprintf("case-%02d", i+1), BaselinePasses: 3, BaselineTrials: 3, CandidatePasses: 3, CandidateTrials: 3,
			PValue: 1, QValue: ptr(1.0), Change: gate.ChangeStillPassing}
		if i < 5 {
			// The q-value as Benjamini-Hochberg computes it: 30/5 * 0.05.
			ct.CandidatePasses, ct.PValue, ct.QValue, ct.Change = 0, 0.05000000000000001, ptr(0.30000000000000004), gate.ChangeBroke
		}
		d.Tests = append(d.Tests, ct)
	}
	d.Metric = &gate.MetricDelta{Metric: "casePass", Baseline: 1, Candidate: 0.8333333333333334, Delta: -0.16666666666666663,
		BaselinePassRate: ptr(1.0), CandidatePassRate: ptr(0.8333333333333334), PassRateDelta: ptr(-0.16666666666666663),
		Basis: gate.BasisPassRate, Change: gate.MetricRegressed, PairedCases: 30, PairedDelta: ptr(-0.16666666666666666),
		CI: &gate.Interval{Lo: -0.30000000000000004, Hi: -0.03333333333333333, Level: 0.95, Resamples: 2000}}
	d.Power = &gate.Power{CaseTests: 30, TrialsPerSide: 3, MinPValue: 0.05000000000000001, RequiredPValue: 0.0033333333333333335,
		Underpowered: 30, TrialsNeeded: 6, JointRegressions: 15}
	d.Policy = gate.GatePolicy{MaxRegressions: ptr(0), MinDelta: 0.2, Alpha: 0.05, FDRAlpha: ptr(0.1), Metric: "casePass"}
	return d
}

// blockDiff is the diff of the same pair.
func blockDiff() gate.ScorecardDiff {
	d := blockDecision()
	return gate.ScorecardDiff{
		Baseline: d.Baseline, Candidate: d.Candidate,
		Metrics: []gate.MetricDelta{
			*d.Metric,
			{Metric: "cost", Baseline: 0.012, Candidate: 0.0185, Delta: 0.0065, Basis: gate.BasisMean, Change: gate.MetricChanged,
				PairedCases: 4, PairedDelta: ptr(0.006), CI: &gate.Interval{Lo: 0.001, Hi: 0.011, Level: 0.95, Resamples: 2000}},
			{Metric: "latency", Candidate: 1200, Change: gate.MetricAdded},
		},
		CaseTransitions: []gate.Transition{
			{CaseID: "billing/refund", Change: gate.ChangeBroke, BaselinePasses: 5, BaselineTrials: 5, CandidateTrials: 5, Critical: true},
			{CaseID: "flaky", Change: gate.ChangeStillPassing, BaselinePasses: 3, BaselineTrials: 3, CandidatePasses: 2, CandidateTrials: 3},
			{CaseID: "login-2", Change: gate.ChangeRemoved, BaselinePasses: 1, BaselineTrials: 1},
			{CaseID: "search-basic", Change: gate.ChangeBroke, BaselinePasses: 3, BaselineTrials: 3, CandidateTrials: 3},
			{CaseID: "smalltalk", Change: gate.ChangeFixed, BaselinePasses: 1, BaselineTrials: 3, CandidatePasses: 3, CandidateTrials: 3},
		},
		Experiment: d.Experiment, Comparability: d.Comparability,
	}
}

// TestRenderGate holds the human output in golden files: with the diff,
// without it (the decision alone), and for a pass.
func TestRenderGate(t *testing.T) {
	diff := blockDiff()
	pass := blockDecision()
	pass.Outcome, pass.Reasons, pass.Regressions = gate.OutcomePass, []gate.Reason{}, 0
	pass.Tests = []gate.CaseTest{{CaseID: "a", BaselinePasses: 3, BaselineTrials: 3, CandidatePasses: 3, CandidateTrials: 3, PValue: 1, Change: gate.ChangeStillPassing}}
	pass.Notes, pass.Policy.FDRAlpha = nil, nil
	pass.Metric = &gate.MetricDelta{Metric: "casePass", Baseline: 1, Candidate: 1, BaselinePassRate: ptr(1.0), CandidatePassRate: ptr(1.0), PassRateDelta: ptr(0.0),
		Basis: gate.BasisPassRate, Change: gate.MetricUnchanged, PairedCases: 1, PairedDelta: ptr(0.0), CI: &gate.Interval{Level: 0.95, Resamples: 2000}}
	for _, tc := range []struct {
		file string
		dec  gate.Decision
		diff *gate.ScorecardDiff
	}{
		{"gate_block.golden", blockDecision(), &diff},
		{"gate_block_nodiff.golden", blockDecision(), nil},
		{"gate_pass.golden", pass, nil},
		{"gate_underpowered.golden", underpoweredDecision(), nil},
	} {
		t.Run(tc.file, func(t *testing.T) {
			var b strings.Builder
			renderGate(&b, tc.dec, tc.diff)
			golden(t, tc.file, b.String())
		})
	}
}

// TestGatePolicyFlags: a policy file, then the flags given on the command
// line over it; a flag not given leaves the file's value.
func TestGatePolicyFlags(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "policy.json")
	if err := os.WriteFile(file, []byte(`{"maxRegressions": 1, "alpha": 0.01, "fdrAlpha": 0.2, "allowConfounds": ["runtime"], "allowPartial": true, "metric": "exact"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	alias := filepath.Join(dir, "alias.json") // the spec's spelling, kept as an alias
	if err := os.WriteFile(alias, []byte(`{"allow_partial": true}`), 0o644); err != nil {
		t.Fatal(err)
	}
	api := newFakeAPI(t, map[string]http.HandlerFunc{
		"POST /scorecards/gate": answer(200, gate.Decision{Outcome: gate.OutcomePass}),
	})
	for _, tc := range []struct {
		name string
		args []string
		want gate.GatePolicy
	}{
		{"no policy", nil, gate.GatePolicy{}},
		{"flags only", []string{"--alpha", "0.1", "--fdr-alpha", "0.05", "--max-regressions", "0", "--min-delta", "0.02", "--allow-confounds", "runtime, judges", "--allow-partial", "--metric", "exact"},
			gate.GatePolicy{Alpha: 0.1, FDRAlpha: ptr(0.05), MaxRegressions: ptr(0), MinDelta: 0.02, AllowConfounds: []string{"runtime", "judges"}, AllowPartial: true, Metric: "exact"}},
		{"file only", []string{"--policy", file},
			gate.GatePolicy{Alpha: 0.01, FDRAlpha: ptr(0.2), MaxRegressions: ptr(1), AllowConfounds: []string{"runtime"}, AllowPartial: true, Metric: "exact"}},
		{"flags override the file", []string{"--policy", file, "--max-regressions", "0", "--allow-partial=false", "--allow-confounds", ""},
			gate.GatePolicy{Alpha: 0.01, FDRAlpha: ptr(0.2), MaxRegressions: ptr(0), Metric: "exact"}},
		{"allow_partial in the file", []string{"--policy", alias}, gate.GatePolicy{AllowPartial: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"--baseline", "sc_a", "--candidate", "sc_b", "--json"}, tc.args...)
			_, errOut, code := invocation{env: map[string]string{client.EnvURL: api.srv.URL}}.run(t, "gate", RunGate, args...)
			if code != exitOK {
				t.Fatalf("exit %d, stderr %q", code, errOut)
			}
			var got scorecards.GateRequest
			if err := json.Unmarshal(api.last("POST", "/scorecards/gate").body, &got); err != nil {
				t.Fatal(err)
			}
			want := scorecards.GateRequest{Baseline: "sc_a", Candidate: "sc_b", Policy: tc.want}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("gate request (-want +got):\n%s", diff)
			}
		})
	}
}

// TestGateExitCodes: 0 pass; 1 block, blocked_missing, not_comparable;
// 2 for usage errors (before any request) and service errors.
func TestGateExitCodes(t *testing.T) {
	dir := t.TempDir()
	typo := filepath.Join(dir, "typo.json")
	if err := os.WriteFile(typo, []byte(`{"allowPartail": true}`), 0o644); err != nil {
		t.Fatal(err)
	}
	disagree := filepath.Join(dir, "disagree.json")
	if err := os.WriteFile(disagree, []byte(`{"allowPartial": true, "allow_partial": false}`), 0o644); err != nil {
		t.Fatal(err)
	}
	underpowered := func(outcome string) gate.Decision {
		return gate.Decision{Outcome: outcome, Notes: []gate.Reason{{Code: gate.NoteUnderpowered, Message: newcomerMessage}}}
	}
	warning := "svc gate: warning: underpowered: " + newcomerMessage + "\n"
	base := []string{"--baseline", "sc_a", "--candidate", "sc_b"}
	for _, tc := range []struct {
		name        string
		status      int
		answer      any
		args        []string
		want        int
		wantRequest bool
		wantOut     string // prefix of stdout
		wantErr     string // substring of stderr
	}{
		{"pass", 200, gate.Decision{Outcome: gate.OutcomePass}, base, exitOK, true, "PASS: candidate", ""},
		{"block", 200, gate.Decision{Outcome: gate.OutcomeBlock}, base, exitVerdict, true, "BLOCK: candidate", ""},
		{"blocked_missing", 200, gate.Decision{Outcome: gate.OutcomeBlockedMissing}, base, exitVerdict, true, "BLOCKED_MISSING: candidate", ""},
		{"not_comparable", 200, gate.Decision{Outcome: gate.OutcomeNotComparable}, base, exitVerdict, true, "NOT_COMPARABLE: candidate", ""},
		{"block as JSON", 200, gate.Decision{Outcome: gate.OutcomeBlock}, append([]string{"--json"}, base...), exitVerdict, true, `{"outcome":"block"`, ""},
		{"unknown outcome", 200, gate.Decision{Outcome: "maybe"}, base, exitProblem, true, "MAYBE", `outcome "maybe"`},
		{"service refuses", 409, map[string]any{"error": map[string]string{"code": "CONFLICT", "message": "the candidate scorecard sc_b is running: gate a finished batch", "requestId": "req-7"}},
			base, exitProblem, true, "", "svc gate: the candidate scorecard sc_b is running: gate a finished batch (request req-7)\n"},
		{"no candidate", 0, nil, []string{"--baseline", "sc_a"}, exitProblem, false, "", "--baseline and --candidate are both required"},
		{"bad alpha", 0, nil, append([]string{"--alpha", "1.5"}, base...), exitProblem, false, "", "alpha: 1.5 must be in (0, 1)"},
		{"harness confound", 0, nil, append([]string{"--allow-confounds", "harness"}, base...), exitProblem, false, "", "harness is the treatment"},
		{"unknown policy field", 0, nil, append([]string{"--policy", typo}, base...), exitProblem, false, "", `unknown field "allowPartail"`},
		{"allowPartial and its alias disagree", 0, nil, append([]string{"--policy", disagree}, base...), exitProblem, false, "", "allowPartial true and its alias allow_partial false disagree"},
		{"underpowered pass warns", 200, underpowered(gate.OutcomePass), base, exitOK, true, "PASS: candidate", warning},
		{"underpowered pass warns with --json", 200, underpowered(gate.OutcomePass), append([]string{"--json"}, base...), exitOK, true, `{"outcome":"pass"`, warning},
		{"underpowered pass with --strict", 200, underpowered(gate.OutcomePass), append([]string{"--strict"}, base...), exitProblem, true, "PASS: candidate",
			warning + "svc gate: --strict: the policy cannot reach its levels with these trials (outcome pass); exit 2\n"},
		{"underpowered block with --strict", 200, underpowered(gate.OutcomeBlock), append([]string{"--strict"}, base...), exitProblem, true, "BLOCK: candidate", "--strict"},
		{"--strict and enough power", 200, gate.Decision{Outcome: gate.OutcomePass}, append([]string{"--strict"}, base...), exitOK, true, "PASS: candidate", ""},
		{"missing policy file", 0, nil, append([]string{"--policy", filepath.Join(dir, "none.json")}, base...), exitProblem, false, "", "no such file"},
		{"unknown flag", 0, nil, append([]string{"--alpah", "0.1"}, base...), exitProblem, false, "", "flag provided but not defined: -alpah"},
		{"positional", 0, nil, append([]string{"sc_c"}, base...), exitProblem, false, "", "unexpected arguments"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			routes := map[string]http.HandlerFunc{}
			if tc.status != 0 {
				routes["POST /scorecards/gate"] = answer(tc.status, tc.answer)
				routes["GET /scorecards/diff"] = answer(200, gate.ScorecardDiff{})
			}
			api := newFakeAPI(t, routes)
			out, errOut, code := invocation{env: map[string]string{client.EnvURL: api.srv.URL}}.run(t, "gate", RunGate, tc.args...)
			if code != tc.want {
				t.Errorf("exit %d, want %d\nstdout: %s\nstderr: %s", code, tc.want, out, errOut)
			}
			if !strings.HasPrefix(out, tc.wantOut) {
				t.Errorf("stdout %q, want it to start %q", out, tc.wantOut)
			}
			if !strings.Contains(errOut, tc.wantErr) || (tc.wantErr == "" && errOut != "") {
				t.Errorf("stderr %q, want %q in it (nothing when empty)", errOut, tc.wantErr)
			}
			if got := len(api.requests()) > 0; got != tc.wantRequest {
				t.Errorf("sent a request: %v, want %v", got, tc.wantRequest)
			}
		})
	}
}

// TestGateWithoutDiff: a diff that fails does not hide the decision or
// change the exit code; it is noted on stderr.
func TestGateWithoutDiff(t *testing.T) {
	api := newFakeAPI(t, map[string]http.HandlerFunc{
		"POST /scorecards/gate": answer(200, blockDecision()),
	})
	out, errOut, code := invocation{env: map[string]string{client.EnvURL: api.srv.URL}}.run(t, "gate", RunGate, "--baseline", "sc_old", "--candidate", "sc_new")
	if code != exitVerdict {
		t.Errorf("exit %d, want %d", code, exitVerdict)
	}
	if !strings.Contains(errOut, "the diff is unavailable") || !strings.Contains(errOut, "(request req-42)") {
		t.Errorf("stderr %q, want a note that the diff is unavailable, with the request id", errOut)
	}
	if !strings.Contains(out, "Transitions (cases on both sides): 2 broke, 1 fixed, 1 still passing") {
		t.Errorf("stdout lacks the transitions counted from the tests:\n%s", out)
	}
	req := api.last("GET", "/scorecards/diff")
	if req == nil {
		t.Fatal("no diff request")
	}
}
