package workflows

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"svc/activities"
	"svc/internal/domain/eval"
	"svc/internal/domain/flows"
)

// Unit tests of SandboxSessionWorkflow with the SDK's test environment
// (its clock skips ahead, so a ten-minute session takes no time): the
// deadline's rules, close, expiry, continue-as-new and the exec update.
// The history replayed in replay_test.go comes from a real session
// (TestRecordSandboxSessionHistory, sandbox_integration_test.go).

// sbxStart is the test environment's start time.
var sbxStart = time.Date(2026, 3, 4, 10, 0, 0, 0, time.UTC)

// sbxCreated is the container the mocked create makes.
var sbxCreated = flows.SandboxCreated{ComputeID: "sbx_1", Host: "h1", HostQueue: flows.SandboxHostQueue("q", "h1"), ImageDigest: "sha256:00"}

// sbxEnv is a test environment of the session workflow with the
// activities' queues recorded by name.
type sbxEnv struct {
	*testsuite.TestWorkflowEnvironment
	mu     sync.Mutex
	queues map[string]string
}

func (e *sbxEnv) queue(name string) string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.queues[name]
}

func (e *sbxEnv) record(ctx context.Context) {
	info := activity.GetInfo(ctx)
	e.mu.Lock()
	defer e.mu.Unlock()
	e.queues[info.ActivityType.Name] = info.TaskQueue
}

// newSandboxEnv mocks create (unless created is set on the input), the
// teardown and the settle; settled receives every settle.
func newSandboxEnv(t *testing.T) (*sbxEnv, *[]flows.SandboxSettle) {
	var s testsuite.WorkflowTestSuite
	env := &sbxEnv{TestWorkflowEnvironment: s.NewTestWorkflowEnvironment(), queues: map[string]string{}}
	env.SetStartTime(sbxStart)
	env.RegisterWorkflowWithOptions(SandboxSessionWorkflow, workflow.RegisterOptions{Name: flows.SandboxSessionWorkflow})
	env.RegisterActivity(&activities.Activities{})
	var settled []flows.SandboxSettle
	env.OnActivity(a.SettleSandbox, mock.Anything, mock.Anything).Return(func(ctx context.Context, s flows.SandboxSettle) error {
		settled = append(settled, s)
		return nil
	}).Maybe() // tests check settled
	t.Cleanup(func() { env.AssertExpectations(t) })
	return env, &settled
}

func (e *sbxEnv) onCreate() {
	e.OnActivity(a.CreateSandbox, mock.Anything, mock.Anything).Return(func(ctx context.Context, _ flows.SandboxRef) (flows.SandboxCreated, error) {
		e.record(ctx)
		return sbxCreated, nil
	}).Once()
}

func (e *sbxEnv) onTeardown(after time.Duration) {
	e.OnActivity(a.TeardownSandbox, mock.Anything, mock.Anything).Return(func(ctx context.Context, _ flows.SandboxTeardown) error {
		e.record(ctx)
		return nil
	}).After(after).Once()
}

func sbxInput(ttl time.Duration) flows.SandboxInput {
	return flows.SandboxInput{Workspace: "ws", RunID: "sbx_1", ExpiresAt: sbxStart.Add(ttl)}
}

// result is the workflow's output, failing t on a workflow error.
func (e *sbxEnv) result(t *testing.T) flows.SandboxOutput {
	t.Helper()
	if !e.IsWorkflowCompleted() {
		t.Fatal("the workflow did not complete")
	}
	if err := e.GetWorkflowError(); err != nil {
		t.Fatalf("workflow error: %v", err)
	}
	var out flows.SandboxOutput
	if err := e.GetWorkflowResult(&out); err != nil {
		t.Fatal(err)
	}
	return out
}

func wantSettled(t *testing.T, settled []flows.SandboxSettle, reason string) {
	t.Helper()
	if len(settled) != 1 || settled[0].Reason != reason || settled[0].FailCode != "" {
		t.Errorf("settles = %+v, want one succeeded with reason %q", settled, reason)
	}
}

