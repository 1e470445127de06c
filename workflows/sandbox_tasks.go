package workflows

import (
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"svc/internal/domain/eval"
	"svc/internal/domain/flows"
)

// sandboxTaskOptions run one playground task on the session's host: as
// long as the longest task (a day), never twice (a prompt is not
// idempotent), a heartbeat to notice a dead host, and a cancel (the
// session closing) that waits for the activity to kill the harness and
// seal what it wrote.
var sandboxTaskOptions = workflow.ActivityOptions{
	StartToCloseTimeout: 25 * time.Hour,
	HeartbeatTimeout:    30 * time.Second,
	WaitForCancellation: true,
	RetryPolicy:         &temporal.RetryPolicy{MaximumAttempts: 1},
}

// sessionTasks runs a session's playground tasks (flows.SignalSandboxTask),
// one at a time, each in a coroutine of the session's workflow:
// RunSandboxTask on the host's queue, then SettleSandboxTask, which fails a
// task its run did not settle and frees the session.
type sessionTasks struct {
	ws, session, hostQueue string
	ch                     workflow.ReceiveChannel
	running                bool
	cancel                 workflow.CancelFunc
}

func newSessionTasks(ctx workflow.Context, in flows.SandboxInput) *sessionTasks {
	return &sessionTasks{ws: in.Workspace, session: in.RunID, ch: workflow.GetSignalChannel(ctx, flows.SignalSandboxTask)}
}

// idle says no task runs and none waits.
func (t *sessionTasks) idle() bool { return !t.running && t.ch.Len() == 0 }

// receive takes one task signal and runs it (a second while one runs is
// settled failed: the API admits one at a time).
func (t *sessionTasks) receive(ctx workflow.Context, c workflow.ReceiveChannel) {
	var s flows.SandboxTaskStart
	c.Receive(ctx, &s)
	in := flows.SandboxTaskInput{Workspace: t.ws, SessionID: t.session, TaskID: s.TaskID}
	if t.running {
		workflow.Go(ctx, func(gctx workflow.Context) {
			t.settle(gctx, flows.SandboxTaskSettle{SandboxTaskInput: in, Code: eval.CodeDispatch,
				Message: "another task was running in the session (one playground task at a time)"})
		})
		return
	}
	t.running = true
	// The coroutine's context is a child of tctx: stop cancels it.
	tctx, cancel := workflow.WithCancel(ctx)
	t.cancel = cancel
	workflow.Go(tctx, func(gctx workflow.Context) {
		defer func() { t.running = false }()
		opts := sandboxTaskOptions
		opts.TaskQueue = t.hostQueue
		err := workflow.ExecuteActivity(workflow.WithActivityOptions(gctx, opts), flows.ActivityRunSandboxTask, in).Get(gctx, nil)
		st := flows.SandboxTaskSettle{SandboxTaskInput: in}
		switch {
		case err == nil:
		case temporal.IsCanceledError(err):
			st.Code = eval.CodeCancelled
		default:
			st.Code, st.Message = eval.CodeDispatch, "the task could not be run in its session: "+failureMessage(err)
		}
		t.settle(gctx, st)
	})
}

// settle runs SettleSandboxTask on a context a cancel does not reach.
func (t *sessionTasks) settle(ctx workflow.Context, st flows.SandboxTaskSettle) {
	after, _ := workflow.NewDisconnectedContext(ctx)
	err := workflow.ExecuteActivity(workflow.WithActivityOptions(after, runRecordOptions), flows.ActivitySettleSandboxTask, st).Get(after, nil)
	if err != nil {
		workflow.GetLogger(ctx).Warn("a playground task could not be settled", "task", st.TaskID, "error", err)
	}
}

// stop cancels the task in flight (its run settles it failed CANCELLED
// with its partial trace), settles the tasks still waiting the same way,
// and returns once all have settled. ctx is the teardown's.
func (t *sessionTasks) stop(ctx workflow.Context) {
	if t.running && t.cancel != nil {
		t.cancel()
	}
	for {
		var s flows.SandboxTaskStart
		if !t.ch.ReceiveAsync(&s) {
			break
		}
		t.settle(ctx, flows.SandboxTaskSettle{SandboxTaskInput: flows.SandboxTaskInput{Workspace: t.ws, SessionID: t.session, TaskID: s.TaskID},
			Code: eval.CodeCancelled})
	}
	_ = workflow.Await(ctx, func() bool { return !t.running })
}
