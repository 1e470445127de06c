package activities

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"go.temporal.io/sdk/activity"

	"svc/activities/judges"
	"svc/auth"
	"svc/internal/domain/eval"
	"svc/internal/domain/flows"
	"svc/internal/domain/registry"
	"svc/internal/platform/derrors"
	"svc/store"
	"svc/store/records"
)

// JudgeInput is flows.JudgeInput: the workflows' contract (package flows).
type JudgeInput = flows.JudgeInput

// JudgeCase runs judges over one finished case and stores their verdicts
// in the child run's scores, replacing each judge's earlier ones and
// keeping every other score. Judge problems are skip scores, not errors.
func (a *Activities) JudgeCase(ctx context.Context, in JudgeInput) error {
	sc, err := a.batchPlan(ctx, in.Workspace, in.ScorecardID)
	if err != nil {
		return err
	}
	uses := in.Judges
	if uses == nil && sc.Orchestration != nil {
		for _, j := range sc.Orchestration.Judges {
			uses = append(uses, flows.JudgeUse{ID: j.ID, Version: j.Resolved})
		}
	}
	if len(uses) == 0 {
		return nil
	}
	id := in.RunID
	if id == "" {
		id = eval.ChildRunID(in.Workspace, in.ScorecardID, in.CaseID, in.Trial)
	}
	run, err := a.loadRun(ctx, RunRef{Workspace: in.Workspace, RunID: id})
	if err != nil {
		return err
	}
	if run.Result == nil {
		return nil
	}
	who := auth.Principal{Subject: sc.CreatedBy, Workspace: sc.Tenant, Roles: []auth.Role{auth.RoleMember}}
	input := judges.Input{Trace: run.Result.Trace, Snapshot: run.Result.Snapshot, Evidence: run.Result.Evidence}
	if run.Case != nil {
		input.Case = *run.Case
	}
	var fresh []eval.Score
	var judged []string
	for _, u := range uses {
		prefix := "judge:" + u.ID
		if !in.Replace && hasMetric(run.Result.Scores, prefix) {
			continue
		}
		heartbeat(ctx)
		var scores []eval.Score
		spec, err := a.Registries.Resolve(ctx, who, registry.Judge, u.ID, u.Version)
		switch {
		case errors.Is(err, derrors.ErrNotFound):
			scores = judges.Skip(u.ID, fmt.Sprintf("judge %s@%s is no longer registered or visible to the batch's creator", u.ID, u.Version))
		case err != nil:
			return err
		default:
			if j := spec.Spec.Judge(); j != nil && j.Kind == registry.JudgeModel && j.Model != nil {
				if scores, err = a.runModelJudge(ctx, who, j, input); err != nil {
					return err
				}
				break
			}
			if j := spec.Spec.Judge(); j != nil && j.Kind == registry.JudgeHarness {
				if scores, err = a.runHarnessJudge(ctx, who, j, input, run); err != nil {
					return err
				}
				break
			}
			jobID := fmt.Sprintf("%s-%s-a%d", id, u.ID, activity.GetInfo(ctx).Attempt)
			r, reason, err := a.judgeRunner(ctx, who, spec.Spec.Judge(), run)
			if err != nil {
				return err
			}
			if reason != "" {
				scores = judges.Skip(u.ID, reason)
				break
			}
			if scores, err = a.runCodeJudge(ctx, r, who, spec.Spec.Judge(), input, jobID, id); err != nil {
				return err
			}
		}
		fresh = append(fresh, scores...)
		judged = append(judged, prefix)
	}
	if len(judged) == 0 {
		return nil
	}
	return a.Store.Transact(ctx, func(tx store.Tx) error {
		row, err := tx.GetRun(ctx, in.Workspace, id)
		if err != nil {
			return err
		}
		cur, err := records.FromRow(row)
		if err != nil {
			return err
		}
		if cur.Result == nil {
			return nil
		}
		kept := cur.Result.Scores[:0:0]
		for _, s := range cur.Result.Scores {
			if !judgedBy(s.Metric, judged) {
				kept = append(kept, s)
			}
		}
		cur.Result.Scores = append(kept, fresh...)
		cur.Result.Pass = cur.Error == nil && passes(cur.Result.Scores)
		cur.UpdatedAt = a.now()
		next, err := records.Row(cur)
		if err != nil {
			return err
		}
		_, err = tx.PutRun(ctx, next)
		return err
	})
}

// passes is allPass without skip scores: a skipped judge says nothing
// about the case, and the verdict basis reports the skip.
func passes(scores []eval.Score) bool {
	for _, s := range scores {
		if s.Pass != nil && !*s.Pass && !judges.IsSkip(s) {
			return false
		}
	}
	return true
}

func hasMetric(scores []eval.Score, prefix string) bool {
	for _, s := range scores {
		if judgedBy(s.Metric, []string{prefix}) {
			return true
		}
	}
	return false
}

// judgedBy reports whether metric belongs to one of the judges (metric
// judge:<id> or judge:<id>:<sub>).
func judgedBy(metric string, prefixes []string) bool {
	for _, p := range prefixes {
		if metric == p || strings.HasPrefix(metric, p+":") {
			return true
		}
	}
	return false
}
