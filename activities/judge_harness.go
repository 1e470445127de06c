package activities

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"svc/activities/judges"
	"svc/auth"
	"svc/internal/domain/eval"
	"svc/internal/domain/judge"
	"svc/internal/domain/registry"
	"svc/internal/integrations/evidence"
	"svc/internal/integrations/modeljudge"
	"svc/internal/platform/derrors"
	"svc/store/records"
)

// TriggerHarnessJudge is the trigger of the run in which a legacy harness
// judge judges a case: a first-class run of the judge's harness whose task
// is the judge's rendered prompt.
const TriggerHarnessJudge = "judge"

// runHarnessJudge runs a legacy harness judge over one case (spec §2.5):
// its effective rubric, criteria and template render the prompt exactly as
// for a model judge, the registered harness runs once with that prompt as
// its task (a child run of trigger judge, placed on the judge's runtime,
// else the source case's placement), and the run's final answer is read as
// the verdict. Every judge problem (the harness gone, the run failing, no
// verdict) is a skip score; the error is an infrastructure failure or
// ctx's end.
//
// The child run's id is derived from the source run, the judge, the
// harness version, the placement and the prompt, so a retried activity
// finds the run it started (and does not run the harness twice), and a
// re-score over unchanged inputs reads the same verdict.
func (a *Activities) runHarnessJudge(ctx context.Context, who auth.Principal, j *registry.JudgeSpec, in judges.Input, source eval.Run) ([]eval.Score, error) {
	if j.Harness == nil || j.Harness.Harness.ID == "" {
		return judges.Skip(j.ID, fmt.Sprintf("judge %s is of kind harness but names no harness", j.ID)), nil
	}
	eff, reason, err := a.judgeEffective(ctx, who, j)
	if err != nil {
		return nil, err
	}
	if reason != "" {
		return judges.Skip(j.ID, reason), nil
	}
	hr := j.Harness.Harness
	if hr.Version == "" {
		hr.Version = registry.LatestVersion
	}
	h, err := a.Registries.Resolve(ctx, who, registry.Harness, hr.ID, hr.Version)
	switch {
	case errors.Is(err, derrors.ErrNotFound):
		return judges.Skip(j.ID, fmt.Sprintf("the judge's harness %s@%s is not registered or not visible to the batch's creator", hr.ID, hr.Version)), nil
	case err != nil:
		return nil, err
	}
	ev, _ := a.judgeEvidence(ctx, eff, in)
	rendered := judge.Render(eff, ev)
	runtime := HarnessJudgeRuntime(j, source)
	ref := h.Ref()
	id := HarnessJudgeRunID(source.Tenant, source.ID, j.ID, ref.String(), runtime, rendered.Prompt)
	run, err := a.loadRun(ctx, RunRef{Workspace: source.Tenant, RunID: id})
	if errors.Is(err, derrors.ErrNotFound) {
		run = HarnessJudgeRun(id, source.Tenant, who.Subject, ref, runtime, j.ID, rendered.Prompt, a.now())
		// Its task is the rendered prompt: the source's case, so the
		// source's audience (issue 30, finding 6).
		run.AudienceTeam = source.AudienceTeam
		row, rerr := records.Row(run)
		if rerr != nil {
			return nil, rerr
		}
		if _, err = a.Store.CreateRun(ctx, row); errors.Is(err, derrors.ErrConflict) {
			// A concurrent attempt created it first: run (or read) that one.
			run, err = a.loadRun(ctx, RunRef{Workspace: source.Tenant, RunID: id})
		}
	}
	if err != nil {
		return nil, err
	}
	if !run.Status.Terminal() {
		if _, err := a.dispatchFrom(ctx, run, grading{ungraded: true}, false); err != nil {
			return nil, err
		}
		rctx, cancel := detached(ctx, recordWriteTimeout)
		run, err = a.loadRun(rctx, RunRef{Workspace: source.Tenant, RunID: id})
		cancel()
		if err != nil {
			return nil, err
		}
	}
	scores := modeljudge.HarnessVerdict(j.ID, eff, in.Case.Milestones, run)
	a.logger().Info("harness judge run", append([]any{"judge", j.ID, "harness", ref.String(), "judgeRun", run.ID,
		"status", run.Status, "source", source.ID}, activityAttrs(ctx)...)...)
	return scores, nil
}

