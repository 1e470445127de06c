package flows

// The world snapshot activity: the sandbox session workflow calls it on
// close and at expiry (hibernation), and the API's POST
// /sandboxes/:id/snapshot reaches the same code on the session's host.
const (
	// ActivitySnapshotSession is SnapshotSession(SnapshotInput)
	// SnapshotResult: the session's container changes appended to the
	// image it started from, published as the next version of its world,
	// then retention. For a teardown (Reason close, expiry or orphan) it
	// never fails the workflow for a snapshot that cannot be taken: it
	// records session.snapshot_failed on the session's trajectory and
	// answers Failed, so teardown goes on.
	ActivitySnapshotSession = "SnapshotSession"
)

// Reasons of a snapshot (SnapshotInput.Reason).
const (
	SnapshotRequested = "request" // POST /sandboxes/:id/snapshot
	SnapshotOnClose   = "close"   // hibernation at close
	SnapshotOnExpiry  = "expiry"  // hibernation at the deadline
	SnapshotOnOrphan  = "orphan"  // a world orphan captured after a restart, before removal
)

// SnapshotInput names the session to snapshot.
type SnapshotInput struct {
	Workspace string `json:"workspace"`
	// SessionID is the session run's id (also its container's).
	SessionID string `json:"sessionId"`
	// Reason is one of the Snapshot* reasons; "" means SnapshotRequested.
	Reason string `json:"reason,omitempty"`
	// By is the member who asked for the snapshot (Reason request); ""
	// means the session's creator. Retention prunes only By's versions.
	By string `json:"by,omitempty"`
}

// Teardown says whether in is a hibernation (close, expiry or orphan):
// its failure is recorded, never returned.
func (in SnapshotInput) Teardown() bool {
	return in.Reason == SnapshotOnClose || in.Reason == SnapshotOnExpiry || in.Reason == SnapshotOnOrphan
}

// SnapshotResult is a published world version, or why a teardown's
// snapshot was not taken.
type SnapshotResult struct {
	World   string `json:"world,omitempty"`
	Version int    `json:"version,omitempty"`
	Tag     string `json:"tag,omitempty"`
	Digest  string `json:"digest,omitempty"`
	// Ref is the version pinned by digest, relative to the workspace's
	// namespace of the image store: world:v<n>@sha256:...
	Ref string `json:"ref,omitempty"`
	// Bytes is the compressed size of the change set's layer.
	Bytes int64 `json:"bytes,omitempty"`
	// PrunedVersions are the tags retention deleted after the publish.
	PrunedVersions []string `json:"prunedVersions"`
	// PruneError says why retention stopped; the version stays published.
	PruneError string `json:"pruneError,omitempty"`
	// Skipped says why nothing was published and nothing failed (a
	// session with no world, or hibernate off).
	Skipped string `json:"skipped,omitempty"`
	// Failed is why a teardown's snapshot failed (recorded on the
	// trajectory as session.snapshot_failed).
	Failed string `json:"failed,omitempty"`
}

// SandboxSnapshotWorkflow runs one requested snapshot (POST
// /sandboxes/:id/snapshot): SnapshotSession on the session's host queue,
// its result the workflow's. The API waits for it.
const SandboxSnapshotWorkflow = "SandboxSnapshotWorkflow"

// SnapshotRequest starts SandboxSnapshotWorkflow.
type SnapshotRequest struct {
	SnapshotInput
	// HostQueue is the task queue of the session's host
	// (Session.HostQueue).
	HostQueue string `json:"hostQueue"`
}
