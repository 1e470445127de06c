package orchestration

import (
	"context"
	"errors"

	"go.temporal.io/api/serviceerror"

	"svc/internal/domain/flows"
	"svc/internal/platform/derrors"
)

// StartSandboxTask signals a session's workflow to run a recorded
// playground task (sandboxes.TaskOrchestrator). A workflow that has ended
// is a conflict: the session is closed.
func (s *Starter) StartSandboxTask(ctx context.Context, sessionID string, t flows.SandboxTaskStart) error {
	err := s.Client.SignalWorkflow(ctx, sessionID, "", flows.SignalSandboxTask, t)
	var nf *serviceerror.NotFound
	if errors.As(err, &nf) {
		return derrors.Conflictf("sandbox session %s has ended (its workflow is gone); create a new one", sessionID)
	}
	return err
}
