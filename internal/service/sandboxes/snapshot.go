package sandboxes

import (
	"context"

	"svc/auth"
	"svc/internal/domain/flows"
	"svc/internal/platform/derrors"
)

// Snapshotter publishes a requested world snapshot on the session's host
// (orchestration.Starter.SnapshotSandbox: flows.SandboxSnapshotWorkflow,
// whose SnapshotSession activity runs on the host's task queue).
type Snapshotter interface {
	SnapshotSandbox(ctx context.Context, in flows.SnapshotRequest) (flows.SnapshotResult, error)
}

// Snapshot publishes session id's changes as the next version of its
// world (spec §4.8; the route's gate is images:push): a session p may
// read (its member), of a world, still running. The answer reports the
// version and prunedVersions. Another member's session is 404 as for
// every session route; a session with no world is 400.
func (s *Service) Snapshot(ctx context.Context, p auth.Principal, id string, _ SnapshotRequest) (flows.SnapshotResult, error) {
	run, err := s.control(ctx, p, id)
	if err != nil {
		return flows.SnapshotResult{}, err
	}
	if run.Session.World == nil || run.Session.World.ID == "" {
		return flows.SnapshotResult{}, derrors.Invalidf("sandbox session %s has no world to snapshot into: create it with world {id}", id)
	}
	if run.Status.Terminal() {
		return flows.SnapshotResult{}, closed(run)
	}
	if run.Session.HostQueue == "" {
		return flows.SnapshotResult{}, derrors.Conflictf("sandbox session %s has no container yet; snapshot it once it runs", id)
	}
	sn, ok := s.o.Orchestrator.(Snapshotter)
	if s.o.Orchestrator == nil || !ok {
		return flows.SnapshotResult{}, derrors.Unavailablef("no workflow orchestrator is configured, so the session cannot be reached")
	}
	return sn.SnapshotSandbox(ctx, flows.SnapshotRequest{HostQueue: run.Session.HostQueue,
		SnapshotInput: flows.SnapshotInput{Workspace: run.Tenant, SessionID: run.ID, Reason: flows.SnapshotRequested, By: p.Subject}})
}
