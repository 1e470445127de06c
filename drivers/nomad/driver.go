package nomad

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"sync"
	"time"

	"github.com/hashicorp/nomad/api"

	"svc/drivers"
	"svc/drivers/probe"
	"svc/internal/platform/derrors"
	"svc/internal/platform/netguard"
)

// Name is the driver's name as it appears in a Result.
const Name = "nomad"

// Defaults of Options.
const (
	DefaultKillGrace   = 5 * time.Second
	DefaultStopWait    = 30 * time.Second
	DefaultLogDrain    = 10 * time.Second
	DefaultPendingPoll = 2 * time.Second
	// blockWait is how long one blocking query on the job's allocations
	// may wait for a change.
	blockWait = 5 * time.Minute
	// maxWatchFailures is how many consecutive failed queries end a watch;
	// between them the driver backs off from one to eight seconds.
	maxWatchFailures = 6
	// cleanupTimeout bounds each request made after ctx is done
	// (deregistering, deleting the Variable).
	cleanupTimeout = 30 * time.Second
)

// Task states as Nomad reports them (TaskState.State).
const (
	taskRunning = "running"
	taskDead    = "dead"
)

// Options configure a Driver.
type Options struct {
	// Config is how to reach the cluster (address, region, namespace,
	// token); the token only authenticates the control plane.
	Config Config
	// Runtime are the runtime's job settings.
	Runtime RuntimeOptions
	// OTLPEndpoint is the default for Job.OTLPEndpoint.
	OTLPEndpoint string
	// KillGrace is the task's kill_timeout, between SIGTERM and SIGKILL
	// when the job is stopped; 0 means DefaultKillGrace.
	KillGrace time.Duration
	// StopWait is how long, after deregistering a cancelled or timed-out
	// job, Run waits for its allocation to stop; 0 means DefaultStopWait.
	StopWait time.Duration
	// LogDrain is how long, once the task is dead, Run waits for the log
	// streams to end; 0 means DefaultLogDrain.
	LogDrain time.Duration
	// PendingPoll is how often the job's evaluations are checked while it
	// has no allocation (a placement failure creates none); 0 means
	// DefaultPendingPoll.
	PendingPoll time.Duration
	// Logger receives what goes wrong outside a Result (a Variable that
	// could not be deleted); nil means slog.Default().
	Logger *slog.Logger
}

// Driver runs process harnesses as Nomad batch jobs, one job per attempt
// of a run. It is safe for concurrent use.
type Driver struct {
	c            *api.Client
	cfg          Config
	rt           RuntimeOptions
	job          JobOptions
	otlpEndpoint string
	killGrace    time.Duration
	stopWait     time.Duration
	logDrain     time.Duration
	pendingPoll  time.Duration
	log          *slog.Logger
}

var _ drivers.Driver = (*Driver)(nil)

// New returns a Driver for the cluster and runtime of o; it fails only
// when the connection is refused (see NewClient).
func New(o Options) (*Driver, error) {
	c, err := NewClient(o.Config)
	if err != nil {
		return nil, err
	}
	d := &Driver{
		c:            c,
		cfg:          o.Config,
		rt:           o.Runtime,
		otlpEndpoint: o.OTLPEndpoint,
		killGrace:    drivers.OrDefault(o.KillGrace, DefaultKillGrace),
		stopWait:     drivers.OrDefault(o.StopWait, DefaultStopWait),
		logDrain:     drivers.OrDefault(o.LogDrain, DefaultLogDrain),
		pendingPoll:  drivers.OrDefault(o.PendingPoll, DefaultPendingPoll),
		log:          o.Logger,
	}
	if d.log == nil {
		d.log = slog.Default()
	}
	return d, nil
}

// WithJobOptions returns a Driver that runs jobs with the resources jo
// declares, sharing d's connection.
func (d *Driver) WithJobOptions(jo JobOptions) *Driver {
	c := *d
	c.job = jo
	return &c
}

// Close releases the driver's idle connections.
func (d *Driver) Close() { d.c.Close() }

