package judges

import (
	"context"
	"fmt"
	"strings"

	"svc/internal/domain/eval"
	"svc/internal/domain/judge"
	"svc/internal/domain/registry"
	"svc/internal/integrations/modeljudge"
)

// Endpoint is one resolved model binding (score.Endpoint).
type Endpoint = modeljudge.Endpoint

// AnthropicMaxTokens is the max_tokens of an anthropic binding's Messages
// call (score.AnthropicMaxTokens).
const AnthropicMaxTokens = modeljudge.AnthropicMaxTokens

// Usage is what one model call consumed (score.Usage).
type Usage = modeljudge.Usage

// Complete sends text as the one user message of a chat completion
// (score.Complete).
func Complete(ctx context.Context, ep Endpoint, text string, images ...string) (string, *Usage, error) {
	return modeljudge.Complete(ctx, ep, text, images...)
}

// ModelVerdict runs one model-judge call for judge id (score.ModelVerdict).
func ModelVerdict(ctx context.Context, id string, eff judge.Effective, ev judge.Evidence, ep Endpoint) ([]eval.Score, *Usage, error) {
	return modeljudge.ModelVerdict(ctx, id, eff, ev, ep)
}

// VerdictScores completes a model's verdict into the judge's scores
// (score.VerdictScores).
func VerdictScores(id string, eff judge.Effective, milestones []registry.Milestone, v judge.Verdict, usage *Usage) []eval.Score {
	return modeljudge.VerdictScores(id, eff, milestones, v, usage)
}

// ModelUsage sums the model calls a code judge made through the model
// proxy in one execution.
type ModelUsage struct {
	Calls        int
	InputTokens  int64
	OutputTokens int64
	CostUSD      float64
	// Priced is true when at least one call had a cost.
	Priced bool
}

// String is the usage as a score detail shows it.
func (u ModelUsage) String() string {
	s := fmt.Sprintf("%d %s, %d input + %d output tokens", u.Calls, plural(u.Calls, "call", "calls"), u.InputTokens, u.OutputTokens)
	if u.Priced {
		s += fmt.Sprintf(", $%.6f", u.CostUSD)
	}
	return s
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// WithModelUsage appends a code judge's model usage to the detail of its
// overall score judge:<id> (every score judge:<id> it printed), as
// "[model grader: 2 calls, 812 input + 64 output tokens, $0.000250]". A
// judge that made no call gets "[model grader: 0 calls]" so the detail
// says the model was available and unused.
func WithModelUsage(judgeID, model string, u ModelUsage, scores []eval.Score) []eval.Score {
	note := fmt.Sprintf("[model %s: %s]", model, u)
	if u.Calls == 0 {
		note = fmt.Sprintf("[model %s: 0 calls]", model)
	}
	out := make([]eval.Score, len(scores))
	copy(out, scores)
	for i := range out {
		if out[i].Metric == modeljudge.MetricPrefix+judgeID {
			out[i].Detail = modeljudge.Detail(strings.TrimSpace(out[i].Detail + " " + note))
		}
	}
	return out
}
