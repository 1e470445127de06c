package workflows

import (
	"errors"
	"fmt"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"svc/internal/domain/eval"
	"svc/internal/domain/flows"
)

// The sandbox session's activity options.
var (
	// sandboxCreateOptions create the container: unpacking an image's
	// layers the first time takes seconds; a few attempts.
	sandboxCreateOptions = workflow.ActivityOptions{
		StartToCloseTimeout: 10 * time.Minute,
		HeartbeatTimeout:    time.Minute,
		RetryPolicy:         &temporal.RetryPolicy{InitialInterval: time.Second, MaximumInterval: 10 * time.Second, MaximumAttempts: 3},
	}
	// sandboxExecOptions run one command: never twice (a command is not
	// idempotent), bounded by the longest exec timeout.
	sandboxExecOptions = workflow.ActivityOptions{
		StartToCloseTimeout: maxExecTimeout + time.Minute,
		// A host that is down fails the exec after sandboxCreateWait
		// instead of running it whenever it comes back.
		ScheduleToStartTimeout: sandboxCreateWait,
		RetryPolicy:            &temporal.RetryPolicy{MaximumAttempts: 1},
	}
	// sandboxTeardownOptions remove the container (and hibernate a world
	// session first) on the session's host: retried for a while; a host
	// that never comes back does not hold the settle forever.
	sandboxTeardownOptions = workflow.ActivityOptions{
		ScheduleToCloseTimeout: 15 * time.Minute,
		StartToCloseTimeout:    10 * time.Minute,
		HeartbeatTimeout:       time.Minute,
		RetryPolicy:            &temporal.RetryPolicy{InitialInterval: time.Second, MaximumInterval: 30 * time.Second},
	}
)

// maxExecTimeout is the longest an exec may ask for.
const maxExecTimeout = time.Hour

// sandboxCreateWait bounds how long a session's create waits on
// flows.SandboxCreateQueue for a worker with a sandbox runtime: a
// deployment with none answers the create a failure saying so instead of
// holding it until the create route gives up.
const sandboxCreateWait = 30 * time.Second

// sandboxCreateOn is the create's options from the first version that
// steers it to flows.SandboxCreateQueue (histories of older ones
// scheduled it on the workflow's own queue).
func sandboxCreateOn(ctx workflow.Context) workflow.ActivityOptions {
	opts := sandboxCreateOptions
	if workflow.GetVersion(ctx, "sandbox-create-queue", workflow.DefaultVersion, 1) == 1 {
		opts.TaskQueue = flows.SandboxCreateQueue(workflow.GetInfo(ctx).TaskQueueName)
		opts.ScheduleToStartTimeout = sandboxCreateWait
	}
	return opts
}

// isScheduleToStart reports whether an activity's err is its
// schedule-to-start timeout: no worker of its queue took it.
func isScheduleToStart(err error) bool {
	var te *temporal.TimeoutError
	return errors.As(err, &te) && te.TimeoutType() == enumspb.TIMEOUT_TYPE_SCHEDULE_TO_START
}

// noSandboxHost is the create's error when no worker with a sandbox
// runtime took it in time (a schedule-to-start timeout, never retried).
func noSandboxHost(err error) error {
	if !isScheduleToStart(err) {
		return err
	}
	return temporal.NewNonRetryableApplicationError(fmt.Sprintf("no worker with a sandbox runtime took the session's create within %s: "+
		"run `svc worker` as root on a host with runc (apt-get install runc) and overlayfs; a worker whose runtime is unavailable says why in its log at start",
		sandboxCreateWait), flows.SandboxNoHostError, nil)
}

// sandboxHistoryLimit is the history length past which a session's
// workflow continues as new (touches and remote execs add events).
const sandboxHistoryLimit = 5000

