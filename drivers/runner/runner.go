// Package runner is the driver of self-hosted runtimes (kind runner): it
// does not run a job itself but queues it in the workspace's lease queue
// (Queue: the runners service's, runners.Queue, wired by internal/app),
// where a runner of the workspace (`svc runner`, on a machine the team
// owns) leases it over HTTP, runs it with its local driver and posts the
// result, which Run reads back. The job's name is its run and attempt, so
// a retried activity adopts the job its predecessor queued (which may be
// running on a runner) instead of queueing a second one.
//
// A cancel marks the job cancelled: a queued job is then never leased, a
// leased one is killed by its runner, which learns of it from its next
// heartbeat's answer. A context ended with a cause made by drivers.Detach
// (the activity lost its lease) leaves the job for the next attempt.
//
// The driver persists nothing itself: what it reads and writes goes
// through Queue, in the job contract's terms.
package runner

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"svc/drivers"
	"svc/internal/platform/derrors"
)

// Queue is the lease queue of a workspace's runners, as the driver uses
// it.
type Queue interface {
	// Enqueue queues e.Job, its secrets sealed, under the name of its run
	// and attempt; when that job is queued already (an earlier dispatch
	// queued it) it returns it as it is, with created false.
	Enqueue(ctx context.Context, e Enqueue) (_ Job, created bool, err error)
	// Job reads job id of workspace; ErrNotFound when it is gone.
	Job(ctx context.Context, workspace, id string) (Job, error)
	// Cancel marks run runID's jobs of workspace cancelled at now.
	Cancel(ctx context.Context, workspace, runID string, now time.Time) error
	// Delete deletes job id; DeleteOutput the output its runners posted.
	Delete(ctx context.Context, workspace, id string) error
	DeleteOutput(ctx context.Context, workspace, id string) error
	// Logs returns up to limit chunks of job id's output posted under
	// lease leaseID after seq after, in seq order, masked by the runner.
	Logs(ctx context.Context, workspace, id, leaseID string, after int64, limit int) ([]Chunk, error)
}

// Enqueue is a job to queue for Workspace's runners of Runtime;
// ScorecardID, when set, lets a batch's cancel mark all its jobs at once.
type Enqueue struct {
	Workspace, Runtime, ScorecardID string
	Job                             drivers.Job
	At                              time.Time
}

// The states of a queued Job.
const (
	Queued = "queued" // no runner has it
	Leased = "leased" // a runner holds it
	Done   = "done"   // its runner posted its outcome
)

// Job is a queued job as the driver follows it.
type Job struct {
	ID string
	// State is Queued, Leased or Done; Cancelled says a cancel marked it.
	State     string
	Cancelled bool
	// Runner and LeaseID name the runner holding (or that last held) the
	// job, and its lease; LeaseExpires is when that lease ends unless
	// renewed (zero when never leased); Leases counts its leases.
	Runner, LeaseID string
	LeaseExpires    time.Time
	Leases          int
	// Outcome is what its runner posted, once Done; nil when it posted
	// nothing readable.
	Outcome *Outcome
}

// Outcome is what a runner posted when its job ended: the job's result,
// with the runner's host; or, when the runner could not run the job at
// all, why (Error), and whether no runner ever could (Invalid).
type Outcome struct {
	Result  drivers.Result
	Error   string
	Invalid bool
}

// Chunk is a piece of a job's output as its runner posted it: Seq numbers
// a lease's chunks from 1; Stream is stdout, stderr or system.
type Chunk struct {
	Seq    int64
	Stream string
	Data   []byte
}

// Options configure a Driver: one per runtime of a workspace (and batch).
type Options struct {
	Queue Queue
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
	if d.o.Queue == nil {
		return drivers.Result{}, errors.New("runner driver: this worker has no lease queue to queue the job in")
	}
	row, created, err := d.o.Queue.Enqueue(ctx, Enqueue{Workspace: d.o.Workspace, Runtime: d.o.Runtime,
		ScorecardID: d.o.ScorecardID, Job: j, At: d.o.Now()})
	if err != nil {
		return drivers.Result{}, err
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
		row, err := d.o.Queue.Job(cctx, ws, id)
		if err == nil && row.State != Queued {
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
		case row.State == Done:
			return d.done(j, row, logs.streamed(row.LeaseID))
		case row.Cancelled && row.State == Queued:
			// No runner ever had it.
			return d.cancelled(j, id, 0), nil
		case !cancelAt.IsZero() && (d.o.Now().Sub(cancelAt) > d.o.CancelGrace ||
			!row.LeaseExpires.IsZero() && row.LeaseExpires.Before(d.o.Now())):
			// Its runner did not report in time, or is dead.
			return d.cancelled(j, id, d.o.Now().Sub(cancelAt)), nil
		}
		if ctx.Err() != nil && cancelAt.IsZero() {
			if drivers.Detaching(ctx) {
				return drivers.Result{}, fmt.Errorf("runner job %s: %w", id, context.Cause(ctx))
			}
			cancelAt = d.o.Now()
			cctx, cancelCall := context.WithTimeout(bg, queueCallTimeout)
			err := d.o.Queue.Cancel(cctx, ws, j.RunID, cancelAt)
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
func (d *Driver) done(j drivers.Job, row Job, streamed bool) (drivers.Result, error) {
	o := row.Outcome
	if o == nil {
		d.forget(row.ID)
		return drivers.Result{}, fmt.Errorf("runner job %s ended without a readable result; the next attempt runs it again", row.ID)
	}
	if o.Error != "" {
		d.forget(row.ID)
		if o.Invalid {
			return drivers.Result{}, derrors.Invalidf("%s", o.Error)
		}
		return drivers.Result{}, fmt.Errorf("runner %s could not run job %s: %s", row.Runner, row.ID, o.Error)
	}
	r := o.Result
	if j.Log != nil && !streamed {
		if r.Stdout != "" {
			j.Log("stdout", []byte(r.Stdout))
		}
		if r.StderrTail != "" {
			j.Log("stderr", []byte(r.StderrTail))
		}
	}
	d.forget(row.ID)
	r.Driver, r.Image = "local", j.Image
	return r, nil
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
	if err := d.o.Queue.Delete(ctx, d.o.Workspace, id); err != nil {
		d.o.Logger.Warn("runner driver: deleting a finished job failed", "job", id, "err", err)
	}
	if err := d.o.Queue.DeleteOutput(ctx, d.o.Workspace, id); err != nil {
		d.o.Logger.Warn("runner driver: deleting a finished job's output failed", "job", id, "err", err)
	}
}
