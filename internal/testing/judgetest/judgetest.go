// Package judgetest serves the OpenAI chat completions wire format (New)
// and Anthropic's Messages API (NewAnthropic) on loopback, for tests of
// model judges. Answers are built from the recorded shapes in
// testdata/openai and testdata/anthropic (response.json, error.json); the
// request shapes expected are their request.json. Streaming is off: a
// request asking for a stream is refused.
package judgetest

import (
	"embed"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

//go:embed testdata/openai/*.json testdata/anthropic/*.json
var fixtures embed.FS

// Request is what the server received on one call.
type Request struct {
	// Authorization is the Authorization header (OpenAI: "Bearer <key>").
	Authorization string
	// APIKey and Version are the x-api-key and anthropic-version headers
	// (Anthropic).
	APIKey  string
	Version string
	// Path is the request's URL path.
	Path   string
	Model  string
	Prompt string // the one user message (its text part)
	// Images are the image parts' URLs of a multi-part message.
	Images []string
	Body   []byte
}

// Answer decides the reply to a prompt: an HTTP status and, for 200, the
// assistant message content. Block, when set, is waited on before the
// reply (a slow server, for timeouts).
type Answer func(prompt string) (status int, content string)

// Server is a loopback chat completions server.
type Server struct {
	*httptest.Server
	mu       sync.Mutex
	received []Request
	Block    chan struct{}
	// base is BaseURL's answer; "" is URL + "/v1".
	base string
}

// New starts a server answering with answer; it stops at the test's end.
func New(t testing.TB, answer Answer) *Server {
	t.Helper()
	resp := mustRead(t, "openai/response.json")
	errBody := mustRead(t, "openai/error.json")
	s := &Server{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if r.Method != http.MethodPost || !strings.HasSuffix(r.URL.Path, "/chat/completions") {
			http.Error(w, `{"error":{"message":"not found"}}`, http.StatusNotFound)
			return
		}
		var req struct {
			Model    string `json:"model"`
			Stream   bool   `json:"stream"`
			Messages []struct {
				Role    string          `json:"role"`
				Content json.RawMessage `json:"content"`
			} `json:"messages"`
		}
		err := json.Unmarshal(body, &req)
		var text string
		var images []string
		if err == nil && len(req.Messages) == 1 {
			text, images, err = content(req.Messages[0].Content)
		}
		if err != nil || req.Stream || len(req.Messages) != 1 || req.Messages[0].Role != "user" {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			_, _ = w.Write(errBody)
			return
		}
		s.mu.Lock()
		s.received = append(s.received, Request{Authorization: r.Header.Get("Authorization"), Path: r.URL.Path, Model: req.Model, Prompt: text, Images: images, Body: body})
		s.mu.Unlock()
		if s.Block != nil {
			select {
			case <-s.Block:
			case <-r.Context().Done():
				return
			}
		}
		status, reply := answer(text)
		w.Header().Set("Content-Type", "application/json")
		if status != http.StatusOK {
			w.WriteHeader(status)
			_, _ = w.Write(errBody)
			return
		}
		var doc map[string]any
		_ = json.Unmarshal(resp, &doc)
		doc["model"] = req.Model
		doc["choices"].([]any)[0].(map[string]any)["message"].(map[string]any)["content"] = reply
		_ = json.NewEncoder(w).Encode(doc)
	}))
	t.Cleanup(s.Close)
	return s
}

// Received returns the requests received so far.
func (s *Server) Received() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.received...)
}

// BaseURL is the API root to give a binding.
// For New, URL + "/v1"; for NewAnthropic, URL (the Anthropic SDK's
// base, below which it posts v1/messages).
func (s *Server) BaseURL() string {
	if s.base != "" {
		return s.base
	}
	return s.URL + "/v1"
}

func mustRead(t testing.TB, name string) []byte {
	t.Helper()
	b, err := fixtures.ReadFile("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// content reads a user message's content: a string, or an array of parts
// ({type: text, text} and {type: image_url, image_url: {url}}), the wire
// format's two shapes.
func content(raw json.RawMessage) (string, []string, error) {
	var text string
	if err := json.Unmarshal(raw, &text); err == nil {
		return text, nil, nil
	}
	var parts []struct {
		Type     string `json:"type"`
		Text     string `json:"text"`
		ImageURL struct {
			URL string `json:"url"`
		} `json:"image_url"`
	}
	if err := json.Unmarshal(raw, &parts); err != nil {
		return "", nil, err
	}
	var images []string
	for _, p := range parts {
		switch p.Type {
		case "text":
			text += p.Text
		case "image_url":
			images = append(images, p.ImageURL.URL)
		default:
			return "", nil, fmt.Errorf("unknown content part %q", p.Type)
		}
	}
	return text, images, nil
}
