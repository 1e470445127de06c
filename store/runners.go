package store

import (
	"context"
	"encoding/json"
	"time"
)

// OrphanedRunnerJob is how long a cancelled job that no runner holds is
// kept: its worker deletes it at once unless it died after the cancel.
const OrphanedRunnerJob = 10 * time.Minute

// RunnerJobs is the lease queue of a workspace's self-hosted runtimes
// (kind runner): the worker's runner driver enqueues a case's job, a
// self-hosted runner (`svc runner`) leases it over HTTP, renews its lease
// by heartbeats and posts its result, which the driver reads back. A
// lease is a deadline: a runner that stops heartbeating (it was killed)
// loses its job at LeaseExpires and another runner leases it again. A
// cancel sets Cancelled, which the runner learns from its next heartbeat.
type RunnerJobs interface {
	// EnqueueRunnerJob stores j queued. A job of the same workspace, run
	// and attempt already stored (an earlier dispatch of the same attempt)
	// is returned as it is, with created false, so a retried activity
	// adopts its job rather than queueing a second one.
	EnqueueRunnerJob(ctx context.Context, j RunnerJob) (_ RunnerJob, created bool, err error)
	// GetRunnerJob returns one job or ErrNotFound.
	GetRunnerJob(ctx context.Context, workspace, id string) (RunnerJob, error)
	// LeaseRunnerJob gives l's runner the oldest job of l.Workspace (of
	// l.Runtime when set) that is queued, or leased with a lease expired
	// before l.Now, and not cancelled: leased to l.Runner under l.LeaseID
	// until l.Until. ErrNotFound when there is none.
	// It first drops the workspace's cancelled jobs that nobody follows
	// (not leased, or their lease ran out) OrphanedRunnerJob after their
	// last change.
	LeaseRunnerJob(ctx context.Context, l RunnerLease) (RunnerJob, error)
	// RenewRunnerLease extends the lease leaseID holds on job id to until
	// and returns the job, whose Cancelled tells the runner to kill it.
	// ErrConflict when leaseID no longer holds the job (it expired and
	// another runner leased it, or the job is done): the runner must drop
	// it. ErrNotFound when there is no such job.
	RenewRunnerLease(ctx context.Context, workspace, id, leaseID string, now, until time.Time) (RunnerJob, error)
	// CompleteRunnerJob records the result of job id, run under leaseID,
	// and marks it done. Posting the same lease's result again is a no-op;
	// a result of a lease that no longer holds the job is ErrConflict.
	CompleteRunnerJob(ctx context.Context, workspace, id, leaseID string, result json.RawMessage, now time.Time) (RunnerJob, error)
	// CancelRunnerJobs marks cancelled the jobs of workspace that are not
	// done and belong to the run runID (when set) or to the batch
	// scorecardID (when set), and returns how many it marked. A queued job
	// is then never leased; a leased one is killed by its runner.
	CancelRunnerJobs(ctx context.Context, workspace, runID, scorecardID string, now time.Time) (int, error)
	// DeleteRunnerJob deletes a job; none is not an error.
	DeleteRunnerJob(ctx context.Context, workspace, id string) error
	// ListRunnerJobs returns the workspace's jobs that are not done,
	// oldest first.
	ListRunnerJobs(ctx context.Context, workspace string) ([]RunnerJob, error)
}

// RunnerJob is a row of RunnerJobs: one attempt of one case on a
// self-hosted runtime.
type RunnerJob struct {
	ID          string `json:"id"`
	Workspace   string `json:"-"`
	Runtime     string `json:"runtime"`
	RunID       string `json:"runId"`
	Attempt     int    `json:"attempt"`
	ScorecardID string `json:"scorecardId,omitempty"`
	// Payload is what the runner runs (the job, without its secrets), as
	// JSON; the store does not read it.
	Payload json.RawMessage `json:"-"`
	// Secrets are the job's secrets, sealed by the worker; nil when none.
	Secrets []byte `json:"-"`
	// State is queued, leased or done.
	State     string `json:"state"`
	Cancelled bool   `json:"cancelled,omitempty"`
	// Runner and LeaseID name the runner holding (or that last held) the
	// lease, and the lease; LeaseExpires is when it ends unless renewed.
	Runner       string     `json:"runner,omitempty"`
	LeaseID      string     `json:"-"`
	LeaseExpires *time.Time `json:"leaseExpires,omitempty"`
	// Leases counts the times the job was leased: above 1 when a runner
	// lost it.
	Leases int `json:"leases"`
	// Result is what the runner posted, as JSON; nil until done (and for a
	// job cancelled before any runner leased it).
	Result    json.RawMessage `json:"-"`
	CreatedAt time.Time       `json:"createdAt"`
	UpdatedAt time.Time       `json:"updatedAt"`
}

// The states of a RunnerJob.
const (
	RunnerJobQueued = "queued"
	RunnerJobLeased = "leased"
	RunnerJobDone   = "done"
)

// RunnerLease is a runner asking for a job.
type RunnerLease struct {
	Workspace string
	// Runtime, when set, limits the lease to that runtime's jobs.
	Runtime string
	// Runner names the runner (its key id and name), for the list.
	Runner string
	// LeaseID is a fresh random id: the runner's heartbeats and result
	// must carry it.
	LeaseID    string
	Now, Until time.Time
}
