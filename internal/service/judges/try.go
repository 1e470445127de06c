package judges

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"

	"svc/auth"
	"svc/internal/domain/eval"
	"svc/internal/domain/judge"
	"svc/internal/domain/registry"
	"svc/internal/integrations/modeljudge"
	"svc/internal/platform/derrors"
	"svc/internal/platform/reqid"
	"svc/internal/service/runs"
)

// POST /judges/try and /judges/:id/try (spec §4.4): one real execution of
// a judge over one case, from the same evidence as the preview (source A,
// a stored run; source B, a pasted trace). A model judge calls its model
// here and answers its scores inline; a code judge runs as a first-class
// run with trigger judge-preview (202 {runId}), placed on the judge's
// runtime, else the source case's placement, else 400. Judge problems are
// scores, as in a batch: a missing model, key or rubric is a skip score.

// TryRequest is the body of POST /judges/try (spec or judge) and of POST
// /judges/:id/try (version, default latest).
type TryRequest struct {
	Spec     json.RawMessage       `json:"spec"`
	Judge    *registry.Ref         `json:"judge"`
	Version  string                `json:"version"`
	Rubric   *registry.RubricInput `json:"rubric"`
	Evidence EvidenceRequest       `json:"evidence"`
}

// Verdict is the inline answer of a model or harness judge.
type Verdict struct {
	Judge  string             `json:"judge"`
	Kind   registry.JudgeKind `json:"kind"`
	Source string             `json:"source"`
	// Model is the binding the judge called.
	Model  string       `json:"model,omitempty"`
	Scores []eval.Score `json:"scores"`
	// Skipped is true when the judge could not judge (its one skip score
	// says why).
	Skipped bool              `json:"skipped"`
	Usage   *modeljudge.Usage `json:"usage,omitempty"`
	// RunID is the run a harness judge judged in.
	RunID string `json:"runId,omitempty"`
	// Warnings say which evidence could not be bound (internal/integrations/evidence).
	Warnings []string `json:"warnings,omitempty"`
}

// TryRun is the answer of a code judge: its run.
type TryRun struct {
	RunID   string   `json:"runId"`
	Status  string   `json:"status"`
	Logs    string   `json:"logs"`
	Runtime string   `json:"runtime,omitempty"`
	Run     eval.Run `json:"run"`
	Source  string   `json:"source"`
	Judge   string   `json:"judge"`
	Kind    string   `json:"kind"`
}

// TryResult is what a try answers: exactly one of Verdict (a model or
// harness judge's scores, 200) and Run (a code judge's try run, 202).
type TryResult struct {
	Verdict *Verdict
	Run     *TryRun
}

// Try runs the judge a POST /judges/try names (an inline spec or a
// registered {id, version}) once over one case. source is the surface the
// request came through (origin.source of the runs it makes).
func (s *Service) Try(ctx context.Context, p auth.Principal, req TryRequest, source string) (TryResult, error) {
	if req.Version != "" {
		return TryResult{}, derrors.Invalidf("version belongs to POST /judges/:id/try; here send judge {id, version} or an inline spec")
	}
	return s.try(ctx, p, req, source)
}

// TryRegistered runs the registered judge id (POST /judges/:id/try, at
// req.Version, default latest) once over one case.
func (s *Service) TryRegistered(ctx context.Context, p auth.Principal, id string, req TryRequest, source string) (TryResult, error) {
	if len(req.Spec) > 0 && string(req.Spec) != "null" || req.Judge != nil {
		return TryResult{}, derrors.Invalidf("the judge is the one in the path; send version (default latest), not spec or judge")
	}
	v := req.Version
	if v == "" {
		v = registry.LatestVersion
	}
	req.Judge = &registry.Ref{ID: id, Version: v}
	return s.try(ctx, p, req, source)
}

