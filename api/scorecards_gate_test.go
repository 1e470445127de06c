package api_test

import (
	"fmt"
	"math"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"svc/api/apitest"
	"svc/internal/domain/eval"
	"svc/internal/domain/gate"
	"svc/internal/domain/manifest"
	"svc/internal/domain/query"
	"svc/internal/domain/registry"
	"svc/internal/domain/scoring"
	"svc/internal/domain/trace"
	"svc/store"
	"svc/store/records"
)

// The comparison routes (issue #7): diff, gate, query and the frozen
// analysis bundle, over batches seeded in the store as a finished
// workflow leaves them: sealed manifests over registered inputs, canonical
// child runs of several trials, the summary and an initial scoring
// revision. The statistics themselves are tested in package gate; here,
// what the routes answer and refuse.

// gateCases are the cases of the dataset the comparison tests register.
var gateCases = []string{"a", "b", "c", "d"}

// gateTrials is the trials per case: 3 broken of 3 is the fewest that
// reach p = 0.05 (docs/gate.md, "How many trials?").
const gateTrials = 3

// gateInputs are the registered inputs the comparison batches seal.
type gateInputs struct {
	ds     registry.Spec
	h1, h2 registry.Spec // two versions of harness h: the treatment
}

// registerGateInputs registers, in tn, ds@1.0.0 with gateCases and the
// harness h at 1.0.0 and 2.0.0 (different images, so different digests).
func (e *testEnv) registerGateInputs(t testing.TB, tn tenant) gateInputs {
	t.Helper()
	specs := []struct {
		kind registry.Kind
		path string
		json string
	}{
		{registry.Dataset, "/datasets", datasetSpec("ds", "1.0.0", gateCases...)},
		{registry.Harness, "/harnesses", harnessSpec("h", "1.0.0", "img:1")},
		{registry.Harness, "/harnesses", harnessSpec("h", "2.0.0", "img:2")},
	}
	var parsed []registry.Spec
	for _, s := range specs {
		e.register(t, tn.key, s.path, s.json, http.StatusCreated)
		spec, err := registry.Parse(s.kind, []byte(s.json), false)
		if err != nil {
			t.Fatal(err)
		}
		parsed = append(parsed, spec)
	}
	return gateInputs{ds: parsed[0], h1: parsed[1], h2: parsed[2]}
}

// seedSealedBatch stores a succeeded batch of ws over in.ds and h, sealed
// as Submit seals it, whose case c passed passes[c] of its gateTrials
// trials (the first ones), with the summary and the initial scoring
// revision a finished workflow records. It returns the batch as stored
// and its per-case table.
func (e *testEnv) seedSealedBatch(t testing.TB, ws string, in gateInputs, h registry.Spec, passes map[string]int, opts ...scorecardOpt) (eval.Scorecard, []eval.CaseRow) {
	t.Helper()
	now := e.clock.Now()
	m, err := manifest.Seal(manifest.Input{Dataset: in.ds, Cases: in.ds.Dataset().Cases, Harness: h, Policy: scoring.DefaultPolicy()}, now)
	if err != nil {
		t.Fatal(err)
	}
	stamp := scoring.Stamp(scoring.DefaultPolicy())
	policy, res := scoring.ResolvePolicy(&stamp, &m)
	if res.Status != scoring.PolicyResolved {
		t.Fatalf("the seeded policy resolves %+v, want resolved", res)
	}
	// The children need the batch's id before the batch is stored, since
	// its summary and revision are computed from them.
	stub := eval.Scorecard{ID: eval.NewID("sc"), Tenant: ws, Harness: h.Ref(), CreatedBy: "operator"}
	var children []eval.Run
	var rows []eval.CaseRow
	for _, c := range gateCases {
		for trial := range gateTrials {
			run := e.childRun(stub, c, trial, trial < passes[c])
			children = append(children, run)
			rows = append(rows, scoring.CaseRow(policy, run))
		}
	}
	seal := func(sc *eval.Scorecard) {
		sc.ID, sc.Dataset, sc.Harness, sc.Manifest = stub.ID, in.ds.Ref(), h.Ref(), &m
		sc.Trials, sc.Progress.Total = gateTrials, len(gateCases)*gateTrials
		sc.Orchestration.CaseIDs = slices.Clone(gateCases)
		sc.Summary = scoring.Summarize(rows)
		sc.Scoring = []eval.ScoringRevision{{Revision: 1, Kind: "initial", Judges: []eval.SealedJudge{},
			ScorePlaneDigest: scoring.ScorePlaneDigest(rows), AnalysisRef: records.AnalysisRef(stub.ID, 1), CreatedAt: now}}
	}
	sc := e.seedScorecard(t, ws, append([]scorecardOpt{batchStatus(eval.ScorecardSucceeded), seal}, opts...)...)
	for _, run := range children {
		e.storeRun(t, run)
	}
	return sc, rows
}