// HarnessJudgeRuntime is where a harness judge's run is placed: the
// judge's runtime, else the source case's placement ("" being the
// deployment's local runtime).
func HarnessJudgeRuntime(j *registry.JudgeSpec, source eval.Run) string {
	if j.Harness != nil && j.Harness.Runtime != "" {
		return j.Harness.Runtime
	}
	if source.Runtime != "" {
		return source.Runtime
	}
	if source.Case != nil && source.Case.Placement != nil {
		return source.Case.Placement.Target
	}
	return ""
}

// HarnessJudgeRunID derives the id of a harness judge's run from what it
// runs, so that the same judging is one run.
func HarnessJudgeRunID(workspace, sourceRun, judgeID, harness, runtime, text string) string {
	h := sha256.New()
	for _, s := range []string{workspace, sourceRun, judgeID, harness, runtime, text} {
		h.Write([]byte(s))
		h.Write([]byte{0})
	}
	return "run_" + hex.EncodeToString(h.Sum(nil)[:12])
}

// HarnessJudgeRun is the queued record of a harness judge's run: the
// judge's harness at the version resolved, one case whose task is the
// rendered prompt, placed on runtime.
func HarnessJudgeRun(id, workspace, createdBy string, harness registry.Ref, runtime, judgeID, text string, now time.Time) eval.Run {
	c := registry.EvalCase{ID: "judge-" + judgeID, Task: text}
	if runtime != "" {
		c.Placement = &registry.Placement{Target: runtime}
	}
	now = now.UTC()
	return eval.Run{
		ID: id, Tenant: workspace, Harness: harness, CaseID: c.ID, Status: eval.StatusQueued,
		CreatedAt: now, UpdatedAt: now, Kind: eval.KindEval, Trigger: TriggerHarnessJudge, CreatedBy: createdBy,
		Runtime: runtime, Case: &c,
	}
}

// judgeEffective resolves a legacy judge's effective values (spec §2.5)
// as who sees its rubric reference. reason, when not empty, is why the
// judge cannot judge (its skip reason): a rubric that does not resolve.
func (a *Activities) judgeEffective(ctx context.Context, who auth.Principal, j *registry.JudgeSpec) (eff judge.Effective, reason string, err error) {
	var in *registry.RubricInput
	switch {
	case j.Model != nil:
		in = j.Model.Rubric
	case j.Harness != nil:
		in = j.Harness.Rubric
	}
	var rubric *registry.RubricSpec
	if in != nil && in.Ref != nil {
		res, err := a.Registries.Resolve(ctx, who, registry.Rubric, in.Ref.ID, in.Ref.Version)
		switch {
		case errors.Is(err, derrors.ErrNotFound):
			return judge.Effective{}, fmt.Sprintf("rubric %s@%s is not registered or not visible to the batch's creator", in.Ref.ID, in.Ref.Version), nil
		case err != nil:
			return judge.Effective{}, "", err
		}
		rubric = res.Spec.Rubric()
	}
	eff, err = judge.EffectiveValues(j, nil, rubric)
	if err != nil {
		return judge.Effective{}, derrors.Message(err), nil
	}
	return eff, "", nil
}

// judgeEvidence is the prompt evidence of a legacy judge's case: custom
// slots bound from its text artifacts and a screenshot fetched from its
// ref, through the outbound address guard (internal/integrations/evidence), as the
// preview binds them.
func (a *Activities) judgeEvidence(ctx context.Context, eff judge.Effective, in judges.Input) (judge.Evidence, []string) {
	return evidence.Fetcher{Guard: a.Guard}.Resolve(ctx, eff, EvidenceOf(in))
}
