package activities

import (
	"context"
	"errors"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"svc/internal/domain/flows"
	"svc/internal/integrations/images"
)

// SnapshotInput and SnapshotResult are the world snapshot's contract
// (flows).
type (
	SnapshotInput  = flows.SnapshotInput
	SnapshotResult = flows.SnapshotResult
)

// SessionChanges is what a world snapshot needs of the sandbox runtime
// holding a session's container: its changes since its base as one
// layer (drivers/local/sandbox.Runtime.Changes).
type SessionChanges interface {
	Changes(ctx context.Context, id string) (v1.Layer, int64, error)
}

// Worlds is what the world snapshot needs.
type Worlds struct {
	// Store is the image store split by workspace; nil when the
	// deployment has none (no world session is created then).
	Store *images.Workspaces
	// Sessions reads a session's changes; nil when this worker runs no
	// sandbox.
	Sessions SessionChanges
}

// SnapshotSession publishes session in.SessionID's changes as the next
// version of its world (flows.ActivitySnapshotSession).
func (a *Activities) SnapshotSession(ctx context.Context, in SnapshotInput) (SnapshotResult, error) {
	return SnapshotResult{}, errors.New("SnapshotSession: not implemented yet")
}
