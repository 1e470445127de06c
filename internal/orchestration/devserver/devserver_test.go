package devserver_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"svc/internal/orchestration"
	"svc/internal/orchestration/devserver"
	"svc/internal/platform/derrors"
)

const (
	namespace = "default"
	taskQueue = "devserver-test"

	// childDBEnv makes the test binary run as the child of
	// TestWorkflowSurvivesKill instead of running tests.
	childDBEnv = "DEVSERVER_TEST_CHILD_DB"
	// childReady is the line the child prints once its timer is pending.
	childReady = "timer started"
	killedID   = "timer-survives-kill"
)

func TestMain(m *testing.M) {
	if db := os.Getenv(childDBEnv); db != "" {
		if err := runChild(db); err != nil {
			fmt.Fprintln(os.Stderr, "child:", err)
			os.Exit(1)
		}
		return
	}
	os.Exit(m.Run())
}

// runChild starts the server on db, starts a workflow, reports once its
// timer is pending, and waits to be killed.
func runChild(db string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	srv, err := devserver.Start(ctx, devserver.Options{DBPath: db, Namespace: namespace, Logger: testLogger()})
	if err != nil {
		return err
	}
	c, err := orchestration.Dial(ctx, orchestration.ClientOptions{HostPort: srv.HostPort(), Namespace: namespace, Logger: testLogger(), TLS: srv.ClientTLS()})
	if err != nil {
		return err
	}
	w := orchestration.NewWorker(c, taskQueue, register, orchestration.WorkerOptions{})
	if err := w.Start(); err != nil {
		return err
	}
	in := timerInput{Sleep: 3 * time.Second, Value: "after kill"}
	if _, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: killedID, TaskQueue: taskQueue}, timerWorkflow, in); err != nil {
		return err
	}
	if err := waitForTimer(ctx, c, killedID); err != nil {
		return err
	}
	fmt.Println(childReady)
	<-ctx.Done()
	return ctx.Err()
}

// timerInput is the input of timerWorkflow.
type timerInput struct {
	Sleep time.Duration
	Value string
}

// timerResult is the result of timerWorkflow.
type timerResult struct {
	Value string
}

// timerWorkflow waits on a durable timer, then returns its input's value.
func timerWorkflow(ctx workflow.Context, in timerInput) (timerResult, error) {
	if err := workflow.Sleep(ctx, in.Sleep); err != nil {
		return timerResult{}, err
	}
	return timerResult{Value: in.Value}, nil
}

func register(r worker.Registry) { r.RegisterWorkflow(timerWorkflow) }

// testLogger shows warnings and errors only; the test output stays short.
func testLogger() *slog.Logger {
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
}

// running is one generation of the embedded server with a client and a
// started worker.
type running struct {
	srv *devserver.Server
	c   client.Client
	w   worker.Worker
}

func (r running) stop(t *testing.T) {
	t.Helper()
	r.w.Stop()
	r.c.Close()
	if err := r.srv.Stop(); err != nil {
		t.Errorf("Stop: %v", err)
	}
}

func startAll(ctx context.Context, t *testing.T, dbPath string) running {
	t.Helper()
	begin := time.Now()
	srv, err := devserver.Start(ctx, devserver.Options{DBPath: dbPath, Namespace: namespace, Logger: testLogger()})
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Logf("Start took %v (frontend %s, RSS %s)", time.Since(begin).Round(time.Millisecond), srv.HostPort(), rss())
	c, err := orchestration.Dial(ctx, orchestration.ClientOptions{HostPort: srv.HostPort(), Namespace: namespace, Logger: testLogger(), TLS: srv.ClientTLS()})
	if err != nil {
		_ = srv.Stop()
		t.Fatalf("Dial: %v", err)
	}
	if err := orchestration.Ready(ctx, c); err != nil {
		t.Errorf("Ready: %v", err)
	}
	w := orchestration.NewWorker(c, taskQueue, register, orchestration.WorkerOptions{})
	if err := w.Start(); err != nil {
		c.Close()
		_ = srv.Stop()
		t.Fatalf("worker Start: %v", err)
	}
	return running{srv: srv, c: c, w: w}
}

// rss is the process's resident set size as /proc reports it.
func rss() string {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return "unknown"
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			return strings.TrimSpace(v)
		}
	}
	return "unknown"
}

