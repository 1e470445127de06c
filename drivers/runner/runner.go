// Package runner is the driver of self-hosted runtimes (kind runner): it
// does not run a job itself but queues it in the store's lease queue
// (store.RunnerJobs), where a runner of the workspace (`svc runner`, on a
// machine the team owns) leases it over HTTP, runs it with its local
// driver and posts the result, which Run reads back. The job's name is its
// run and attempt (runners.JobID), so a retried activity adopts the job
// its predecessor queued (which may be running on a runner) instead of
// queueing a second one.
//
// A cancel marks the job cancelled: a queued job is then never leased, a
// leased one is killed by its runner, which learns of it from its next
// heartbeat's answer. A context ended with a cause made by drivers.Detach
// (the activity lost its lease) leaves the job for the next attempt.
package runner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"svc/drivers"
	"svc/internal/platform/derrors"
	"svc/internal/service/runners"
	"svc/store"
)

// Queue is what the driver needs of the store.
type Queue interface {
	EnqueueRunnerJob(ctx context.Context, j store.RunnerJob) (store.RunnerJob, bool, error)
	GetRunnerJob(ctx context.Context, workspace, id string) (store.RunnerJob, error)
	CancelRunnerJobs(ctx context.Context, workspace, runID, scorecardID string, now time.Time) (int, error)
	DeleteRunnerJob(ctx context.Context, workspace, id string) error
	ListRunnerJobLogs(ctx context.Context, workspace, id, leaseID string, after int64, limit int) ([]store.RunnerLogChunk, error)
	DeleteRunnerJobOutput(ctx context.Context, workspace, id string) error
}

// Sealer seals the job's secrets for the API to open at lease time
// (secrets.Sealer): they are never stored in plaintext.
type Sealer interface {
	Seal(workspace, name string, plaintext []byte) ([]byte, error)
}

// Options configure a Driver: one per runtime of a workspace (and batch).
type Options struct {
	Queue  Queue
	Sealer Sealer // nil: a job with secrets is refused
	// Workspace and Runtime say whose runners may lease the jobs;
	// ScorecardID, when set, lets a batch's cancel mark them all at once.
	Workspace, Runtime, ScorecardID string
	// Poll bounds the wait between two reads of a job's row; 0 means 500ms
	// (the first reads come sooner).
	Poll time.Duration
	// CancelGrace bounds the wait, after a cancel, for the runner to
	// report the job killed; 0 means 30s. A runner whose lease has run out
	// is not waited for.
	CancelGrace time.Duration
	Now         func() time.Time
	Logger      *slog.Logger
}

// Driver queues jobs for a workspace's runners; see the package comment.
type Driver struct{ o Options }

// New returns a Driver.
func New(o Options) *Driver {
	o.Poll = drivers.OrDefault(o.Poll, 500*time.Millisecond)
	o.CancelGrace = drivers.OrDefault(o.CancelGrace, 30*time.Second)
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	return &Driver{o: o}
}

// Run queues j (or adopts its job) and waits for a runner's result; see
// drivers.Driver.
func (d *Driver) Run(ctx context.Context, j drivers.Job) (drivers.Result, error) {
	if err := drivers.CheckJob("runner", j); err != nil {
		return drivers.Result{}, err
	}
	id := runners.JobID(j.RunID, j.Attempt)
	payload, err := json.Marshal(runners.Job{RunID: j.RunID, Attempt: j.Attempt, Command: j.Command, Env: j.Env,
		Case: json.RawMessage(j.Case), Files: j.Files, WorkDir: j.WorkDir, Image: j.Image, TimeoutMs: j.Timeout.Milliseconds()})
	if err != nil {
		return drivers.Result{}, derrors.Invalidf("runner driver: the case is not JSON: %v", err)
	}
	var sealed []byte
	if len(j.Secrets) > 0 {
		if d.o.Sealer == nil {
			return drivers.Result{}, derrors.Invalidf("the harness needs workspace secrets, but this worker has no SVC_SECRET_KEY to seal them for a runner")
		}
		plain, err := json.Marshal(j.Secrets)
		if err != nil {
			return drivers.Result{}, err
		}
		if sealed, err = d.o.Sealer.Seal(d.o.Workspace, runners.SecretsName(id), plain); err != nil {
			return drivers.Result{}, fmt.Errorf("runner driver: sealing the job's secrets: %w", err)
		}
	}
	row, created, err := d.o.Queue.EnqueueRunnerJob(ctx, store.RunnerJob{
		ID: id, Workspace: d.o.Workspace, Runtime: d.o.Runtime, RunID: j.RunID, Attempt: j.Attempt,
		ScorecardID: d.o.ScorecardID, Payload: payload, Secrets: sealed, CreatedAt: d.o.Now(),
	})
	if err != nil {
		return drivers.Result{}, fmt.Errorf("runner driver: queueing job %s: %w", id, err)
	}
	if !created {
		d.o.Logger.Info("runner driver: adopting the job an earlier dispatch queued", "job", row.ID, "run", j.RunID, "state", row.State, "leases", row.Leases)
	}
	return d.follow(ctx, j, row.ID)
}

// queueCallTimeout bounds one call to the job queue that outlives the
// activity's context (reading the job while a cancel waits, marking it
// cancelled, deleting it once taken): a store that stops answering fails
// the call rather than hanging the worker.
const queueCallTimeout = 30 * time.Second