// Run runs attempt j.Attempt of run j.RunID as the Nomad job
// JobID(j.RunID, j.Attempt) and follows it to its end: see drivers.Driver.
//
// When that job already exists (a retried activity calling Run again for
// the same attempt) Run adopts it and follows it instead of registering
// another. A job that could never run (a bad spec, a placement no node
// satisfies) is an error wrapping derrors.ErrInvalid that says what to
// fix; a non-zero exit, a timeout or a cancel are a Result. When the
// watch itself fails (the cluster unreachable for a while) Run returns an
// error and leaves the job running, for the retry to adopt; so does a
// cancel whose cause drivers.Detach made. Any other cancel of ctx stops
// the job.
func (d *Driver) Run(ctx context.Context, j drivers.Job) (drivers.Result, error) {
	if err := drivers.CheckJob(Name, j); err != nil {
		return drivers.Result{}, err
	}
	id := JobID(j.RunID, j.Attempt)
	sp, err := d.jobSpec(id, j)
	if err != nil {
		return drivers.Result{}, err
	}
	job, err := d.lookup(ctx, id, j.RunID)
	image := sp.image
	switch {
	case err != nil:
	case job != nil:
		image = taskImage(job)
	default:
		// Non-nil when another Run of the same attempt registered it first.
		if job, err = d.register(ctx, id, j, sp); job != nil {
			image = taskImage(job)
		}
	}
	if err != nil {
		if ctx.Err() != nil {
			if drivers.Detaching(ctx) {
				// A registration that reached the cluster is the next
				// Run's to adopt.
				return drivers.Result{}, detachedErr(ctx, id)
			}
			// Cancelled while dispatching: the registration may have
			// reached the cluster even though its answer did not come.
			d.deregister(ctx, id)
			return drivers.Result{ExitCode: -1, Cancelled: true, Driver: Name, OS: "linux", Image: image}, nil
		}
		return drivers.Result{}, err
	}

	// A job already stopped (an attempt cancelled before a crash) is
	// followed to what its allocation left, or reported cancelled.
	stopped := job != nil && job.Stop != nil && *job.Stop
	res, ended, err := d.follow(ctx, id, j, stopped)
	if ended && len(j.Secrets) > 0 {
		d.deleteSecrets(ctx, id)
	}
	if err != nil {
		return drivers.Result{}, err
	}
	res.Driver = Name
	res.OS = "linux"
	res.Image = image
	return res, nil
}

// detachedErr is what Run returns when ctx was detached from job id.
func detachedErr(ctx context.Context, id string) error {
	return fmt.Errorf("nomad job %s: %w", id, context.Cause(ctx))
}

// lookup returns the job id if it exists, refusing a job of that ID that
// this driver did not register for runID.
func (d *Driver) lookup(ctx context.Context, id, runID string) (*api.Job, error) {
	job, _, err := d.c.Jobs().Info(id, (&api.QueryOptions{}).WithContext(ctx))
	if err != nil {
		if statusOf(err) == http.StatusNotFound {
			return nil, nil
		}
		return nil, d.describe(ctx, "looking up job "+id, err)
	}
	if job.Meta[metaRunID] != runID {
		return nil, derrors.Conflictf("nomad job %s exists but was not registered by this service for run %s; remove it or use another namespace", id, runID)
	}
	return job, nil
}

// register writes the secrets to the job's Variable and registers the job,
// only if it is new. It returns the job when another Run registered it
// first, nil when this one did.
func (d *Driver) register(ctx context.Context, id string, j drivers.Job, sp spec) (*api.Job, error) {
	if len(j.Secrets) > 0 {
		v := &api.Variable{Path: VariablePath(id), Items: maps.Clone(j.Secrets)}
		if d.cfg.Namespace != "" {
			v.Namespace = d.cfg.Namespace
		}
		if _, _, err := d.c.Variables().Create(v, (&api.WriteOptions{}).WithContext(ctx)); err != nil {
			// Never the answer's body: it may repeat the items.
			return nil, d.describe(ctx, "writing the job's secrets to Nomad Variable "+VariablePath(id), err)
		}
	}
	_, _, err := d.c.Jobs().RegisterOpts(sp.job, &api.RegisterOptions{EnforceIndex: true, ModifyIndex: 0}, (&api.WriteOptions{}).WithContext(ctx))
	if err == nil {
		return nil, nil
	}
	// EnforceIndex with index 0 refuses a job that exists: another Run
	// of this attempt got there first, and this one follows its job.
	if job, lerr := d.lookup(ctx, id, j.RunID); lerr == nil && job != nil {
		return job, nil
	}
	if len(j.Secrets) > 0 {
		d.deleteSecrets(ctx, id)
	}
	if code := statusOf(err); code == http.StatusBadRequest {
		var status api.UnexpectedResponseError
		errors.As(err, &status)
		return nil, derrors.Invalidf("nomad refused job %s: %s", id, probe.Clean(status.Body(), d.cfg.Token))
	}
	return nil, d.describe(ctx, "registering job "+id, err)
}

