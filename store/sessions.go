package store

import "context"

// Sessions reads the live sandbox sessions (runs of kind sandbox that are
// still running), which the sandbox capacity rule counts and a restarted
// worker reconciles with its containers.
type Sessions interface {
	// ListLiveSessions returns the running sandbox-session runs of a
	// workspace with their Doc, oldest first; every workspace's when
	// workspace is "". Audience is not filtered: the caller is the
	// service's own capacity check or reconcile, never a reader.
	ListLiveSessions(ctx context.Context, workspace string) ([]Run, error)
}
