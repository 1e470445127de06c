package judges

import (
	"context"
	"encoding/json"
	"fmt"

	"svc/auth"
	"svc/internal/domain/eval"
	"svc/internal/domain/judge"
	"svc/internal/domain/registry"
	"svc/internal/domain/scoring"
	"svc/internal/platform/derrors"
)

// POST /judges/preview (spec §4.4): the exact prompt a model-backed judge
// would send for one case, rendered by the same function the grader uses
// (judge.Render), with per-placeholder evidence, warnings and the
// coverage of the judge's requires. No model is called.

// PreviewRequest is the body of POST /judges/preview.
type PreviewRequest struct {
	// Spec is an inline judge (any kind, legacy ones included); exactly
	// one of Spec and Judge.
	Spec json.RawMessage `json:"spec"`
	// Judge names a registered judge {id, version} (version may be latest).
	Judge *registry.Ref `json:"judge"`
	// Rubric, when set, replaces the judge's rubric: text or {id, version}.
	Rubric *registry.RubricInput `json:"rubric"`
	// Evidence is the case to render over.
	Evidence EvidenceRequest `json:"evidence"`
}

// EvidenceRequest is source A {runId}, B {trace, prompt, output?} or C
// {harness, case, runtime?, waitSec?}.
type EvidenceRequest struct {
	Source string            `json:"source"`
	RunID  string            `json:"runId"`
	Trace  []eval.TraceEvent `json:"trace"`
	Prompt string            `json:"prompt"`
	Output string            `json:"output"`
	// Harness, Case and Runtime are source C's: the harness that runs the
	// one case, on a registered runtime or the deployment's local one.
	Harness *registry.Ref      `json:"harness"`
	Case    *registry.EvalCase `json:"case"`
	Runtime string             `json:"runtime"`
	// WaitSec bounds the wait for source C's run (default 120, max 600).
	WaitSec int `json:"waitSec"`
	// Slots bind custom evidence slots of a custom template by name.
	Slots map[string]string `json:"slots"`
}

// PreviewResult is the answer of POST /judges/preview.
type PreviewResult struct {
	Judge        string             `json:"judge"`
	Kind         registry.JudgeKind `json:"kind"`
	Source       string             `json:"source"`
	Effective    judge.Effective    `json:"effective"`
	Prompt       string             `json:"prompt"`
	Template     string             `json:"template"`
	Placeholders []judge.Slot       `json:"placeholders"`
	Warnings     []string           `json:"warnings"`
	Coverage     judge.Coverage     `json:"coverage"`
	// RunID is the run the evidence came from (source A, or the live
	// dispatch of source C).
	RunID string `json:"runId,omitempty"`
	// EvidenceStatus is the case's evidence reading (spec §2.7): a pasted
	// trace reads complete.
	EvidenceStatus eval.EvidenceStatus `json:"evidenceStatus"`
}

// Preview renders a judge's prompt over one case. source is the surface
// the request came through (origin.source of a live dispatch's run).
func (s *Service) Preview(ctx context.Context, p auth.Principal, req PreviewRequest, source string) (PreviewResult, error) {
	hasSpec := len(req.Spec) > 0 && string(req.Spec) != "null"
	var j *registry.JudgeSpec
	label := "inline"
	switch {
	case hasSpec && req.Judge != nil:
		return PreviewResult{}, derrors.Invalidf("send either spec (an inline judge) or judge {id, version}, not both")
	case hasSpec:
		spec, err := registry.Parse(registry.Judge, req.Spec, false)
		if err != nil {
			return PreviewResult{}, err
		}
		j = spec.Judge()
	case req.Judge != nil:
		if req.Judge.ID == "" || req.Judge.Version == "" {
			return PreviewResult{}, derrors.Invalidf("judge: want {id, version} of a registered judge (version may be latest)")
		}
		res, err := s.o.Registries.Resolve(ctx, p, registry.Judge, req.Judge.ID, req.Judge.Version)
		if err != nil {
			return PreviewResult{}, err
		}
		j, label = res.Spec.Judge(), res.Spec.ID()+"@"+res.Version
	default:
		return PreviewResult{}, derrors.Invalidf("spec or judge is required: an inline judge, or {id, version} of a registered one")
	}

	ev, err := s.evidence(ctx, p, req.Evidence, source)
	if err != nil {
		return PreviewResult{}, err
	}

	rubricIn := req.Rubric
	if rubricIn == nil {
		switch {
		case j.Model != nil:
			rubricIn = j.Model.Rubric
		case j.Harness != nil:
			rubricIn = j.Harness.Rubric
		}
	}
	if rubricIn != nil && rubricIn.Ref == nil && req.Rubric != nil && req.Rubric.Text == "" {
		return PreviewResult{}, derrors.Invalidf("rubric: the inline rubric must not be empty")
	}
	var rubric *registry.RubricSpec
	if rubricIn != nil && rubricIn.Ref != nil {
		if rubricIn.Ref.ID == "" || rubricIn.Ref.Version == "" {
			return PreviewResult{}, derrors.Invalidf("rubric: want the rubric text or {id, version} of a registered rubric")
		}
		res, err := s.o.Registries.Resolve(ctx, p, registry.Rubric, rubricIn.Ref.ID, rubricIn.Ref.Version)
		if err != nil {
			return PreviewResult{}, err
		}
		rubric = res.Spec.Rubric()
	}
	eff, err := judge.EffectiveValues(j, req.Rubric, rubric)
	if err != nil {
		return PreviewResult{}, err
	}
	out := PreviewResult{Judge: label, Kind: j.Kind, Source: req.Evidence.Source, Effective: eff,
		Coverage: judge.Cover(j.Requires, ev.Evidence), Placeholders: []judge.Slot{}, Warnings: []string{}}
	out.EvidenceStatus = eval.EvidenceStatus{Trace: scoring.EvidenceComplete, Snapshot: scoring.EvidenceComplete}
	if ev.Run != nil {
		out.RunID = ev.Run.ID
		out.EvidenceStatus = scoring.EvidenceStatusOf(ev.Run.Result, ev.Run.Status)
	}
	if len(out.Coverage.Missing) > 0 && out.EvidenceStatus.Trace != scoring.EvidenceComplete {
		out.Coverage.Warnings = append(out.Coverage.Warnings, fmt.Sprintf("the case's trace is %s: a missing requirement may be in the part of the trace that is not there", out.EvidenceStatus.Trace))
	}
	if j.Kind == registry.JudgeCode {
		out.Template = "none"
		out.Warnings = append(out.Warnings, "a code judge has no prompt: it reads the case, trace, snapshot and evidence as JSON (docs/judges.md); only its requirement coverage is previewed")
		return out, nil
	}
	bound, bindWarnings := s.o.Evidence.Resolve(ctx, eff, ev.Evidence)
	r := judge.Render(eff, bound)
	out.Prompt, out.Template, out.Placeholders, out.Warnings = r.Prompt, r.Template, r.Slots, append(r.Warnings, bindWarnings...)
	if j.Kind == registry.JudgeHarness {
		out.Warnings = append(out.Warnings, "a harness judge gives this prompt to its harness as the task of one run, and reads the run's final answer as the verdict")
	}
	return out, nil
}

