package judges

import (
	"context"

	"svc/eval"
	"svc/judges/prompt"
	"svc/judges/score"
	"svc/registry"
)

// Endpoint is one resolved model binding (score.Endpoint).
type Endpoint = score.Endpoint

// Usage is what one model call consumed (score.Usage).
type Usage = score.Usage

// Complete sends text as the one user message of a chat completion
// (score.Complete).
func Complete(ctx context.Context, ep Endpoint, text string) (string, *Usage, error) {
	return score.Complete(ctx, ep, text)
}

// ModelVerdict runs one model-judge call for judge id (score.ModelVerdict).
func ModelVerdict(ctx context.Context, id string, eff prompt.Effective, ev prompt.Evidence, ep Endpoint) ([]eval.Score, *Usage, error) {
	return score.ModelVerdict(ctx, id, eff, ev, ep)
}

// VerdictScores completes a model's verdict into the judge's scores
// (score.VerdictScores).
func VerdictScores(id string, eff prompt.Effective, milestones []registry.Milestone, v prompt.Verdict, usage *Usage) []eval.Score {
	return score.VerdictScores(id, eff, milestones, v, usage)
}
