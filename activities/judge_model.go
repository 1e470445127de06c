package activities

import (
	"context"

	"svc/activities/judges"
	"svc/auth"
	"svc/internal/domain/eval"
	"svc/internal/domain/judge"
	"svc/internal/domain/registry"
)

// runModelJudge runs a legacy model judge over one case: its effective
// rubric, criteria and template (a rubric reference resolved as the
// batch's creator sees it), its model resolved to the workspace's binding
// of that name with the key from the secret store, one chat completion,
// and the verdict completed into scores. Every problem of the judge's is a
// skip score; the error is an infrastructure failure or ctx's end.
func (a *Activities) runModelJudge(ctx context.Context, who auth.Principal, j *registry.JudgeSpec, in judges.Input) ([]eval.Score, error) {
	if a.Models == nil {
		return judges.Skip(j.ID, "legacy model judges need model access, which this worker does not configure"), nil
	}
	eff, reason, err := a.judgeEffective(ctx, who, j)
	if err != nil {
		return nil, err
	}
	if reason != "" {
		return judges.Skip(j.ID, reason), nil
	}
	ep, missing, err := a.Models.JudgeEndpoint(ctx, who.Workspace, j.Model.Model)
	if err != nil {
		return nil, err
	}
	if missing != "" {
		return judges.Skip(j.ID, missing), nil
	}
	ev, _ := a.judgeEvidence(ctx, eff, in)
	scores, usage, err := judges.ModelVerdict(ctx, j.ID, eff, ev, ep)
	if err != nil {
		return nil, err
	}
	attrs := append([]any{"judge", j.ID, "model", ep.Name}, activityAttrs(ctx)...)
	if usage != nil {
		attrs = append(attrs, "inputTokens", usage.InputTokens, "outputTokens", usage.OutputTokens)
		if usage.Priced {
			attrs = append(attrs, "costUsd", usage.CostUSD)
		}
	}
	a.logger().Info("model judge call", attrs...)
	return scores, nil
}

// EvidenceOf is the prompt evidence of a judge input.
func EvidenceOf(in judges.Input) judge.Evidence {
	return judge.Evidence{Case: in.Case, Trace: in.Trace, Snapshot: in.Snapshot, Evidence: in.Evidence}
}
