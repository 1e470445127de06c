package models_test

import (
	"context"
	"path/filepath"
	"testing"

	"svc/auth"
	"svc/internal/service/models"
	"svc/store/sqlite"
)

func TestChatCompletionsURL(t *testing.T) {
	for _, c := range []struct{ provider, base, want string }{
		{"openai", "https://api.openai.com/v1", "https://api.openai.com/v1/chat/completions"},
		{"openai", "http://127.0.0.1:9/v1/", "http://127.0.0.1:9/v1/chat/completions"},
		{"anthropic", "https://api.anthropic.com", "https://api.anthropic.com/v1/chat/completions"},
		{"anthropic", "https://api.anthropic.com/v1", "https://api.anthropic.com/v1/chat/completions"},
		{"anthropic", "https://gw.example/anthropic/v1/", "https://gw.example/anthropic/v1/chat/completions"},
	} {
		b := models.Binding{Provider: c.provider, BaseURL: c.base}
		if got := b.ChatCompletionsURL(); got != c.want {
			t.Errorf("%s %s: ChatCompletionsURL = %s, want %s", c.provider, c.base, got, c.want)
		}
	}
}

// An anthropic binding without a baseUrl gets Anthropic's API root, the
// SDK's base; openai's stays the /v1 root.
func TestPutDefaultBaseURL(t *testing.T) {
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "svc.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	if _, err := st.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	svc := &models.Service{Store: st}
	p := auth.Principal{Subject: "admin", Workspace: "ws"}
	for provider, want := range map[string]string{"anthropic": "https://api.anthropic.com", "openai": "https://api.openai.com/v1"} {
		b, err := svc.Put(ctx, p, "m-"+provider, models.PutRequest{Provider: provider, Model: "x", KeySecret: "k"})
		if err != nil {
			t.Fatal(err)
		}
		if b.BaseURL != want {
			t.Errorf("%s: baseUrl = %s, want %s", provider, b.BaseURL, want)
		}
	}
}
