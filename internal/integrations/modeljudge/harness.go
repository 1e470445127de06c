package modeljudge

import (
	"fmt"
	"strings"

	"svc/internal/domain/eval"
	"svc/internal/domain/judge"
	"svc/internal/domain/registry"
)

// HarnessVerdict reads the verdict of a legacy harness judge from the run
// that judged: a run of the judge's harness whose task was the rendered
// prompt (prompt.Render, as for a model judge). The run's final answer is
// read with the model judges' verdict parser (prompt.ParseVerdict) and
// completed with the effective criteria and the case's milestones
// (VerdictScores); the overall score's detail names the run. A failed run,
// an empty answer or an answer without a valid verdict is the judge's skip
// score.
func HarnessVerdict(id string, eff judge.Effective, milestones []registry.Milestone, run eval.Run) []eval.Score {
	who := fmt.Sprintf("harness %s (run %s)", run.Harness, run.ID)
	if run.Result != nil && run.Result.Harness != "" {
		who = fmt.Sprintf("harness %s (run %s)", run.Result.Harness, run.ID)
	}
	if run.Status != eval.StatusSucceeded || run.Result == nil {
		msg := string(run.Status)
		if run.Error != nil && run.Error.Message != "" {
			msg += ": " + run.Error.Message
		}
		return Skip(id, fmt.Sprintf("%s did not judge: the run %s", who, msg))
	}
	answer := ""
	if run.Result.Evidence != nil {
		answer = run.Result.Evidence.FinalAnswer
	}
	if strings.TrimSpace(answer) == "" && run.Result.Snapshot != nil {
		answer = run.Result.Snapshot.Output
	}
	if strings.TrimSpace(answer) == "" {
		return Skip(id, who+" gave no final answer to read a verdict from")
	}
	v, err := judge.ParseVerdict(answer)
	if err != nil {
		return Skip(id, fmt.Sprintf("%s answered no valid verdict: %v", who, err))
	}
	out := VerdictScores(id, eff, milestones, v, nil)
	for i := range out {
		if out[i].Metric == metricPrefix+id && !IsSkip(out[i]) {
			out[i].Detail = cleanDetail(strings.TrimSpace(out[i].Detail + " [judged by run " + run.ID + "]"))
		}
	}
	return out
}