// evidenceOf is the evidence of a preview or try, with the run it came
// from (sources A and C).
type evidenceOf struct {
	judge.Evidence
	// Run is the stored run (A) or the live dispatch's run (C); nil for a
	// pasted trace (B).
	Run *eval.Run
}

// evidenceFromRun is the evidence of a stored run's case and result.
func evidenceFromRun(run eval.Run, slots map[string]string) evidenceOf {
	ev := judge.Evidence{Slots: slots}
	if run.Case != nil {
		ev.Case = *run.Case
	}
	if run.Result != nil {
		ev.Trace, ev.Snapshot, ev.Evidence = run.Result.Trace, run.Result.Snapshot, run.Result.Evidence
	}
	return evidenceOf{Evidence: ev, Run: &run}
}

// evidence builds the evidence of a preview or try from its source.
func (s *Service) evidence(ctx context.Context, p auth.Principal, e EvidenceRequest, source string) (evidenceOf, error) {
	if e.Source != "C" && (e.Harness != nil || e.Case != nil || e.Runtime != "" || e.WaitSec != 0) {
		return evidenceOf{}, derrors.Invalidf("evidence.harness, case, runtime and waitSec belong to source C (a live one-case dispatch)")
	}
	switch e.Source {
	case "A":
		if e.RunID == "" {
			return evidenceOf{}, derrors.Invalidf("evidence.runId is required with source A: the id of a stored run or scorecard case result")
		}
		if e.Trace != nil || e.Prompt != "" || e.Output != "" {
			return evidenceOf{}, derrors.Invalidf("evidence of source A takes runId only; trace, prompt and output belong to source B")
		}
		run, err := s.o.Runs.Get(ctx, p, e.RunID)
		if err != nil {
			return evidenceOf{}, err
		}
		return evidenceFromRun(run, e.Slots), nil
	case "B":
		if e.RunID != "" {
			return evidenceOf{}, derrors.Invalidf("evidence of source B takes trace and prompt, not runId (that is source A)")
		}
		if e.Trace == nil {
			return evidenceOf{}, derrors.Invalidf("evidence.trace is required with source B: a TraceEvent[] array ([] for none)")
		}
		if err := eval.ValidateTrace(e.Trace); err != nil {
			return evidenceOf{}, derrors.Invalidf("evidence.%v", err)
		}
		x, _ := eval.Extract(e.Trace, e.Output)
		return evidenceOf{Evidence: judge.Evidence{
			Case:     registry.EvalCase{ID: "preview", Task: e.Prompt},
			Trace:    e.Trace,
			Snapshot: &eval.Snapshot{Kind: "prompt", Prompt: e.Prompt, Output: e.Output},
			Evidence: &x,
			Slots:    e.Slots,
		}}, nil
	case "C":
		return s.liveEvidence(ctx, p, e, source)
	case "":
		return evidenceOf{}, derrors.Invalidf(`evidence.source is required: "A" (a stored run: runId), "B" (trace and prompt) or "C" (a live dispatch: harness and case)`)
	}
	return evidenceOf{}, derrors.Invalidf(`evidence.source %q: want "A" (a stored run: runId), "B" (trace and prompt) or "C" (a live dispatch: harness and case)`, clipText(e.Source))
}

// clipText bounds a client value quoted back in an error.
func clipText(s string) string {
	if len(s) > 32 {
		return s[:32] + "…"
	}
	return s
}
