package models_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"svc/auth"
	"svc/internal/domain/registry"
	"svc/internal/platform/derrors"
	"svc/internal/service/models"
	"svc/store"
	"svc/store/sqlite"
)

func openStore(t *testing.T) store.Store {
	t.Helper()
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "svc.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	if _, err := st.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	return st
}

// The model-key rule at submit (spec §7): on a managed target a harness
// whose binding or key cannot be resolved is 400 naming the harness, the
// binding and what to set; a self-hosted runner target, a harness with a
// label or no model, pass.
func TestCheckHarness(t *testing.T) {
	ctx := context.Background()
	st := openStore(t)
	svc := &models.Service{Store: st}
	ref := registry.Ref{ID: "agent", Version: "2"}
	calls := &registry.HarnessConfig{Kind: registry.HarnessProcess, Model: registry.HarnessModel{Ref: "brain"}}
	nomad := &registry.RuntimeSpec{ID: "cluster", Kind: registry.RuntimeNomad}
	runner := &registry.RuntimeSpec{ID: "box", Kind: registry.RuntimeRunner}

	for _, c := range []struct {
		name    string
		hc      *registry.HarnessConfig
		runtime string
		rt      *registry.RuntimeSpec
		says    []string // "" means no error
	}{
		{"no binding, local", calls, "", nil, []string{"agent@2", `"brain"`, "model.ref", "deployment's local runtime", "PUT /workspace/models/brain", "self-hosted runner"}},
		{"no binding, nomad", calls, "cluster", nomad, []string{`nomad runtime "cluster"`, "PUT /workspace/models/brain"}},
		{"no binding, runner", calls, "box", runner, nil},
		{"a label", &registry.HarnessConfig{Model: registry.HarnessModel{Label: "gpt-x"}}, "", nil, nil},
		{"no model", &registry.HarnessConfig{}, "", nil, nil},
		{"no harness", nil, "", nil, nil},
	} {
		err := svc.CheckHarness(ctx, "ws", ref, c.hc, c.runtime, c.rt)
		if c.says == nil {
			if err != nil {
				t.Errorf("%s: %v, want no error", c.name, err)
			}
			continue
		}
		if !errors.Is(err, derrors.ErrInvalid) {
			t.Errorf("%s: %v, want ErrInvalid", c.name, err)
			continue
		}
		for _, w := range c.says {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: %q does not say %q", c.name, err, w)
			}
		}
	}

	// A binding whose key is not stored is still refused, naming the secret.
	if _, err := svc.Put(ctx, auth.Principal{Subject: "admin", Workspace: "ws"}, "brain",
		models.PutRequest{Provider: "openai", BaseURL: "https://models.example.com/v1", Model: "m", KeySecret: "brain-key"}); err != nil {
		t.Fatal(err)
	}
	if err := svc.CheckHarness(ctx, "ws", ref, calls, "", nil); err == nil || !strings.Contains(err.Error(), "PUT /secrets/brain-key") {
		t.Errorf("no key: %v, want the secret to set", err)
	}
	if _, err := st.PutSecret(ctx, store.Secret{Workspace: "ws", Name: "brain-key", Ciphertext: []byte("sealed"), AllowedHosts: []string{"models.example.com"}, UpdatedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	if err := svc.CheckHarness(ctx, "ws", ref, calls, "cluster", nomad); err != nil {
		t.Errorf("binding and key present: %v", err)
	}

	// The closure is the binding's name@version, which a replaced binding
	// changes; an undeclared one is "" (sealed unresolved).
	c1 := svc.HarnessClosure(ctx, "ws", calls)
	if !strings.HasPrefix(c1, "brain@") {
		t.Fatalf("closure = %q", c1)
	}
	if _, err := svc.Put(ctx, auth.Principal{Subject: "admin", Workspace: "ws"}, "brain",
		models.PutRequest{Provider: "openai", BaseURL: "https://models.example.com/v1", Model: "m2", KeySecret: "brain-key"}); err != nil {
		t.Fatal(err)
	}
	if c2 := svc.HarnessClosure(ctx, "ws", calls); c2 == c1 || !strings.HasPrefix(c2, "brain@") {
		t.Errorf("closure after replacing the binding = %q, was %q", c2, c1)
	}
	if c := svc.HarnessClosure(ctx, "other", calls); c != "" {
		t.Errorf("closure in a workspace without the binding = %q", c)
	}
}

// A harness grant opens the proxy like a judge's; its calls are metered
// under it and sum to the attempt's usage; a grant must name a judge or a
// harness, not both.
func TestHarnessProxyGrant(t *testing.T) {
	ctx := context.Background()
	st := openStore(t)
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	svc := &models.Service{Store: st, Now: func() time.Time { return now }}
	g := models.ProxyGrant{Workspace: "ws", Model: "brain", Harness: "agent@2", Attempt: 1, RunID: "run-1", ExpiresAt: now.Add(time.Hour)}
	token, err := svc.MintProxyToken(ctx, g)
	if err != nil {
		t.Fatal(err)
	}
	open, err := svc.OpenProxyToken(ctx, token)
	if err != nil || open.Harness != "agent@2" || open.JudgeID != "" || open.Actor() != "harness:agent@2" {
		t.Fatalf("OpenProxyToken = %+v, %v", open, err)
	}
	if u, err := svc.ProxyUsage(ctx, token); err != nil || u.Calls != 0 {
		t.Errorf("usage before any call = %+v, %v", u, err)
	}
	c1, c2 := 0.25, 0.5
	for _, c := range []models.ProxyCall{{Status: 200, InputTokens: 10, OutputTokens: 2, CostUSD: &c1}, {Status: 200, InputTokens: 5, OutputTokens: 1, CostUSD: &c2}, {Status: 500}} {
		if err := svc.RecordProxyCall(ctx, open, c); err != nil {
			t.Fatal(err)
		}
	}
	u, err := svc.ProxyUsage(ctx, token)
	if err != nil || u.Calls != 3 || u.InputTokens != 15 || u.OutputTokens != 3 || u.CostUSD != 0.75 {
		t.Errorf("usage = %+v, %v; want 3 calls, 15/3 tokens, $0.75", u, err)
	}
	if err := svc.RevokeProxyToken(ctx, token); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.OpenProxyToken(ctx, token); !errors.Is(err, derrors.ErrUnauthenticated) {
		t.Errorf("a revoked harness token opens: %v", err)
	}
	if u, err := svc.ProxyUsage(ctx, token); err != nil || u.Calls != 3 {
		t.Errorf("usage after revoking = %+v, %v; the calls stay metered", u, err)
	}
	for _, bad := range []models.ProxyGrant{
		{Workspace: "ws", Model: "brain", RunID: "r", ExpiresAt: now.Add(time.Hour)},
		{Workspace: "ws", Model: "brain", JudgeID: "j", Harness: "h@1", RunID: "r", ExpiresAt: now.Add(time.Hour)},
	} {
		if _, err := svc.MintProxyToken(ctx, bad); !errors.Is(err, derrors.ErrInvalid) {
			t.Errorf("MintProxyToken(%+v) = %v, want ErrInvalid", bad, err)
		}
	}
	if models.SelfHosted(nil) || models.SelfHosted(&registry.RuntimeSpec{Kind: registry.RuntimeK8s}) || !models.SelfHosted(&registry.RuntimeSpec{Kind: registry.RuntimeRunner}) {
		t.Error("SelfHosted: only a runner runtime is self-hosted")
	}
}
