package scoring

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strconv"

	"gonum.org/v1/gonum/stat"

	"svc/internal/domain/eval"
	"svc/internal/domain/registry"
)

// CasePassMetric is the synthetic summary metric of case verdicts.
const CasePassMetric = "casePass"

// Summarize aggregates a batch's rows per metric, over each row's outcome
// for that metric (one score per metric per case-trial, the last one).
//
// Count is every outcome; Skipped those that are not measurements (skip
// scores and non-finite values), which Mean, PassRate, P50 and P95 leave
// out: a skip's value 0 says nothing about the agent, and averaging it in
// would read as a worse agent when only a key was missing. PassRate is over
// measured scores with a pass verdict, nil when none has one. P50 and P95
// (gonum's empirical quantile) are given only for numeric metrics: those
// whose measured values are not all 0 or 1, since quantiles of a pass/fail
// metric say nothing its mean does not.
//
// The synthetic metric "casePass" (it replaces any real metric of that
// name) counts decided rows, those whose verdict is pass, fail or error:
// Mean and PassRate are the fraction that passed. An error counts against
// it, as batch progress counts it failed, so a harness that cannot be
// dispatched never raises the pass rate. Pending rows are left out.
func Summarize(rows []eval.CaseRow) map[string]eval.MetricSummary {
	type acc struct {
		count, skipped  int
		values          []float64
		verdicts, passd int
	}
	accs := map[string]*acc{}
	decided, passed := 0, 0
	for _, row := range rows {
		switch row.Verdict {
		case VerdictPass:
			decided++
			passed++
		case VerdictFail, VerdictError:
			decided++
		}
		for metric, s := range Outcomes(row) {
			a := accs[metric]
			if a == nil {
				a = &acc{}
				accs[metric] = a
			}
			a.count++
			if IsSkip(s) || math.IsNaN(s.Value) || math.IsInf(s.Value, 0) {
				a.skipped++
				continue
			}
			a.values = append(a.values, s.Value)
			if s.Pass != nil {
				a.verdicts++
				if *s.Pass {
					a.passd++
				}
			}
		}
	}
	out := make(map[string]eval.MetricSummary, len(accs)+1)
	for metric, a := range accs {
		ms := eval.MetricSummary{Count: a.count, Skipped: a.skipped}
		if len(a.values) > 0 {
			ms.Mean = stat.Mean(a.values, nil)
		}
		if a.verdicts > 0 {
			ms.PassRate = ptr(float64(a.passd) / float64(a.verdicts))
		}
		if numeric(a.values) {
			sorted := slices.Clone(a.values)
			slices.Sort(sorted)
			ms.P50 = ptr(stat.Quantile(0.5, stat.Empirical, sorted, nil))
			ms.P95 = ptr(stat.Quantile(0.95, stat.Empirical, sorted, nil))
		}
		out[metric] = ms
	}
	if decided > 0 {
		rate := float64(passed) / float64(decided)
		out[CasePassMetric] = eval.MetricSummary{Count: decided, Mean: rate, PassRate: ptr(rate)}
	}
	return out
}

// numeric reports whether a metric's values are measurements on a scale
// rather than pass/fail: not every value is 0 or 1.
func numeric(values []float64) bool {
	for _, v := range values {
		if v != 0 && v != 1 {
			return true
		}
	}
	return false
}

func ptr(f float64) *float64 { return &f }

// Outcomes returns a row's scores by metric, the last one of a metric
// winning; from Scores when the row carries no Outcomes.
func Outcomes(row eval.CaseRow) map[string]eval.Score {
	if row.Outcomes != nil || len(row.Scores) == 0 {
		return row.Outcomes
	}
	m := make(map[string]eval.Score, len(row.Scores))
	for _, s := range row.Scores {
		m[s.Metric] = s
	}
	return m
}

// ScorePlaneDigest returns "sha256:<64 hex>" over the sorted (caseId,
// trial, metric, value, pass) tuples of every score of rows (Scores, or
// Outcomes when a row carries no Scores): equal digests mean equal
// judgments. Details, grader ids and verdicts are left out: a judge's
// prose may differ between equal judgments, and verdicts follow from the
// scores and the policy, which is sealed on its own. Values are written in
// Go's shortest exact form, as strings, so the digest does not depend on
// JSON's number rules (and -0 is 0); the document hashed is the canonical
// JSON array of [caseId, trial, metric, value, pass|null] arrays.
func ScorePlaneDigest(rows []eval.CaseRow) string {
	type tuple struct {
		caseID string
		trial  int
		metric string
		value  string
		pass   string // "true", "false" or "null"
	}
	var ts []tuple
	for _, row := range rows {
		scores := row.Scores
		if len(scores) == 0 {
			for _, s := range row.Outcomes {
				scores = append(scores, s)
			}
		}
		for _, s := range scores {
			t := tuple{caseID: row.CaseID, trial: row.Trial, metric: s.Metric, value: "0", pass: "null"}
			if s.Value != 0 {
				t.value = strconv.FormatFloat(s.Value, 'g', -1, 64)
			}
			if s.Pass != nil {
				t.pass = strconv.FormatBool(*s.Pass)
			}
			ts = append(ts, t)
		}
	}
	slices.SortFunc(ts, func(a, b tuple) int {
		return cmp.Or(cmp.Compare(a.caseID, b.caseID), cmp.Compare(a.trial, b.trial),
			cmp.Compare(a.metric, b.metric), cmp.Compare(a.value, b.value), cmp.Compare(a.pass, b.pass))
	})
	doc := make([][]any, len(ts))
	for i, t := range ts {
		var pass any
		if t.pass != "null" {
			pass = t.pass == "true"
		}
		doc[i] = []any{t.caseID, t.trial, t.metric, t.value, pass}
	}
	canon, err := registry.CanonicalJSON(doc)
	if err != nil {
		// Strings, ints, booleans and null only: encoding cannot fail.
		panic(fmt.Sprintf("scoring: canonical JSON of the score plane: %v", err))
	}
	return registry.Digest(canon)
}
