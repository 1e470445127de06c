package orchestration

import (
	"context"
	"errors"
	"fmt"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"svc/internal/domain/eval"
	"svc/internal/domain/flows"
	"svc/internal/platform/derrors"
)

// The sandbox session's workflow from the client side: start, the ready
// and exec updates, the touch and close signals, the wait for its end.
// They implement sandboxes.Orchestrator.

// StartSandbox starts SandboxSessionWorkflow with workflow id = run id.
func (s *Starter) StartSandbox(ctx context.Context, in flows.SandboxInput) error {
	_, err := s.Client.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
		ID: in.RunID, TaskQueue: s.TaskQueue, WorkflowIDReusePolicy: enumspb.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE,
	}, flows.SandboxSessionWorkflow, in)
	var started *serviceerror.WorkflowExecutionAlreadyStarted
	if errors.As(err, &started) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("starting the workflow of session %s: %w", in.RunID, err)
	}
	return nil
}

// SandboxReady waits for the session's container (the ready update).
func (s *Starter) SandboxReady(ctx context.Context, runID string) (flows.SandboxCreated, error) {
	var c flows.SandboxCreated
	err := s.update(ctx, runID, flows.UpdateSandboxReady, &c)
	return c, err
}

// ExecSandbox runs a command through the session's workflow (the exec
// update; its activity runs on the session's host).
func (s *Starter) ExecSandbox(ctx context.Context, in flows.SandboxExecInput) (flows.SandboxExecResult, error) {
	var r flows.SandboxExecResult
	err := s.update(ctx, in.RunID, flows.UpdateSandboxExec, &r, in)
	return r, err
}

func (s *Starter) update(ctx context.Context, runID, name string, out any, args ...any) error {
	h, err := s.Client.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{
		WorkflowID: runID, UpdateName: name, Args: args, WaitForStage: client.WorkflowUpdateStageCompleted,
	})
	if err == nil {
		err = h.Get(ctx, out)
	}
	return sandboxError(runID, err)
}

// sandboxError turns what a session's update failed with into the error
// family: the activity's kind (carried as the application error's type)
// decides it, and its message is the activity's own.
func sandboxError(runID string, err error) error {
	if err == nil {
		return nil
	}
	var nf *serviceerror.NotFound
	if errors.As(err, &nf) {
		return derrors.Conflictf("sandbox session %s has no running workflow (it has ended)", runID)
	}
	var app *temporal.ApplicationError
	if !errors.As(err, &app) {
		return err
	}
	msg := app.Message()
	switch app.Type() {
	case string(flows.SandboxLost):
		return fmt.Errorf("%w: %w", derrors.ErrConflict, eval.ErrSessionLost)
	case flows.SandboxNoHostError:
		return derrors.Unavailablef("%s", msg)
	case flows.SandboxClosedError:
		return derrors.Conflictf("sandbox session %s has ended", runID)
	case "SandboxUnavailable", "Invalid":
		return derrors.Invalidf("%s", msg)
	case "NotFound":
		return derrors.Invalidf("%s", msg)
	case "Forbidden":
		return derrors.Forbiddenf("%s", msg)
	}
	return derrors.Unavailablef("sandbox session %s: %s", runID, msg)
}

// TouchSandbox signals the session's new deadline.
func (s *Starter) TouchSandbox(ctx context.Context, runID string, t flows.SandboxTouch) error {
	return s.signal(ctx, runID, flows.SignalSandboxTouch, t)
}

// CloseSandbox signals the session to end.
func (s *Starter) CloseSandbox(ctx context.Context, runID string, c flows.SandboxClose) error {
	return s.signal(ctx, runID, flows.SignalSandboxClose, c)
}

func (s *Starter) signal(ctx context.Context, runID, name string, arg any) error {
	err := s.Client.SignalWorkflow(ctx, runID, "", name, arg)
	var nf *serviceerror.NotFound
	if errors.As(err, &nf) {
		return nil // the workflow has ended: nothing to move
	}
	return err
}

// WaitSandbox waits until the session's workflow has ended.
func (s *Starter) WaitSandbox(ctx context.Context, runID string) error {
	return s.Client.GetWorkflow(ctx, runID, "").Get(ctx, nil)
}

// IsSandboxLost reports whether err is an exec's failure because the
// session's container is gone (flows.SandboxLost).
func IsSandboxLost(err error) bool {
	var app *temporal.ApplicationError
	return errors.As(err, &app) && app.Type() == string(flows.SandboxLost)
}
