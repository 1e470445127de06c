package bench

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"

	"svc/activities"
	"svc/api"
	"svc/config"
	"svc/drivers/local"
	"svc/judges"
	"svc/orchestration"
	"svc/orchestration/devserver"
	"svc/registry/service"
	"svc/secrets"
	"svc/store"
	"svc/store/pgtest"
	"svc/store/postgres"
	"svc/store/sqlite"
	"svc/webhooks"
	"svc/workflows"
)

// The stack is workflows/integration_test.go's newStack, trimmed to what a
// benchmark needs (no webhook receiver), and built on testing.TB.

func TestMain(m *testing.M) { pgtest.Main(m) }

const taskQueue = "bench"

var testSecretKey = "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=" // base64 of 32 bytes

// workerActivities is the worker's activity slots. The SDK's default
// (1,000, what cmd/svc runs with) is already above the largest batch
// concurrency (64); it is set here so the benchmark does not depend on it.
const workerActivities = 1000

// stack is one running service: Temporal, a worker, the API.
type stack struct {
	url    string
	store  store.Store
	tc     client.Client
	apiKey string
	ws     string
	tmp    string
}

func quietLogger() *slog.Logger {
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError}))
}

func newStack(tb testing.TB, backend string) *stack {
	tb.Helper()
	if testing.Short() {
		tb.Skip("runs Temporal's server; skipped in -short")
	}
	ctx := tb.Context()
	tmp := tb.TempDir()
	var st store.Store
	switch backend {
	case "sqlite":
		s, err := sqlite.Open(ctx, filepath.Join(tmp, "svc.db"))
		if err != nil {
			tb.Fatal(err)
		}
		tb.Cleanup(func() { s.Close() })
		if _, err := s.Migrate(ctx); err != nil {
			tb.Fatal(err)
		}
		st = s
	case "postgres":
		s, err := postgres.Open(ctx, pgtest.URL(tb))
		if err != nil {
			tb.Fatal(err)
		}
		tb.Cleanup(func() { s.Close() })
		if _, err := s.Migrate(ctx); err != nil {
			tb.Fatal(err)
		}
		st = s
	default:
		tb.Fatalf("unknown backend %q", backend)
	}

	ts, err := devserver.Start(ctx, devserver.Options{DBPath: filepath.Join(tmp, "temporal.db"), Namespace: "default", Logger: quietLogger()})
	if err != nil {
		tb.Fatalf("devserver: %v", err)
	}
	tb.Cleanup(func() { _ = ts.Stop() })
	tc, err := orchestration.Dial(ctx, orchestration.ClientOptions{HostPort: ts.HostPort(), Namespace: "default", Logger: quietLogger()})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(tc.Close)

	cfg := config.Defaults()
	cfg.SecretKey = testSecretKey
	cfg.InternalToken = "op-token"
	cfg.AuthFailLimit = 0
	sealer, err := secrets.NewSealer(cfg.SecretKey)
	if err != nil {
		tb.Fatal(err)
	}
	guard, err := webhooks.NewGuard(cfg.WebhookAllow)
	if err != nil {
		tb.Fatal(err)
	}
	driver := local.New(local.Options{Root: filepath.Join(tmp, "work")})
	acts := &activities.Activities{
		Store: st, Registries: service.New(st, sealer, time.Now), Sealer: sealer,
		Driver: driver, Judges: &judges.Runner{Driver: driver},
		Guard: guard, Host: "bench-worker", Logger: quietLogger(),
	}
	w := orchestration.NewWorker(tc, taskQueue, func(r worker.Registry) {
		workflows.Register(r)
		activities.Register(r, acts)
	}, orchestration.WorkerOptions{MaxConcurrentActivities: workerActivities})
	if err := w.Start(); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(w.Stop)

	starter := &workflows.Starter{Client: tc, TaskQueue: taskQueue, WebhookAttempts: cfg.WebhookAttempts}
	srv, err := api.NewServer(api.Options{Store: st, Config: cfg, Logger: quietLogger(), Version: "bench",
		Starter: starter, Orchestrator: starter})
	if err != nil {
		tb.Fatal(err)
	}
	hs := httptest.NewServer(srv.Handler())
	tb.Cleanup(hs.Close)

	s := &stack{url: hs.URL, store: st, tc: tc, tmp: tmp}
	var key struct{ APIKey, Workspace string }
	s.call(tb, "POST", "/internal/tenant-keys", `{"workspace":"acme"}`, 201, &key, "x-internal-token", "op-token")
	s.apiKey, s.ws = key.APIKey, key.Workspace
	return s
}

// call sends a request with the stack's key and decodes a JSON answer into
// out (when not nil), failing unless the status is want.
func (s *stack) call(tb testing.TB, method, path, body string, want int, out any, hdr ...string) {
	tb.Helper()
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(tb.Context(), method, s.url+path, r)
	if err != nil {
		tb.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if s.apiKey != "" {
		req.Header.Set("Authorization", "Bearer "+s.apiKey)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		tb.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	if res.StatusCode != want {
		tb.Fatalf("%s %s: status %d, want %d; body %.2000s", method, path, res.StatusCode, want, b)
	}
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			tb.Fatalf("%s %s: decoding %.2000s: %v", method, path, b, err)
		}
	}
}

// harness registers a process harness id@version running command.
func (s *stack) harness(tb testing.TB, id, version string, command ...string) {
	tb.Helper()
	b, _ := json.Marshal(map[string]any{"id": id, "version": version, "kind": "process", "command": command})
	s.call(tb, "POST", "/harnesses", string(b), 201, nil)
}

// dataset registers dataset id@1.0.0 with n cases c0000, c0001, ... and no
// graders, so each case is graded by its exit code alone.
func (s *stack) dataset(tb testing.TB, id string, n int) {
	tb.Helper()
	cases := make([]map[string]any, n)
	for i := range cases {
		cases[i] = map[string]any{"id": fmt.Sprintf("c%04d", i), "task": fmt.Sprintf("case %d", i)}
	}
	b, _ := json.Marshal(map[string]any{"id": id, "version": "1.0.0", "cases": cases})
	s.call(tb, "POST", "/datasets", string(b), 201, nil)
}
