package modeljudge

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/anthropics/anthropic-sdk-go"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"svc/internal/domain/eval"
	"svc/internal/domain/judge"
	"svc/internal/domain/registry"
)

// Endpoint is one resolved model binding: where a model judge's prompt is
// sent and with which key. The key goes into the Authorization header
// (x-api-key for anthropic) of the call and nowhere else: never into a
// score, an error or a log.
type Endpoint struct {
	// Name is the binding's name, for messages.
	Name string
	// Provider picks the wire format: ProviderAnthropic is Anthropic's
	// Messages API (POST BaseURL/v1/messages, BaseURL with or without a
	// trailing /v1); anything else, "" included, is the OpenAI chat
	// completions API (POST BaseURL/chat/completions).
	Provider string
	BaseURL  string
	Model    string
	Key      string
	// Client dials through the address guard; nil means a plain client.
	Client *http.Client
	// Timeout bounds one call; 0 means two minutes.
	Timeout time.Duration
	// Price, when set, turns token counts into a USD cost.
	Price func(in, out int64) (float64, bool)
}

// Usage is what one model call consumed, as the API reported it.
type Usage struct {
	InputTokens  int64   `json:"inputTokens"`
	OutputTokens int64   `json:"outputTokens"`
	CostUSD      float64 `json:"costUsd,omitempty"`
	Priced       bool    `json:"-"`
}

// String is the usage as a score detail suffix shows it.
func (u Usage) String() string {
	s := fmt.Sprintf("%d input + %d output tokens", u.InputTokens, u.OutputTokens)
	if u.Priced {
		s += fmt.Sprintf(", $%.6f", u.CostUSD)
	}
	return s
}

// Complete sends text (and images, data URLs) as the one user message of
// a call to ep's provider (streaming off, temperature 0, no retries: a
// failed call is a skip score, and a re-score retries it) and returns the
// answer: a chat completion for openai, a Messages call for anthropic.
func Complete(ctx context.Context, ep Endpoint, text string, images ...string) (string, *Usage, error) {
	timeout := ep.Timeout
	if timeout <= 0 {
		timeout = 2 * time.Minute
	}
	hc := ep.Client
	if hc == nil {
		hc = &http.Client{}
	}
	if ep.Provider == ProviderAnthropic {
		return completeAnthropic(ctx, ep, hc, timeout, text, images)
	}
	return completeOpenAI(ctx, ep, hc, timeout, text, images)
}

// completeOpenAI is Complete for the OpenAI chat completions wire format.
func completeOpenAI(ctx context.Context, ep Endpoint, hc *http.Client, timeout time.Duration, text string, images []string) (string, *Usage, error) {
	client := openai.NewClient(
		option.WithBaseURL(ep.BaseURL),
		option.WithAPIKey(ep.Key),
		option.WithHTTPClient(hc),
		option.WithMaxRetries(0),
		option.WithRequestTimeout(timeout),
	)
	resp, err := client.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{
		Model:       openai.ChatModel(ep.Model),
		Messages:    []openai.ChatCompletionMessageParamUnion{userMessage(text, images)},
		Temperature: openai.Float(0),
	})
	if err != nil {
		return "", nil, err
	}
	var u *Usage
	if resp.Usage.PromptTokens > 0 || resp.Usage.CompletionTokens > 0 {
		u = &Usage{InputTokens: resp.Usage.PromptTokens, OutputTokens: resp.Usage.CompletionTokens}
		if ep.Price != nil {
			u.CostUSD, u.Priced = ep.Price(u.InputTokens, u.OutputTokens)
		}
	}
	if len(resp.Choices) == 0 {
		return "", u, errors.New("the model server answered no choices")
	}
	return resp.Choices[0].Message.Content, u, nil
}

