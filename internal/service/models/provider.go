package models

import "strings"

// ChatCompletionsURL is where the model proxy forwards an OpenAI chat
// completions request for b: BaseURL + "/chat/completions" for openai,
// and Anthropic's OpenAI-compatible endpoint, the API root (BaseURL with
// or without a trailing "/v1") + "/v1/chat/completions", for anthropic.
func (b Binding) ChatCompletionsURL() string {
	base := strings.TrimRight(b.BaseURL, "/")
	if b.Provider == ProviderAnthropic {
		return strings.TrimRight(strings.TrimSuffix(base, "/v1"), "/") + "/v1/chat/completions"
	}
	return base + "/chat/completions"
}