// SandboxSessionWorkflow owns a sandbox session's life (spec §2.9, §3): the
// container's creation on a worker host, the hard expiry as a durable
// timer (a SIGKILL of any process loses nothing: the timer is the
// server's), touch and close signals, execs sent as updates, and teardown:
// a world session's hibernation (flows.ActivitySnapshotSession, unless the
// close said snapshot:false; its failure never blocks teardown), the
// container's removal, the trajectory sealed and the run settled
// succeeded with its closedReason. The workflow id is the run id.
func SandboxSessionWorkflow(ctx workflow.Context, in flows.SandboxInput) (flows.SandboxOutput, error) {
	ref := flows.SandboxRef{Workspace: in.Workspace, RunID: in.RunID}
	deadline := in.ExpiresAt
	created := in.Created
	var createErr error
	closing := false

	if err := workflow.SetQueryHandler(ctx, flows.QuerySandboxDeadline, func() (time.Time, error) { return deadline, nil }); err != nil {
		return flows.SandboxOutput{}, err
	}
	ready := func(ctx workflow.Context) error {
		if err := workflow.Await(ctx, func() bool { return created != nil || createErr != nil }); err != nil {
			return err
		}
		return createErr
	}
	if err := workflow.SetUpdateHandler(ctx, flows.UpdateSandboxReady, func(ctx workflow.Context) (flows.SandboxCreated, error) {
		if err := ready(ctx); err != nil {
			return flows.SandboxCreated{}, err
		}
		return *created, nil
	}); err != nil {
		return flows.SandboxOutput{}, err
	}
	if err := workflow.SetUpdateHandlerWithOptions(ctx, flows.UpdateSandboxExec,
		func(ctx workflow.Context, x flows.SandboxExecInput) (flows.SandboxExecResult, error) {
			if err := ready(ctx); err != nil {
				return flows.SandboxExecResult{}, err
			}
			opts := sandboxExecOptions
			opts.TaskQueue = created.HostQueue
			var res flows.SandboxExecResult
			err := workflow.ExecuteActivity(workflow.WithActivityOptions(ctx, opts), flows.ActivityExecSandbox, x).Get(ctx, &res)
			if isScheduleToStart(err) {
				err = temporal.NewNonRetryableApplicationError(fmt.Sprintf("the session's host %s did not take the command within %s (its worker is down or not polling %s); nothing ran: try again once it is back",
					created.Host, sandboxCreateWait, created.HostQueue), flows.SandboxNoHostError, nil)
			}
			return res, err
		},
		workflow.UpdateHandlerOptions{Validator: func(ctx workflow.Context, x flows.SandboxExecInput) error {
			if closing {
				return temporal.NewNonRetryableApplicationError("the session is closed", flows.SandboxClosedError, nil)
			}
			return nil
		}}); err != nil {
		return flows.SandboxOutput{}, err
	}

	if created == nil {
		var c flows.SandboxCreated
		err := workflow.ExecuteActivity(workflow.WithActivityOptions(ctx, sandboxCreateOn(ctx)), flows.ActivityCreateSandbox, ref).Get(ctx, &c)
		if err != nil {
			err = noSandboxHost(err)
			closing = true
			after, _ := workflow.NewDisconnectedContext(ctx)
			s := flows.SandboxSettle{SandboxRef: ref, FailCode: eval.CodeDispatch, FailMessage: "the session's container could not be created: " + failureMessage(err)}
			if serr := workflow.ExecuteActivity(workflow.WithActivityOptions(after, runRecordOptions), flows.ActivitySettleSandbox, s).Get(after, nil); serr != nil {
				return flows.SandboxOutput{}, serr
			}
			// The create route answers once the row is settled (a refused
			// create leaves no live session behind it); let its update
			// read the error first.
			createErr = err
			_ = workflow.Await(after, func() bool { return workflow.AllHandlersFinished(after) })
			return flows.SandboxOutput{Failed: s.FailMessage}, nil
		}
		created = &c
	}

	touches := workflow.GetSignalChannel(ctx, flows.SignalSandboxTouch)
	closes := workflow.GetSignalChannel(ctx, flows.SignalSandboxClose)
	tasks := newSessionTasks(ctx, in)
	tasks.hostQueue = created.HostQueue
	reason, snapshot := "", true
	for reason == "" {
		wait := deadline.Sub(workflow.Now(ctx))
		if wait <= 0 {
			reason = eval.ClosedExpired
			break
		}
		if workflow.GetInfo(ctx).GetCurrentHistoryLength() > sandboxHistoryLimit && workflow.AllHandlersFinished(ctx) &&
			touches.Len() == 0 && closes.Len() == 0 && tasks.idle() {
			next := in
			next.ExpiresAt, next.Created = deadline, created
			return flows.SandboxOutput{}, workflow.NewContinueAsNewError(ctx, flows.SandboxSessionWorkflow, next)
		}
		tctx, cancel := workflow.WithCancel(ctx)
		timer := workflow.NewTimer(tctx, wait)
		sel := workflow.NewSelector(ctx)
		sel.AddFuture(timer, func(f workflow.Future) {
			if f.Get(ctx, nil) == nil {
				reason = eval.ClosedExpired
			}
		})
		sel.AddReceive(touches, func(c workflow.ReceiveChannel, _ bool) {
			var t flows.SandboxTouch
			c.Receive(ctx, &t)
			if t.ExpiresAt.After(deadline) {
				deadline = t.ExpiresAt
			}
		})
		sel.AddReceive(tasks.ch, func(c workflow.ReceiveChannel, _ bool) { tasks.receive(ctx, c) })
		sel.AddReceive(closes, func(c workflow.ReceiveChannel, _ bool) {
			var cl flows.SandboxClose
			c.Receive(ctx, &cl)
			reason = cl.Reason
			if reason == "" {
				reason = eval.ClosedByRequest
			}
			if cl.Snapshot != nil && !*cl.Snapshot {
				snapshot = false
			}
		})
		sel.Select(ctx)
		cancel()
	}
	closing = true

	// Teardown runs even when the workflow is cancelled, on a context the
	// cancel does not reach; execs in flight finish first.
	after, _ := workflow.NewDisconnectedContext(ctx)
	// A task in flight settles failed CANCELLED, its partial trace sealed,
	// before the session tears down.
	tasks.stop(after)
	_ = workflow.Await(after, func() bool { return workflow.AllHandlersFinished(after) })
	host := sandboxTeardownOptions
	host.TaskQueue = created.HostQueue
	hctx := workflow.WithActivityOptions(after, host)
	td := flows.SandboxTeardown{SandboxRef: ref, ComputeID: created.ComputeID}
	if in.World && in.Hibernate && snapshot {
		why := flows.SnapshotOnClose
		switch reason {
		case eval.ClosedExpired:
			why = flows.SnapshotOnExpiry
		case eval.ClosedOrphaned:
			why = flows.SnapshotOnOrphan
		}
		var sr flows.SnapshotResult
		err := workflow.ExecuteActivity(hctx, flows.ActivitySnapshotSession,
			flows.SnapshotInput{Workspace: in.Workspace, SessionID: in.RunID, Reason: why}).Get(after, &sr)
		if err != nil {
			// The activity records its own failures; one it could not
			// record (it never ran) is recorded by the teardown.
			td.SnapshotFailed = failureMessage(err)
		}
	}
	if err := workflow.ExecuteActivity(hctx, flows.ActivityTeardownSandbox, td).Get(after, nil); err != nil {
		workflow.GetLogger(ctx).Warn("sandbox teardown did not finish; the run is settled all the same", "run", in.RunID, "error", err)
	}
	s := flows.SandboxSettle{SandboxRef: ref, Reason: reason}
	if err := workflow.ExecuteActivity(workflow.WithActivityOptions(after, runRecordOptions), flows.ActivitySettleSandbox, s).Get(after, nil); err != nil {
		return flows.SandboxOutput{}, err
	}
	tasks.stop(after) // a task sent while the session tore down
	return flows.SandboxOutput{ClosedReason: reason}, nil
}
