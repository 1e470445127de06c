package scoring

import (
	"slices"
	"strings"

	"svc/internal/domain/eval"
)

// Verdicts of a (case, trial).
const (
	VerdictPass    = "pass"
	VerdictFail    = "fail"
	VerdictError   = "error"   // nothing could judge it: not dispatched, cancelled, or no usable score
	VerdictPending = "pending" // the run has not finished
)

// Verdict bases: what decided a verdict. Score bases join with "+"
// ("graders+judges", "graders+judges:skipped").
const (
	BasisGraders       = "graders"
	BasisJudges        = "judges"
	BasisJudgesSkipped = "judges:skipped" // every judge score was a skip, so no judge decided
	BasisRun           = "run"            // the scores passed but the run failed, or there were no scores
	BasisDispatch      = "dispatch"       // the run failed without a result
	BasisCancelled     = "cancelled"
	BasisPending       = "pending"
	BasisPolicyMetrics = "policy:metrics" // the policy names metrics and the case has none of them
)

// Evidence readings (spec §2.7).
const (
	EvidenceComplete = "complete"
	EvidencePartial  = "partial"
	EvidenceMissing  = "missing"
	EvidenceDeferred = "deferred"
)

// JudgeMetricPrefix starts every metric a judge writes (spec §2.5).
const JudgeMetricPrefix = "judge:"

// SkipPrefix starts the detail of a skip score: a grader or judge that
// could not judge.
const SkipPrefix = "skipped:"

// IsSkip reports whether s is a skip score rather than a judgment.
func IsSkip(s eval.Score) bool { return strings.HasPrefix(s.Detail, SkipPrefix) }

// isJudge reports whether a judge (not a grader) wrote s.
func isJudge(s eval.Score) bool { return strings.HasPrefix(s.Metric, JudgeMetricPrefix) }

// CaseRow decides one (case, trial) under policy p from its child run.
//
// A run that has not finished is pending. A run without a result, or
// failed with DISPATCH_FAILED or INTERNAL (the service, not the agent,
// failed; as eval.Run.Outcome counts it), is an error decided by dispatch; a
// cancelled one is an error decided by cancellation. Otherwise the deciding
// scores are those with a pass verdict (only the policy's metrics when it
// names some), leaving out judge skips: a judge that could not run (no
// key, no dispatcher) did not judge, so it neither passes nor fails the
// case. Grader skips do decide (they fail), as they do for a single run.
// The case passes when every deciding score passes and the run succeeded.
// With no deciding score, the run status decides, except that a case whose
// only judgments were judge skips is an error, and a case lacking every
// metric the policy names is an error.
func CaseRow(p eval.VerdictPolicy, run eval.Run) eval.CaseRow {
	row := TallyRow(p, run)
	if len(row.Scores) > 0 {
		row.Outcomes = make(map[string]eval.Score, len(row.Scores))
		for _, s := range row.Scores {
			row.Outcomes[s.Metric] = s // the last score of a metric wins
		}
	}
	return row
}

// TallyRow is CaseRow without Outcomes, which Outcomes derives from the
// row's Scores when it is needed: what ending a batch holds of each of its
// children. A map of one score costs about 700 bytes, 70 MB at 100,000
// cases, for what the row's Scores already say.
func TallyRow(p eval.VerdictPolicy, run eval.Run) eval.CaseRow {
	row := eval.CaseRow{
		CaseID:   run.CaseID,
		Trial:    run.Trial,
		RunID:    run.ID,
		Status:   run.Status,
		Critical: IsCritical(p, run.CaseID),
		Error:    run.Error,
	}
	es := EvidenceStatusOf(run.Result, run.Status)
	row.EvidenceStatus = &es
	row.DurationMs = durationMs(run)
	if r := run.Result; r != nil {
		row.Scores = slices.Clone(r.Scores)
	}
	row.Verdict, row.VerdictBasis = verdict(p, run)
	row.CasePass = row.Verdict == VerdictPass
	return row
}

