package runners

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"svc/internal/platform/derrors"
	"svc/store"
)

// QueueStore is what a Queue needs of the store: the lease queue's jobs
// and the output their runners post.
type QueueStore interface {
	EnqueueRunnerJob(ctx context.Context, j store.RunnerJob) (store.RunnerJob, bool, error)
	GetRunnerJob(ctx context.Context, workspace, id string) (store.RunnerJob, error)
	CancelRunnerJobs(ctx context.Context, workspace, runID, scorecardID string, now time.Time) (int, error)
	DeleteRunnerJob(ctx context.Context, workspace, id string) error
	ListRunnerJobLogs(ctx context.Context, workspace, id, leaseID string, after int64, limit int) ([]store.RunnerLogChunk, error)
	DeleteRunnerJobOutput(ctx context.Context, workspace, id string) error
}

// Sealer seals a job's secrets for the API to open at lease time
// (secrets.Sealer): they are never stored in plaintext.
type Sealer interface {
	Seal(workspace, name string, plaintext []byte) ([]byte, error)
}

// Queue is the worker's side of the lease queue (store.RunnerJobs): it
// queues a case's job with its secrets sealed, reads the job back as its
// runner leases, runs and finishes it, hands on the output the runner
// posts, marks the job cancelled and deletes it once its outcome is taken.
// The runner driver (drivers/runner) follows its jobs through it, wired by
// internal/app; the runner's side is Service.
type Queue struct {
	st     QueueStore
	sealer Sealer
}

// NewQueue returns a Queue over st. sealer may be nil (no
// SVC_SECRET_KEY): a job with secrets is then refused.
func NewQueue(st QueueStore, sealer Sealer) *Queue { return &Queue{st: st, sealer: sealer} }

// The states of a queued job (store.RunnerJob's).
const (
	JobQueued = store.RunnerJobQueued
	JobLeased = store.RunnerJobLeased
	JobDone   = store.RunnerJobDone
)

// QueueJob is a job to queue: Job (with its secrets, which are sealed) for
// Workspace's runners of Runtime; ScorecardID, when set, lets a batch's
// cancel mark all its jobs at once.
type QueueJob struct {
	Workspace, Runtime, ScorecardID string
	Job                             Job
	At                              time.Time
}

// QueuedJob is a job of the lease queue as its worker follows it.
type QueuedJob struct {
	ID string
	// State is JobQueued, JobLeased or JobDone; Cancelled says a cancel
	// marked it.
	State     string
	Cancelled bool
	// Runner and LeaseID name the runner holding (or that last held) the
	// job, and its lease; LeaseExpires is when that lease ends unless
	// renewed (nil when never leased); Leases counts its leases.
	Runner, LeaseID string
	LeaseExpires    *time.Time
	Leases          int
	// Result is what its runner posted once it is done; nil when it posted
	// nothing readable.
	Result *Result
}

// Enqueue queues q.Job under JobID of its run and attempt, its secrets
// sealed under SecretsName of that id. When the job is queued already (an
// earlier dispatch of the attempt queued it, and it may be running), it
// is returned as it is, with created false.
func (q *Queue) Enqueue(ctx context.Context, qj QueueJob) (_ QueuedJob, created bool, err error) {
	j := qj.Job
	id := JobID(j.RunID, j.Attempt)
	jobSecrets := j.Secrets
	j.Secrets = nil // they travel sealed, and only in the lease answer
	payload, err := json.Marshal(j)
	if err != nil {
		return QueuedJob{}, false, derrors.Invalidf("runner driver: the case is not JSON: %v", err)
	}
	var sealed []byte
	if len(jobSecrets) > 0 {
		if q.sealer == nil {
			return QueuedJob{}, false, derrors.Invalidf("the harness needs workspace secrets, but this worker has no SVC_SECRET_KEY to seal them for a runner")
		}
		plain, err := json.Marshal(jobSecrets)
		if err != nil {
			return QueuedJob{}, false, err
		}
		if sealed, err = q.sealer.Seal(qj.Workspace, SecretsName(id), plain); err != nil {
			return QueuedJob{}, false, fmt.Errorf("runner driver: sealing the job's secrets: %w", err)
		}
	}
	row, created, err := q.st.EnqueueRunnerJob(ctx, store.RunnerJob{
		ID: id, Workspace: qj.Workspace, Runtime: qj.Runtime, RunID: j.RunID, Attempt: j.Attempt,
		ScorecardID: qj.ScorecardID, Payload: payload, Secrets: sealed, CreatedAt: qj.At,
	})
	if err != nil {
		return QueuedJob{}, false, fmt.Errorf("runner driver: queueing job %s: %w", id, err)
	}
	return queued(row), created, nil
}

// Job reads job id of workspace (ErrNotFound when it is gone).
func (q *Queue) Job(ctx context.Context, workspace, id string) (QueuedJob, error) {
	row, err := q.st.GetRunnerJob(ctx, workspace, id)
	if err != nil {
		return QueuedJob{}, err
	}
	return queued(row), nil
}

// queued is row as its worker follows it.
func queued(row store.RunnerJob) QueuedJob {
	j := QueuedJob{ID: row.ID, State: row.State, Cancelled: row.Cancelled, Runner: row.Runner, LeaseID: row.LeaseID,
		LeaseExpires: row.LeaseExpires, Leases: row.Leases}
	var r Result
	if row.State == JobDone && len(row.Result) > 0 && json.Unmarshal(row.Result, &r) == nil {
		j.Result = &r
	}
	return j
}

// Cancel marks the jobs of run runID in workspace cancelled at now: a
// queued job is then never leased, a leased one is killed by its runner.
func (q *Queue) Cancel(ctx context.Context, workspace, runID string, now time.Time) error {
	_, err := q.st.CancelRunnerJobs(ctx, workspace, runID, "", now)
	return err
}

// Delete deletes job id (a done job left in the queue is never leased
// again); none is not an error.
func (q *Queue) Delete(ctx context.Context, workspace, id string) error {
	return q.st.DeleteRunnerJob(ctx, workspace, id)
}

// DeleteOutput deletes the output job id's runners posted.
func (q *Queue) DeleteOutput(ctx context.Context, workspace, id string) error {
	return q.st.DeleteRunnerJobOutput(ctx, workspace, id)
}

// Logs returns up to limit chunks of job id's output posted under lease
// leaseID, after seq after, in seq order (already masked by the runner:
// see runnerside.LogShipper, internal/cli/runnerside).
func (q *Queue) Logs(ctx context.Context, workspace, id, leaseID string, after int64, limit int) ([]LogChunk, error) {
	rows, err := q.st.ListRunnerJobLogs(ctx, workspace, id, leaseID, after, limit)
	if err != nil {
		return nil, err
	}
	out := make([]LogChunk, len(rows))
	for i, c := range rows {
		out[i] = LogChunk{Seq: c.Seq, Stream: c.Stream, Data: c.Data}
	}
	return out, nil
}