// The session expires at its deadline: teardown on the host's queue, then
// the settle with closedReason expired; the create ran on the sandbox
// create queue (only sandbox-capable workers poll it).
func TestSandboxSessionExpiresAtItsDeadline(t *testing.T) {
	env, settled := newSandboxEnv(t)
	env.onCreate()
	env.onTeardown(0)
	env.ExecuteWorkflow(flows.SandboxSessionWorkflow, sbxInput(10*time.Minute))
	if out := env.result(t); out.ClosedReason != eval.ClosedExpired {
		t.Errorf("closedReason = %q, want expired", out.ClosedReason)
	}
	wantSettled(t, *settled, eval.ClosedExpired)
	if got := env.Now(); got.Before(sbxStart.Add(10*time.Minute)) || got.After(sbxStart.Add(10*time.Minute+time.Second)) {
		t.Errorf("ended at %s, want at the deadline %s", got, sbxStart.Add(10*time.Minute))
	}
	if q := env.queue(flows.ActivityCreateSandbox); !strings.HasSuffix(q, "@sandbox") {
		t.Errorf("CreateSandbox ran on %q, want the sandbox create queue", q)
	}
	if q := env.queue(flows.ActivityTeardownSandbox); q != sbxCreated.HostQueue {
		t.Errorf("TeardownSandbox ran on %q, want the host's queue %q", q, sbxCreated.HostQueue)
	}
}

// Touch moves the deadline to a later time only: an earlier one is
// ignored (the query says so), and the session expires at the later one.
func TestSandboxTouchNeverShortens(t *testing.T) {
	env, settled := newSandboxEnv(t)
	env.onCreate()
	env.onTeardown(0)
	deadline := func() time.Time {
		v, err := env.QueryWorkflow(flows.QuerySandboxDeadline)
		if err != nil {
			t.Fatalf("query: %v", err)
		}
		var d time.Time
		if err := v.Get(&d); err != nil {
			t.Fatal(err)
		}
		return d
	}
	var afterShort, afterLong time.Time
	env.RegisterDelayedCallback(func() {
		env.SignalWorkflow(flows.SignalSandboxTouch, flows.SandboxTouch{ExpiresAt: sbxStart.Add(5 * time.Minute)})
	}, time.Minute)
	env.RegisterDelayedCallback(func() {
		afterShort = deadline()
		env.SignalWorkflow(flows.SignalSandboxTouch, flows.SandboxTouch{ExpiresAt: sbxStart.Add(30 * time.Minute)})
	}, 2*time.Minute)
	env.RegisterDelayedCallback(func() { afterLong = deadline() }, 3*time.Minute)
	env.ExecuteWorkflow(flows.SandboxSessionWorkflow, sbxInput(10*time.Minute))
	env.result(t)
	if want := sbxStart.Add(10 * time.Minute); !afterShort.Equal(want) {
		t.Errorf("deadline after a touch to an earlier time = %s, want it kept at %s", afterShort, want)
	}
	if want := sbxStart.Add(30 * time.Minute); !afterLong.Equal(want) {
		t.Errorf("deadline after a touch to a later time = %s, want %s", afterLong, want)
	}
	if got := env.Now(); got.Before(sbxStart.Add(30 * time.Minute)) {
		t.Errorf("ended at %s, before the touched deadline", got)
	}
	wantSettled(t, *settled, eval.ClosedExpired)
}

// Close ends the session at once; a world session hibernates first unless
// the close says snapshot:false.
func TestSandboxCloseEndsIt(t *testing.T) {
	no := false
	for _, tc := range []struct {
		name     string
		world    bool
		snapshot *bool
		wantSnap bool
	}{
		{"plain", false, nil, false},
		{"world_hibernates", true, nil, true},
		{"world_snapshot_false", true, &no, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env, settled := newSandboxEnv(t)
			env.onCreate()
			env.onTeardown(0)
			if tc.wantSnap {
				env.OnActivity(flows.ActivitySnapshotSession, mock.Anything, mock.Anything).Return(func(ctx context.Context, in flows.SnapshotInput) (flows.SnapshotResult, error) {
					if in.Reason != flows.SnapshotOnClose {
						t.Errorf("snapshot reason = %q, want %q", in.Reason, flows.SnapshotOnClose)
					}
					return flows.SnapshotResult{}, nil
				}).Once()
			}
			in := sbxInput(time.Hour)
			in.World, in.Hibernate = tc.world, tc.world
			env.RegisterDelayedCallback(func() {
				env.SignalWorkflow(flows.SignalSandboxClose, flows.SandboxClose{Snapshot: tc.snapshot})
			}, time.Minute)
			env.ExecuteWorkflow(flows.SandboxSessionWorkflow, in)
			if out := env.result(t); out.ClosedReason != eval.ClosedByRequest {
				t.Errorf("closedReason = %q, want closed", out.ClosedReason)
			}
			wantSettled(t, *settled, eval.ClosedByRequest)
			if got := env.Now(); got.After(sbxStart.Add(2 * time.Minute)) {
				t.Errorf("ended at %s, want right after the close at %s", got, sbxStart.Add(time.Minute))
			}
		})
	}
}