// verdict returns the verdict of a run and what decided it.
func verdict(p eval.VerdictPolicy, run eval.Run) (string, string) {
	if !run.Status.Terminal() {
		return VerdictPending, BasisPending
	}
	failed := run.Status == eval.StatusFailed
	if failed && run.Error != nil && run.Error.Code == eval.CodeCancelled {
		return VerdictError, BasisCancelled
	}
	if run.Result == nil || (failed && run.Error != nil && (run.Error.Code == eval.CodeDispatch || run.Error.Code == eval.CodeInternal)) {
		return VerdictError, BasisDispatch
	}
	var graders, judges, judgeSkips, anyFail bool
	var deciding int
	for _, s := range run.Result.Scores {
		if s.Pass == nil || (len(p.Metrics) > 0 && !slices.Contains(p.Metrics, s.Metric)) {
			continue
		}
		if isJudge(s) && IsSkip(s) {
			judgeSkips = true
			continue
		}
		deciding++
		if isJudge(s) {
			judges = true
		} else {
			graders = true
		}
		if !*s.Pass {
			anyFail = true
		}
	}
	var parts []string
	if graders {
		parts = append(parts, BasisGraders)
	}
	if judges {
		parts = append(parts, BasisJudges)
	} else if judgeSkips {
		parts = append(parts, BasisJudgesSkipped)
	}
	switch {
	case anyFail:
		return VerdictFail, strings.Join(parts, "+")
	case failed:
		return VerdictFail, BasisRun
	case deciding > 0:
		return VerdictPass, strings.Join(parts, "+")
	case judgeSkips:
		return VerdictError, BasisJudgesSkipped
	case len(p.Metrics) > 0:
		return VerdictError, BasisPolicyMetrics
	default:
		return VerdictPass, BasisRun
	}
}

// durationMs is how long the case ran: the process's measure, else the
// result's usage, else the run's own dispatch bounds.
func durationMs(run eval.Run) int64 {
	if r := run.Result; r != nil {
		if r.Process != nil && r.Process.DurationMs > 0 {
			return r.Process.DurationMs
		}
		if r.Usage != nil && r.Usage.DurationMs > 0 {
			return r.Usage.DurationMs
		}
	}
	if run.StartedAt != nil && run.FinishedAt != nil && run.FinishedAt.After(*run.StartedAt) {
		return run.FinishedAt.Sub(*run.StartedAt).Milliseconds()
	}
	return 0
}

// EvidenceStatusOf derives a case's evidence reading (spec §2.7). While the
// run is pending the trace is deferred. A result without a trace (no
// events inline and, from era 2, no trajectory reference) reads missing. An ingested
// result reads partial: this service did not watch it run. From evidence
// era 2 on, a trace is complete only once sealed in the ledger and partial
// before. Results of an earlier era (0, no era, or 1, before sealing
// existed) keep the historical reading: any trace is complete. The
// snapshot is complete when present.
func EvidenceStatusOf(r *eval.CaseResult, status eval.Status) eval.EvidenceStatus {
	es := eval.EvidenceStatus{Trace: EvidenceMissing, Snapshot: EvidenceMissing}
	if r != nil && r.Snapshot != nil {
		es.Snapshot = EvidenceComplete
	}
	switch {
	case !status.Terminal():
		es.Trace = EvidenceDeferred
	case r == nil || (len(r.Trace) == 0 && (r.TraceRef == "" || r.EvidenceVersion < eval.EvidenceVersion)):
		es.Trace = EvidenceMissing
	case r.Provenance.Ingested():
		es.Trace = EvidencePartial
	case r.EvidenceVersion >= eval.EvidenceVersion && r.TraceSealed:
		es.Trace = EvidenceComplete
	case r.EvidenceVersion >= eval.EvidenceVersion:
		es.Trace = EvidencePartial
	default:
		es.Trace = EvidenceComplete
	}
	return es
}