// try resolves the judge and the evidence and runs the judge: inline
// for model and harness judges, as a run for code judges.
func (s *Service) try(ctx context.Context, p auth.Principal, req TryRequest, source string) (TryResult, error) {
	hasSpec := len(req.Spec) > 0 && string(req.Spec) != "null"
	var (
		j     *registry.JudgeSpec
		canon json.RawMessage
		ref   *registry.Ref
	)
	label := "inline"
	team := "" // a registered judge's private team: its try is that team's
	switch {
	case hasSpec && req.Judge != nil:
		return TryResult{}, derrors.Invalidf("send either spec (an inline judge) or judge {id, version}, not both")
	case hasSpec:
		spec, err := registry.Parse(registry.Judge, req.Spec, false)
		if err != nil {
			return TryResult{}, err
		}
		j, canon = spec.Judge(), spec.Canonical()
	case req.Judge != nil:
		if req.Judge.ID == "" || req.Judge.Version == "" {
			return TryResult{}, derrors.Invalidf("judge: want {id, version} of a registered judge (version may be latest)")
		}
		res, err := s.o.Registries.Resolve(ctx, p, registry.Judge, req.Judge.ID, req.Judge.Version)
		if err != nil {
			return TryResult{}, err
		}
		r := res.Ref()
		j, canon, ref, label, team = res.Spec.Judge(), res.Spec.Canonical(), &r, r.String(), res.PrivateTeam
	default:
		return TryResult{}, derrors.Invalidf("spec or judge is required: an inline judge, or {id, version} of a registered one")
	}
	ev, err := s.evidence(ctx, p, req.Evidence, source)
	if err != nil {
		return TryResult{}, err
	}
	switch j.Kind {
	case registry.JudgeCode:
		if req.Rubric != nil {
			return TryResult{}, derrors.Invalidf("rubric: a code judge has no rubric; it reads the case, trace, snapshot and evidence as JSON")
		}
		run, err := s.tryCode(ctx, p, j, canon, ref, label, team, req.Evidence, ev, source)
		return TryResult{Run: run}, err
	case registry.JudgeModel:
		v, err := s.tryModel(ctx, p, j, label, req, ev.Evidence)
		return TryResult{Verdict: v}, err
	case registry.JudgeHarness:
		v, err := s.tryHarness(ctx, p, j, label, req, ev, source)
		return TryResult{Verdict: v}, err
	}
	return TryResult{Verdict: &Verdict{Judge: label, Kind: j.Kind, Source: req.Evidence.Source, Skipped: true,
		Scores: modeljudge.Skip(j.ID, fmt.Sprintf("judge %s has kind %q, which this version cannot run", j.ID, j.Kind))}}, nil
}

// tryEffective resolves a legacy judge's effective values for a try, as
// the caller sees its rubric: skip, when not empty, is the skip reason of
// a judge whose own rubric reference does not resolve (as in a batch); a
// rubric the request names that does not resolve is 404.
func (s *Service) tryEffective(ctx context.Context, p auth.Principal, j *registry.JudgeSpec, override *registry.RubricInput) (eff judge.Effective, skip string, err error) {
	rubricIn := override
	if rubricIn != nil && rubricIn.Ref == nil && rubricIn.Text == "" {
		return eff, "", derrors.Invalidf("rubric: the inline rubric must not be empty")
	}
	if rubricIn == nil {
		switch {
		case j.Model != nil:
			rubricIn = j.Model.Rubric
		case j.Harness != nil:
			rubricIn = j.Harness.Rubric
		}
	}
	var rubric *registry.RubricSpec
	if rubricIn != nil && rubricIn.Ref != nil {
		if rubricIn.Ref.ID == "" || rubricIn.Ref.Version == "" {
			return eff, "", derrors.Invalidf("rubric: want the rubric text or {id, version} of a registered rubric")
		}
		res, err := s.o.Registries.Resolve(ctx, p, registry.Rubric, rubricIn.Ref.ID, rubricIn.Ref.Version)
		switch {
		case errors.Is(err, derrors.ErrNotFound) && override == nil:
			// The judge's own reference: a skip, as in a batch.
			return eff, fmt.Sprintf("rubric %s@%s is not registered or not visible to you", rubricIn.Ref.ID, rubricIn.Ref.Version), nil
		case err != nil:
			return eff, "", err
		}
		rubric = res.Spec.Rubric()
	}
	eff, err = judge.EffectiveValues(j, override, rubric)
	return eff, "", err
}

// tryHarness runs a legacy harness judge once and answers its scores:
// its harness runs one case whose task is the rendered prompt (the
// preview's), as a run of the caller's placed on the judge's runtime, else
// the source case's placement, else the deployment's local runtime; the
// request waits for it (evidence.waitSec, default 120 s) and reads its
// final answer as the verdict. Judge problems (the harness gone, the run
// failing or still running at the deadline, no verdict) are skip scores.
func (s *Service) tryHarness(ctx context.Context, p auth.Principal, j *registry.JudgeSpec, label string, req TryRequest, ev evidenceOf, source string) (*Verdict, error) {
	out := &Verdict{Judge: label, Kind: j.Kind, Source: req.Evidence.Source}
	skip := func(reason string) (*Verdict, error) {
		out.Scores, out.Skipped = modeljudge.Skip(j.ID, reason), true
		return out, nil
	}
	eff, reason, err := s.tryEffective(ctx, p, j, req.Rubric)
	if err != nil {
		return nil, err
	}
	if reason != "" {
		return skip(reason)
	}
	wait := DefaultLiveWait
	if req.Evidence.Source != "C" {
		if wait, err = liveWait(req.Evidence.WaitSec); err != nil {
			return nil, err
		}
	}
	runtime := j.Harness.Runtime
	if runtime == "" && ev.Run != nil {
		runtime = ev.Run.Runtime
		if runtime == "" && ev.Run.Case != nil && ev.Run.Case.Placement != nil {
			runtime = ev.Run.Case.Placement.Target
		}
	}
	h := j.Harness.Harness
	if h.Version == "" {
		h.Version = registry.LatestVersion
	}
	bound, warnings := s.o.Evidence.Resolve(ctx, eff, ev.Evidence)
	out.Warnings = warnings
	rendered := judge.Render(eff, bound)
	run, done, err := s.dispatchAndWait(ctx, p, runs.SubmitRequest{Harness: h, Runtime: runtime,
		Case: registry.EvalCase{ID: "judge-" + j.ID, Task: rendered.Prompt}}, source, wait)
	switch {
	case errors.Is(err, derrors.ErrNotFound) && run.ID == "":
		what := fmt.Sprintf("the judge's harness %s@%s", h.ID, h.Version)
		if runtime != "" {
			what += fmt.Sprintf(" (or its runtime %q)", runtime)
		}
		return skip(what + " is not registered or not visible to you")
	case err != nil:
		return nil, err
	}
	out.RunID = run.ID
	if !done {
		return skip(fmt.Sprintf("harness %s (run %s) had not judged within %s; its answer is in GET /runs/%s when it ends", h, run.ID, wait, run.ID))
	}
	out.Scores = modeljudge.HarnessVerdict(j.ID, eff, ev.Case.Milestones, run)
	out.Skipped = len(out.Scores) == 1 && modeljudge.IsSkip(out.Scores[0])
	return out, nil
}

