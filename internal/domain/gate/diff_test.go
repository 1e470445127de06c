package gate

import (
	"encoding/json"
	"errors"
	"maps"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"svc/internal/domain/eval"
	"svc/internal/domain/registry"
	"svc/internal/domain/scoring"
	"svc/internal/platform/derrors"
)

func TestDiffTransitions(t *testing.T) {
	tests := []struct {
		base, cand string // trial letters; "" means absent
		want       string
		bp, bt     int
		cp, ct     int
	}{
		{"P", "F", ChangeBroke, 1, 1, 0, 1},
		{"F", "P", ChangeFixed, 0, 1, 1, 1},
		{"P", "P", ChangeStillPassing, 1, 1, 1, 1},
		{"F", "F", ChangeStillFailing, 0, 1, 0, 1},
		{"E", "P", ChangeFixed, 0, 1, 1, 1}, // an error counts as a failure
		{"P", "E", ChangeBroke, 1, 1, 0, 1},
		{"PPF", "PFF", ChangeBroke, 2, 3, 1, 3},        // majority lost
		{"PPP", "PPF", ChangeStillPassing, 3, 3, 2, 3}, // still a majority
		{"PF", "PP", ChangeFixed, 1, 2, 2, 2},          // a tie is not a majority
		{"PP", "PF", ChangeBroke, 2, 2, 1, 2},
		{"P.", "F", ChangeBroke, 1, 1, 0, 1}, // pending trials are not counted
		{"", "P", ChangeAdded, 0, 0, 1, 1},
		{"P", "", ChangeRemoved, 1, 1, 0, 0},
		{"P", "..", ChangeRemoved, 1, 1, 0, 0}, // nothing decided is absent
		{"..", "F", ChangeAdded, 0, 0, 0, 1},
	}
	base, cand := map[string]string{}, map[string]string{}
	var want []Transition
	for i, tt := range tests {
		id := caseName(i)
		if tt.base != "" {
			base[id] = tt.base
		}
		if tt.cand != "" {
			cand[id] = tt.cand
		}
		want = append(want, Transition{CaseID: id, Change: tt.want, BaselinePasses: tt.bp, BaselineTrials: tt.bt,
			CandidatePasses: tt.cp, CandidateTrials: tt.ct})
	}
	d, err := Diff(card("sc_base", base), card("sc_cand", cand, harness2))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, d.CaseTransitions); diff != "" {
		t.Errorf("transitions (-want +got):\n%s", diff)
	}
	if d.Comparability != ComparabilityPartial {
		t.Errorf("comparability %q with added and removed cases, want partial", d.Comparability)
	}
}

func TestDiffCriticalAndChangedCases(t *testing.T) {
	cases := map[string]string{"auth-login": "P", "auth-logout": "P", "billing": "P", "search": "P"}
	base := card("sc_base", cases, withPolicy(critical(t, "billing")))
	cand := card("sc_cand", cases, harness2, func(sc *eval.Scorecard) {
		p, err := scoring.ComposePolicy(scoring.DefaultPolicy(), []eval.CaseMatcher{{Prefix: "auth-"}})
		if err != nil {
			t.Fatal(err)
		}
		withPolicy(p)(sc)
		sc.Manifest.Cases["search"] = digest("case search, edited")
	})
	d, err := Diff(base, cand)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string][2]bool{}
	for _, tr := range d.CaseTransitions {
		got[tr.CaseID] = [2]bool{tr.Critical, tr.CaseChanged}
	}
	want := map[string][2]bool{
		"auth-login":  {true, false}, // the candidate's prefix
		"auth-logout": {true, false},
		"billing":     {true, false}, // the baseline's marker survives the candidate dropping it
		"search":      {false, true},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("[critical, caseChanged] by case (-want +got):\n%s", diff)
	}
	// Critical markers decide no verdict: the policy axis is held.
	if d.Experiment[AxisPolicy] != Held {
		t.Errorf("policy axis %q when only critical markers differ, want held", d.Experiment[AxisPolicy])
	}
}