// An exec runs on the host's queue while the session is open; once it is
// closing, the exec update is refused (SandboxClosed), never run.
func TestSandboxExecAfterCloseIsRefused(t *testing.T) {
	env, settled := newSandboxEnv(t)
	env.onCreate()
	env.onTeardown(5 * time.Minute) // the teardown takes a while
	env.OnActivity(a.ExecSandbox, mock.Anything, mock.Anything).Return(func(ctx context.Context, in flows.SandboxExecInput) (flows.SandboxExecResult, error) {
		env.record(ctx)
		return flows.SandboxExecResult{ExitCode: 3, Stdout: in.Command}, nil
	}).Once()
	var open, late struct {
		rejected, err error
		res           any
		done          bool
	}
	env.RegisterDelayedCallback(func() {
		env.UpdateWorkflow(flows.UpdateSandboxExec, "exec-1", &testsuite.TestUpdateCallback{
			OnReject:   func(err error) { open.rejected, open.done = err, true },
			OnAccept:   func() {},
			OnComplete: func(r any, err error) { open.res, open.err, open.done = r, err, true },
		}, flows.SandboxExecInput{Workspace: "ws", RunID: "sbx_1", Command: "echo hi"})
	}, time.Minute)
	env.RegisterDelayedCallback(func() {
		env.SignalWorkflow(flows.SignalSandboxClose, flows.SandboxClose{})
	}, 2*time.Minute)
	env.RegisterDelayedCallback(func() {
		env.UpdateWorkflow(flows.UpdateSandboxExec, "exec-2", &testsuite.TestUpdateCallback{
			OnReject:   func(err error) { late.rejected, late.done = err, true },
			OnAccept:   func() {},
			OnComplete: func(r any, err error) { late.res, late.err, late.done = r, err, true },
		}, flows.SandboxExecInput{Workspace: "ws", RunID: "sbx_1", Command: "echo late"})
	}, 3*time.Minute)
	env.ExecuteWorkflow(flows.SandboxSessionWorkflow, sbxInput(time.Hour))
	env.result(t)
	if !open.done || open.rejected != nil || open.err != nil {
		t.Errorf("exec while open: done %v, rejected %v, err %v; want it run", open.done, open.rejected, open.err)
	} else if r, ok := open.res.(flows.SandboxExecResult); !ok || r.ExitCode != 3 || r.Stdout != "echo hi" {
		t.Errorf("exec while open answered %#v, want the activity's result", open.res)
	}
	if q := env.queue(flows.ActivityExecSandbox); q != sbxCreated.HostQueue {
		t.Errorf("ExecSandbox ran on %q, want the host's queue %q", q, sbxCreated.HostQueue)
	}
	var app *temporal.ApplicationError
	if !late.done || !errors.As(late.rejected, &app) || app.Type() != flows.SandboxClosedError {
		t.Errorf("exec after close: done %v, rejected %v, completed %v; want it rejected as %s", late.done, late.rejected, late.err, flows.SandboxClosedError)
	}
	wantSettled(t, *settled, eval.ClosedByRequest)
}

// Past the history limit the workflow continues as new with the deadline
// it holds (a touched one included) and its container: the next run
// creates nothing and expires at that deadline.
func TestSandboxContinuesAsNewKeepingTheDeadline(t *testing.T) {
	env, _ := newSandboxEnv(t)
	env.onCreate()
	touched := sbxStart.Add(45 * time.Minute)
	env.RegisterDelayedCallback(func() {
		env.SetCurrentHistoryLength(sandboxHistoryLimit + 1)
		env.SignalWorkflow(flows.SignalSandboxTouch, flows.SandboxTouch{ExpiresAt: touched})
	}, time.Minute)
	env.ExecuteWorkflow(flows.SandboxSessionWorkflow, sbxInput(10*time.Minute))
	var can *workflow.ContinueAsNewError
	if err := env.GetWorkflowError(); !errors.As(err, &can) {
		t.Fatalf("workflow ended with %v, want continue-as-new", err)
	}
	var next flows.SandboxInput
	if err := converter.GetDefaultDataConverter().FromPayloads(can.Input, &next); err != nil {
		t.Fatal(err)
	}
	if !next.ExpiresAt.Equal(touched) || next.Created == nil || *next.Created != sbxCreated || next.RunID != "sbx_1" {
		t.Fatalf("continued with %+v, want the touched deadline %s and the container", next, touched)
	}

	// The continued run: no create, the same deadline.
	env2, settled := newSandboxEnv(t)
	env2.SetStartTime(sbxStart.Add(time.Minute))
	env2.onTeardown(0)
	env2.ExecuteWorkflow(flows.SandboxSessionWorkflow, next)
	if out := env2.result(t); out.ClosedReason != eval.ClosedExpired {
		t.Errorf("continued run closedReason = %q, want expired", out.ClosedReason)
	}
	if got := env2.Now(); got.Before(touched) || got.After(touched.Add(time.Second)) {
		t.Errorf("continued run ended at %s, want at the kept deadline %s", got, touched)
	}
	wantSettled(t, *settled, eval.ClosedExpired)
}

