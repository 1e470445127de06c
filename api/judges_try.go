package api

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"

	"github.com/labstack/echo/v4"

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

func (s *Server) judgeTryRoutes() []Route {
	return []Route{
		{Method: http.MethodPost, Path: "/judges/try", Action: auth.ScorecardsRun,
			Summary: "Run a judge once over one case", Handler: s.tryJudge},
		{Method: http.MethodPost, Path: "/judges/:id/try", Action: auth.ScorecardsRun,
			Summary: "Run a registered judge once over one case", Handler: s.tryRegisteredJudge},
	}
}

// tryRequest is the body of POST /judges/try (spec or judge) and of POST
// /judges/:id/try (version, default latest).
type tryRequest struct {
	Spec     json.RawMessage       `json:"spec"`
	Judge    *registry.Ref         `json:"judge"`
	Version  string                `json:"version"`
	Rubric   *registry.RubricInput `json:"rubric"`
	Evidence previewEvidence       `json:"evidence"`
}

// tryResponse is the inline answer of a model or harness judge.
type tryResponse struct {
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

// tryRunResponse is the answer of a code judge: its run.
type tryRunResponse struct {
	RunID   string   `json:"runId"`
	Status  string   `json:"status"`
	Logs    string   `json:"logs"`
	Runtime string   `json:"runtime,omitempty"`
	Run     eval.Run `json:"run"`
	Source  string   `json:"source"`
	Judge   string   `json:"judge"`
	Kind    string   `json:"kind"`
}

func (s *Server) tryJudge(c echo.Context) error {
	var req tryRequest
	if err := Bind(c, &req); err != nil {
		return err
	}
	if req.Version != "" {
		return derrors.Invalidf("version belongs to POST /judges/:id/try; here send judge {id, version} or an inline spec")
	}
	return s.runTry(c, req)
}

func (s *Server) tryRegisteredJudge(c echo.Context) error {
	id, err := pathParam(c, "id")
	if err != nil {
		return err
	}
	var req tryRequest
	if err := Bind(c, &req); err != nil {
		return err
	}
	if len(req.Spec) > 0 && string(req.Spec) != "null" || req.Judge != nil {
		return derrors.Invalidf("the judge is the one in the path; send version (default latest), not spec or judge")
	}
	v := req.Version
	if v == "" {
		v = registry.LatestVersion
	}
	req.Judge = &registry.Ref{ID: id, Version: v}
	return s.runTry(c, req)
}

// runTry resolves the judge and the evidence and runs the judge: inline
// for model and harness judges, as a run for code judges.
func (s *Server) runTry(c echo.Context, req tryRequest) error {
	ctx, p := c.Request().Context(), principal(c)
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
		return derrors.Invalidf("send either spec (an inline judge) or judge {id, version}, not both")
	case hasSpec:
		spec, err := registry.Parse(registry.Judge, req.Spec, false)
		if err != nil {
			return err
		}
		j, canon = spec.Judge(), spec.Canonical()
	case req.Judge != nil:
		if req.Judge.ID == "" || req.Judge.Version == "" {
			return derrors.Invalidf("judge: want {id, version} of a registered judge (version may be latest)")
		}
		res, err := s.registries.Resolve(ctx, p, registry.Judge, req.Judge.ID, req.Judge.Version)
		if err != nil {
			return err
		}
		r := res.Ref()
		j, canon, ref, label, team = res.Spec.Judge(), res.Spec.Canonical(), &r, r.String(), res.PrivateTeam
	default:
		return derrors.Invalidf("spec or judge is required: an inline judge, or {id, version} of a registered one")
	}
	ev, err := s.previewEvidence(c, req.Evidence)
	if err != nil {
		return err
	}
	switch j.Kind {
	case registry.JudgeCode:
		if req.Rubric != nil {
			return derrors.Invalidf("rubric: a code judge has no rubric; it reads the case, trace, snapshot and evidence as JSON")
		}
		return s.tryCodeJudge(c, j, canon, ref, label, team, req.Evidence, ev)
	case registry.JudgeModel:
		return s.tryModelJudge(c, j, label, req, ev.Evidence)
	case registry.JudgeHarness:
		return s.tryHarnessJudge(c, j, label, req, ev)
	}
	return c.JSON(http.StatusOK, tryResponse{Judge: label, Kind: j.Kind, Source: req.Evidence.Source, Skipped: true,
		Scores: modeljudge.Skip(j.ID, fmt.Sprintf("judge %s has kind %q, which this version cannot run", j.ID, j.Kind))})
}