// Pass counts of the comparison batches: the broken candidate loses b and
// c entirely; d fails in both.
var (
	baselinePasses = map[string]int{"a": 3, "b": 3, "c": 3, "d": 1}
	brokenPasses   = map[string]int{"a": 3, "b": 0, "c": 0, "d": 1}
)

// gateScenario is a workspace with a baseline over h@1.0.0, a candidate
// over h@2.0.0 that breaks b and c, and one over h@2.0.0 that passes
// exactly what the baseline passes.
type gateScenario struct {
	a                       tenant
	in                      gateInputs
	base, broken, identical eval.Scorecard
	baseRows                []eval.CaseRow
}

func (e *testEnv) gateScenario(t testing.TB) gateScenario {
	t.Helper()
	s := gateScenario{a: e.tenant(t, "gate")}
	s.in = e.registerGateInputs(t, s.a)
	s.base, s.baseRows = e.seedSealedBatch(t, s.a.ws, s.in, s.in.h1, baselinePasses)
	s.broken, _ = e.seedSealedBatch(t, s.a.ws, s.in, s.in.h2, brokenPasses)
	s.identical, _ = e.seedSealedBatch(t, s.a.ws, s.in, s.in.h2, baselinePasses)
	return s
}

func diffPath(baseline, candidate string) string {
	q := url.Values{}
	if baseline != "" {
		q.Set("baseline", baseline)
	}
	if candidate != "" {
		q.Set("candidate", candidate)
	}
	return "/scorecards/diff?" + q.Encode()
}

func gateBody(baseline, candidate, policy string) string {
	if policy == "" {
		return fmt.Sprintf(`{"baseline":%q,"candidate":%q}`, baseline, candidate)
	}
	return fmt.Sprintf(`{"baseline":%q,"candidate":%q,"policy":%s}`, baseline, candidate, policy)
}

// heldButHarness is the experiment of two batches that differ only in
// their harness version.
var heldButHarness = map[string]string{"dataset": "held", "harness": "treatment", "grading": "held",
	"judges": "held", "policy": "held", "runtime": "held"}

