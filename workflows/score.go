package workflows

import (
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"svc/internal/domain/flows"
)

// ScoreWorkflow runs the judges over every canonical child run with a
// result, replacing each selected judge's earlier verdicts and keeping the
// others, then appends a scoring revision (spec §3: detached phase 2). A
// failed or cancelled pass adds no revision and releases the batch.
func ScoreWorkflow(ctx workflow.Context, in flows.ScoreInput) error {
	ref := flows.ScorecardRef{Workspace: in.Workspace, ScorecardID: in.ScorecardID}
	short := workflow.WithActivityOptions(ctx, batchRecordOptions)
	judgeCtx := workflow.WithActivityOptions(ctx, judgeOptions)
	per := in.ItemsPerRun
	if per <= 0 {
		per = DefaultItemsPerRun
	}
	window := max(in.Concurrency, 1)
	done := 0
	var failure error
	for failure == nil && ctx.Err() == nil && done < per {
		var page flows.ChildPage
		if err := workflow.ExecuteActivity(short, flows.ActivityChildRunPage, flows.ChildPageInput{ScorecardRef: ref, After: in.After, Limit: min(casePage, per-done)}).Get(ctx, &page); err != nil {
			failure = err
			break
		}
		if len(page.Items) == 0 {
			break
		}
		sel := workflow.NewSelector(ctx)
		inFlight := 0
		for i := 0; i < len(page.Items) || inFlight > 0; {
			for i < len(page.Items) && inFlight < window && failure == nil && ctx.Err() == nil {
				item := page.Items[i]
				i++
				inFlight++
				f := workflow.ExecuteActivity(judgeCtx, flows.ActivityJudgeCase, flows.JudgeInput{CaseItem: item, Judges: in.Judges, Replace: true})
				sel.AddFuture(f, func(f workflow.Future) {
					inFlight--
					if err := f.Get(ctx, nil); err != nil && failure == nil {
						failure = err
					}
				})
			}
			if inFlight == 0 {
				break
			}
			sel.Select(ctx)
		}
		done += len(page.Items)
		in.After = page.Items[len(page.Items)-1].RunID
		if !page.More {
			in.After = ""
			break
		}
	}
	fin := flows.FinishScoreInput{ScorecardRef: ref, Pass: in.Pass, Judges: in.Judges, CreatedBy: in.CreatedBy, CausedBy: in.CausedBy}
	switch {
	case ctx.Err() != nil:
		fin.Aborted, fin.Message = true, "the scoring pass was cancelled"
	case failure != nil:
		fin.Aborted, fin.Message = true, failureMessage(failure)
	case in.After != "":
		// More cases than one run may judge: continue with the rest.
		return workflow.NewContinueAsNewError(ctx, ScoreWorkflow, in)
	}
	dctx, _ := workflow.NewDisconnectedContext(ctx)
	dctx = workflow.WithActivityOptions(dctx, finishOptions)
	if err := workflow.ExecuteActivity(dctx, flows.ActivityFinishScore, fin).Get(dctx, nil); err != nil {
		return err
	}
	if fin.Aborted {
		return temporal.NewNonRetryableApplicationError("scoring pass aborted: "+fin.Message, string(flows.ScoringAborted), nil)
	}
	return nil
}
