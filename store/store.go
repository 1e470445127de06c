// Package store defines the persistence interfaces of svc. Two
// implementations exist, store/postgres (production) and store/sqlite (the
// embedded default), and one conformance suite, store/storetest, runs the
// same cases against both.
//
// Records are JSON documents plus the indexed columns that queries need.
// Methods wrap their errors with their name and arguments and use the
// sentinels of package derrors (ErrNotFound, ErrConflict, ...).
package store

import (
	"context"
	"encoding/json"
	"time"
)

// Store is a handle on the database. Its methods run outside a transaction;
// Transact runs several of them atomically.
type Store interface {
	Tx
	// Transact runs fn in one transaction. It commits when fn returns nil and
	// rolls back when fn returns an error or panics (the panic is re-raised).
	// Serialization failures are retried a bounded number of times, so fn
	// must be safe to run more than once.
	Transact(ctx context.Context, fn func(tx Tx) error) error
	// TransactKeyed is Transact for a transaction that reads and writes
	// only rows it names by their keys (no listing, no count, no check
	// across rows), such as finishing one run: on PostgreSQL it runs at
	// REPEATABLE READ, so that only a concurrent write of the same row
	// fails it (and it is retried), not the predicate locks SERIALIZABLE
	// takes on the index pages that concurrent transactions share. On
	// SQLite it is Transact.
	TransactKeyed(ctx context.Context, fn func(tx Tx) error) error
	// Ping checks that the database answers.
	Ping(ctx context.Context) error
	// Dialect is "postgres" or "sqlite".
	Dialect() string
	// Close releases the connections.
	Close() error
}

// Tx is the set of record operations, available both on a Store and inside
// a transaction. Later capabilities add their interfaces here.
type Tx interface {
	Workspaces
	Events
	Identity
	Registry
	Secrets
	Runs
	RunLogs
	Trajectories
	Notifications
	NotificationChannels
	Webhooks
	Scorecards
	Analyses
	TraceIngest
	Slots
	RunnerJobs
	RunnerJobOutput
	TraceSources
	Sessions
	Approvals
}

// Workspace is a tenant: the trust zone every record belongs to.
type Workspace struct {
	ID        string    `json:"id"`
	Name      string    `json:"name"`
	CreatedBy string    `json:"createdBy,omitempty"`
	CreatedAt time.Time `json:"createdAt"`
}

// Workspaces stores tenants.
type Workspaces interface {
	// CreateWorkspace inserts w; an existing id is ErrConflict. CreatedAt is
	// set by the store when zero.
	CreateWorkspace(ctx context.Context, w Workspace) (Workspace, error)
	// GetWorkspace returns one workspace or ErrNotFound.
	GetWorkspace(ctx context.Context, id string) (Workspace, error)
	// ListWorkspaces returns the workspaces with the given ids (all when ids
	// is nil), ordered by id.
	ListWorkspaces(ctx context.Context, ids []string) ([]Workspace, error)
}

// Event is one entry of the platform event log (spec §6): registrations,
// moves, scoring passes, throttling and threshold crossings.
type Event struct {
	Seq       int64           `json:"seq"`
	ID        string          `json:"id"`
	Workspace string          `json:"workspace"`
	Type      string          `json:"type"`              // e.g. dataset.registered
	Subject   string          `json:"subject,omitempty"` // the resource it is about, e.g. dataset:foo@1.0.0
	Actor     string          `json:"actor,omitempty"`
	CausedBy  string          `json:"causedBy,omitempty"`
	Data      json.RawMessage `json:"data,omitempty"`
	CreatedAt time.Time       `json:"createdAt"`
}

// EventFilter selects events of one workspace.
type EventFilter struct {
	Workspace string
	Type      string // exact type; empty means any
	// TypeGlob is a type pattern where '*' matches any run of characters
	// (trace.*, *.registered); empty means any. It is used with Type empty.
	TypeGlob  string
	AfterSeq  int64     // only events with Seq > AfterSeq
	BeforeSeq int64     // only events with Seq < BeforeSeq; 0 means no bound
	Since     time.Time // only events created at or after Since; zero means any
	Newest    bool      // newest first (Seq descending) rather than oldest first
	Limit     int       // at most this many; 0 means 100
}

// Events is the append-only platform event log.
type Events interface {
	// AppendEvent appends e and returns it with Seq (and ID and CreatedAt
	// when they were empty) set. An event with an ID that is already logged
	// is not appended again: the stored one is returned, so an outbox may
	// retry safely.
	AppendEvent(ctx context.Context, e Event) (Event, error)
	// ListEvents returns a workspace's events in Seq order.
	ListEvents(ctx context.Context, f EventFilter) ([]Event, error)
}
