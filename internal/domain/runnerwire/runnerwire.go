// Package runnerwire is the runner protocol (issue 15, point 6): the
// bodies a self-hosted runner (`svc runner`, internal/cli) and the API
// (the runners service, internal/service/runners) exchange on the runner
// routes, and the bounds both sides keep. It is pure, so the runner's side
// links no service or store to speak it.
package runnerwire

import (
	"encoding/json"
	"time"
)

// Job is what a runner runs: one attempt of a case of a process harness,
// as the worker planned it (drivers.Job without its log hook). Secrets
// travel only in the lease answer, opened from their sealed copy; the
// runner hands them to its local driver, which writes them to the job's
// secrets file (SVC_SECRETS_FILE), never its environment or argv.
type Job struct {
	RunID     string            `json:"runId"`
	Attempt   int               `json:"attempt"`
	Command   []string          `json:"command"`
	Env       map[string]string `json:"env,omitempty"`
	Secrets   map[string]string `json:"secrets,omitempty"`
	Case      json.RawMessage   `json:"case"`
	Files     map[string]string `json:"files,omitempty"`
	WorkDir   string            `json:"workDir,omitempty"`
	Image     string            `json:"image,omitempty"`
	TimeoutMs int64             `json:"timeoutMs,omitempty"`
}

// Result is what a runner posts when its job has ended: the fields of
// drivers.Result, plus the runner's host and, when its local driver could
// not run the job at all, why.
type Result struct {
	ExitCode   int    `json:"exitCode"`
	DurationMs int64  `json:"durationMs"`
	Stdout     string `json:"stdout,omitempty"`
	StdoutTail string `json:"stdoutTail,omitempty"`
	StderrTail string `json:"stderrTail,omitempty"`
	Trace      string `json:"trace,omitempty"`
	TimedOut   bool   `json:"timedOut,omitempty"`
	Cancelled  bool   `json:"cancelled,omitempty"`
	OS         string `json:"os,omitempty"`
	Host       string `json:"host,omitempty"`
	// Error is set when the job could not be run (its command could not be
	// started, the runner's driver failed); Invalid says that no runner
	// could ever run it (the case fails rather than being retried).
	Error   string `json:"error,omitempty"`
	Invalid bool   `json:"invalid,omitempty"`
}

// LeaseRequest is the body of POST /runner/lease.
type LeaseRequest struct {
	// Runner names the runner process (host and pid by default), shown in
	// the job list; at most 200 characters.
	Runner string `json:"runner,omitempty"`
	// Runtime, when set, takes only that runtime's jobs.
	Runtime string `json:"runtime,omitempty"`
	// HeartbeatMs is how often the runner will heartbeat; the lease lasts
	// a few of them (the service's runners.LeaseFor). 0 means
	// DefaultHeartbeat.
	HeartbeatMs int64 `json:"heartbeatMs,omitempty"`
	// WaitMs bounds the long poll; 0 means MaxWait.
	WaitMs int64 `json:"waitMs,omitempty"`
}

// Lease is the answer of POST /runner/lease when a job was leased (204
// when none came within the wait).
type Lease struct {
	JobID        string    `json:"jobId"`
	LeaseID      string    `json:"leaseId"`
	LeaseExpires time.Time `json:"leaseExpires"`
	Runtime      string    `json:"runtime"`
	Job          Job       `json:"job"`
	// OTLPToken is the job's run-scoped credential for the OTLP door
	// (POST /v1/traces): the door takes it for spans of Job.RunID only,
	// while this lease holds the job, and never after the job ends. The
	// runner hands it to the job in its secrets file (OTLPHeadersSecret),
	// never its environment or argv. Empty when none could be minted.
	OTLPToken string `json:"otlpToken,omitempty"`
}

// Heartbeat is the body of POST /runner/jobs/:id/heartbeat.
type Heartbeat struct {
	LeaseID string `json:"leaseId"`
	// HeartbeatMs is the runner's interval, as in LeaseRequest.
	HeartbeatMs int64 `json:"heartbeatMs,omitempty"`
}

// HeartbeatReply answers a heartbeat: Cancelled tells the runner to kill
// the job and post its result.
type HeartbeatReply struct {
	Cancelled    bool      `json:"cancelled"`
	LeaseExpires time.Time `json:"leaseExpires"`
}

// Completion is the body of POST /runner/jobs/:id/result.
type Completion struct {
	LeaseID string `json:"leaseId"`
	Result  Result `json:"result"`
}

// LogChunk is a piece of a job's output, as the runner read it (with the
// job's secrets masked): Seq numbers a lease's chunks from 1 in the order
// they were written, so that a retried post adds nothing.
type LogChunk struct {
	Seq int64 `json:"seq"`
	// Stream is stdout, stderr or system (what the runner itself says,
	// such as that the output was cut).
	Stream string `json:"stream"`
	// Data is the bytes, base64 in JSON (output need not be UTF-8, and a
	// chunk may end inside a character).
	Data []byte `json:"data"`
}

// LogBatch is the body of POST /runner/jobs/:id/logs: chunks of the job's
// output, written under LeaseID, in seq order.
type LogBatch struct {
	LeaseID string     `json:"leaseId"`
	Chunks  []LogChunk `json:"chunks"`
}

// Log bounds: what one post may carry, and what one lease may store in
// all (MaxJobLog, the run log's own cap; the service keeps room beyond it
// for the runner's last chunk saying it cut the output).
const (
	MaxLogBatchChunks = 256
	MaxLogBatchBytes  = 1 << 20
	MaxJobLog         = 8 << 20
)

// OTLPHeadersSecret is the name under which a runner puts the job's OTLP
// headers (Authorization=Bearer%20rjt_...) in its secrets file
// (SVC_SECRETS_FILE), in the format of OTEL_EXPORTER_OTLP_HEADERS, so that
// a harness that exports its secrets file's entries as its own
// environment hands them to its OpenTelemetry SDK unchanged.
const OTLPHeadersSecret = "OTEL_EXPORTER_OTLP_HEADERS"

// Protocol bounds a runner keeps.
const (
	// DefaultHeartbeat is a runner's heartbeat interval unless it says.
	DefaultHeartbeat = 2 * time.Second
	// MinHeartbeat and MaxHeartbeat bound the interval a runner may ask for.
	MinHeartbeat = 200 * time.Millisecond
	MaxHeartbeat = time.Minute
	// MaxWait bounds a lease's long poll (below common proxy timeouts).
	MaxWait = 25 * time.Second
)
