// Package runnerqueue hands the runners service's lease queue
// (runners.Queue) to the runner driver (runner.Queue): it converts between
// the job contract the driver speaks (drivers.Job, drivers.Result) and the
// runners' wire format the service queues (runners.Job, runners.Result).
// The service cannot speak the job contract itself, as the API, which
// never reaches the drivers, imports it; the driver persists nothing.
package runnerqueue

import (
	"context"
	"encoding/json"
	"time"

	"svc/drivers"
	"svc/drivers/runner"
	"svc/internal/service/runners"
)

// Queue is q as the runner driver's Queue.
type Queue struct{ q *runners.Queue }

// New returns q as the runner driver's Queue.
func New(q *runners.Queue) Queue { return Queue{q: q} }

var _ runner.Queue = Queue{}

// Enqueue queues e.Job (see runners.Queue.Enqueue).
func (a Queue) Enqueue(ctx context.Context, e runner.Enqueue) (runner.Job, bool, error) {
	j := e.Job
	qj, created, err := a.q.Enqueue(ctx, runners.QueueJob{Workspace: e.Workspace, Runtime: e.Runtime, ScorecardID: e.ScorecardID, At: e.At,
		Job: runners.Job{RunID: j.RunID, Attempt: j.Attempt, Command: j.Command, Env: j.Env, Secrets: j.Secrets,
			Case: json.RawMessage(j.Case), Files: j.Files, WorkDir: j.WorkDir, Image: j.Image, TimeoutMs: j.Timeout.Milliseconds()}})
	if err != nil {
		return runner.Job{}, false, err
	}
	return job(qj), created, nil
}

// Job reads job id (see runners.Queue.Job).
func (a Queue) Job(ctx context.Context, workspace, id string) (runner.Job, error) {
	qj, err := a.q.Job(ctx, workspace, id)
	if err != nil {
		return runner.Job{}, err
	}
	return job(qj), nil
}

// Cancel marks run runID's jobs cancelled (see runners.Queue.Cancel).
func (a Queue) Cancel(ctx context.Context, workspace, runID string, now time.Time) error {
	return a.q.Cancel(ctx, workspace, runID, now)
}

// Delete deletes job id (see runners.Queue.Delete).
func (a Queue) Delete(ctx context.Context, workspace, id string) error {
	return a.q.Delete(ctx, workspace, id)
}

// DeleteOutput deletes job id's output (see runners.Queue.DeleteOutput).
func (a Queue) DeleteOutput(ctx context.Context, workspace, id string) error {
	return a.q.DeleteOutput(ctx, workspace, id)
}

// Logs reads job id's output (see runners.Queue.Logs).
func (a Queue) Logs(ctx context.Context, workspace, id, leaseID string, after int64, limit int) ([]runner.Chunk, error) {
	cs, err := a.q.Logs(ctx, workspace, id, leaseID, after, limit)
	if err != nil {
		return nil, err
	}
	out := make([]runner.Chunk, len(cs))
	for i, c := range cs {
		out[i] = runner.Chunk{Seq: c.Seq, Stream: c.Stream, Data: c.Data}
	}
	return out, nil
}

// states are the queue's states in the driver's words.
var states = map[string]string{runners.JobQueued: runner.Queued, runners.JobLeased: runner.Leased, runners.JobDone: runner.Done}

// job is qj in the driver's terms.
func job(qj runners.QueuedJob) runner.Job {
	j := runner.Job{ID: qj.ID, State: states[qj.State], Cancelled: qj.Cancelled, Runner: qj.Runner, LeaseID: qj.LeaseID, Leases: qj.Leases}
	if j.State == "" {
		j.State = qj.State
	}
	if qj.LeaseExpires != nil {
		j.LeaseExpires = *qj.LeaseExpires
	}
	if r := qj.Result; r != nil {
		j.Outcome = &runner.Outcome{Error: r.Error, Invalid: r.Invalid, Result: drivers.Result{
			ExitCode: r.ExitCode, Duration: time.Duration(r.DurationMs) * time.Millisecond,
			Stdout: r.Stdout, StdoutTail: r.StdoutTail, StderrTail: r.StderrTail, Trace: []byte(r.Trace),
			TimedOut: r.TimedOut, Cancelled: r.Cancelled, OS: r.OS, Host: r.Host,
		}}
	}
	return j
}
