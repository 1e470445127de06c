package flows

import "time"

// The sandbox session's contract: SandboxSessionWorkflow owns a session's
// life (spec §2.9, §3): it creates the container on a worker host, holds
// the hard expiry as a durable timer, takes touch and close signals, runs
// execs the API sends as updates when the API is not on the session's
// host, and tears down: hibernation (ActivitySnapshotSession, a world
// session's), container removal, the trajectory sealed, the run settled
// succeeded with its closedReason.
const SandboxSessionWorkflow = "SandboxSessionWorkflow"

// Signals and updates of SandboxSessionWorkflow.
const (
	// SignalSandboxTouch carries a SandboxTouch: the deadline moves to
	// max(current, ExpiresAt).
	SignalSandboxTouch = "sandbox.touch"
	// SignalSandboxClose carries a SandboxClose: the session ends now.
	SignalSandboxClose = "sandbox.close"
	// UpdateSandboxReady answers a SandboxCreated once the container
	// runs, or the error that stopped it: the create route waits on it.
	UpdateSandboxReady = "sandbox.ready"
	// UpdateSandboxExec runs a SandboxExecInput on the session's host and
	// answers its SandboxExecResult (the API's path when it is not on
	// that host).
	UpdateSandboxExec = "sandbox.exec"
	// QuerySandboxDeadline answers the deadline the workflow holds.
	QuerySandboxDeadline = "sandbox.deadline"
)

// The sandbox activities (activities/sandbox.go):
// CreateSandbox(SandboxRef) SandboxCreated runs on SandboxCreateQueue (the
// worker that takes it becomes the session's host); ExecSandbox
// (SandboxExecInput) SandboxExecResult and TeardownSandbox(SandboxTeardown)
// run on the host's queue (SandboxCreated.HostQueue); SettleSandbox
// (SandboxSettle) writes the run's end anywhere.
const (
	ActivityCreateSandbox   = "CreateSandbox"
	ActivityExecSandbox     = "ExecSandbox"
	ActivityTeardownSandbox = "TeardownSandbox"
	ActivitySettleSandbox   = "SettleSandbox"
)

// SandboxActivityNames are the session's activities (ActivityNames holds
// them too).
var SandboxActivityNames = []string{ActivityCreateSandbox, ActivityExecSandbox, ActivityTeardownSandbox, ActivitySettleSandbox}

// SandboxInput starts SandboxSessionWorkflow; the workflow id is the
// session's run id.
type SandboxInput struct {
	Workspace string    `json:"workspace"`
	RunID     string    `json:"runId"`
	ExpiresAt time.Time `json:"expiresAt"`
	// World and Hibernate: teardown snapshots the session first.
	World     bool `json:"world,omitempty"`
	Hibernate bool `json:"hibernate,omitempty"`
	// Created is the container of a session continued as new.
	Created *SandboxCreated `json:"created,omitempty"`
}

// SandboxClosedError is the type of an update refused because the session
// is closing.
const SandboxClosedError = "SandboxClosed"

// SandboxLost is the error type of an exec into a session whose container
// is gone (a restart lost it): the session is then settled orphaned.
const SandboxLost ErrorType = "SandboxLost"

// SandboxRef names a session.
type SandboxRef struct {
	Workspace string `json:"workspace"`
	RunID     string `json:"runId"`
}

// SandboxTouch moves a session's deadline (never earlier).
type SandboxTouch struct {
	ExpiresAt time.Time `json:"expiresAt"`
}

// SandboxClose ends a session. Reason is eval.ClosedByRequest or
// eval.ClosedOrphaned ("" is ClosedByRequest); Snapshot false skips a
// world session's hibernation.
type SandboxClose struct {
	Reason   string `json:"reason,omitempty"`
	Snapshot *bool  `json:"snapshot,omitempty"`
}

// SandboxCreated is the container a session runs in.
type SandboxCreated struct {
	ComputeID   string `json:"computeId"`
	Host        string `json:"host"`
	HostQueue   string `json:"hostQueue"`
	ImageDigest string `json:"imageDigest,omitempty"`
}

// SandboxExecInput is one shell command into a session.
type SandboxExecInput struct {
	Workspace string `json:"workspace"`
	RunID     string `json:"runId"`
	Command   string `json:"command"`
	// TimeoutMs bounds the command (0: the default).
	TimeoutMs int64 `json:"timeoutMs,omitempty"`
	// By is the subject who ran it, recorded on the trajectory.
	By string `json:"by,omitempty"`
}

// MaxExecResultOutput bounds each of stdout and stderr in a
// SandboxExecResult (what crosses the workflow's history or the API's
// answer); the trajectory keeps up to the runtime's own bound.
const MaxExecResultOutput = 64 << 10

// SandboxExecResult is what one command did.
type SandboxExecResult struct {
	ExitCode        int     `json:"exitCode"`
	Stdout          string  `json:"stdout"`
	Stderr          string  `json:"stderr"`
	StdoutTruncated bool    `json:"stdoutTruncated,omitempty"`
	StderrTruncated bool    `json:"stderrTruncated,omitempty"`
	TimedOut        bool    `json:"timedOut,omitempty"`
	DurationMs      float64 `json:"durationMs"`
	// EventSeq is the exec's event on the session's live trajectory (its
	// run-log sequence number).
	EventSeq int64 `json:"eventSeq"`
}

// SandboxTeardown removes a session's container.
type SandboxTeardown struct {
	SandboxRef
	ComputeID string `json:"computeId"`
	// SnapshotFailed is why a hibernation that could not record its own
	// failure did not happen: recorded as session.snapshot_failed.
	SnapshotFailed string `json:"snapshotFailed,omitempty"`
}

// SandboxSettle writes a session's end: succeeded with Reason
// (eval.Closed*), its trajectory sealed; or, with FailCode set, failed
// (the container could not be created).
type SandboxSettle struct {
	SandboxRef
	Reason      string `json:"reason,omitempty"`
	FailCode    string `json:"failCode,omitempty"`
	FailMessage string `json:"failMessage,omitempty"`
}

// SandboxOutput is how a session ended.
type SandboxOutput struct {
	ClosedReason string `json:"closedReason,omitempty"`
	Failed       string `json:"failed,omitempty"`
}

// SandboxHostQueue is the task queue of host's sandbox activities under
// the deployment's task queue.
func SandboxHostQueue(taskQueue, host string) string {
	return taskQueue + "@sandbox-host:" + host
}

// SandboxCreateQueue is the task queue of sessions' CreateSandbox under
// the deployment's task queue: only a worker whose sandbox runtime is
// available (runc, root, overlayfs) polls it, so a worker that cannot run
// containers never takes a create (the worker that does becomes the
// session's host).
func SandboxCreateQueue(taskQueue string) string {
	return taskQueue + "@sandbox"
}

// SandboxNoHostError is the type of a create no sandbox-capable worker
// took in time (SandboxCreateWait).
const SandboxNoHostError = "SandboxNoHost"
