package runner_test

import (
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"svc/internal/platform/derrors"
	"svc/internal/service/runners"
	"svc/internal/testing/testwait"
	"svc/store"
	"svc/store/sqlite/sqlitetest"
)

// logRecorder is a job's Log that a test can read while the job runs.
type logRecorder struct {
	mu  sync.Mutex
	out strings.Builder
}

func (r *logRecorder) log(stream string, data []byte) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.out.WriteString(stream + ":" + string(data))
}

func (r *logRecorder) String() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.out.String()
}

func appendLogs(t *testing.T, s store.Store, id, lease string, chunks ...store.RunnerLogChunk) error {
	t.Helper()
	return s.AppendRunnerJobLogs(t.Context(), "acme", id, lease, chunks, 1<<20)
}

func chunk(seq int64, stream, data string) store.RunnerLogChunk {
	return store.RunnerLogChunk{Seq: seq, Stream: stream, Data: []byte(data), At: time.Now()}
}

// TestLogsStreamWhileTheJobRuns: what a runner posts reaches the job's
// Log while the job still runs, in seq order, each chunk once (a retried
// post adds nothing); at the end the result's output is not handed on a
// second time, and the job's chunks are deleted with it.
func TestLogsStreamWhileTheJobRuns(t *testing.T) {
	s := sqlitetest.New(t)
	d := newDriver(t, s)
	var rec logRecorder
	j := job("run1")
	j.Log = rec.log
	done := run(t.Context(), d, j)
	leased := playRunner(t, s, "L1")

	if err := appendLogs(t, s, leased.ID, "L1", chunk(1, "stdout", "step 1\n"), chunk(2, "stderr", "warn\n")); err != nil {
		t.Fatal(err)
	}
	testwait.Until(t, 10*time.Second, "the first chunks to be logged", func() bool { return rec.String() == "stdout:step 1\nstderr:warn\n" })
	// A retried post of the same chunks, and the next one.
	if err := appendLogs(t, s, leased.ID, "L1", chunk(2, "stderr", "warn\n"), chunk(3, "stdout", "step 2\n")); err != nil {
		t.Fatal(err)
	}
	testwait.Until(t, 10*time.Second, "the third chunk to be logged", func() bool { return strings.HasSuffix(rec.String(), "stdout:step 2\n") })
	select {
	case o := <-done:
		t.Fatalf("Run returned %+v, %v before the job ended", o.res, o.err)
	default:
	}
	raw, _ := json.Marshal(runners.Result{ExitCode: 0, Stdout: "step 1\nstep 2\n", StderrTail: "warn\n"})
	if _, err := s.CompleteRunnerJob(t.Context(), "acme", leased.ID, "L1", raw, time.Now()); err != nil {
		t.Fatal(err)
	}
	if o := <-done; o.err != nil || o.res.Stdout != "step 1\nstep 2\n" {
		t.Fatalf("Run = %+v, %v", o.res, o.err)
	}
	if got, want := rec.String(), "stdout:step 1\nstderr:warn\nstdout:step 2\n"; got != want {
		t.Errorf("logged %q, want %q (each chunk once, the result's output not again)", got, want)
	}
	if left, err := s.ListRunnerJobLogs(t.Context(), "acme", leased.ID, "L1", 0, 10); err != nil || len(left) != 0 {
		t.Errorf("chunks left after the job = %+v, %v; want none", left, err)
	}
}

// TestLogsOfALostLeaseAreNotMixed: when a runner dies and another leases
// the job, the dead lease can post nothing more, a system line says the
// job started again, and the new lease's output follows from its start.
func TestLogsOfALostLeaseAreNotMixed(t *testing.T) {
	s := sqlitetest.New(t)
	d := newDriver(t, s)
	var rec logRecorder
	j := job("run1")
	j.Log = rec.log
	done := run(t.Context(), d, j)
	first := playRunner(t, s, "L1")
	if err := appendLogs(t, s, first.ID, "L1", chunk(1, "stdout", "first try\n")); err != nil {
		t.Fatal(err)
	}
	testwait.Until(t, 10*time.Second, "the first lease's output", func() bool { return rec.String() == "stdout:first try\n" })

	// The first runner stops heartbeating; past its lease another takes it.
	later := time.Now().Add(2 * time.Minute)
	second, err := s.LeaseRunnerJob(t.Context(), store.RunnerLease{Workspace: "acme", Runner: "box2", LeaseID: "L2", Now: later, Until: later.Add(time.Minute)})
	if err != nil || second.ID != first.ID {
		t.Fatalf("second lease = %+v, %v", second, err)
	}
	if err := appendLogs(t, s, first.ID, "L1", chunk(2, "stdout", "late\n")); !errors.Is(err, derrors.ErrConflict) {
		t.Errorf("a lost lease's post = %v, want a conflict", err)
	}
	if err := appendLogs(t, s, first.ID, "L2", chunk(1, "stdout", "second try\n")); err != nil {
		t.Fatal(err)
	}
	testwait.Until(t, 10*time.Second, "the second lease's output", func() bool { return strings.HasSuffix(rec.String(), "stdout:second try\n") })
	raw, _ := json.Marshal(runners.Result{ExitCode: 0, Stdout: "second try\n"})
	if _, err := s.CompleteRunnerJob(t.Context(), "acme", first.ID, "L2", raw, time.Now()); err != nil {
		t.Fatal(err)
	}
	if o := <-done; o.err != nil {
		t.Fatal(o.err)
	}
	got := rec.String()
	parts := strings.SplitN(got, "system:", 2)
	if len(parts) != 2 || parts[0] != "stdout:first try\n" || !strings.Contains(parts[1], "runs it again from the start") ||
		!strings.HasSuffix(parts[1], "stdout:second try\n") || strings.Contains(got, "late") {
		t.Errorf("logged %q, want the first lease's output, a system line, then the second's", got)
	}
}
