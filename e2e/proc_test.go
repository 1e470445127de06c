// Package e2e drives the real svc binary as a process: build once, start,
// signal, kill -9, start again. These are the tests a user would run by hand.
package e2e

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"svc/internal/domain/eval"
	"svc/internal/testing/testwait"
	"svc/store/pgtest"
)

var svcBin string

func TestMain(m *testing.M) {
	flag.Parse()
	if testing.Short() {
		fmt.Println("e2e: skipped in -short mode")
		os.Exit(0)
	}
	// make test builds bin/svc once and passes it in SVC_BIN, so the
	// Temporal server is not compiled twice in one run.
	dir, err := os.MkdirTemp("", "svc-e2e-bin")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	svcBin = os.Getenv("SVC_BIN")
	if svcBin == "" {
		svcBin = filepath.Join(dir, "svc")
		// svc-shim beside svc: the local runtime's supervisor.
		build := exec.Command("go", "build", "-o", dir+"/", "svc/cmd/svc", "svc/cmd/svc-shim")
		build.Stdout, build.Stderr = os.Stdout, os.Stderr
		if err := build.Run(); err != nil {
			fmt.Fprintln(os.Stderr, "e2e: building svc:", err)
			os.Exit(1)
		}
	}
	code := pgtest.Run(m)
	os.RemoveAll(dir)
	os.Exit(code)
}

// proc is one running svc process.
type proc struct {
	t      *testing.T
	cmd    *exec.Cmd
	mu     sync.Mutex
	stdout bytes.Buffer
	stderr bytes.Buffer
	urlc   chan string
	done   chan struct{}
	err    error
	URL    string
}

var apiLine = regexp.MustCompile(`API on (http://\S+)`)

// start runs svc with args and env (on top of a minimal environment) and,
// when wantURL, waits until it prints the API address.
func start(t *testing.T, env []string, wantURL bool, args ...string) *proc {
	t.Helper()
	p := &proc{t: t, urlc: make(chan string, 1), done: make(chan struct{})}
	p.cmd = exec.Command(svcBin, args...)
	p.cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME"), "SVC_LOG_LEVEL=warn"}, env...)
	outR, err := p.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	p.cmd.Stderr = &lockedWriter{mu: &p.mu, w: &p.stderr}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		sc := bufio.NewScanner(outR)
		for sc.Scan() {
			line := sc.Text()
			p.mu.Lock()
			p.stdout.WriteString(line + "\n")
			p.mu.Unlock()
			if m := apiLine.FindStringSubmatch(line); m != nil {
				select {
				case p.urlc <- m[1]:
				default:
				}
			}
		}
	}()
	go func() { p.err = p.cmd.Wait(); close(p.done) }()
	t.Cleanup(func() {
		select {
		case <-p.done:
		default:
			p.cmd.Process.Kill()
			<-p.done
		}
		if t.Failed() {
			t.Logf("svc %v stdout:\n%s\nstderr (tail):\n%s", args, p.Stdout(), tail(p.Stderr(), 4000))
		}
	})
	if wantURL {
		select {
		case p.URL = <-p.urlc:
		case <-p.done:
			t.Fatalf("svc %v exited before listening: %v\nstderr: %s", args, p.err, tail(p.Stderr(), 4000))
		case <-time.After(2 * time.Minute):
			t.Fatalf("svc %v did not print its API address within 2 minutes", args)
		}
	}
	return p
}

func (p *proc) Stdout() string { p.mu.Lock(); defer p.mu.Unlock(); return p.stdout.String() }
func (p *proc) Stderr() string { p.mu.Lock(); defer p.mu.Unlock(); return p.stderr.String() }

// wait waits for the process to exit and returns its exit code.
func (p *proc) wait(d time.Duration) int {
	p.t.Helper()
	select {
	case <-p.done:
	case <-time.After(d):
		p.t.Fatalf("svc did not exit within %s", d)
	}
	return p.cmd.ProcessState.ExitCode()
}

func (p *proc) signal(s syscall.Signal) {
	p.t.Helper()
	if err := p.cmd.Process.Signal(s); err != nil {
		p.t.Fatalf("signal %v: %v", s, err)
	}
}

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(b)
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

// call sends one request and decodes a JSON answer into out (when non-nil).
func call(t *testing.T, method, url string, body any, out any, headers ...string) int {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			t.Fatal(err)
		}
		rd = bytes.NewReader(b)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, url, rd)
	if err != nil {
		t.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode >= 400 {
		noInternalChain(t, fmt.Sprintf("the %d body of %s %s", resp.StatusCode, method, url), string(raw))
	}
	if out != nil && len(raw) > 0 {
		if err := json.Unmarshal(raw, out); err != nil {
			t.Fatalf("%s %s: decoding %q: %v", method, url, raw, err)
		}
	}
	return resp.StatusCode
}

// internalChain matches what only an internal error chain says: a call
// with its context argument (derrors.Wrap's "Store.GetRun(ctx, ...)"), and
// Temporal's wrapping of an activity's error. No error body, record error
// or step message may contain one (issue 29): it goes to the log.
var internalChain = regexp.MustCompile(`\w+\.\w+\(ctx|activity error \(type:|scheduledEventID|identity: \d+@|workflow error|\(type: \w+, retryable: `)

// noInternalChain fails the test when text, what a user reads in what,
// holds an internal call chain.
func noInternalChain(t *testing.T, what, text string) {
	t.Helper()
	if m := internalChain.FindString(text); m != "" {
		t.Errorf("%s shows an internal call chain (%q): %s", what, m, tail(text, 2000))
	}
}