// No worker with a sandbox runtime takes the create (its schedule-to-start
// times out): the session settles failed saying so, and the ready update
// answers the same failure, of type SandboxNoHost.
func TestSandboxCreateWithoutACapableWorkerFailsClearly(t *testing.T) {
	env, settled := newSandboxEnv(t)
	env.OnActivity(a.CreateSandbox, mock.Anything, mock.Anything).
		Return(flows.SandboxCreated{}, temporal.NewTimeoutError(enumspb.TIMEOUT_TYPE_SCHEDULE_TO_START, nil)).Once()
	var readyErr error
	readyDone, settledFirst := false, 0
	env.RegisterDelayedCallback(func() {
		env.UpdateWorkflow(flows.UpdateSandboxReady, "ready", &testsuite.TestUpdateCallback{
			OnReject: func(err error) { readyErr, readyDone = err, true },
			OnAccept: func() {},
			OnComplete: func(_ any, err error) {
				readyErr, readyDone, settledFirst = err, true, len(*settled)
			},
		})
	}, 0)
	env.ExecuteWorkflow(flows.SandboxSessionWorkflow, sbxInput(time.Hour))
	out := env.result(t)
	if !strings.Contains(out.Failed, "no worker with a sandbox runtime") {
		t.Errorf("failed = %q, want it to say no worker with a sandbox runtime took the create", out.Failed)
	}
	if len(*settled) != 1 || (*settled)[0].FailCode != eval.CodeDispatch || !strings.Contains((*settled)[0].FailMessage, "svc worker") {
		t.Errorf("settles = %+v, want one failed naming what to run", *settled)
	}
	var app *temporal.ApplicationError
	if !readyDone || !errors.As(readyErr, &app) || app.Type() != flows.SandboxNoHostError {
		t.Errorf("ready update: done %v, err %v; want the %s failure", readyDone, readyErr, flows.SandboxNoHostError)
	}
	if settledFirst != 1 {
		t.Errorf("the ready update answered with %d settles done, want the session settled first (no live row behind a refused create)", settledFirst)
	}
}

// An exec whose host does not take it in time (its worker is down) fails
// as SandboxNoHost saying nothing ran, and the session stays open.
func TestSandboxExecWithItsHostDownFailsClearly(t *testing.T) {
	env, settled := newSandboxEnv(t)
	env.onCreate()
	env.onTeardown(0)
	env.OnActivity(a.ExecSandbox, mock.Anything, mock.Anything).
		Return(flows.SandboxExecResult{}, temporal.NewTimeoutError(enumspb.TIMEOUT_TYPE_SCHEDULE_TO_START, nil)).Once()
	var execErr error
	done := false
	env.RegisterDelayedCallback(func() {
		env.UpdateWorkflow(flows.UpdateSandboxExec, "exec-1", &testsuite.TestUpdateCallback{
			OnReject:   func(err error) { execErr, done = err, true },
			OnAccept:   func() {},
			OnComplete: func(_ any, err error) { execErr, done = err, true },
		}, flows.SandboxExecInput{Workspace: "ws", RunID: "sbx_1", Command: "true"})
	}, time.Minute)
	env.ExecuteWorkflow(flows.SandboxSessionWorkflow, sbxInput(10*time.Minute))
	var app *temporal.ApplicationError
	if !done || !errors.As(execErr, &app) || app.Type() != flows.SandboxNoHostError || !strings.Contains(app.Message(), "nothing ran") {
		t.Errorf("exec with the host down: done %v, err %v; want a %s failure saying nothing ran", done, execErr, flows.SandboxNoHostError)
	}
	if out := env.result(t); out.ClosedReason != eval.ClosedExpired {
		t.Errorf("closedReason = %q, want the session to run on to its expiry", out.ClosedReason)
	}
	wantSettled(t, *settled, eval.ClosedExpired)
}
