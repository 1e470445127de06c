// Package drivers defines what every job driver (local, nomad, k8s) offers
// the activities: run one case of a process harness to completion, with
// its logs streamed, its deadline enforced and its whole process tree (or
// job) killed on cancel. The drivers live in the sub-packages and import
// nothing above this one.
package drivers

import (
	"context"
	"time"
)

// Job is one case of a process harness to run (the harness contract of
// ARCHITECTURE.md).
type Job struct {
	// RunID names the run; it is exported to the harness as SVC_RUN_ID and
	// in OTEL_RESOURCE_ATTRIBUTES=svc.run_id=<id>, and keys the work
	// directory, so a retried attempt of the same run finds (and kills)
	// what a crashed one left.
	RunID string
	// Attempt numbers the dispatches of the run's case. It must stay the
	// same when the activity running the job is retried (so it is not
	// Temporal's activity attempt): a driver that starts remote jobs
	// derives their names from RunID and Attempt, so that Run called again
	// for the same attempt adopts the job already started rather than
	// starting a second one. The local driver ignores it.
	Attempt int
	// Command is the argv; no shell.
	Command []string
	// Env holds the harness's non-secret variables. The driver does not
	// pass its own environment on: the job sees only Env, the contract
	// variables and a minimal PATH, HOME, TMPDIR and LANG.
	Env map[string]string
	// Secrets are delivered in a file (mode 0600) named by
	// SVC_SECRETS_FILE, a JSON object name -> value, removed when the job
	// ends: never in the job's environment or argv.
	Secrets map[string]string
	// Case is the case as JSON, written to the file named by SVC_CASE_FILE.
	Case []byte
	// Files are written into the work directory before start (path
	// relative to it -> content): the case's env.source.files.
	Files map[string]string
	// WorkDir is the job's working directory relative to its work area;
	// "" is the work area itself.
	WorkDir string
	// Image is the container image, for drivers that run containers; the
	// local driver records it and ignores it.
	Image string
	// Timeout bounds the job; 0 means no bound but ctx.
	Timeout time.Duration
	// OTLPEndpoint, when set, is exported as OTEL_EXPORTER_OTLP_ENDPOINT
	// (with OTEL_EXPORTER_OTLP_PROTOCOL=http/json) so that an
	// instrumented harness's spans reach the OTLP door.
	OTLPEndpoint string
	// Log receives the job's output while it runs, in order, in chunks
	// (stream is "stdout" or "stderr"); it may be nil. It is called from
	// one goroutine at a time and must not block for long.
	Log func(stream string, data []byte)
}

// Result is what a finished job left. Its fields are those of
// traces.JobOutput, the input of a case result, in the same order and of
// the same types, so the worker converts one into the other
// (traces.JobOutput(res)) and a field added to one and not to the other
// does not compile; drivers, the lowest layer, name nothing of the domain.
type Result struct {
	ExitCode int // -1 when killed by a signal
	Duration time.Duration
	// Stdout is the whole standard output up to the driver's cap (the
	// final answer of the harness); StdoutTail and StderrTail are the last
	// bytes of each.
	Stdout     string
	StdoutTail string
	StderrTail string
	// Trace is the content of the file named by SVC_TRACE_FILE (TraceEvent
	// JSON lines), up to the driver's cap.
	Trace []byte
	// TraceRefused, when set, says why the driver did not read the trace
	// file (a symbolic link, a FIFO, a file the job did not write).
	TraceRefused string
	// TimedOut is set when the job's timeout ended it; Cancelled when its
	// caller did.
	TimedOut  bool
	Cancelled bool
	// OS is the operating system the job ran on (runtime.GOOS for local).
	OS string
	// Driver names the driver: local, docker, nomad, k8s.
	Driver string
	// Image is the image the job ran in, if any.
	Image string
	// Host is the machine that ran the job when it is not the worker
	// recording it (a self-hosted runner's, as the runner reported it).
	Host string
}

// Output caps.
const (
	MaxOutput = 4 << 20 // bytes of stdout and of the trace file kept
	TailBytes = 4 << 10 // bytes of the stdout and stderr tails
)

// Driver runs jobs. Run returns when the job has ended and every process
// it started is gone; an error means the job could not be started or
// watched (a dispatch failure), not that the harness failed: a non-zero
// exit, a timeout or a cancel are a Result.
type Driver interface {
	Run(ctx context.Context, j Job) (Result, error)
}

// OrDefault is v when it is set (above 0), else def: a driver option's
// duration with its default.
func OrDefault(v, def time.Duration) time.Duration {
	if v > 0 {
		return v
	}
	return def
}
