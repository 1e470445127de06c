package store

import (
	"context"
	"encoding/json"
	"time"
)

// TraceSource is a workspace's named connection to an observability
// platform (spec §4.2): Doc is its configuration as package traces/pull
// reads it (kind, endpoint, project, correlation, span attribute mapping
// and the name of the secret holding the credential, never a value).
type TraceSource struct {
	Workspace string          `json:"-"`
	Name      string          `json:"name"`
	Doc       json.RawMessage `json:"doc"`
	CreatedBy string          `json:"createdBy,omitempty"`
	UpdatedBy string          `json:"updatedBy,omitempty"`
	CreatedAt time.Time       `json:"createdAt"`
	UpdatedAt time.Time       `json:"updatedAt"`
}

// TracePull is what one child run of a pulled batch reads (POST
// /scorecards/ingest/pull): Doc holds the source as it was at submit and
// the platform's id of the trace.
type TracePull struct {
	Workspace   string          `json:"-"`
	RunID       string          `json:"-"`
	ScorecardID string          `json:"-"`
	CreatedAt   time.Time       `json:"-"`
	Doc         json.RawMessage `json:"doc"`
}

// TraceSources stores trace sources and the pulls of pulled batches.
type TraceSources interface {
	// PutTraceSource inserts or replaces a source; a replace keeps the
	// first CreatedBy and CreatedAt, which it returns.
	PutTraceSource(ctx context.Context, s TraceSource) (TraceSource, error)
	// GetTraceSource returns one source of workspace, or ErrNotFound.
	GetTraceSource(ctx context.Context, workspace, name string) (TraceSource, error)
	// ListTraceSources returns a workspace's sources by name.
	ListTraceSources(ctx context.Context, workspace string) ([]TraceSource, error)
	// DeleteTraceSource deletes a source; an unknown name is ErrNotFound.
	DeleteTraceSource(ctx context.Context, workspace, name string) error
	// PutTracePulls inserts pulls; a run's pull written before is kept
	// (a retried submit writes the same rows).
	PutTracePulls(ctx context.Context, ps []TracePull) error
	// GetTracePull returns the pull of a run, or ErrNotFound.
	GetTracePull(ctx context.Context, workspace, runID string) (TracePull, error)
}
