package trace

import (
	"svc/internal/domain/eval"
	"svc/internal/domain/graders"
	"svc/internal/domain/registry"
)

// SourceImport is the trajectory source of a pushed trace (POST
// /scorecards/ingest), and the origin source of the child run graded from
// it: such a run is never dispatched to a driver, its case activity grades
// the sealed trace instead (see Imported).
const SourceImport = "import"

// Imported reports whether run is a batch's child made from an ingested
// trace: its trace is sealed in the ledger at submit, and its case
// activity grades that copy rather than running a harness.
func Imported(run eval.Run) bool {
	return run.Origin != nil && run.Origin.Source == SourceImport
}

// DefaultIngestGraders grade an ingested trace whose case declares no
// graders (each trace of a `_traces` batch): measurements of its tool
// calls and cost, without a verdict, since nothing says what passing is;
// a case with an expected answer adds the answer grader that compares it
// (graders.ForCase).
var DefaultIngestGraders = []registry.Grader{{ID: graders.KindToolCalls}, {ID: graders.KindUSD}}

// IngestResult is the CaseResult of spec §2.7 for a trace this service
// did not run, graded from its sealed copy (events). The batch's grading
// plan is applied as for a managed run so that the two diff and gate
// against each other: the trace-only graders (tool_calls, usd, span) are
// re-derived from the events, the answer graders read the trace's final
// answer (its last assistant message) and exit_code reads 0 (there is no
// process; a trace that was delivered counts as one that ended). Its
// submitter vouches for it: provenance attestation self_reported, source
// ingested, so the evidence reads partial.
func IngestResult(run eval.Run, p Dispatch, events []eval.TraceEvent) *eval.CaseResult {
	var c registry.EvalCase
	if run.Case != nil {
		c = *run.Case
	}
	if events == nil {
		events = []eval.TraceEvent{}
	}
	r := &eval.CaseResult{
		Harness:         p.Harness.String(),
		CaseID:          run.CaseID,
		EvidenceVersion: eval.EvidenceVersion,
		Provenance:      &eval.Provenance{Attestation: eval.AttestationSelfReported, Source: eval.SourceIngested, CaseDigest: p.CaseDigest, HarnessDigest: p.HarnessDigest},
		Trace:           events,
	}
	ev, u := eval.Extract(events, "")
	r.Evidence, r.Usage = &ev, &u
	r.Snapshot = &eval.Snapshot{Kind: "prompt", Prompt: taskText(c.Task), Output: ev.FinalAnswer}
	gs := graders.ForCase(c, p.Graders, DefaultIngestGraders)
	r.Scores = []eval.Score{}
	if !p.Ungraded {
		r.Scores = graders.Grade(gs, graders.Input{Case: c, FinalAnswer: ev.FinalAnswer, Trace: events, Usage: u})
	}
	r.Pass = allPass(r.Scores)
	return r
}
