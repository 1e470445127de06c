package judgetest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
)

// NewAnthropic starts a loopback server speaking Anthropic's Messages API
// (POST /v1/messages, non-streaming) answering with answer; it stops at
// the test's end. It expects the shape of testdata/anthropic/request.json:
// the x-api-key and anthropic-version headers, a model, a positive
// max_tokens, stream off and one user message whose content is a string
// or text and image blocks. Its 200 answer is testdata/anthropic/
// response.json with the model and text replaced; any other status
// answers testdata/anthropic/error.json. A request of another shape is
// 400 (401 without x-api-key), and the server does not record it.
// BaseURL is the server's root, the SDK's base.
func NewAnthropic(t testing.TB, answer Answer) *Server {
	t.Helper()
	resp := mustRead(t, "anthropic/response.json")
	errBody := mustRead(t, "anthropic/error.json")
	s := &Server{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "application/json")
		fail := func(status int, typ, msg string) {
			w.WriteHeader(status)
			_ = json.NewEncoder(w).Encode(map[string]any{"type": "error",
				"error": map[string]string{"type": typ, "message": msg}})
		}
		if r.Method != http.MethodPost || r.URL.Path != "/v1/messages" {
			fail(http.StatusNotFound, "not_found_error", "Not found: "+r.Method+" "+r.URL.Path)
			return
		}
		if r.Header.Get("x-api-key") == "" {
			fail(http.StatusUnauthorized, "authentication_error", "x-api-key header is required")
			return
		}
		if r.Header.Get("anthropic-version") == "" {
			fail(http.StatusBadRequest, "invalid_request_error", "anthropic-version: header is required")
			return
		}
		var req struct {
			Model     string `json:"model"`
			MaxTokens int64  `json:"max_tokens"`
			Stream    bool   `json:"stream"`
			Messages  []struct {
				Role    string          `json:"role"`
				Content json.RawMessage `json:"content"`
			} `json:"messages"`
		}
		err := json.Unmarshal(body, &req)
		var text string
		var images []string
		if err == nil && len(req.Messages) == 1 {
			text, images, err = anthropicContent(req.Messages[0].Content)
		}
		switch {
		case err != nil:
			fail(http.StatusBadRequest, "invalid_request_error", err.Error())
			return
		case req.Model == "" || req.MaxTokens <= 0:
			fail(http.StatusBadRequest, "invalid_request_error", "model and max_tokens are required")
			return
		case req.Stream:
			fail(http.StatusBadRequest, "invalid_request_error", "this fixture server does not stream")
			return
		case len(req.Messages) != 1 || req.Messages[0].Role != "user":
			fail(http.StatusBadRequest, "invalid_request_error", "want one user message")
			return
		}
		s.mu.Lock()
		s.received = append(s.received, Request{Authorization: r.Header.Get("Authorization"), APIKey: r.Header.Get("x-api-key"), Path: r.URL.Path,
			Version: r.Header.Get("anthropic-version"), Model: req.Model, Prompt: text, Images: images, Body: body})
		s.mu.Unlock()
		if s.Block != nil {
			select {
			case <-s.Block:
			case <-r.Context().Done():
				return
			}
		}
		status, reply := answer(text)
		if status != http.StatusOK {
			w.WriteHeader(status)
			_, _ = w.Write(errBody)
			return
		}
		var doc map[string]any
		_ = json.Unmarshal(resp, &doc)
		doc["model"] = req.Model
		doc["content"].([]any)[0].(map[string]any)["text"] = reply
		_ = json.NewEncoder(w).Encode(doc)
	}))
	s.base = s.URL
	t.Cleanup(s.Close)
	return s
}

// anthropicContent reads a user message's content: a string, or blocks
// ({type: text, text}, {type: image, source: {type: base64, media_type,
// data}} and {type: image, source: {type: url, url}}). Base64 images are
// returned as data URLs, so they compare with what the judge attached.
func anthropicContent(raw json.RawMessage) (string, []string, error) {
	var text string
	if err := json.Unmarshal(raw, &text); err == nil {
		return text, nil, nil
	}
	var blocks []struct {
		Type   string `json:"type"`
		Text   string `json:"text"`
		Source struct {
			Type      string `json:"type"`
			MediaType string `json:"media_type"`
			Data      string `json:"data"`
			URL       string `json:"url"`
		} `json:"source"`
	}
	if err := json.Unmarshal(raw, &blocks); err != nil {
		return "", nil, err
	}
	var images []string
	for _, b := range blocks {
		switch {
		case b.Type == "text":
			text += b.Text
		case b.Type == "image" && b.Source.Type == "base64" && b.Source.MediaType != "" && b.Source.Data != "":
			images = append(images, "data:"+b.Source.MediaType+";base64,"+b.Source.Data)
		case b.Type == "image" && b.Source.Type == "url" && b.Source.URL != "":
			images = append(images, b.Source.URL)
		default:
			return "", nil, fmt.Errorf("messages.0.content: unknown or incomplete block %q", b.Type)
		}
	}
	return text, images, nil
}