// callError words a failed call for a skip reason: the HTTP status and
// the server's message, or the transport error, with the key cut out of
// whatever the server or transport said.
func callError(ep Endpoint, err error, timeout time.Duration) string {
	var apiErr *openai.Error
	var antErr *anthropic.Error
	var msg string
	switch {
	case errors.As(err, &apiErr):
		msg = fmt.Sprintf("answered HTTP %d", apiErr.StatusCode)
		if m := strings.TrimSpace(apiErr.Message); m != "" {
			msg += ": " + m
		}
	case errors.As(err, &antErr):
		msg = fmt.Sprintf("answered HTTP %d", antErr.StatusCode)
		if m := strings.TrimSpace(anthropicErrorMessage(antErr)); m != "" {
			msg += ": " + m
		}
	case errors.Is(err, context.DeadlineExceeded):
		msg = fmt.Sprintf("did not answer within %s", timeout)
	default:
		msg = "could not be reached: " + err.Error()
	}
	if ep.Key != "" {
		msg = strings.ReplaceAll(msg, ep.Key, "[key]")
	}
	if len(msg) > 400 {
		msg = msg[:400] + "…"
	}
	return fmt.Sprintf("model %s (%s at %s) %s", ep.Name, ep.Model, ep.BaseURL, msg)
}

// ModelVerdict runs one model-judge call for judge id: it renders the
// prompt (prompt.Render, the function POST /judges/preview shows), sends
// it, reads the verdict and completes it with the effective criteria and
// the case's milestones (ApplyCriteria); a spec passThreshold re-decides
// the overall pass. An unreachable, failing or slow server, or an answer
// with no valid verdict, is a skip score. The error is only ctx's.
func ModelVerdict(ctx context.Context, id string, eff judge.Effective, ev judge.Evidence, ep Endpoint) ([]eval.Score, *Usage, error) {
	r := judge.Render(eff, ev)
	timeout := ep.Timeout
	if timeout <= 0 {
		timeout = 2 * time.Minute
	}
	answer, usage, err := Complete(ctx, ep, r.Prompt, r.Images...)
	if cerr := ctx.Err(); cerr != nil {
		return nil, nil, fmt.Errorf("judge %s: %w", id, cerr)
	}
	if err != nil {
		return Skip(id, callError(ep, err, timeout)), usage, nil
	}
	v, err := judge.ParseVerdict(answer)
	if err != nil {
		return Skip(id, fmt.Sprintf("model %s answered no valid verdict: %v", ep.Name, err)), usage, nil
	}
	return VerdictScores(id, eff, ev.Case.Milestones, v, usage), usage, nil
}

// VerdictScores completes a model's verdict into the judge's scores (spec
// §2.5): criteria metrics judge:<id>:<c>, an explicit error score for a
// criterion the verdict lacks, the overall judge:<id> (the model's own,
// else the weighted mean), passThreshold re-deciding the overall pass
// only. usage, when known, is appended to the overall score's detail.
func VerdictScores(id string, eff judge.Effective, milestones []registry.Milestone, v judge.Verdict, usage *Usage) []eval.Score {
	raw := v.Scores(id)
	var out []eval.Score
	if len(eff.Criteria) > 0 {
		out = ApplyCriteria(id, eff.Criteria, milestones, eff.PassThreshold, raw)
	} else {
		out = raw
		overall := -1
		for i, s := range out {
			if s.Metric == metricPrefix+id {
				overall = i
			}
		}
		if overall < 0 {
			return Skip(id, "the model gave no overall score and the judge has no criteria to average")
		}
		if eff.PassThreshold != nil {
			out[overall].Pass = verdict(out[overall].Value >= *eff.PassThreshold)
		}
	}
	if usage != nil {
		for i := range out {
			if out[i].Metric == metricPrefix+id {
				out[i].Detail = cleanDetail(strings.TrimSpace(out[i].Detail + " [" + usage.String() + "]"))
			}
		}
	}
	return out
}

// userMessage is the one user message of a judge call: the prompt alone
// as a string, or, with images, a text part followed by one image part
// per image (data URLs).
func userMessage(text string, images []string) openai.ChatCompletionMessageParamUnion {
	if len(images) == 0 {
		return openai.UserMessage(text)
	}
	parts := []openai.ChatCompletionContentPartUnionParam{openai.TextContentPart(text)}
	for _, u := range images {
		parts = append(parts, openai.ImageContentPart(openai.ChatCompletionContentPartImageImageURLParam{URL: u}))
	}
	return openai.UserMessage(parts)
}