// follow reads job id until it is done, and turns its result into the
// driver's; a cancel of ctx marks it cancelled and waits a little for its
// runner to report it killed.
func (d *Driver) follow(ctx context.Context, j drivers.Job, id string) (drivers.Result, error) {
	ws := d.o.Workspace
	bg := context.WithoutCancel(ctx)
	wait := 50 * time.Millisecond
	var cancelAt time.Time // when the cancel was marked; zero before
	logs := &logStream{d: d, j: j, id: id}
	for {
		cctx, cancelCall := context.WithTimeout(bg, queueCallTimeout)
		row, err := d.o.Queue.GetRunnerJob(cctx, ws, id)
		if err == nil && row.State != store.RunnerJobQueued {
			logs.pump(cctx, row)
		}
		cancelCall()
		switch {
		case errors.Is(err, derrors.ErrNotFound):
			return drivers.Result{}, fmt.Errorf("runner job %s is gone from the queue; the next attempt queues it again", id)
		case err != nil && !cancelAt.IsZero():
			// The store does not answer while a cancel waits: give up on
			// the runner's report.
			return d.cancelled(j, id, time.Since(cancelAt)), nil
		case err != nil:
			if ctx.Err() != nil {
				break
			}
			return drivers.Result{}, fmt.Errorf("runner driver: reading job %s: %w", id, err)
		case row.State == store.RunnerJobDone:
			return d.done(j, row, logs.streamed(row.LeaseID))
		case row.Cancelled && row.State == store.RunnerJobQueued:
			// No runner ever had it.
			return d.cancelled(j, id, 0), nil
		case !cancelAt.IsZero() && (d.o.Now().Sub(cancelAt) > d.o.CancelGrace ||
			row.LeaseExpires != nil && row.LeaseExpires.Before(d.o.Now())):
			// Its runner did not report in time, or is dead.
			return d.cancelled(j, id, d.o.Now().Sub(cancelAt)), nil
		}
		if ctx.Err() != nil && cancelAt.IsZero() {
			if drivers.Detaching(ctx) {
				return drivers.Result{}, fmt.Errorf("runner job %s: %w", id, context.Cause(ctx))
			}
			cancelAt = d.o.Now()
			cctx, cancelCall := context.WithTimeout(bg, queueCallTimeout)
			_, err := d.o.Queue.CancelRunnerJobs(cctx, ws, j.RunID, "", cancelAt)
			cancelCall()
			if err != nil {
				d.o.Logger.Warn("runner driver: marking a job cancelled failed; its runner runs it to its end", "job", id, "err", err)
			}
			wait = 50 * time.Millisecond
		}
		t := time.NewTimer(wait)
		if cancelAt.IsZero() {
			select {
			case <-ctx.Done():
			case <-t.C:
			}
		} else {
			<-t.C
		}
		t.Stop()
		wait = min(wait*3/2, d.o.Poll)
	}
}

// done turns a finished job's result into the driver's and deletes the
// job. Its output went to j.Log as the runner streamed it; when the lease
// that finished it streamed none (a runner of an earlier version), the
// result's stdout and stderr tail go to j.Log instead.
func (d *Driver) done(j drivers.Job, row store.RunnerJob, streamed bool) (drivers.Result, error) {
	var r runners.Result
	if len(row.Result) == 0 || json.Unmarshal(row.Result, &r) != nil {
		d.forget(row.ID)
		return drivers.Result{}, fmt.Errorf("runner job %s ended without a readable result; the next attempt runs it again", row.ID)
	}
	if r.Error != "" {
		d.forget(row.ID)
		if r.Invalid {
			return drivers.Result{}, derrors.Invalidf("%s", r.Error)
		}
		return drivers.Result{}, fmt.Errorf("runner %s could not run job %s: %s", row.Runner, row.ID, r.Error)
	}
	if j.Log != nil && !streamed {
		if r.Stdout != "" {
			j.Log("stdout", []byte(r.Stdout))
		}
		if r.StderrTail != "" {
			j.Log("stderr", []byte(r.StderrTail))
		}
	}
	d.forget(row.ID)
	return drivers.Result{
		ExitCode: r.ExitCode, Duration: time.Duration(r.DurationMs) * time.Millisecond,
		Stdout: r.Stdout, StdoutTail: r.StdoutTail, StderrTail: r.StderrTail, Trace: []byte(r.Trace),
		TimedOut: r.TimedOut, Cancelled: r.Cancelled, OS: r.OS, Driver: "local", Image: j.Image, Host: r.Host,
	}, nil
}

// cancelled is the result of a job cancelled before its runner reported.
func (d *Driver) cancelled(j drivers.Job, id string, after time.Duration) drivers.Result {
	d.forget(id)
	return drivers.Result{ExitCode: -1, Cancelled: true, Duration: after, Driver: "local", Image: j.Image}
}

// forget deletes a job whose outcome was taken; what fails is logged (a
// done job left in the queue is never leased again).
func (d *Driver) forget(id string) {
	ctx, cancel := context.WithTimeout(context.Background(), queueCallTimeout)
	defer cancel()
	if err := d.o.Queue.DeleteRunnerJob(ctx, d.o.Workspace, id); err != nil {
		d.o.Logger.Warn("runner driver: deleting a finished job failed", "job", id, "err", err)
	}
	if err := d.o.Queue.DeleteRunnerJobOutput(ctx, d.o.Workspace, id); err != nil {
		d.o.Logger.Warn("runner driver: deleting a finished job's output failed", "job", id, "err", err)
	}
}