// Stop stops the job of attempt attempt of run runID (purge false, as a
// cancel does) and deletes its secrets Variable, when this service
// registered that job for the run: what a caller that gives the run up
// without following its job (the dispatch's retries exhausted) does, so
// that nothing of it is left running. No such job is no error. Unlike
// Run's clean-up, every request is bounded by ctx alone.
func (d *Driver) Stop(ctx context.Context, runID string, attempt int) error {
	id := JobID(runID, attempt)
	job, err := d.lookup(ctx, id, runID)
	if err != nil || job == nil {
		return err
	}
	if job.Stop == nil || !*job.Stop {
		if _, _, err := d.c.Jobs().Deregister(id, false, (&api.WriteOptions{}).WithContext(ctx)); err != nil {
			return d.describe(ctx, "stopping job "+id, err)
		}
	}
	if _, err := d.c.Variables().Delete(VariablePath(id), (&api.WriteOptions{}).WithContext(ctx)); err != nil && statusOf(err) != http.StatusNotFound {
		return d.describe(ctx, "deleting the job's secrets Variable "+VariablePath(id), err)
	}
	return nil
}

// deleteSecrets deletes the job's Variable, even when ctx is done.
func (d *Driver) deleteSecrets(ctx context.Context, id string) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	if _, err := d.c.Variables().Delete(VariablePath(id), (&api.WriteOptions{}).WithContext(ctx)); err != nil {
		d.log.Warn("nomad driver: deleting the job's secrets Variable", "job", id, "path", VariablePath(id), "err", d.describe(ctx, "deleting", err))
	}
}

// watch is the state of one job being followed.
type watch struct {
	d      *Driver
	id     string
	out    *drivers.Output
	alloc  *api.AllocationListStub
	index  uint64
	logs   sync.WaitGroup
	logCtx context.Context
	// cutLogs ends the log streams; logsStarted says they were started.
	cutLogs     context.CancelFunc
	logsStarted bool
	// logErr is the first failure of a log stream, which leaves the
	// output incomplete.
	logMu  sync.Mutex
	logErr error
}

// follow watches job id until its allocation is terminal, the job times
// out or ctx is done. ended says whether the job is over (or was never
// placed), so that its Variable may go.
func (d *Driver) follow(ctx context.Context, id string, j drivers.Job, stopped bool) (res drivers.Result, ended bool, err error) {
	logCtx, stopLogs := context.WithCancel(context.WithoutCancel(ctx))
	defer stopLogs()
	w := &watch{d: d, id: id, out: drivers.NewOutput(j.Log), logCtx: logCtx, cutLogs: stopLogs}
	defer w.logs.Wait()
	defer stopLogs() // before Wait: the streams end when Run returns

	var deadline time.Time
	failures := 0
	for {
		wait := blockWait
		if w.alloc == nil {
			wait = d.pendingPoll
		}
		qctx, cancel := ctx, context.CancelFunc(func() {})
		if !deadline.IsZero() {
			qctx, cancel = context.WithDeadline(ctx, deadline)
		}
		allocs, meta, qerr := d.c.Jobs().Allocations(id, true, (&api.QueryOptions{WaitIndex: w.index, WaitTime: wait}).WithContext(qctx))
		cancel()
		switch {
		case ctx.Err() != nil && drivers.Detaching(ctx):
			return drivers.Result{}, false, detachedErr(ctx, id)
		case ctx.Err() != nil:
			res, err := w.stop(ctx, false)
			return res, true, err
		case !deadline.IsZero() && !time.Now().Before(deadline):
			res, err := w.stop(ctx, true)
			return res, true, err
		case qerr != nil:
			failures++
			if failures >= maxWatchFailures {
				return drivers.Result{}, false, d.describe(ctx, "following job "+id, qerr)
			}
			_ = sleep(ctx, time.Duration(min(1<<(failures-1), 8))*time.Second) // a done ctx is seen next round
			continue
		}
		failures = 0
		if meta != nil && meta.LastIndex > w.index {
			w.index = meta.LastIndex
		}
		w.alloc = pick(allocs)
		if w.alloc == nil {
			if stopped {
				return drivers.Result{ExitCode: -1, Cancelled: true}, true, nil
			}
			if err := d.placement(ctx, id); err != nil && ctx.Err() == nil {
				d.deregister(ctx, id)
				return drivers.Result{}, true, err
			}
			continue
		}
		ts := w.alloc.TaskStates[taskName]
		if ts != nil && (ts.State == taskRunning || ts.State == taskDead) {
			w.startLogs()
		}
		if j.Timeout > 0 && deadline.IsZero() && ts != nil && !ts.StartedAt.IsZero() {
			// From the task's start (an adopted job keeps its deadline);
			// a client clock ahead of ours does not extend it.
			deadline = earliest(ts.StartedAt, time.Now()).Add(j.Timeout)
		}
		if terminal(w.alloc) {
			res, err := w.finish(ctx)
			return res, true, err
		}
	}
}