// noInternalChainInRecord checks what a user reads of a run or batch
// record (decoded JSON, or an eval.Run or eval.Scorecard): its
// error.message and every steps[].message.
func noInternalChainInRecord(t *testing.T, what string, record any) {
	t.Helper()
	rec, ok := record.(map[string]any)
	if !ok {
		b, err := json.Marshal(record)
		if err == nil {
			err = json.Unmarshal(b, &rec)
		}
		if err != nil {
			t.Fatalf("%s: reading the record %T as JSON: %v", what, record, err)
		}
	}
	if e, ok := rec["error"].(map[string]any); ok {
		msg, _ := e["message"].(string)
		noInternalChain(t, what+" error.message", msg)
	}
	steps, _ := rec["steps"].([]any)
	for i, st := range steps {
		if m, ok := st.(map[string]any); ok {
			msg, _ := m["message"].(string)
			noInternalChain(t, fmt.Sprintf("%s steps[%d].message", what, i), msg)
		}
	}
}

func devEnv(dataDir string, extra ...string) []string {
	return append([]string{
		"SVC_DATA_DIR=" + dataDir,
		"SVC_ADDR=127.0.0.1:0",
		"SVC_TEMPORAL_PORT=0",
	}, extra...)
}

// jobDir returns a new directory that the local runtime's jobs, which run
// as an unprivileged user, can read: where a test puts a harness's script.
func jobDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "svc-e2e-job-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

func mustContain(t *testing.T, got, want string) {
	t.Helper()
	if !strings.Contains(got, want) {
		t.Fatalf("output lacks %q:\n%s", want, got)
	}
}

// temporalTLSLine is svc dev's line naming the client certificate files
// of its embedded Temporal, as TEMPORAL_TLS_* settings.
var temporalTLSLine = regexp.MustCompile(`Temporal requires mutual TLS: a client uses (TEMPORAL_TLS_CA=\S+ TEMPORAL_TLS_CERT=\S+ TEMPORAL_TLS_KEY=\S+)`)

// pgStack starts the production roles on PostgreSQL and returns the API's
// address: `svc dev` only as the Temporal cluster (its worker polls a
// queue of its own, so the PostgreSQL worker runs every task), `svc
// migrate`, `svc serve` on a fixed port named as SVC_PUBLIC_URL (where the
// worker sends jobs for the model proxy) and `svc worker`, with env added.
func pgStack(t *testing.T, env ...string) string {
	t.Helper()
	temporalPort, port := freePort(t), freePort(t)
	dev := start(t, devEnv(t.TempDir(), "SVC_TEMPORAL_PORT="+temporalPort, "SVC_TASK_QUEUE=dev-only"), true, "dev")
	// The embedded Temporal requires mutual TLS; svc dev says with what.
	tlsEnv := testwait.UntilValue(t, 30*time.Second, "svc dev's Temporal TLS line", func() ([]string, bool) {
		m := temporalTLSLine.FindStringSubmatch(dev.Stdout())
		if m == nil {
			return nil, false
		}
		return strings.Fields(m[1]), true
	})
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		t.Fatal(err)
	}
	env = append([]string{"DATABASE_URL=" + pgtest.URL(t), "TEMPORAL_ADDRESS=127.0.0.1:" + temporalPort,
		"SVC_ADDR=127.0.0.1:" + port, "SVC_PUBLIC_URL=http://127.0.0.1:" + port,
		"SVC_SECRET_KEY=" + base64.StdEncoding.EncodeToString(key), "SVC_DATA_DIR=" + t.TempDir()}, append(tlsEnv, env...)...)
	if m := start(t, env, false, "migrate"); m.wait(time.Minute) != 0 {
		t.Fatalf("svc migrate failed: %s", m.Stderr())
	}
	s := start(t, env, true, "serve")
	w := start(t, env, false, "worker")
	testwait.Until(t, 30*time.Second, "worker polling line", func() bool { return strings.Contains(w.Stdout(), "polling task queue") })
	t.Cleanup(func() {
		for _, p := range []*proc{w, s} {
			p.signal(syscall.SIGTERM)
			p.wait(time.Minute)
		}
	})
	return s.URL
}

// onBothStores runs fn against each store: `svc dev` (SQLite) and the
// production roles on PostgreSQL (pgStack), each with env added.
func onBothStores(t *testing.T, env []string, fn func(t *testing.T, url string)) {
	t.Helper()
	t.Run("sqlite", func(t *testing.T) { fn(t, start(t, devEnv(t.TempDir(), env...), true, "dev").URL) })
	t.Run("postgres", func(t *testing.T) { fn(t, pgStack(t, env...)) })
}

// probeRun registers a process harness id running command, submits one
// case to it through url, waits for the run to end and returns it, with
// its result (a probe prints what it could do as its answer).
func probeRun(t *testing.T, url, id string, command []string) eval.Run {
	t.Helper()
	h := map[string]any{"id": id, "version": "1.0.0", "kind": "process", "command": command}
	if code := call(t, "POST", url+"/harnesses", h, nil); code != 201 {
		t.Fatalf("POST /harnesses %s = %d, want 201", id, code)
	}
	body := map[string]any{"harness": map[string]string{"id": id, "version": "1.0.0"},
		"case": map[string]any{"id": "c", "task": "t", "timeoutSec": 120}}
	var run eval.Run
	if code := call(t, "POST", url+"/runs", body, &run); code != 202 {
		t.Fatalf("POST /runs = %d, want 202", code)
	}
	testwait.Until(t, 2*time.Minute, "the probe run to end", func() bool {
		if code := call(t, "GET", url+"/runs/"+run.ID, nil, &run); code != 200 {
			t.Fatalf("GET /runs/%s = %d", run.ID, code)
		}
		return run.Status.Terminal()
	})
	if run.Result == nil || run.Result.Evidence == nil {
		t.Fatalf("probe run %s ended without a result: %+v", run.Status, run.Error)
	}
	return run
}