func TestDiffExperimentAxes(t *testing.T) {
	cases := map[string]string{"a": "P", "b": "F"}
	allHeld := map[string]string{AxisDataset: Held, AxisHarness: Treatment, AxisGrading: Held,
		AxisJudges: Held, AxisPolicy: Held, AxisRuntime: Held}
	judge := func(id, version, d string) eval.SealedJudge {
		return eval.SealedJudge{ID: id, Version: version, Digest: digest(d)}
	}
	withJudges := func(js ...eval.SealedJudge) func(*eval.Scorecard) {
		return func(sc *eval.Scorecard) { sc.Manifest.Judges = js }
	}
	rescore := func(js ...eval.SealedJudge) func(*eval.Scorecard) {
		return func(sc *eval.Scorecard) {
			sc.Scoring = append(sc.Scoring, eval.ScoringRevision{Revision: 2, Kind: "rescore", Judges: js})
		}
	}
	tests := []struct {
		name       string
		base, cand []func(*eval.Scorecard)
		want       map[string]string // axes that differ from allHeld
		compare    string
		unresolved []string
	}{
		{name: "only the harness differs", compare: ComparabilityFull},
		{name: "same harness (an A/A run)", cand: []func(*eval.Scorecard){func(sc *eval.Scorecard) {
			sc.Harness, sc.Manifest.Harness = registry.Ref{ID: "h", Version: "1"}, digest("harness h@1")
		}}, want: map[string]string{AxisHarness: Held}, compare: ComparabilityFull},
		{name: "harness reference differs without manifests", base: []func(*eval.Scorecard){noManifest}, cand: []func(*eval.Scorecard){noManifest},
			want:    map[string]string{AxisDataset: Unverified, AxisGrading: Unverified, AxisJudges: Unverified, AxisRuntime: Unverified},
			compare: ComparabilityFull},
		{name: "different dataset", cand: []func(*eval.Scorecard){func(sc *eval.Scorecard) { sc.Dataset.ID = "other" }},
			want: map[string]string{AxisDataset: ConfoundDifferentDataset}, compare: ComparabilityNone},
		{name: "new dataset version", cand: []func(*eval.Scorecard){func(sc *eval.Scorecard) {
			sc.Dataset.Version, sc.Manifest.Dataset = "2", digest("dataset ds@2")
		}}, want: map[string]string{AxisDataset: ConfoundDatasetChanged}, compare: ComparabilityPartial},
		{name: "legacy 16-hex dataset stamp of the same content", base: []func(*eval.Scorecard){func(sc *eval.Scorecard) {
			sc.Manifest.Dataset = strings.TrimPrefix(digest("dataset ds@1"), registry.DigestPrefix)[:16]
		}}, compare: ComparabilityFull},
		{name: "no dataset digest: the cases decide", base: []func(*eval.Scorecard){noDatasetDigest},
			cand: []func(*eval.Scorecard){noDatasetDigest, func(sc *eval.Scorecard) { sc.Manifest.Cases["a"] = digest("other a") }},
			want: map[string]string{AxisDataset: ConfoundDatasetChanged}, compare: ComparabilityPartial},
		{name: "no dataset digest, same cases", base: []func(*eval.Scorecard){noDatasetDigest}, cand: []func(*eval.Scorecard){noDatasetDigest},
			compare: ComparabilityFull},
		{name: "a case's graders changed", cand: []func(*eval.Scorecard){func(sc *eval.Scorecard) {
			sc.Manifest.GradingCases["b"] = digest("graders b, stricter")
		}}, want: map[string]string{AxisGrading: ConfoundGradingChanged}, compare: ComparabilityPartial},
		{name: "batch graders on one side", cand: []func(*eval.Scorecard){func(sc *eval.Scorecard) {
			sc.Manifest.GradingCases, sc.Manifest.GradingPlan = nil, digest("batch plan")
		}}, want: map[string]string{AxisGrading: ConfoundGradingChanged}, compare: ComparabilityPartial},
		{name: "batch graders on both sides, same plan", base: []func(*eval.Scorecard){batchPlan}, cand: []func(*eval.Scorecard){batchPlan},
			compare: ComparabilityFull},
		{name: "ungraded experiment against a graded batch", cand: []func(*eval.Scorecard){func(sc *eval.Scorecard) {
			sc.Orchestration = &eval.Orchestration{Ungraded: true}
		}}, want: map[string]string{AxisGrading: ConfoundGradingChanged}, compare: ComparabilityPartial},
		{name: "same judges", base: []func(*eval.Scorecard){withJudges(judge("tone", "1", "tone@1"))},
			cand: []func(*eval.Scorecard){withJudges(judge("tone", "1", "tone@1"))}, compare: ComparabilityFull},
		{name: "another judge version", base: []func(*eval.Scorecard){withJudges(judge("tone", "1", "tone@1"))},
			cand: []func(*eval.Scorecard){withJudges(judge("tone", "2", "tone@2"))},
			want: map[string]string{AxisJudges: ConfoundJudgesChanged}, compare: ComparabilityPartial},
		{name: "an extra judge", base: []func(*eval.Scorecard){withJudges(judge("tone", "1", "tone@1"))},
			cand: []func(*eval.Scorecard){withJudges(judge("tone", "1", "tone@1"), judge("facts", "1", "facts@1"))},
			want: map[string]string{AxisJudges: ConfoundJudgesChanged}, compare: ComparabilityPartial},
		{name: "re-scored with another version", base: []func(*eval.Scorecard){withJudges(judge("tone", "1", "tone@1"))},
			cand: []func(*eval.Scorecard){withJudges(judge("tone", "1", "tone@1")), rescore(judge("tone", "2", "registry tone@2"))},
			want: map[string]string{AxisJudges: ConfoundJudgesChanged}, compare: ComparabilityPartial},
		{name: "re-scored with the same version: seals of two kinds", base: []func(*eval.Scorecard){withJudges(judge("tone", "1", "tone@1"))},
			cand: []func(*eval.Scorecard){withJudges(judge("tone", "1", "tone@1")), rescore(judge("tone", "1", "registry tone@1"))},
			want: map[string]string{AxisJudges: Unverified}, compare: ComparabilityFull},
		{name: "both re-scored alike", base: []func(*eval.Scorecard){withJudges(judge("tone", "1", "tone@1")), rescore(judge("tone", "2", "registry tone@2"))},
			cand:    []func(*eval.Scorecard){withJudges(judge("tone", "1", "tone@1")), rescore(judge("tone", "2", "registry tone@2"))},
			compare: ComparabilityFull},
		{name: "policy names other metrics", cand: []func(*eval.Scorecard){withPolicy(eval.VerdictPolicy{ID: "strict", Version: "1", Metrics: []string{"exact"}})},
			want: map[string]string{AxisPolicy: ConfoundPolicyChanged}, compare: ComparabilityPartial},
		{name: "unresolvable policy", cand: []func(*eval.Scorecard){unresolvablePolicy},
			want: map[string]string{AxisPolicy: Unverified}, compare: ComparabilityNone, unresolved: []string{SideCandidate}},
		{name: "served resolution says unresolvable", base: []func(*eval.Scorecard){func(sc *eval.Scorecard) {
			sc.PolicyResolution = &eval.PolicyResolution{Status: scoring.PolicyUnresolvable, Reason: "digest mismatch"}
		}}, want: map[string]string{AxisPolicy: Unverified}, compare: ComparabilityNone, unresolved: []string{SideBaseline}},
		{name: "legacy batch without a stamp against the default policy", base: []func(*eval.Scorecard){func(sc *eval.Scorecard) {
			sc.VerdictPolicy = nil
		}}, compare: ComparabilityFull},
		{name: "another runtime", cand: []func(*eval.Scorecard){func(sc *eval.Scorecard) { sc.Manifest.Runtime = "k8s" }},
			want: map[string]string{AxisRuntime: ConfoundRuntimeChanged}, compare: ComparabilityPartial},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, err := Diff(card("sc_base", cases, tt.base...), card("sc_cand", cases, append([]func(*eval.Scorecard){harness2}, tt.cand...)...))
			if err != nil {
				t.Fatal(err)
			}
			want := map[string]string{}
			for k, v := range allHeld {
				want[k] = v
			}
			for k, v := range tt.want {
				want[k] = v
			}
			if diff := cmp.Diff(want, d.Experiment); diff != "" {
				t.Errorf("experiment (-want +got):\n%s", diff)
			}
			if d.Comparability != tt.compare {
				t.Errorf("comparability %q, want %q", d.Comparability, tt.compare)
			}
			wantUnres := tt.unresolved
			if wantUnres == nil {
				wantUnres = []string{}
			}
			if diff := cmp.Diff(wantUnres, d.PolicyUnresolvable); diff != "" {
				t.Errorf("policyUnresolvable (-want +got):\n%s", diff)
			}
		})
	}
}

