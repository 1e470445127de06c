package flows

// Playground tasks (spec §3 "Playground task", §4.8): a prompt for the
// harness a session booted, run inside the session's container as a child
// run (kind eval, class interactive, group = the session). The API creates
// the child run queued, marks the session busy in the same transaction,
// and signals the session's workflow (SignalSandboxTask); the workflow
// runs ActivityRunSandboxTask on the session's host, then
// ActivitySettleSandboxTask, which fails a task the run did not settle
// (CANCELLED when the session closed under it) and frees the session. A
// close cancels the task in flight first: its partial trace is sealed and
// it settles failed with code CANCELLED before the session tears down.

// SignalSandboxTask carries a SandboxTaskStart.
const SignalSandboxTask = "sandbox.task"

// The task activities: RunSandboxTask(SandboxTaskInput) RunStatus runs on
// the session's host queue; SettleSandboxTask(SandboxTaskSettle) runs
// anywhere.
const (
	ActivityRunSandboxTask    = "RunSandboxTask"
	ActivitySettleSandboxTask = "SettleSandboxTask"
)

// SandboxTaskStart names the task the API recorded.
type SandboxTaskStart struct {
	TaskID string `json:"taskId"`
}

// SandboxTaskInput is one task to run in a session.
type SandboxTaskInput struct {
	Workspace string `json:"workspace"`
	SessionID string `json:"sessionId"`
	TaskID    string `json:"taskId"`
}

// SandboxTaskSettle ends a task: when the task run is not terminal yet it
// fails with Code and Message (an empty trace but for an error event); the
// session is freed (busy false) either way.
type SandboxTaskSettle struct {
	SandboxTaskInput
	Code    string `json:"code,omitempty"`
	Message string `json:"message,omitempty"`
}