// tryEffective resolves a legacy judge's effective values for a try, as
// the caller sees its rubric: skip, when not empty, is the skip reason of
// a judge whose own rubric reference does not resolve (as in a batch); a
// rubric the request names that does not resolve is 404.
func (s *Server) tryEffective(c echo.Context, j *registry.JudgeSpec, override *registry.RubricInput) (eff judge.Effective, skip string, err error) {
	ctx, p := c.Request().Context(), principal(c)
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
		res, err := s.registries.Resolve(ctx, p, registry.Rubric, rubricIn.Ref.ID, rubricIn.Ref.Version)
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

// tryHarnessJudge runs a legacy harness judge once and answers its scores:
// its harness runs one case whose task is the rendered prompt (the
// preview's), as a run of the caller's placed on the judge's runtime, else
// the source case's placement, else the deployment's local runtime; the
// request waits for it (evidence.waitSec, default 120 s) and reads its
// final answer as the verdict. Judge problems (the harness gone, the run
// failing or still running at the deadline, no verdict) are skip scores.
func (s *Server) tryHarnessJudge(c echo.Context, j *registry.JudgeSpec, label string, req tryRequest, ev evidenceOf) error {
	out := tryResponse{Judge: label, Kind: j.Kind, Source: req.Evidence.Source}
	skip := func(reason string) error {
		out.Scores, out.Skipped = modeljudge.Skip(j.ID, reason), true
		return c.JSON(http.StatusOK, out)
	}
	eff, reason, err := s.tryEffective(c, j, req.Rubric)
	if err != nil {
		return err
	}
	if reason != "" {
		return skip(reason)
	}
	wait := DefaultLiveWait
	if req.Evidence.Source != "C" {
		if wait, err = liveWait(req.Evidence.WaitSec); err != nil {
			return err
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
	bound, warnings := s.evidenceFetcher().Resolve(c.Request().Context(), eff, ev.Evidence)
	out.Warnings = warnings
	rendered := judge.Render(eff, bound)
	run, done, err := s.dispatchAndWait(c, runs.SubmitRequest{Harness: h, Runtime: runtime,
		Case: registry.EvalCase{ID: "judge-" + j.ID, Task: rendered.Prompt}}, wait)
	switch {
	case errors.Is(err, derrors.ErrNotFound) && run.ID == "":
		what := fmt.Sprintf("the judge's harness %s@%s", h.ID, h.Version)
		if runtime != "" {
			what += fmt.Sprintf(" (or its runtime %q)", runtime)
		}
		return skip(what + " is not registered or not visible to you")
	case err != nil:
		return err
	}
	out.RunID = run.ID
	if !done {
		return skip(fmt.Sprintf("harness %s (run %s) had not judged within %s; its answer is in GET /runs/%s when it ends", h, run.ID, wait, run.ID))
	}
	out.Scores = modeljudge.HarnessVerdict(j.ID, eff, ev.Case.Milestones, run)
	out.Skipped = len(out.Scores) == 1 && modeljudge.IsSkip(out.Scores[0])
	return c.JSON(http.StatusOK, out)
}

// tryModelJudge calls a model judge's model once and answers its scores.
func (s *Server) tryModelJudge(c echo.Context, j *registry.JudgeSpec, label string, req tryRequest, ev judge.Evidence) error {
	ctx, p := c.Request().Context(), principal(c)
	out := tryResponse{Judge: label, Kind: j.Kind, Source: req.Evidence.Source, Model: j.Model.Model}
	skip := func(reason string) error {
		out.Scores, out.Skipped = modeljudge.Skip(j.ID, reason), true
		return c.JSON(http.StatusOK, out)
	}
	eff, reason, err := s.tryEffective(c, j, req.Rubric)
	if err != nil {
		return err
	}
	if reason != "" {
		return skip(reason)
	}
	ms := s.models
	access, missing, err := ms.Resolve(ctx, p.Workspace, j.Model.Model)
	if err != nil {
		return err
	}
	if missing != "" {
		return skip(missing)
	}
	b := access.Binding
	ep := modeljudge.Endpoint{Name: b.Name, Provider: b.Provider, BaseURL: b.BaseURL, Model: b.Model, Key: access.Key(),
		Client: access.Client, Timeout: b.Timeout(), Price: b.Cost}
	bound, warnings := s.evidenceFetcher().Resolve(ctx, eff, ev)
	out.Warnings = warnings
	scores, usage, err := modeljudge.ModelVerdict(ctx, j.ID, eff, bound, ep)
	if err != nil {
		return err
	}
	attrs := []slog.Attr{reqid.Attr(ctx), slog.String("workspace", p.Workspace), slog.String("judge", j.ID), slog.String("model", b.Name)}
	if usage != nil {
		attrs = append(attrs, slog.Int64("inputTokens", usage.InputTokens), slog.Int64("outputTokens", usage.OutputTokens))
		if usage.Priced {
			attrs = append(attrs, slog.Float64("costUsd", usage.CostUSD))
		}
	}
	s.logger.LogAttrs(ctx, slog.LevelInfo, "model judge try", attrs...)
	out.Scores, out.Usage = scores, usage
	out.Skipped = len(scores) == 1 && modeljudge.IsSkip(scores[0])
	return c.JSON(http.StatusOK, out)
}

// tryCodeJudge starts a code judge's try run: placed on the judge's
// runtime, else the source case's placement (a stored run's runtime, or
// the deployment's local runtime it ran on); a pasted trace has no case
// placement, so without a judge runtime it is 400.
func (s *Server) tryCodeJudge(c echo.Context, j *registry.JudgeSpec, canon json.RawMessage, ref *registry.Ref, label, team string, src previewEvidence, ev evidenceOf) error {
	ctx, p := c.Request().Context(), principal(c)
	runtime := j.Code.Runtime
	if runtime == "" {
		if ev.Run == nil {
			return derrors.Invalidf("a code judge tried over a pasted trace needs a placement: set runtime on the judge (a registered runtime id), or use evidence source A or C, whose case's placement is used")
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
	run, err := s.runs.SubmitJudgeTry(ctx, p, tr, originSource(c))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusAccepted, tryRunResponse{RunID: run.ID, Status: string(run.Status), Logs: "/runs/" + run.ID + "/logs",
		Runtime: run.Runtime, Run: run, Source: src.Source, Judge: label, Kind: string(j.Kind)})
}
