package activities

import (
	"context"

	"svc/store"
)

// Store is what the activities use of the store: the worker is its main
// writer (runs and their logs, batches and their analyses, trajectories,
// the door's pending spans and the sources they are pulled from, the
// runtime's admission slots, runner jobs, sessions, notifications,
// webhook deliveries, the event log, and registry rows and secrets it
// resolves), in transactions (TransactKeyed for writes of one keyed row).
// It leaves out only what the request side owns: workspaces, members and
// keys (Identity), and a runner's output chunks.
type Store interface {
	store.Runs
	store.RunLogs
	store.Scorecards
	store.Analyses
	store.Trajectories
	store.TraceIngest
	store.TraceSources
	store.Slots
	store.RunnerJobs
	store.Sessions
	store.Notifications
	store.Webhooks
	store.Events
	store.Registry
	store.Secrets
	Transact(ctx context.Context, fn func(tx store.Tx) error) error
	TransactKeyed(ctx context.Context, fn func(tx store.Tx) error) error
}
