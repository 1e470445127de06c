package models_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"svc/auth"
	"svc/internal/platform/secrets"
	"svc/internal/service/models"
	"svc/store"
	"svc/store/sqlite"
)

const key = "sk-unit-KEEP-SECRET-99"

func TestResolveMissingReasons(t *testing.T) {
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "svc.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	if _, err := st.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	sealer, err := secrets.NewSealer("1REbnVjc4Mh9RrleS8YuYam5bBQgICXlbKj9K7zCWm8=")
	if err != nil {
		t.Fatal(err)
	}
	svc := &models.Service{Store: st, Sealer: sealer}
	p := auth.Principal{Subject: "admin", Workspace: "ws"}
	put := func(hosts ...string) {
		sealed, err := sealer.Seal("ws", "k", []byte(key))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := st.PutSecret(ctx, store.Secret{Workspace: "ws", Name: "k", Ciphertext: sealed, AllowedHosts: hosts, UpdatedAt: time.Now()}); err != nil {
			t.Fatal(err)
		}
	}

	_, missing, err := svc.Resolve(ctx, "ws", "grader")
	if err != nil || !strings.Contains(missing, "PUT /workspace/models/grader") {
		t.Fatalf("no binding: missing %q err %v", missing, err)
	}
	if _, err := svc.Put(ctx, p, "grader", models.PutRequest{Provider: "openai", BaseURL: "https://models.example.com/v1/", Model: "m", KeySecret: "k"}); err != nil {
		t.Fatal(err)
	}
	_, missing, _ = svc.Resolve(ctx, "ws", "grader")
	if !strings.Contains(missing, "PUT /secrets/k") {
		t.Errorf("no secret: missing %q", missing)
	}
	put("other.example.com")
	_, missing, _ = svc.Resolve(ctx, "ws", "grader")
	if !strings.Contains(missing, "models.example.com") || !strings.Contains(missing, "allowedHosts") {
		t.Errorf("unbound secret: missing %q", missing)
	}
	put("models.example.com")
	a, missing, err := svc.Resolve(ctx, "ws", "grader")
	if err != nil || missing != "" || a.Key() != key || a.Binding.BaseURL != "https://models.example.com/v1" {
		t.Fatalf("resolve: %v %q %v", a, missing, err)
	}
	if strings.Contains(a.String(), key) || strings.Contains(strings.ToLower(fmtV(a)), strings.ToLower(key)) {
		t.Error("Access prints its key")
	}
	if _, missing, _ := (&models.Service{Store: st}).Resolve(ctx, "ws", "grader"); !strings.Contains(missing, "SVC_SECRET_KEY") {
		t.Errorf("no sealer: missing %q", missing)
	}
	if _, missing, _ := svc.Resolve(ctx, "other-ws", "grader"); !strings.Contains(missing, "declares no model") {
		t.Errorf("another workspace: missing %q", missing)
	}
}

func fmtV(a models.Access) string { return fmt.Sprintf("%v %+v %#v %s", a, a, a, a) }
