package runner_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"svc/drivers"
	"svc/drivers/runner"
	"svc/internal/app/runnerqueue"
	"svc/internal/platform/derrors"
	"svc/internal/platform/secrets"
	"svc/internal/service/runners"
	"svc/internal/testing/testwait"
	"svc/store"
	"svc/store/sqlite/sqlitetest"
)

const testKey = "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY="

// playRunner leases the next job of acme as a runner would, within a
// deadline; it fails t when none comes.
func playRunner(t *testing.T, s store.Store, leaseID string) store.RunnerJob {
	t.Helper()
	return testwait.UntilValue(t, 10*time.Second, "a job to lease", func() (store.RunnerJob, bool) {
		now := time.Now()
		j, err := s.LeaseRunnerJob(t.Context(), store.RunnerLease{Workspace: "acme", Runner: "box", LeaseID: leaseID, Now: now, Until: now.Add(time.Minute)})
		if errors.Is(err, derrors.ErrNotFound) {
			return j, false
		}
		if err != nil {
			t.Fatal(err)
		}
		return j, true
	})
}

func newDriver(t *testing.T, s store.Store) *runner.Driver {
	sealer, err := secrets.NewSealer(testKey)
	if err != nil {
		t.Fatal(err)
	}
	// The queue as internal/app wires it: the runners service's, through
	// runnerqueue.
	q := runnerqueue.New(runners.NewQueue(s, sealer))
	return runner.New(runner.Options{Queue: q, Workspace: "acme", Runtime: "own", ScorecardID: "sc1",
		Poll: 20 * time.Millisecond, CancelGrace: 5 * time.Second})
}

func job(run string) drivers.Job {
	return drivers.Job{RunID: run, Attempt: 1, Command: []string{"/bin/echo", "ok"}, Case: []byte(`{"id":"c1"}`),
		Secrets: map[string]string{"TOKEN": "s3cret-value-123"}, Timeout: time.Minute}
}

type outcome struct {
	res drivers.Result
	err error
}

func run(ctx context.Context, d *runner.Driver, j drivers.Job) chan outcome {
	done := make(chan outcome, 1)
	go func() {
		res, err := d.Run(ctx, j)
		done <- outcome{res, err}
	}()
	return done
}

func TestRunTakesTheRunnersResult(t *testing.T) {
	s := sqlitetest.New(t)
	d := newDriver(t, s)
	var logged string
	j := job("run1")
	j.Log = func(stream string, data []byte) { logged += stream + ":" + string(data) }
	done := run(t.Context(), d, j)

	leased := playRunner(t, s, "L1")
	var payload runners.Job
	if err := json.Unmarshal(leased.Payload, &payload); err != nil {
		t.Fatal(err)
	}
	if payload.RunID != "run1" || payload.TimeoutMs != 60000 || payload.Secrets != nil || string(payload.Case) != `{"id":"c1"}` {
		t.Errorf("payload %+v, want the job without its secrets", payload)
	}
	if len(leased.Secrets) == 0 || string(leased.Secrets) == "s3cret-value-123" {
		t.Errorf("secrets at rest %q, want them sealed", leased.Secrets)
	}
	raw, _ := json.Marshal(runners.Result{ExitCode: 3, DurationMs: 1500, Stdout: "answer\n", StderrTail: "warn\n", Trace: `{"kind":"tool_call"}`, OS: "linux"})
	if _, err := s.CompleteRunnerJob(t.Context(), "acme", leased.ID, "L1", raw, time.Now()); err != nil {
		t.Fatal(err)
	}
	o := <-done
	if o.err != nil {
		t.Fatal(o.err)
	}
	if o.res.ExitCode != 3 || o.res.Duration != 1500*time.Millisecond || o.res.Stdout != "answer\n" || string(o.res.Trace) != `{"kind":"tool_call"}` || o.res.Driver != "local" {
		t.Errorf("result %+v, want the runner's", o.res)
	}
	if logged != "stdout:answer\nstderr:warn\n" {
		t.Errorf("logged %q, want stdout and the stderr tail", logged)
	}
	if _, err := s.GetRunnerJob(t.Context(), "acme", leased.ID); !errors.Is(err, derrors.ErrNotFound) {
		t.Errorf("the finished job is still queued: %v", err)
	}
}