func noManifest(sc *eval.Scorecard) {
	sc.Manifest = nil
	sc.VerdictPolicy = nil // a batch from before seals: legacy default
	sc.Scoring = nil       // and before scoring revisions
}

func noDatasetDigest(sc *eval.Scorecard) { sc.Manifest.Dataset = "" }

func batchPlan(sc *eval.Scorecard) {
	sc.Manifest.GradingCases, sc.Manifest.GradingPlan = nil, digest("batch plan")
}

func TestDiffNoCommonCases(t *testing.T) {
	d, err := Diff(card("sc_base", map[string]string{"a": "P"}), card("sc_cand", map[string]string{"b": "P"}, harness2))
	if err != nil {
		t.Fatal(err)
	}
	if d.Comparability != ComparabilityNone {
		t.Errorf("comparability %q with no case on both sides, want none", d.Comparability)
	}
}

func TestDiffMetrics(t *testing.T) {
	base := card("sc_base", map[string]string{"a": "P", "b": "P", "c": "P", "d": "F"}, func(sc *eval.Scorecard) {
		addScore(sc, "usd", 0.5, nil)
		addScore(sc, "legacy", 1, nil)
	})
	cand := card("sc_cand", map[string]string{"a": "P", "b": "F", "c": "F", "d": "F"}, harness2, func(sc *eval.Scorecard) {
		addScore(sc, "usd", 0.25, nil)
		addScore(sc, "tone", 1, ptr(true))
	})
	d, err := Diff(base, cand)
	if err != nil {
		t.Fatal(err)
	}
	type row struct {
		Metric, Basis, Change string
		NotSignificant        bool
		Baseline, Candidate   float64
		PassRateDelta         *float64
		PairedCases           int
		PairedDelta           *float64
	}
	var got []row
	for _, m := range d.Metrics {
		got = append(got, row{m.Metric, m.Basis, m.Change, m.NotSignificant(), m.Baseline, m.Candidate, m.PassRateDelta, m.PairedCases, m.PairedDelta})
		if (m.CI != nil) != (m.PairedCases > 0) {
			t.Errorf("%s: CI %v with %d paired cases", m.Metric, m.CI, m.PairedCases)
		}
		if m.CI != nil && (m.CI.Lo > *m.PairedDelta || m.CI.Hi < *m.PairedDelta || m.CI.Resamples != BootstrapResamples || m.CI.Level != BootstrapLevel) {
			t.Errorf("%s: CI %+v does not hold the paired delta %v at level %v", m.Metric, *m.CI, *m.PairedDelta, BootstrapLevel)
		}
	}
	// Two of four cases broke: a resample of the other two is as likely
	// as 1 in 16, so the interval of casePass includes 0 and the drop is
	// not called a regression. Every case's usd fell by 0.25: changed.
	want := []row{
		{"casePass", BasisPassRate, MetricUnchanged, true, 0.75, 0.25, ptr(-0.5), 4, ptr(-0.5)},
		{"exact", BasisPassRate, MetricUnchanged, true, 0.75, 0.25, ptr(-0.5), 4, ptr(-0.5)},
		{"legacy", "", MetricRemoved, false, 1, 0, nil, 0, nil},
		{"tone", "", MetricAdded, false, 0, 1, nil, 0, nil},
		{"usd", BasisMean, MetricChanged, false, 0.5, 0.25, nil, 4, ptr(-0.25)},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("metrics (-want +got):\n%s", diff)
	}
	for _, m := range d.Metrics[:2] {
		if m.CI.Lo >= 0 || m.CI.Hi < 0 {
			t.Errorf("%s: interval %+v, want one that includes 0", m.Metric, *m.CI)
		}
	}
	if len(d.Regressions) != 0 || len(d.Improvements) != 0 {
		t.Errorf("regressions %v, improvements %v; want none: no interval excludes 0", d.Regressions, d.Improvements)
	}
	// The same pair always gives the same intervals.
	again, _ := Diff(base, cand)
	if diff := cmp.Diff(d, again); diff != "" {
		t.Errorf("a second diff of the same pair differs (-first +second):\n%s", diff)
	}
}