// startLogs starts following the task's stdout and stderr, once.
func (w *watch) startLogs() {
	if w.logsStarted {
		return
	}
	w.logsStarted = true
	allocID := w.alloc.ID
	for _, stream := range []string{api.FSLogNameStdout, api.FSLogNameStderr} {
		w.logs.Add(1)
		go func() {
			defer w.logs.Done()
			if err := streamLogs(w.logCtx, w.d.c, allocID, stream, w.out); err != nil && w.logCtx.Err() == nil {
				err = w.d.describe(w.logCtx, "reading the task's "+stream, err)
				w.d.log.Warn("nomad driver: following the task's "+stream, "job", w.id, "alloc", allocID, "err", err)
				w.logMu.Lock()
				w.logErr = cmp.Or(w.logErr, err)
				w.logMu.Unlock()
			}
		}()
	}
}

// drainLogs waits up to LogDrain for the log streams to end on their own
// (Nomad ends them once the task is dead), then cuts them.
func (w *watch) drainLogs() {
	drivers.Drain(&w.logs, w.d.logDrain, w.cutLogs)
}

// finish builds the Result of a job whose allocation is terminal.
func (w *watch) finish(ctx context.Context) (drivers.Result, error) {
	a := w.alloc
	ts := a.TaskStates[taskName]
	started := ts != nil && !ts.StartedAt.IsZero()
	// Stopped by someone else (or by an earlier, cancelled Run of this
	// attempt): what it left, cancelled.
	stoppedByNomad := a.DesiredStatus == api.AllocDesiredStatusStop
	if !started && stoppedByNomad {
		return drivers.Result{ExitCode: -1, Cancelled: true}, nil
	}
	if !started {
		if a.ClientStatus == api.AllocClientStatusLost {
			return drivers.Result{}, fmt.Errorf("nomad job %s: the node %s was lost before the task started", w.id, a.NodeName)
		}
		return drivers.Result{}, derrors.Invalidf("nomad job %s: the task never started: %s", w.id, probe.Clean(startFailure(ts), w.d.cfg.Token))
	}
	if a.ClientStatus == api.AllocClientStatusLost && ts.FinishedAt.IsZero() {
		return drivers.Result{}, fmt.Errorf("nomad job %s: the node %s running it was lost", w.id, a.NodeName)
	}
	res := w.result(ctx, ts)
	res.Cancelled = stoppedByNomad && res.ExitCode == -1
	w.logMu.Lock()
	defer w.logMu.Unlock()
	if w.logErr != nil {
		// The output is the harness's answer: rather than a result
		// without it, an error, and the retried activity adopts the
		// ended job and reads its logs again from the start.
		return drivers.Result{}, fmt.Errorf("%w (the job %s is kept; a retry reads its output again)", w.logErr, w.id)
	}
	return res, nil
}