// tryModel calls a model judge's model once and answers its scores.
func (s *Service) tryModel(ctx context.Context, p auth.Principal, j *registry.JudgeSpec, label string, req TryRequest, ev judge.Evidence) (*Verdict, error) {
	out := &Verdict{Judge: label, Kind: j.Kind, Source: req.Evidence.Source, Model: j.Model.Model}
	skip := func(reason string) (*Verdict, error) {
		out.Scores, out.Skipped = modeljudge.Skip(j.ID, reason), true
		return out, nil
	}
	eff, reason, err := s.tryEffective(ctx, p, j, req.Rubric)
	if err != nil {
		return nil, err
	}
	if reason != "" {
		return skip(reason)
	}
	access, missing, err := s.o.Models.Resolve(ctx, p.Workspace, j.Model.Model)
	if err != nil {
		return nil, err
	}
	if missing != "" {
		return skip(missing)
	}
	b := access.Binding
	ep := modeljudge.Endpoint{Name: b.Name, Provider: b.Provider, BaseURL: b.BaseURL, Model: b.Model, Key: access.Key(),
		Client: access.Client, Timeout: b.Timeout(), Price: b.Cost}
	bound, warnings := s.o.Evidence.Resolve(ctx, eff, ev)
	out.Warnings = warnings
	scores, usage, err := modeljudge.ModelVerdict(ctx, j.ID, eff, bound, ep)
	if err != nil {
		return nil, err
	}
	attrs := []slog.Attr{reqid.Attr(ctx), slog.String("workspace", p.Workspace), slog.String("judge", j.ID), slog.String("model", b.Name)}
	if usage != nil {
		attrs = append(attrs, slog.Int64("inputTokens", usage.InputTokens), slog.Int64("outputTokens", usage.OutputTokens))
		if usage.Priced {
			attrs = append(attrs, slog.Float64("costUsd", usage.CostUSD))
		}
	}
	s.o.Logger.LogAttrs(ctx, slog.LevelInfo, "model judge try", attrs...)
	out.Scores, out.Usage = scores, usage
	out.Skipped = len(scores) == 1 && modeljudge.IsSkip(scores[0])
	return out, nil
}

// tryCode starts a code judge's try run: placed on the judge's runtime,
// else the source case's placement (a stored run's runtime, or the
// deployment's local runtime it ran on); a pasted trace has no case
// placement, so without a judge runtime it is 400.
func (s *Service) tryCode(ctx context.Context, p auth.Principal, j *registry.JudgeSpec, canon json.RawMessage, ref *registry.Ref, label, team string, src EvidenceRequest, ev evidenceOf, source string) (*TryRun, error) {
	runtime := j.Code.Runtime
	if runtime == "" {
		if ev.Run == nil {
			return nil, derrors.Invalidf("a code judge tried over a pasted trace needs a placement: set runtime on the judge (a registered runtime id), or use evidence source A or C, whose case's placement is used")
		}
		runtime = ev.Run.Runtime
		if runtime == "" && ev.Run.Case != nil && ev.Run.Case.Placement != nil {
			runtime = ev.Run.Case.Placement.Target
		}
	}
	rec := judge.TryRecord{Judge: canon, Source: src.Source,
		Input: judge.TryInput{Case: ev.Case, Trace: ev.Trace, Snapshot: ev.Snapshot, Evidence: ev.Evidence.Evidence}}
	if ref != nil {
		rec.Ref = ref.String()
	}
	// The try's input is its source's case and its code the judge's: it is
	// read by whom the source run is, else by the judge's private team.
	tr := runs.JudgeTryRequest{Judge: j, Ref: ref, Record: rec, Runtime: runtime, AudienceTeam: team}
	if ev.Run != nil && ev.Run.AudienceTeam != "" {
		tr.AudienceTeam = ev.Run.AudienceTeam
	}
	run, err := s.o.Runs.SubmitJudgeTry(ctx, p, tr, source)
	if err != nil {
		return nil, err
	}
	return &TryRun{RunID: run.ID, Status: string(run.Status), Logs: "/runs/" + run.ID + "/logs",
		Runtime: run.Runtime, Run: run, Source: src.Source, Judge: label, Kind: string(j.Kind)}, nil
}