// TestDiffMetricChange: a metric regressed, improved or changed only when
// its paired interval excludes 0; else unchanged, and NotSignificant when
// its delta is not 0.
func TestDiffMetricChange(t *testing.T) {
	twenty := same(20, "P")
	halfBroken, halfFixed := maps.Clone(twenty), same(20, "F")
	for i := range 10 {
		halfBroken[caseName(i)] = "F"
		halfFixed[caseName(i)] = "P"
	}
	oneBroken := with(twenty, "caa", "F")
	tests := []struct {
		name           string
		base, cand     map[string]string
		change         string
		notSignificant bool
	}{
		{"half of 20 cases broke", twenty, halfBroken, MetricRegressed, false},
		{"half of 20 cases fixed", same(20, "F"), halfFixed, MetricImproved, false},
		{"one of 20 cases broke: the interval includes 0", twenty, oneBroken, MetricUnchanged, true},
		{"nothing moved", twenty, twenty, MetricUnchanged, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, err := Diff(card("b", tt.base), card("c", tt.cand, harness2))
			if err != nil {
				t.Fatal(err)
			}
			for _, m := range d.Metrics { // casePass and exact agree here
				if m.Change != tt.change || m.NotSignificant() != tt.notSignificant {
					t.Errorf("%s: change %s, not significant %v, want %s, %v (interval %+v)", m.Metric, m.Change, m.NotSignificant(), tt.change, tt.notSignificant, m.CI)
				}
			}
			want := 0
			if tt.change == MetricRegressed {
				want = 2
			}
			if len(d.Regressions) != want {
				t.Errorf("%d regressions, want %d", len(d.Regressions), want)
			}
		})
	}
	// A metric without verdicts whose mean moves in one case of twenty.
	d, err := Diff(card("b", twenty, func(sc *eval.Scorecard) { addScore(sc, "usd", 1, nil) }),
		card("c", twenty, harness2, func(sc *eval.Scorecard) {
			addScore(sc, "usd", 1, nil)
			sc.Scorecard[0].Outcomes["usd"] = eval.Score{Metric: "usd", Value: 3}
		}))
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range d.Metrics {
		if m.Metric == "usd" && (m.Change != MetricUnchanged || !m.NotSignificant()) {
			t.Errorf("usd: change %s, not significant %v, want unchanged (n.s.)", m.Change, m.NotSignificant())
		}
	}
}

