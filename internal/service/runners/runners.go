// Package runners is the service side of self-hosted runners (issue 15,
// point 6): the wire format a runner (`svc runner`) and the API speak
// (runnerwire's types, aliased here), and the use cases behind the runner
// routes: lease a job by long poll, renew its lease by heartbeat (whose
// answer carries the cancel), post its result. The worker's side, which
// queues a case's job and reads its result back, is Queue, which the
// runner driver (drivers/runner) follows its jobs through; both meet in the
// store's lease queue (store.RunnerJobs).
package runners

import (
	"time"

	"svc/internal/domain/eval"
	"svc/internal/domain/runnerwire"
)

// The wire format, defined in runnerwire so that the runner's side speaks
// it without linking this service.
type (
	Job            = runnerwire.Job
	Result         = runnerwire.Result
	LeaseRequest   = runnerwire.LeaseRequest
	Lease          = runnerwire.Lease
	Heartbeat      = runnerwire.Heartbeat
	HeartbeatReply = runnerwire.HeartbeatReply
	Completion     = runnerwire.Completion
	LogChunk       = runnerwire.LogChunk
	LogBatch       = runnerwire.LogBatch
)

// Log bounds (runnerwire's), and what one lease may store in all: MaxJobLog
// plus room for the runner's last chunk saying it cut the output.
const (
	MaxLogBatchChunks = runnerwire.MaxLogBatchChunks
	MaxLogBatchBytes  = runnerwire.MaxLogBatchBytes
	MaxJobLog         = runnerwire.MaxJobLog
	maxJobLogStored   = MaxJobLog + 64<<10
)

// OTLPTokenPrefix starts a run-scoped OTLP token (a "runner job token").
const OTLPTokenPrefix = "rjt_"

// OTLPHeadersSecret is runnerwire.OTLPHeadersSecret.
const OTLPHeadersSecret = runnerwire.OTLPHeadersSecret

// Protocol bounds.
const (
	// DefaultHeartbeat, MinHeartbeat, MaxHeartbeat and MaxWait are
	// runnerwire's.
	DefaultHeartbeat = runnerwire.DefaultHeartbeat
	MinHeartbeat     = runnerwire.MinHeartbeat
	MaxHeartbeat     = runnerwire.MaxHeartbeat
	MaxWait          = runnerwire.MaxWait
	// LeaseFor is how many heartbeat intervals a lease lasts unless
	// renewed: a runner that misses that many is taken for dead.
	LeaseFor = 3
	// MinLease is the shortest lease, whatever the interval.
	MinLease = 3 * time.Second
	// MaxLostLeases is how many runners may lose a job (stop heartbeating
	// it) before it fails its case: a harness that kills its runner would
	// otherwise take down every runner of the workspace in turn.
	MaxLostLeases = 3
)

// LeaseDuration is how long a lease of a runner heartbeating every hb
// lasts: LeaseFor intervals, at least MinLease.
func LeaseDuration(hb time.Duration) time.Duration {
	return max(LeaseFor*hb, MinLease)
}

// JobID is the id of the job of attempt of run (eval.RunnerJobID): the
// same for every dispatch of that attempt, so a retried activity finds
// its job.
func JobID(runID string, attempt int) string { return eval.RunnerJobID(runID, attempt) }

// SecretsName is the name the job's secrets are sealed under (the sealer
// binds it with the workspace into the ciphertext), so a sealed copy
// cannot be opened as another job's.
func SecretsName(jobID string) string { return "runner-job." + jobID }
