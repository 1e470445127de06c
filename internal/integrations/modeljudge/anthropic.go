package modeljudge

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/anthropics/anthropic-sdk-go"
	"github.com/anthropics/anthropic-sdk-go/option"
)

// ProviderAnthropic is the Endpoint provider called through Anthropic's
// Messages API (models.ProviderAnthropic); any other value, "" included,
// speaks the OpenAI chat completions wire format.
const ProviderAnthropic = "anthropic"

// AnthropicMaxTokens is the max_tokens of a Messages call, which the API
// requires: a verdict is a short JSON object, 1024 tokens leaves room for
// a reason and per-criterion reasons of a dozen criteria.
const AnthropicMaxTokens = 1024

// AnthropicRoot is the API root the Anthropic SDK posts v1/messages
// under: baseURL without a trailing "/v1", so a binding declared with
// the OpenAI-compatible root ("https://api.anthropic.com/v1", the old
// default) keeps working.
func AnthropicRoot(baseURL string) string {
	b := strings.TrimRight(baseURL, "/")
	return strings.TrimRight(strings.TrimSuffix(b, "/v1"), "/")
}

// completeAnthropic is Complete for an anthropic endpoint: one user
// message (the prompt as a text block, each image as an image block),
// temperature 0, max_tokens AnthropicMaxTokens, streaming off, no
// retries, the key in x-api-key only, the environment's ANTHROPIC_*
// settings and the SDK's OpenTelemetry spans off.
func completeAnthropic(ctx context.Context, ep Endpoint, hc *http.Client, timeout time.Duration, text string, images []string) (string, *Usage, error) {
	client := anthropic.NewClient(
		option.WithoutEnvironmentDefaults(),
		option.WithBaseURL(AnthropicRoot(ep.BaseURL)+"/"),
		option.WithAPIKey(ep.Key),
		option.WithHTTPClient(hc),
		option.WithMaxRetries(0),
		option.WithRequestTimeout(timeout),
		// As the openai path: no SDK spans of the prompt on the service's
		// tracer provider, no trace context sent to the model server.
		option.WithoutOpenTelemetry(),
		option.WithOpenTelemetryPropagation(false),
	)
	blocks := []anthropic.ContentBlockParamUnion{anthropic.NewTextBlock(text)}
	for _, u := range images {
		blocks = append(blocks, anthropicImage(u))
	}
	resp, err := client.Messages.New(ctx, anthropic.MessageNewParams{
		Model:       anthropic.Model(ep.Model),
		MaxTokens:   AnthropicMaxTokens,
		Messages:    []anthropic.MessageParam{anthropic.NewUserMessage(blocks...)},
		Temperature: anthropic.Float(0),
	})
	if err != nil {
		return "", nil, err
	}
	var u *Usage
	if resp.Usage.InputTokens > 0 || resp.Usage.OutputTokens > 0 {
		u = &Usage{InputTokens: resp.Usage.InputTokens, OutputTokens: resp.Usage.OutputTokens}
		if ep.Price != nil {
			u.CostUSD, u.Priced = ep.Price(u.InputTokens, u.OutputTokens)
		}
	}
	var answer strings.Builder
	for _, b := range resp.Content {
		if b.Type == "text" {
			answer.WriteString(b.Text)
		}
	}
	if answer.Len() == 0 {
		return "", u, errors.New("the model server answered no text content")
	}
	return answer.String(), u, nil
}

// anthropicImage maps an image part's URL to an image block: a data URL
// ("data:image/png;base64,...", what prompt.ScreenshotURL makes) to a
// base64 source, anything else to a URL source.
func anthropicImage(u string) anthropic.ContentBlockParamUnion {
	if rest, ok := strings.CutPrefix(u, "data:"); ok {
		if mt, data, ok := strings.Cut(rest, ";base64,"); ok {
			return anthropic.NewImageBlockBase64(mt, data)
		}
	}
	return anthropic.NewImageBlock(anthropic.URLImageSourceParam{URL: u})
}

// anthropicErrorMessage is the message of an Anthropic error body
// ({"type":"error","error":{"type":...,"message":...}}), or "".
func anthropicErrorMessage(e *anthropic.Error) string {
	var body struct {
		Error struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal([]byte(e.RawJSON()), &body) != nil {
		return ""
	}
	return body.Error.Message
}
