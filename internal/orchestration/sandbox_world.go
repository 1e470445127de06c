package orchestration

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"svc/internal/domain/flows"
	"svc/internal/platform/derrors"
)

// SnapshotSandbox runs one requested world snapshot on the session's host
// (flows.SandboxSnapshotWorkflow on the deployment's task queue, whose
// activity runs on in.HostQueue) and waits for its result. The
// activity's refusals keep their kind: a change set past the capture cap
// is a 400, a version published at the same time a 409.
func (s *Starter) SnapshotSandbox(ctx context.Context, in flows.SnapshotRequest) (flows.SnapshotResult, error) {
	var nonce [6]byte
	_, _ = rand.Read(nonce[:])
	run, err := s.Client.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
		ID:        "snapshot:" + in.SessionID + ":" + hex.EncodeToString(nonce[:]),
		TaskQueue: s.TaskQueue,
	}, flows.SandboxSnapshotWorkflow, in)
	if err != nil {
		return flows.SnapshotResult{}, fmt.Errorf("starting the snapshot of session %s: %w", in.SessionID, err)
	}
	var res flows.SnapshotResult
	if err := run.Get(ctx, &res); err != nil {
		return flows.SnapshotResult{}, snapshotError(in.SessionID, err)
	}
	return res, nil
}

// snapshotError words a failed snapshot by the activity's error kind.
func snapshotError(id string, err error) error {
	var te *temporal.TimeoutError
	if errors.As(err, &te) {
		return derrors.Unavailablef("the snapshot of session %s: its host did not take it (is its worker running?)", id)
	}
	var app *temporal.ApplicationError
	if !errors.As(err, &app) {
		return err
	}
	msg := app.Message()
	switch app.Type() {
	case "Invalid":
		return derrors.Invalidf("%s", msg)
	case "NotFound":
		return derrors.NotFoundf("%s", msg)
	case "Conflict":
		return derrors.Conflictf("%s", msg)
	case "Forbidden":
		return derrors.Forbiddenf("%s", msg)
	}
	return derrors.Unavailablef("the snapshot of session %s: %s", id, msg)
}
