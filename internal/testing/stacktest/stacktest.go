// Package stacktest builds, for tests and benchmarks, one whole running
// service in the test process: a store (SQLite, or PostgreSQL from
// store/pgtest), Temporal's real server embedded (orchestration/devserver),
// the worker and the API wired by internal/app as the binary wires them
// (the worker on a plain local driver, the API on a loopback HTTP server),
// with a tenant and its admin key. Only test code imports it.
package stacktest

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"go.temporal.io/sdk/client"

	"svc/drivers/local"
	"svc/internal/app"
	"svc/internal/orchestration"
	"svc/internal/orchestration/devserver"
	"svc/internal/platform/config"
	"svc/store"
	"svc/store/pgtest"
	"svc/store/postgres"
	"svc/store/sqlite"
)

var (
	shimOnce sync.Once
	shimPath string
	shimErr  error
)

// Shim returns the path of an svc-shim built once per test process (the
// local runtime's supervisor, as make build installs it beside svc), so the
// stack's jobs do not re-execute the test binary, which links Temporal's
// server, for every case. SVC_SHIM names a built one instead.
func Shim(tb testing.TB) string {
	tb.Helper()
	shimOnce.Do(func() {
		if p := os.Getenv("SVC_SHIM"); p != "" {
			shimPath = p
			return
		}
		dir, err := os.MkdirTemp("", "stacktest-shim-")
		if err != nil {
			shimErr = err
			return
		}
		shimPath = filepath.Join(dir, local.ShimName)
		if out, err := exec.Command("go", "build", "-o", shimPath, "svc/cmd/svc-shim").CombinedOutput(); err != nil {
			shimErr = fmt.Errorf("building svc-shim: %v\n%s", err, out)
		}
	})
	if shimErr != nil {
		tb.Fatalf("stacktest: %v", shimErr)
	}
	return shimPath
}

// SecretKey is SVC_SECRET_KEY of every stack (base64 of 32 bytes).
const SecretKey = "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY="

// InternalToken is SVC_INTERNAL_TOKEN of every stack.
const InternalToken = "op-token"

// Options shape a Stack.
type Options struct {
	Backend   string // sqlite or postgres (PostgreSQL needs pgtest.Main in TestMain)
	TaskQueue string
	// Config adjusts the service's settings (after the defaults above).
	Config func(*config.Config)
	Worker orchestration.WorkerOptions
	Host   string // the worker's name in provenance
	Level  slog.Level
	// LogTo receives the stack's log (API and worker); nil means os.Stderr.
	LogTo io.Writer
}

// Stack is one running service.
type Stack struct {
	URL       string
	Store     store.Store
	Client    client.Client
	APIKey    string // the admin key of Workspace
	Workspace string
	Tmp       string // the stack's temporary folder
}

// New starts a stack and stops it in tb.Cleanup. It skips under -short.
func New(tb testing.TB, o Options) *Stack {
	tb.Helper()
	if testing.Short() {
		tb.Skip("runs Temporal's server; skipped in -short")
	}
	ctx := tb.Context()
	tmp := tb.TempDir()
	var logTo io.Writer = os.Stderr
	if o.LogTo != nil {
		logTo = o.LogTo
	}
	logger := slog.New(slog.NewTextHandler(logTo, &slog.HandlerOptions{Level: o.Level}))
	var st store.Store
	switch o.Backend {
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
		tb.Fatalf("stacktest: unknown backend %q", o.Backend)
	}

	cfg := config.Defaults()
	cfg.SecretKey = SecretKey
	cfg.InternalToken = InternalToken
	cfg.AuthFailLimit = 0
	if o.TaskQueue != "" {
		cfg.TaskQueue = o.TaskQueue
	}
	if o.Config != nil {
		o.Config(&cfg)
	}

	ts, err := devserver.Start(ctx, devserver.Options{DBPath: filepath.Join(tmp, "temporal.db"), Namespace: cfg.TemporalNamespace, Logger: logger})
	if err != nil {
		tb.Fatalf("devserver: %v", err)
	}
	tb.Cleanup(func() { _ = ts.Stop() })
	tc, err := orchestration.Dial(ctx, orchestration.ClientOptions{HostPort: ts.HostPort(), Namespace: cfg.TemporalNamespace, Logger: logger, TLS: ts.ClientTLS()})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(tc.Close)

	// The worker and the API are wired as the binary wires them
	// (internal/app); the stack differs only in what it opens: a plain
	// local driver (no isolation) and the API on a loopback port.
	deps := app.Deps{Store: st, Temporal: tc, Logger: logger, Version: "test",
		Driver: local.New(local.Options{Root: filepath.Join(tmp, "work"), ShimPath: Shim(tb)})}
	// The API's listener is opened now so that code judges know the model
	// proxy's address before the worker starts.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	w, err := app.StartWorker(ctx, cfg, deps, app.WorkerOptions{Role: "dev", Host: o.Host,
		ModelProxyURL: "http://" + ln.Addr().String() + "/judge-proxy/v1", Temporal: o.Worker})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(w.Stop)

	srv, err := app.API(cfg, deps)
	if err != nil {
		tb.Fatal(err)
	}
	hs := &httptest.Server{Listener: ln, Config: &http.Server{Handler: srv.Handler()}}
	hs.Start()
	tb.Cleanup(hs.Close)

	s := &Stack{URL: hs.URL, Store: st, Client: tc, Tmp: tmp}
	var key struct{ APIKey, Workspace string }
	s.Call(tb, "POST", "/internal/tenant-keys", `{"workspace":"acme"}`, 201, &key, "x-internal-token", InternalToken)
	s.APIKey, s.Workspace = key.APIKey, key.Workspace
	return s
}

// Call sends a request with the stack's key (hdr are name, value pairs),
// fails tb unless the status is want, decodes a JSON answer into out when
// it is not nil, and returns the body.
func (s *Stack) Call(tb testing.TB, method, path, body string, want int, out any, hdr ...string) []byte {
	tb.Helper()
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(tb.Context(), method, s.URL+path, r)
	if err != nil {
		tb.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if s.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+s.APIKey)
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
	return b
}