func TestRunAdoptsItsJobAfterADetach(t *testing.T) {
	s := sqlitetest.New(t)
	d := newDriver(t, s)
	ctx, cancel := context.WithCancelCause(t.Context())
	done := run(ctx, d, job("run1"))
	leased := playRunner(t, s, "L1")
	cancel(drivers.Detach(errors.New("lease lost")))
	if o := <-done; o.err == nil {
		t.Fatalf("a detached Run returned %+v, want an error", o.res)
	}
	if j, err := s.GetRunnerJob(t.Context(), "acme", leased.ID); err != nil || j.Cancelled {
		t.Fatalf("after a detach the job is %+v, %v; want it left running", j, err)
	}
	// The next attempt adopts it and gets the runner's result.
	done = run(t.Context(), d, job("run1"))
	raw, _ := json.Marshal(runners.Result{ExitCode: 0, Stdout: "ok"})
	if _, err := s.CompleteRunnerJob(t.Context(), "acme", leased.ID, "L1", raw, time.Now()); err != nil {
		t.Fatal(err)
	}
	if o := <-done; o.err != nil || o.res.Stdout != "ok" {
		t.Errorf("adopting Run = %+v, %v", o.res, o.err)
	}
}

func TestCancel(t *testing.T) {
	t.Run("queued", func(t *testing.T) {
		s := sqlitetest.New(t)
		ctx, cancel := context.WithCancel(t.Context())
		done := run(ctx, newDriver(t, s), job("run1"))
		testwait.Until(t, 10*time.Second, "the job to be queued", func() bool {
			js, _ := s.ListRunnerJobs(t.Context(), "acme")
			return len(js) == 1
		})
		cancel()
		o := <-done
		if o.err != nil || !o.res.Cancelled {
			t.Errorf("Run = %+v, %v; want cancelled", o.res, o.err)
		}
		if js, _ := s.ListRunnerJobs(t.Context(), "acme"); len(js) != 0 {
			t.Errorf("jobs left %+v, want none", js)
		}
	})
	t.Run("leased", func(t *testing.T) {
		s := sqlitetest.New(t)
		ctx, cancel := context.WithCancel(t.Context())
		done := run(ctx, newDriver(t, s), job("run1"))
		leased := playRunner(t, s, "L1")
		cancel()
		// The runner's next heartbeat says cancelled; it kills the job and
		// reports.
		testwait.Until(t, 10*time.Second, "the heartbeat to say cancelled", func() bool {
			j, err := s.RenewRunnerLease(t.Context(), "acme", leased.ID, "L1", time.Now(), time.Now().Add(time.Minute))
			return err == nil && j.Cancelled
		})
		raw, _ := json.Marshal(runners.Result{ExitCode: -1, Cancelled: true})
		if _, err := s.CompleteRunnerJob(t.Context(), "acme", leased.ID, "L1", raw, time.Now()); err != nil {
			t.Fatal(err)
		}
		if o := <-done; o.err != nil || !o.res.Cancelled {
			t.Errorf("Run = %+v, %v; want cancelled", o.res, o.err)
		}
	})
}

func TestInvalidResultFailsTheCase(t *testing.T) {
	s := sqlitetest.New(t)
	done := run(t.Context(), newDriver(t, s), job("run1"))
	leased := playRunner(t, s, "L1")
	raw, _ := json.Marshal(runners.Result{ExitCode: -1, Error: "command not found", Invalid: true})
	if _, err := s.CompleteRunnerJob(t.Context(), "acme", leased.ID, "L1", raw, time.Now()); err != nil {
		t.Fatal(err)
	}
	if o := <-done; !errors.Is(o.err, derrors.ErrInvalid) {
		t.Errorf("Run error %v, want ErrInvalid", o.err)
	}
}