// addScore gives every decided row of sc a score of metric, as if the
// batch had been scored with it (the revision's digest follows).
func addScore(sc *eval.Scorecard, metric string, v float64, pass *bool) {
	defer func() {
		if n := len(sc.Scoring); n > 0 {
			sc.Scoring[n-1].ScorePlaneDigest = scoring.ScorePlaneDigest(sc.Scorecard)
		}
	}()
	for i := range sc.Scorecard {
		r := &sc.Scorecard[i]
		if r.Verdict == scoring.VerdictPending {
			continue
		}
		s := eval.Score{GraderID: metric, Metric: metric, Value: v, Pass: pass}
		r.Scores = append(r.Scores, s)
		if r.Outcomes == nil {
			r.Outcomes = map[string]eval.Score{}
		}
		r.Outcomes[metric] = s
	}
}

func ptr[T any](v T) *T { return &v }

func TestDiffRefusesStoppedBatches(t *testing.T) {
	ok := card("sc_ok", map[string]string{"a": "P"})
	for _, status := range []eval.Status{eval.ScorecardCancelled, eval.ScorecardSuperseded} {
		stopped := card("sc_stopped", map[string]string{"a": "P"}, func(sc *eval.Scorecard) { sc.Status = status })
		for _, tt := range []struct {
			side       string
			base, cand eval.Scorecard
		}{{SideBaseline, stopped, ok}, {SideCandidate, ok, stopped}} {
			_, err := Diff(tt.base, tt.cand)
			if !errors.Is(err, derrors.ErrInvalid) {
				t.Errorf("%s %s: error %v, want ErrInvalid", status, tt.side, err)
				continue
			}
			if msg := err.Error(); !strings.Contains(msg, tt.side) || !strings.Contains(msg, "sc_stopped") || !strings.Contains(msg, string(status)) {
				t.Errorf("%s %s: error %q does not name the side, the id and the status", status, tt.side, msg)
			}
		}
	}
	// A running or failed batch can still be diffed; only Gate needs it finished.
	for _, status := range []eval.Status{eval.ScorecardRunning, eval.ScorecardFailed} {
		sc := card("sc_x", map[string]string{"a": "P"}, func(sc *eval.Scorecard) { sc.Status = status })
		if _, err := Diff(ok, sc); err != nil {
			t.Errorf("Diff with a %s candidate: %v", status, err)
		}
	}
}

// The JSON shape is what the API serves: empty lists are [], not null.
func TestDiffJSONShape(t *testing.T) {
	d, err := Diff(card("sc_base", nil), card("sc_cand", nil, harness2))
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"metrics", "regressions", "improvements", "caseTransitions", "policyUnresolvable"} {
		if _, isList := m[k].([]any); !isList {
			t.Errorf("%s = %v in %s, want a list", k, m[k], b)
		}
	}
	for _, k := range []string{"experiment", "comparability", "baseline", "candidate"} {
		if _, ok := m[k]; !ok {
			t.Errorf("%s missing from %s", k, b)
		}
	}
}