// result collects the output, the trace and the exit of a started task.
func (w *watch) result(ctx context.Context, ts *api.TaskState) drivers.Result {
	w.startLogs()
	w.drainLogs()
	res := drivers.Result{ExitCode: exitCode(ts)}
	if ts != nil && !ts.StartedAt.IsZero() && ts.FinishedAt.After(ts.StartedAt) {
		res.Duration = ts.FinishedAt.Sub(ts.StartedAt)
	}
	w.out.Fill(&res)
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	trace, err := readTrace(rctx, w.d.c, w.alloc.ID)
	if err != nil {
		w.d.log.Warn("nomad driver: reading the trace file", "job", w.id, "alloc", w.alloc.ID, "err", w.d.describe(rctx, "reading the trace", err))
	}
	res.Trace = trace
	return res
}

// stop deregisters a cancelled (or timed-out) job, waits up to StopWait
// for its allocation to stop and returns what it left.
func (w *watch) stop(ctx context.Context, timedOut bool) (drivers.Result, error) {
	w.d.deregister(ctx, w.id)
	bg, cancel := context.WithTimeout(context.WithoutCancel(ctx), w.d.stopWait)
	defer cancel()
	// At least one look, since an allocation may have been placed since
	// the last answer; then until it has stopped.
	for bg.Err() == nil {
		allocs, meta, err := w.d.c.Jobs().Allocations(w.id, true, (&api.QueryOptions{WaitIndex: w.index, WaitTime: w.d.stopWait}).WithContext(bg))
		if err != nil {
			if sleep(bg, time.Second) != nil {
				break
			}
			continue
		}
		if meta != nil && meta.LastIndex > w.index {
			w.index = meta.LastIndex
		}
		if a := pick(allocs); a != nil {
			w.alloc = a
		}
		if w.alloc == nil || terminal(w.alloc) {
			break
		}
	}
	res := drivers.Result{ExitCode: -1}
	if w.alloc != nil {
		if ts := w.alloc.TaskStates[taskName]; ts != nil && !ts.StartedAt.IsZero() {
			res = w.result(ctx, ts)
			if !terminal(w.alloc) {
				res.ExitCode = -1
			}
		}
	}
	res.TimedOut, res.Cancelled = timedOut, !timedOut
	return res, nil
}

// deregister stops job id (purge false: the job and its allocation stay
// readable until Nomad's garbage collection), even when ctx is done.
func (d *Driver) deregister(ctx context.Context, id string) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	if _, _, err := d.c.Jobs().Deregister(id, false, (&api.WriteOptions{}).WithContext(ctx)); err != nil {
		d.log.Warn("nomad driver: stopping job", "job", id, "err", d.describe(ctx, "stopping", err))
	}
}

func earliest(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

// sleep waits d or until ctx is done.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// statusOf is the HTTP status of a refused request, 0 when none came.
func statusOf(err error) int {
	var status api.UnexpectedResponseError
	if errors.As(err, &status) && status.HasStatusCode() {
		return status.StatusCode()
	}
	return 0
}

// describe says in the service's words why a request failed: the status
// that came back (never the body, which could repeat what was sent), or
// why none did. An address the guard refuses wraps derrors.ErrInvalid.
func (d *Driver) describe(ctx context.Context, what string, err error) error {
	if ctx.Err() != nil {
		return fmt.Errorf("nomad driver: %s: %w", what, ctx.Err())
	}
	var refused *netguard.RefusedError
	if errors.As(err, &refused) {
		// The guard (SVC_PROBE_ALLOW) refuses the address: no retry can
		// reach it, so the job can never run.
		return derrors.Invalidf("nomad driver: %s at %s: %s", what, d.cfg.Addr, probe.Describe(err))
	}
	var why string
	switch code := statusOf(err); {
	case code == http.StatusForbidden || code == http.StatusUnauthorized:
		why = fmt.Sprintf("HTTP %d: the cluster refused the runtime's token (check its authSecret and ACL policy)", code)
	case code != 0:
		why = fmt.Sprintf("the cluster answered HTTP %d", code)
	case errors.Is(err, errRedirect):
		why = errRedirect.Error()
	case errors.Is(err, errFrameTooLarge):
		why = err.Error()
	default:
		why = probe.Describe(err)
	}
	return fmt.Errorf("nomad driver: %s at %s: %s", what, d.cfg.Addr, why)
}
