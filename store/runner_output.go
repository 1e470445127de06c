package store

import (
	"context"
	"time"
)

// RunnerJobOutput is what a self-hosted runner's job sends while it runs
// (issue 15, point 6): its output, in chunks, for the worker's runner
// driver to hand to the run's log while the job is live; and the hashes
// of the run-scoped tokens its spans reach the OTLP door with.
type RunnerJobOutput interface {
	// AppendRunnerJobLogs stores chunks of job id written under leaseID.
	// A chunk whose seq that lease already stored is skipped, so a retried
	// post adds nothing. ErrConflict when leaseID no longer holds the job
	// (it expired and another runner leased it, or the job is done);
	// ErrNotFound when there is no such job; ErrTooLarge when the lease's
	// chunks would hold more than maxBytes of data.
	AppendRunnerJobLogs(ctx context.Context, workspace, id, leaseID string, chunks []RunnerLogChunk, maxBytes int64) error
	// ListRunnerJobLogs returns the chunks of job id written under leaseID
	// whose seq is above after, in seq order, at most limit of them.
	ListRunnerJobLogs(ctx context.Context, workspace, id, leaseID string, after int64, limit int) ([]RunnerLogChunk, error)
	// PutRunnerJobToken stores a run-scoped token's hash; it first drops
	// the workspace's tokens that expired before t.IssuedAt.
	PutRunnerJobToken(ctx context.Context, t RunnerJobToken) error
	// RunnerJobTokenByHash returns the token whose hash is hash (of any
	// workspace) or ErrNotFound.
	RunnerJobTokenByHash(ctx context.Context, hash []byte) (RunnerJobToken, error)
	// DeleteRunnerJobOutput deletes the log chunks and tokens of job id,
	// and those of the workspace's jobs no longer stored.
	DeleteRunnerJobOutput(ctx context.Context, workspace, id string) error
}

// RunnerLogChunk is a piece of a runner job's output.
type RunnerLogChunk struct {
	// Seq numbers a lease's chunks from 1, in the order they were written.
	Seq int64 `json:"seq"`
	// Stream is stdout, stderr or system.
	Stream string `json:"stream"`
	// Data is the bytes as written (masked by the runner), base64 in JSON.
	Data []byte    `json:"data"`
	At   time.Time `json:"at"`
}

// RunnerJobToken is a stored run-scoped token: only its SHA-256 is kept.
type RunnerJobToken struct {
	Hash      []byte
	Workspace string
	JobID     string
	LeaseID   string
	RunID     string
	IssuedAt  time.Time
	ExpiresAt time.Time
}