func TestDiffScorecards(t *testing.T) {
	e := newEnv(t)
	s := e.gateScenario(t)
	res := e.do(t, http.MethodGet, diffPath(s.base.ID, s.broken.ID), "", bearer(s.a.key))
	want(t, res, http.StatusOK, "GET /scorecards/diff")
	d := decode[gate.ScorecardDiff](t, res)

	wantTransitions := []gate.Transition{
		{CaseID: "a", Change: "still_passing", BaselinePasses: 3, BaselineTrials: 3, CandidatePasses: 3, CandidateTrials: 3},
		{CaseID: "b", Change: "broke", BaselinePasses: 3, BaselineTrials: 3, CandidatePasses: 0, CandidateTrials: 3},
		{CaseID: "c", Change: "broke", BaselinePasses: 3, BaselineTrials: 3, CandidatePasses: 0, CandidateTrials: 3},
		{CaseID: "d", Change: "still_failing", BaselinePasses: 1, BaselineTrials: 3, CandidatePasses: 1, CandidateTrials: 3},
	}
	if diff := cmp.Diff(wantTransitions, d.CaseTransitions); diff != "" {
		t.Errorf("caseTransitions (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(heldButHarness, d.Experiment); diff != "" || d.Comparability != gate.ComparabilityFull {
		t.Errorf("comparability %q, want full; experiment (-want +got):\n%s", d.Comparability, diff)
	}
	wantSides := []gate.SideRef{
		{ID: s.base.ID, Kind: eval.KindScorecard, Status: eval.ScorecardSucceeded, Dataset: s.in.ds.Ref(), Harness: s.in.h1.Ref(),
			Scoring:          gate.ScoringPin{Revision: 1, ScorePlaneDigest: s.base.Scoring[0].ScorePlaneDigest},
			PolicyResolution: eval.PolicyResolution{Status: scoring.PolicyResolved}, Cases: 4},
		{ID: s.broken.ID, Kind: eval.KindScorecard, Status: eval.ScorecardSucceeded, Dataset: s.in.ds.Ref(), Harness: s.in.h2.Ref(),
			Scoring:          gate.ScoringPin{Revision: 1, ScorePlaneDigest: s.broken.Scoring[0].ScorePlaneDigest},
			PolicyResolution: eval.PolicyResolution{Status: scoring.PolicyResolved}, Cases: 4},
	}
	if diff := cmp.Diff(wantSides, []gate.SideRef{d.Baseline, d.Candidate}); diff != "" {
		t.Errorf("sides (-want +got):\n%s", diff)
	}
	if len(d.PolicyUnresolvable) != 0 {
		t.Errorf("policyUnresolvable = %v, want none", d.PolicyUnresolvable)
	}

	// casePass falls from 10 of 12 to 4 of 12; the grader's metric with it.
	var casePass *gate.MetricDelta
	for i := range d.Metrics {
		if d.Metrics[i].Metric == scoring.CasePassMetric {
			casePass = &d.Metrics[i]
		}
	}
	if casePass == nil {
		t.Fatalf("metrics %+v lack casePass", d.Metrics)
	}
	approx := cmpopts.EquateApprox(0, 1e-12)
	// Over 4 paired cases the interval of a 0.5 drop still reaches 0:
	// unchanged (not significant), neither a regression nor an improvement.
	if casePass.Change != gate.MetricUnchanged || !casePass.NotSignificant() || casePass.Basis != gate.BasisPassRate || casePass.PassRateDelta == nil ||
		!cmp.Equal(*casePass.PassRateDelta, -0.5, approx) || casePass.PairedCases != 4 || casePass.PairedDelta == nil ||
		!cmp.Equal(*casePass.PairedDelta, -0.5, approx) || casePass.CI == nil || casePass.CI.Resamples != gate.BootstrapResamples {
		t.Errorf("casePass = %+v, want unchanged (n.s.) on passRate by -0.5 over 4 paired cases, with an interval", *casePass)
	}
	if len(d.Regressions) != 0 || len(d.Improvements) != 0 {
		t.Errorf("improvements %v, regressions %v; want none (no interval excludes 0)", d.Improvements, d.Regressions)
	}

	// The same pair again reports the same interval: the bootstrap is seeded.
	again := decode[gate.ScorecardDiff](t, e.do(t, http.MethodGet, diffPath(s.base.ID, s.broken.ID), "", bearer(s.a.key)))
	if diff := cmp.Diff(d, again); diff != "" {
		t.Errorf("a second diff of the same pair differs (-first +second):\n%s", diff)
	}

	// Identical results: nothing broke, nothing regressed.
	same := decode[gate.ScorecardDiff](t, e.do(t, http.MethodGet, diffPath(s.base.ID, s.identical.ID), "", bearer(s.a.key)))
	for _, tr := range same.CaseTransitions {
		if tr.Change == gate.ChangeBroke || tr.Change == gate.ChangeFixed {
			t.Errorf("identical candidate: case %s %s", tr.CaseID, tr.Change)
		}
	}
	if len(same.Regressions) != 0 || len(same.Improvements) != 0 {
		t.Errorf("identical candidate: regressions %+v, improvements %+v; want none", same.Regressions, same.Improvements)
	}
}

func TestGateScorecards(t *testing.T) {
	e := newEnv(t)
	s := e.gateScenario(t)
	gateOf := func(what, body string) gate.Decision {
		t.Helper()
		res := e.do(t, http.MethodPost, "/scorecards/gate", body, bearer(s.a.key))
		want(t, res, http.StatusOK, what)
		return decode[gate.Decision](t, res)
	}
	codes := func(rs []gate.Reason) []string {
		var out []string
		for _, r := range rs {
			out = append(out, r.Code+":"+r.CaseID)
		}
		return out
	}

	t.Run("broken candidate blocks", func(t *testing.T) {
		dec := gateOf("gate the broken candidate", gateBody(s.base.ID, s.broken.ID, ""))
		if dec.Outcome != gate.OutcomeBlock || dec.Regressions != 2 {
			t.Errorf("outcome %q with %d regressions, want block with 2", dec.Outcome, dec.Regressions)
		}
		wantReasons := []string{"regressions_exceeded:", "case_regression:b", "case_regression:c"}
		if diff := cmp.Diff(wantReasons, codes(dec.Reasons)); diff != "" {
			t.Errorf("reasons (-want +got):\n%s", diff)
		}
		type testView struct {
			Case        string
			P           float64
			Significant bool
			Change      string
		}
		var tests []testView
		for _, ct := range dec.Tests {
			tests = append(tests, testView{ct.CaseID, ct.PValue, ct.Significant, ct.Change})
		}
		wantTests := []testView{{"a", 1, false, "still_passing"}, {"b", 0.05, true, "broke"}, {"c", 0.05, true, "broke"}, {"d", 0.8, false, "still_failing"}}
		if diff := cmp.Diff(wantTests, tests, cmpopts.EquateApprox(0, 1e-9)); diff != "" {
			t.Errorf("case tests (-want +got):\n%s", diff)
		}
		// The decision echoes the policy it applied, defaults filled in.
		zero := 0
		wantPolicy := gate.GatePolicy{Alpha: 0.05, MaxRegressions: &zero, Metric: scoring.CasePassMetric}
		if diff := cmp.Diff(wantPolicy, dec.Policy); diff != "" {
			t.Errorf("policy applied (-want +got):\n%s", diff)
		}
		wantPins := []gate.ScoringPin{{Revision: 1, ScorePlaneDigest: s.base.Scoring[0].ScorePlaneDigest},
			{Revision: 1, ScorePlaneDigest: s.broken.Scoring[0].ScorePlaneDigest}}
		if diff := cmp.Diff(wantPins, []gate.ScoringPin{dec.BaselineScoring, dec.CandidateScoring}); diff != "" {
			t.Errorf("scoring pins (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff(heldButHarness, dec.Experiment); diff != "" || dec.Comparability != gate.ComparabilityFull {
			t.Errorf("comparability %q, want full; experiment (-want +got):\n%s", dec.Comparability, diff)
		}
		if dec.Metric == nil || dec.Metric.Metric != scoring.CasePassMetric || dec.Metric.CI == nil {
			t.Errorf("metric = %+v, want casePass with its interval", dec.Metric)
		}
		for _, n := range dec.Notes {
			if n.Code == gate.NoteScoringDrift {
				t.Errorf("note %+v: the seeded rows hash to their revision", n)
			}
		}
	})

	t.Run("explicit alpha 0.05 is met by p = 0.05", func(t *testing.T) {
		dec := gateOf("gate with alpha 0.05", gateBody(s.base.ID, s.broken.ID, `{"alpha":0.05}`))
		if dec.Outcome != gate.OutcomeBlock || dec.Policy.Alpha != 0.05 || dec.Regressions != 2 {
			t.Errorf("outcome %q, alpha %v, regressions %d; want block at 0.05 with 2", dec.Outcome, dec.Policy.Alpha, dec.Regressions)
		}
	})

	t.Run("a stricter alpha does not count them", func(t *testing.T) {
		dec := gateOf("gate with alpha 0.01", gateBody(s.base.ID, s.broken.ID, `{"alpha":0.01}`))
		if dec.Regressions != 0 || slices.Contains(codes(dec.Reasons), "case_regression:b") {
			t.Errorf("alpha 0.01: %d regressions, reasons %v; want none significant", dec.Regressions, codes(dec.Reasons))
		}
	})

	t.Run("identical candidate passes", func(t *testing.T) {
		dec := gateOf("gate the identical candidate", gateBody(s.base.ID, s.identical.ID, `{}`))
		if dec.Outcome != gate.OutcomePass || len(dec.Reasons) != 0 || dec.Regressions != 0 || len(dec.Tests) != 4 {
			t.Errorf("outcome %q, reasons %v, regressions %d, %d tests; want pass, no reasons, 4 tests", dec.Outcome, codes(dec.Reasons), dec.Regressions, len(dec.Tests))
		}
	})

	// The gate reads and records nothing.
	for _, sc := range []eval.Scorecard{s.base, s.broken} {
		if got := e.storedScorecard(t, s.a.ws, sc.ID); got.Status != eval.ScorecardSucceeded || len(got.Scoring) != 1 {
			t.Errorf("after gating, %s is %s with %d revisions; want unchanged", sc.ID, got.Status, len(got.Scoring))
		}
	}
}

// TestGateScorecardsRefusals: what diff and gate refuse, and with what.
func TestGateScorecardsRefusals(t *testing.T) {
	e := newEnv(t)
	s := e.gateScenario(t)
	cancelled, _ := e.seedSealedBatch(t, s.a.ws, s.in, s.in.h2, baselinePasses, batchStatus(eval.ScorecardCancelled))
	superseded, _ := e.seedSealedBatch(t, s.a.ws, s.in, s.in.h2, baselinePasses, batchStatus(eval.ScorecardSuperseded))
	running, _ := e.seedSealedBatch(t, s.a.ws, s.in, s.in.h2, baselinePasses, batchStatus(eval.ScorecardRunning))
	base, cand := s.base.ID, s.broken.ID

	for _, tc := range []struct {
		name    string
		diff    string // the query of GET /scorecards/diff; "-" to skip the diff
		gate    string // the body of POST /scorecards/gate; "-" to skip the gate
		status  int
		mention string
	}{
		{"no ids", "", `{}`, 400, "baseline and candidate are required"},
		{"no candidate", "?baseline=" + base, `{"baseline":"` + base + `"}`, 400, "baseline and candidate are required"},
		{"no baseline", "?candidate=" + cand, `{"candidate":"` + cand + `"}`, 400, "baseline and candidate are required"},
		{"cancelled candidate", diffPath(base, cancelled.ID), gateBody(base, cancelled.ID, ""), 400, "cancelled"},
		{"cancelled baseline", diffPath(cancelled.ID, cand), gateBody(cancelled.ID, cand, ""), 400, "cancelled"},
		{"superseded candidate", diffPath(base, superseded.ID), gateBody(base, superseded.ID, ""), 400, "superseded"},
		{"unknown baseline", diffPath("sc_nope", cand), gateBody("sc_nope", cand, ""), 404, "sc_nope"},
		{"unknown candidate", diffPath(base, "sc_nope"), gateBody(base, "sc_nope", ""), 404, "sc_nope"},
		// The diff reads a running batch as it is; the gate waits for it.
		{"running candidate", "-", gateBody(base, running.ID, ""), 409, "running"},
		{"alpha 2", "-", gateBody(base, cand, `{"alpha":2}`), 400, "alpha"},
		{"alpha negative", "-", gateBody(base, cand, `{"alpha":-0.1}`), 400, "alpha"},
		{"fdrAlpha 1", "-", gateBody(base, cand, `{"fdrAlpha":1}`), 400, "fdrAlpha"},
		{"negative maxRegressions", "-", gateBody(base, cand, `{"maxRegressions":-1}`), 400, "maxRegressions"},
		{"negative minDelta", "-", gateBody(base, cand, `{"minDelta":-0.1}`), 400, "minDelta"},
		{"harness allowed as a confound", "-", gateBody(base, cand, `{"allowConfounds":["harness"]}`), 400, "treatment"},
		{"unknown axis", "-", gateBody(base, cand, `{"allowConfounds":["model"]}`), 400, "model"},
		{"unknown policy field", "-", gateBody(base, cand, `{"alpah":0.05}`), 400, "alpah"},
		{"unknown body field", "-", `{"baseline":"` + base + `","candidate":"` + cand + `","extra":1}`, 400, "extra"},
		// Every problem of a policy is listed at once.
		{"two problems", "-", gateBody(base, cand, `{"alpha":2,"maxRegressions":-1}`), 400, "maxRegressions: -1 is negative; alpha: 2"},
	} {
		if tc.diff != "-" {
			path := tc.diff
			if !strings.HasPrefix(path, "/") {
				path = "/scorecards/diff" + path
			}
			res := e.do(t, http.MethodGet, path, "", bearer(s.a.key))
			if res.Status != tc.status || !strings.Contains(string(res.Body), tc.mention) {
				t.Errorf("diff, %s: status %d, want %d mentioning %q; body %s", tc.name, res.Status, tc.status, tc.mention, res.Body)
			} else {
				want(t, res, tc.status, "diff, "+tc.name)
			}
		}
		if tc.gate != "-" {
			res := e.do(t, http.MethodPost, "/scorecards/gate", tc.gate, bearer(s.a.key))
			if res.Status != tc.status || !strings.Contains(string(res.Body), tc.mention) {
				t.Errorf("gate, %s: status %d, want %d mentioning %q; body %s", tc.name, res.Status, tc.status, tc.mention, res.Body)
			} else {
				want(t, res, tc.status, "gate, "+tc.name)
			}
		}
	}
	// The diff reads a running batch as it is now.
	want(t, e.do(t, http.MethodGet, diffPath(base, running.ID), "", bearer(s.a.key)), http.StatusOK, "diff against a running batch")
}

// TestGateScorecardsCrossTenant: these routes take their ids in the query
// or the body, which the route-table matrix of TestCrossTenant does not
// see; another workspace's batch must be as unknown as a missing one.
func TestGateScorecardsCrossTenant(t *testing.T) {
	e := newEnv(t)
	s := e.gateScenario(t)
	b := e.tenant(t, "gate-b")
	inB := e.registerGateInputs(t, b)
	own, _ := e.seedSealedBatch(t, b.ws, inB, inB.h1, baselinePasses)
	own2, _ := e.seedSealedBatch(t, b.ws, inB, inB.h2, brokenPasses)
	// B's own pair works: the 404s below are about tenancy.
	want(t, e.do(t, http.MethodGet, diffPath(own.ID, own2.ID), "", bearer(b.key)), http.StatusOK, "B diffs its own batches")
	want(t, e.do(t, http.MethodPost, "/scorecards/gate", gateBody(own.ID, own2.ID, ""), bearer(b.key)), http.StatusOK, "B gates its own batches")

	pairs := []struct{ name, base, cand string }{
		{"both A's", s.base.ID, s.broken.ID},
		{"A's baseline", s.base.ID, own.ID},
		{"A's candidate", own.ID, s.broken.ID},
	}
	for _, p := range pairs {
		for _, hs := range [][]header{{bearer(b.key)}, {bearer(b.key), selectWorkspace(s.a.ws)}} {
			res := e.do(t, http.MethodGet, diffPath(p.base, p.cand), "", hs...)
			want(t, res, http.StatusNotFound, "B diffs "+p.name)
			res = e.do(t, http.MethodPost, "/scorecards/gate", gateBody(p.base, p.cand, ""), hs...)
			want(t, res, http.StatusNotFound, "B gates "+p.name)
			if strings.Contains(string(res.Body), s.a.ws) {
				t.Errorf("B gates %s: the 404 names A's workspace: %s", p.name, res.Body)
			}
		}
	}
	// B's query never reads A's batches.
	res := e.do(t, http.MethodPost, "/scorecards/query", `{"groupBy":["harnessVersion"]}`, bearer(b.key))
	want(t, res, http.StatusOK, "B queries")
	if got := decode[query.Result](t, res); got.Scanned != 2 || got.Matched != 2 {
		t.Errorf("B's query scanned %d and matched %d batches, want its own 2", got.Scanned, got.Matched)
	}
}

func TestQueryScorecards(t *testing.T) {
	e := newEnv(t)
	a := e.tenant(t, "query")
	in := e.registerGateInputs(t, a)
	base, _ := e.seedSealedBatch(t, a.ws, in, in.h1, baselinePasses)
	broken, _ := e.seedSealedBatch(t, a.ws, in, in.h2, brokenPasses)
	// Neither is read: a cancelled batch never, a running one by default.
	e.seedSealedBatch(t, a.ws, in, in.h2, baselinePasses, batchStatus(eval.ScorecardCancelled))
	e.seedSealedBatch(t, a.ws, in, in.h2, baselinePasses, batchStatus(eval.ScorecardRunning))

	ratio := func(n, d float64) *float64 { v := n / d; return &v }
	for _, tc := range []struct {
		name string
		body string
		want query.Result
	}{
		{"by harness", `{"groupBy":["harness"]}`, query.Result{Metric: "casePass", Measure: "passRate", Viz: "table",
			GroupBy: []string{"harness"}, Scanned: 4, Matched: 2, Groups: 1,
			Rows: []query.Row{{Group: map[string]string{"harness": "h"}, Value: ratio(14, 24), Count: 2, Measured: 2}}}},
		{"by harness version", `{"groupBy":["harnessVersion"]}`, query.Result{Metric: "casePass", Measure: "passRate", Viz: "table",
			GroupBy: []string{"harnessVersion"}, Scanned: 4, Matched: 2, Groups: 2,
			Rows: []query.Row{
				{Group: map[string]string{"harnessVersion": "h@1.0.0"}, Value: ratio(10, 12), Count: 1, Measured: 1},
				{Group: map[string]string{"harnessVersion": "h@2.0.0"}, Value: ratio(4, 12), Count: 1, Measured: 1}}}},
		{"a bare filter value, the latest", `{"filters":{"harnessVersion":"2.0.0"},"measure":"latest"}`, query.Result{
			Metric: "casePass", Measure: "latest", Viz: "table", GroupBy: []string{}, Scanned: 4, Matched: 1, Groups: 1,
			Rows: []query.Row{{Group: map[string]string{}, Value: ratio(4, 12), Count: 1, Measured: 1, LatestID: broken.ID}}}},
		{"incomplete too, as bars", `{"groupBy":["status"],"includeIncomplete":true,"measure":"count","viz":"bars","sort":"-value"}`, query.Result{
			Metric: "casePass", Measure: "count", Viz: "bars", GroupBy: []string{"status"}, Scanned: 4, Matched: 3, Groups: 2,
			Rows: []query.Row{
				{Group: map[string]string{"status": "succeeded"}, Value: ratio(2, 1), Count: 2, Measured: 2},
				{Group: map[string]string{"status": "running"}, Value: ratio(1, 1), Count: 1, Measured: 1}},
			Series: []query.Series{{Name: "value", Points: []query.Point{{X: "succeeded", Y: ratio(2, 1)}, {X: "running", Y: ratio(1, 1)}}}}}},
		// A cell no batch fills is null in the row and a gap in its series.
		{"bars pivoted by status", `{"groupBy":["harnessVersion"],"pivotBy":"status","includeIncomplete":true,"viz":"bars"}`, query.Result{
			Metric: "casePass", Measure: "passRate", Viz: "bars", GroupBy: []string{"harnessVersion"}, PivotBy: "status",
			PivotValues: []string{"running", "succeeded"}, Scanned: 4, Matched: 3, Groups: 2,
			Rows: []query.Row{
				{Group: map[string]string{"harnessVersion": "h@1.0.0"}, Value: ratio(10, 12), Count: 1, Measured: 1,
					Pivot: map[string]*float64{"running": nil, "succeeded": ratio(10, 12)}},
				{Group: map[string]string{"harnessVersion": "h@2.0.0"}, Value: ratio(14, 24), Count: 2, Measured: 2,
					Pivot: map[string]*float64{"running": ratio(10, 12), "succeeded": ratio(4, 12)}}},
			Series: []query.Series{
				{Name: "running", Points: []query.Point{{X: "h@1.0.0", Y: nil}, {X: "h@2.0.0", Y: ratio(10, 12)}}},
				{Name: "succeeded", Points: []query.Point{{X: "h@1.0.0", Y: ratio(10, 12)}, {X: "h@2.0.0", Y: ratio(4, 12)}}}}}},
		// A metric no batch has: the row is there, its value null.
		{"unknown metric", `{"groupBy":["harness"],"metric":"nope"}`, query.Result{Metric: "nope", Measure: "passRate", Viz: "table",
			GroupBy: []string{"harness"}, Scanned: 4, Matched: 2, Groups: 1,
			Rows: []query.Row{{Group: map[string]string{"harness": "h"}, Value: nil, Count: 2, Measured: 0}}}},
		{"pivot by harness version", `{"groupBy":["dataset"],"pivotBy":"harnessVersion","search":"` + base.ID + `"}`, query.Result{
			Metric: "casePass", Measure: "passRate", Viz: "table", GroupBy: []string{"dataset"}, PivotBy: "harnessVersion",
			PivotValues: []string{"h@1.0.0"}, Scanned: 4, Matched: 1, Groups: 1,
			Rows: []query.Row{{Group: map[string]string{"dataset": "ds"}, Value: ratio(10, 12), Count: 1, Measured: 1,
				Pivot: map[string]*float64{"h@1.0.0": ratio(10, 12)}}}}},
	} {
		res := e.do(t, http.MethodPost, "/scorecards/query", tc.body, bearer(a.key))
		want(t, res, http.StatusOK, "query "+tc.name)
		if diff := cmp.Diff(tc.want, decode[query.Result](t, res), cmpopts.EquateApprox(0, 1e-12)); diff != "" {
			t.Errorf("query %s (-want +got):\n%s", tc.name, diff)
		}
	}

	for _, tc := range []struct{ name, body, mention string }{
		{"unknown dimension", `{"groupBy":["model"]}`, `groupBy[0]: unknown dimension \"model\"`},
		{"three dimensions", `{"groupBy":["harness","dataset","kind"]}`, "at most 2"},
		{"line without time", `{"groupBy":["harness"],"viz":"line"}`, "line needs day or week"},
		{"status not read", `{"filters":{"status":"failed"}}`, "needs includeIncomplete"},
		{"cancelled status", `{"filters":{"status":["cancelled"]}}`, "never queried"},
		{"filter of the wrong type", `{"filters":{"harnessId":3}}`, `field \"filters.harnessId\" must be a JSON array, not number`},
		{"filter value of the wrong type", `{"filters":{"harnessId":["h",3]}}`, `field \"filters.harnessId\" must be a JSON string, not number`},
		{"bad time", `{"filters":{"from":"yesterday"}}`, "filters.from"},
		{"limit too large", `{"limit":1001}`, "limit"},
		{"unknown field", `{"group":["harness"]}`, `unknown field \"group\"`},
	} {
		res := e.do(t, http.MethodPost, "/scorecards/query", tc.body, bearer(a.key))
		want(t, res, http.StatusBadRequest, "query, "+tc.name)
		if !strings.Contains(string(res.Body), tc.mention) {
			t.Errorf("query, %s: body %s does not mention %q", tc.name, res.Body, tc.mention)
		}
	}
}

// freezeAnalysis stores the analysis bundle of revision rev of sc over
// rows, as FinishScorecard and FinishScore do, and returns it.
func (e *testEnv) freezeAnalysis(t testing.TB, sc eval.Scorecard, rows []eval.CaseRow, rev eval.ScoringRevision) []byte {
	t.Helper()
	doc, digest, err := trace.BuildAnalysis(sc, rows, rev)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := e.store.PutAnalysis(t.Context(), store.Analysis{Workspace: sc.Tenant, ScorecardID: sc.ID,
		Revision: rev.Revision, Digest: digest, Doc: doc, CreatedAt: rev.CreatedAt}); err != nil {
		t.Fatalf("PutAnalysis: %v", err)
	}
	return doc
}

func init() {
	// Registered here rather than in api/scorecards_test.go (where
	// resourceFile points): the analysis route came with issue #7.
	frozen := func(t *testing.T, e *testEnv, a tenant) map[string]string {
		sc := e.seedScorecard(t, a.ws, batchStatus(eval.ScorecardSucceeded))
		e.freezeAnalysis(t, sc, nil, eval.ScoringRevision{Revision: 1, Kind: "initial", Judges: []eval.SealedJudge{},
			ScorePlaneDigest: scoring.ScorePlaneDigest(nil), CreatedAt: e.clock.Now()})
		return map[string]string{"id": sc.ID}
	}
	snapshot := func(t *testing.T, e *testEnv, a tenant, p map[string]string) any {
		res := e.do(t, http.MethodGet, "/scorecards/"+p["id"]+"/analysis", "", bearer(a.key))
		want(t, res, http.StatusOK, "GET /scorecards/:id/analysis")
		return string(res.Body)
	}
	registerCrossTenant("GET /scorecards/:id/analysis", crossTenantFixture{Setup: frozen, Snapshot: snapshot})
}

func TestScorecardAnalysis(t *testing.T) {
	e := newEnv(t)
	a := e.tenant(t, "analysis")
	in := e.registerGateInputs(t, a)
	sc, rows := e.seedSealedBatch(t, a.ws, in, in.h1, baselinePasses)
	bare, _ := e.seedSealedBatch(t, a.ws, in, in.h2, baselinePasses)
	rev1 := e.freezeAnalysis(t, sc, rows, sc.Scoring[0])

	get := func(query string, status int) []byte {
		t.Helper()
		res := e.do(t, http.MethodGet, "/scorecards/"+sc.ID+"/analysis"+query, "", bearer(a.key))
		want(t, res, status, "GET /scorecards/:id/analysis"+query)
		return res.Body
	}
	// The bundle is served byte for byte as frozen, whichever way it is named.
	for _, q := range []string{"", "?revision=1"} {
		if got := get(q, http.StatusOK); string(got) != string(rev1) {
			t.Errorf("GET analysis%s = %s, want the frozen bundle %s", q, got, rev1)
		}
	}
	got := decode[trace.Analysis](t, &apitest.Response{Body: rev1})
	if got.ScorecardID != sc.ID || got.Revision != 1 || len(got.Cases) != len(gateCases)*gateTrials ||
		got.Digests.ScorePlane != sc.Scoring[0].ScorePlaneDigest || got.Digests.Harness != sc.Manifest.Harness {
		t.Errorf("bundle = %+v, want revision 1 of %s with %d cases and its digests", got, sc.ID, len(gateCases)*gateTrials)
	}
	if ps := got.Summary[scoring.CasePassMetric].PassRate; ps == nil || math.Abs(*ps-10.0/12) > 1e-12 {
		t.Errorf("bundle summary casePass = %v, want 10/12", ps)
	}

	get("?revision=2", http.StatusNotFound)
	for _, q := range []string{"?revision=abc", "?revision=0", "?revision=-1", "?revision=1.5"} {
		get(q, http.StatusBadRequest)
	}
	want(t, e.do(t, http.MethodGet, "/scorecards/"+bare.ID+"/analysis", "", bearer(a.key)), http.StatusNotFound, "a batch without a frozen analysis")
	want(t, e.do(t, http.MethodGet, "/scorecards/sc_nope/analysis", "", bearer(a.key)), http.StatusNotFound, "an unknown batch")

	// A re-score freezes revision 2; revision 1 stays as it was.
	rescore := eval.ScoringRevision{Revision: 2, Kind: "rescore", Judges: []eval.SealedJudge{},
		ScorePlaneDigest: sc.Scoring[0].ScorePlaneDigest, CreatedAt: e.clock.Now(), CreatedBy: "operator"}
	rev2 := e.freezeAnalysis(t, sc, rows, rescore)
	if got := get("", http.StatusOK); string(got) != string(rev2) {
		t.Errorf("latest after a re-score = %s, want revision 2 %s", got, rev2)
	}
	if got := get("?revision=1", http.StatusOK); string(got) != string(rev1) {
		t.Errorf("revision 1 after a re-score = %s, want it unchanged %s", got, rev1)
	}
	get("?revision=3", http.StatusNotFound)
}
