package activities

import (
	"errors"
	"strings"
	"testing"
	"time"

	"svc/auth"
	"svc/drivers"
	"svc/internal/domain/eval"
	"svc/internal/domain/registry"
	"svc/internal/domain/trace"
	"svc/internal/platform/derrors"
	"svc/internal/platform/secrets"
	"svc/internal/service/models"
	"svc/store"
	"svc/store/sqlite/sqlitetest"
)

// At dispatch, a harness that calls a binding gets a token for the
// attempt in its secrets (the proxy's address and the binding's name in
// its environment), revoked when the attempt ends with the cost of its
// calls added to the run's usage; a binding that cannot be resolved fails
// the case on a managed target and ships the job without a token on a
// self-hosted one, each attempt recorded.
func TestHarnessModelAccess(t *testing.T) {
	ctx := t.Context()
	st := sqlitetest.New(t)
	sealer, err := secrets.NewSealer("1REbnVjc4Mh9RrleS8YuYam5bBQgICXlbKj9K7zCWm8=")
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 11, 24, 5, 0, 0, 0, time.UTC)
	ms := &models.Service{Store: st, Sealer: sealer, Now: func() time.Time { return now }}
	a := &Activities{Store: st, Models: ms, ModelProxyURL: "http://cp.example:8080/judge-proxy/v1", Now: func() time.Time { return now }}
	run := eval.Run{ID: "run-1", Tenant: "ws", CreatedBy: "alice", Attempts: 1}
	plan := func(selfHosted bool) Plan {
		return Plan{Dispatch: trace.Dispatch{Harness: registry.Ref{ID: "agent", Version: "2"}}, model: "brain", placement: placement{selfReported: selfHosted}}
	}
	job := drivers.Job{RunID: "run-1", Env: map[string]string{"MODE": "x"}, Secrets: map[string]string{"API": "v"}, Timeout: time.Minute}

	// No binding: a managed target fails the case, saying what to set.
	_, _, err = a.harnessModelAccess(ctx, run, plan(false), job)
	if !isCaseProblem(err) || !strings.Contains(err.Error(), "PUT /workspace/models/brain") || !strings.Contains(err.Error(), "agent@2") {
		t.Errorf("managed, no binding: %v, want a case failure saying what to set", err)
	}
	// ... and a self-hosted one ships the job as it is.
	run.Attempts = 2
	got, access, err := a.harnessModelAccess(ctx, run, plan(true), job)
	if err != nil || access.token != "" || got.Env[models.EnvHarnessModelBaseURL] != "" || got.Secrets[models.SecretModelToken] != "" {
		t.Errorf("self-hosted, no binding: %+v %v, want the job unchanged", got, err)
	}
	evs, err := st.ListEvents(ctx, store.EventFilter{Workspace: "ws", Type: models.EventHarnessModelAccess})
	if err != nil || len(evs) != 2 || !strings.Contains(string(evs[1].Data), `"granted":false`) || !strings.Contains(string(evs[1].Data), `"selfHosted":true`) {
		t.Fatalf("harness.model_access events = %d (%v), want one per attempt, not granted", len(evs), err)
	}

	// The binding and its key: a token for this attempt.
	if _, err := ms.Put(ctx, auth.Principal{Subject: "admin", Workspace: "ws"}, "brain", models.PutRequest{Provider: "openai",
		BaseURL: "https://models.example.com/v1", Model: "m", KeySecret: "brain-key", InputUSDPerMTok: new(1000.0), OutputUSDPerMTok: new(0.0)}); err != nil {
		t.Fatal(err)
	}
	sealed, err := sealer.Seal("ws", "brain-key", []byte("sk-unit-NEVER-IN-A-JOB"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.PutSecret(ctx, store.Secret{Workspace: "ws", Name: "brain-key", Ciphertext: sealed, AllowedHosts: []string{"models.example.com"}, UpdatedAt: now}); err != nil {
		t.Fatal(err)
	}
	run.Attempts = 3
	got, access, err = a.harnessModelAccess(ctx, run, plan(false), job)
	if err != nil {
		t.Fatal(err)
	}
	tok := got.Secrets[models.SecretModelToken]
	if !strings.HasPrefix(tok, "jpt_") || got.Secrets["API"] != "v" || got.Env["MODE"] != "x" ||
		got.Env[models.EnvHarnessModelBaseURL] != "http://cp.example:8080/model-proxy/v1" || got.Env[models.EnvHarnessModel] != "brain" {
		t.Fatalf("job = env %v, secrets %d; want the proxy, the binding and a token beside the harness's own", got.Env, len(got.Secrets))
	}
	if _, ok := job.Secrets[models.SecretModelToken]; ok || len(job.Env) != 1 {
		t.Error("the planned job's maps were changed")
	}
	for _, v := range got.Env {
		if strings.Contains(v, tok) || strings.Contains(v, "NEVER-IN-A-JOB") {
			t.Error("the token or the key is in the job's environment")
		}
	}
	g, err := ms.OpenProxyToken(ctx, tok)
	if err != nil || g.Harness != "agent@2" || g.Attempt != 3 || g.RunID != "run-1" || !g.ExpiresAt.Equal(now.Add(time.Minute+harnessTokenSlack)) {
		t.Fatalf("grant = %+v, %v", g, err)
	}
	cost := 0.5
	if err := ms.RecordProxyCall(ctx, g, models.ProxyCall{Status: 200, InputTokens: 500000, CostUSD: &cost}); err != nil {
		t.Fatal(err)
	}
	u := access.end(ctx, a)
	if _, err := ms.OpenProxyToken(ctx, tok); !errors.Is(err, derrors.ErrUnauthenticated) {
		t.Errorf("the token opens after the attempt: %v", err)
	}
	// The metered cost joins the trace's in usage.costUsd before grading,
	// so a usd grader sees both (0.75 is over a max of 0.5).
	caseWithBudget := registry.EvalCase{ID: "c", Graders: []registry.Grader{{ID: "budget", Params: map[string]any{"kind": "usd", "max": 0.5}}}}
	result, _ := trace.BuildResult(eval.Run{CaseID: "c", Case: &caseWithBudget}, trace.Dispatch{ModelCostUSD: u.CostUSD},
		trace.JobOutput{Trace: []byte(`{"kind":"llm_call","costUsd":0.25}` + "\n")}, nil, "")
	if result.Usage.CostUSD != 0.75 {
		t.Errorf("usage.costUsd = %v, want the trace's 0.25 plus the proxied 0.5", result.Usage.CostUSD)
	}
	if s := result.Scores[0]; s.Value != 0.75 || s.Pass == nil || *s.Pass {
		t.Errorf("usd score = %+v, want 0.75 over its max", s)
	}

	// A worker that knows no address for jobs cannot give access.
	b := &Activities{Store: st, Models: ms, Now: a.Now}
	run.Attempts = 4
	if _, _, err := b.harnessModelAccess(ctx, run, plan(false), job); !isCaseProblem(err) || !strings.Contains(err.Error(), "SVC_PUBLIC_URL") {
		t.Errorf("no proxy address: %v", err)
	}
	// A harness that calls no binding is left alone.
	if got, _, err := a.harnessModelAccess(ctx, run, Plan{}, job); err != nil || len(got.Secrets) != 1 {
		t.Errorf("no binding declared: %+v %v", got, err)
	}
}