// waitForTimer polls the workflow's history until its timer has started.
func waitForTimer(ctx context.Context, c client.Client, id string) error {
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		it := c.GetWorkflowHistory(ctx, id, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
		for it.HasNext() {
			ev, err := it.Next()
			if err != nil {
				break
			}
			if ev.GetEventType() == enumspb.EVENT_TYPE_TIMER_STARTED {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("timer of workflow %s never started: %w", id, ctx.Err())
		case <-tick.C:
		}
	}
}

// TestWorkflowSurvivesRestart starts a workflow that waits on a timer, stops
// the worker and the server while it waits, starts both again on the same
// database file, and expects the workflow to finish with its value.
func TestWorkflowSurvivesRestart(t *testing.T) {
	if testing.Short() {
		t.Skip("embedded Temporal: skipped in -short mode")
	}
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	dbPath := filepath.Join(t.TempDir(), "temporal.db")

	first := startAll(ctx, t, dbPath)
	// A second server on the same file would fight the first for its
	// history shard; Start refuses it.
	if srv, err := devserver.Start(ctx, devserver.Options{DBPath: dbPath, Logger: testLogger()}); !errors.Is(err, derrors.ErrConflict) {
		if err == nil {
			_ = srv.Stop()
		}
		t.Errorf("second Start on the same file = %v, want errors.Is %v", err, derrors.ErrConflict)
	}
	const id = "timer-survives-restart"
	in := timerInput{Sleep: 3 * time.Second, Value: "after restart"}
	if _, err := first.c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id, TaskQueue: taskQueue}, timerWorkflow, in); err != nil {
		first.stop(t)
		t.Fatalf("ExecuteWorkflow: %v", err)
	}
	if err := waitForTimer(ctx, first.c, id); err != nil {
		first.stop(t)
		t.Fatal(err)
	}
	// The worker stops first: even if the timer fires before the server is
	// down, only the second worker, reading the file, can complete it.
	first.stop(t)

	second := startAll(ctx, t, dbPath)
	defer second.stop(t)
	var got timerResult
	if err := second.c.GetWorkflow(ctx, id, "").Get(ctx, &got); err != nil {
		t.Fatalf("workflow result: %v", err)
	}
	if diff := cmp.Diff(timerResult{Value: in.Value}, got); diff != "" {
		t.Errorf("workflow result (-want +got):\n%s", diff)
	}
}

func TestStartRefuses(t *testing.T) {
	if testing.Short() {
		t.Skip("embedded Temporal: skipped in -short mode")
	}
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	takenPort := taken.Addr().(*net.TCPAddr).Port

	dir := t.TempDir()
	tests := []struct {
		name     string
		opts     devserver.Options
		wantErr  error
		wantText string
	}{
		{
			name:    "no database file",
			opts:    devserver.Options{},
			wantErr: derrors.ErrInvalid,
		},
		{
			name:    "missing folder",
			opts:    devserver.Options{DBPath: filepath.Join(dir, "missing", "temporal.db")},
			wantErr: os.ErrNotExist,
		},
		{
			name:     "frontend port in use",
			opts:     devserver.Options{DBPath: filepath.Join(dir, "temporal.db"), FrontendPort: takenPort},
			wantErr:  syscall.EADDRINUSE,
			wantText: "in use: set SVC_TEMPORAL_PORT",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.opts.Logger = testLogger()
			srv, err := devserver.Start(t.Context(), tt.opts)
			if err == nil {
				_ = srv.Stop()
				t.Fatalf("Start(%+v) succeeded, want an error", tt.opts)
			}
			t.Logf("Start: %v", err)
			if !errors.Is(err, tt.wantErr) {
				t.Errorf("Start(%+v) = %v, want errors.Is %v", tt.opts, err, tt.wantErr)
			}
			if !strings.Contains(err.Error(), tt.wantText) {
				t.Errorf("Start(%+v) = %q, want it to contain %q", tt.opts, err, tt.wantText)
			}
			// A refused start leaves no database file behind.
			if tt.opts.DBPath != "" {
				if _, err := os.Stat(tt.opts.DBPath); !errors.Is(err, os.ErrNotExist) {
					t.Errorf("after a refused Start, Stat(%s) = %v, want not exist", tt.opts.DBPath, err)
				}
			}
		})
	}
}

// TestWorkflowSurvivesKill runs the first server in a child process, kills
// it with SIGKILL while a workflow's timer is pending, and expects a server
// started on the same file to finish the workflow: nothing a crash can lose
// lives outside the file.
func TestWorkflowSurvivesKill(t *testing.T) {
	if testing.Short() {
		t.Skip("embedded Temporal: skipped in -short mode")
	}
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	dbPath := filepath.Join(t.TempDir(), "temporal.db")

	child := exec.CommandContext(ctx, os.Args[0], "-test.run=^$")
	child.Env = append(os.Environ(), childDBEnv+"="+dbPath)
	child.Stderr = os.Stderr
	out, err := child.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	ready := false
	for sc := bufio.NewScanner(out); sc.Scan(); {
		if sc.Text() == childReady {
			ready = true
			break
		}
	}
	if err := child.Process.Kill(); err != nil {
		t.Fatalf("kill child: %v", err)
	}
	_ = child.Wait() // "signal: killed" is the expected outcome
	if !ready {
		t.Fatal("child exited before its workflow's timer started")
	}

	r := startAll(ctx, t, dbPath)
	defer r.stop(t)
	var got timerResult
	if err := r.c.GetWorkflow(ctx, killedID, "").Get(ctx, &got); err != nil {
		t.Fatalf("workflow result: %v", err)
	}
	if diff := cmp.Diff(timerResult{Value: "after kill"}, got); diff != "" {
		t.Errorf("workflow result (-want +got):\n%s", diff)
	}
}
