package store

import (
	"context"
	"encoding/json"
	"time"
)

// PendingSpan is one span received on the OTLP door and not yet sealed:
// its normalised TraceEvent, kept until the trajectory it belongs to is
// sealed (the run's, when it ends; an external one, after an idle window).
type PendingSpan struct {
	Workspace string `json:"workspace"`
	// Group is the trajectory the span goes to: a run id of the
	// workspace, or the id of an external trajectory.
	Group string `json:"group"`
	// External is true for a group that is no run of the workspace.
	External bool `json:"external"`
	// Key identifies the span in its group (trace id/span id): a span
	// received twice is kept once.
	Key string `json:"key"`
	// StartUnixNano orders a group's spans.
	StartUnixNano int64 `json:"startUnixNano"`
	// Event is the normalised TraceEvent, as JSON.
	Event      json.RawMessage `json:"event"`
	ReceivedAt time.Time       `json:"receivedAt"`
	// Canonical says, when adding, that Event is the event exactly as a
	// sealed trajectory keeps it (its canonical form): a group held in one
	// record of such spans, all with a start time, can then be sealed by
	// SealPendingGroup inside the store. Such an event is taken to be
	// valid JSON on one line (the canonical writer's output is, by
	// construction): the store checks only that it escapes no NUL
	// character. Reads leave it false.
	Canonical bool `json:"-"`
}

// PendingGroup is a group of pending spans, as the sweep sees it.
type PendingGroup struct {
	Workspace    string    `json:"workspace"`
	Group        string    `json:"group"`
	External     bool      `json:"external"`
	Spans        int       `json:"spans"`
	LastReceived time.Time `json:"lastReceived"`
}

// TraceSettings are a workspace's trace ingestion settings (spec §4.2,
// /workspace/trace-ingestion and /workspace/trace-thresholds). The store
// keeps Thresholds as a document; package traces gives its meaning.
type TraceSettings struct {
	Workspace string `json:"-"`
	// MaxEventsPerHour overrides SVC_INGEST_MAX_EVENTS_PER_HOUR when set;
	// 0 means unlimited.
	MaxEventsPerHour *int64 `json:"maxEventsPerHour,omitempty"`
	// RetentionDays overrides SVC_TRAJECTORY_RETENTION_DAYS when set; 0
	// means trajectories are kept.
	RetentionDays *int            `json:"retentionDays,omitempty"`
	Thresholds    json.RawMessage `json:"thresholds,omitempty"`
	UpdatedBy     string          `json:"updatedBy,omitempty"`
	UpdatedAt     time.Time       `json:"updatedAt"`
}

// SpanAttrMapping is the per-harness overlay of a span attribute mapping
// (GET/PUT /harnesses/:id/span-attr-mapping), as a document.
type SpanAttrMapping struct {
	Workspace string          `json:"-"`
	HarnessID string          `json:"harnessId"`
	Mapping   json.RawMessage `json:"mapping"`
	UpdatedBy string          `json:"updatedBy,omitempty"`
	UpdatedAt time.Time       `json:"updatedAt"`
}

// PendingGroupRef names a group of pending spans: a workspace's run id or
// external trajectory id.
type PendingGroupRef struct {
	Workspace string `json:"workspace"`
	Group     string `json:"group"`
}

// TraceIngest stores what the OTLP door receives before it is sealed, the
// hourly usage its quota counts, and the workspace's trace settings.
//
// Pending spans are kept one record per (AddPendingSpans call, group):
// the group's new events in start order, with their keys and start times
// (issue 16; the cost of a database row per span bounded the door). The
// methods below keep the semantics of one record per span: a span is
// stored once per (workspace, group, key) whatever the number of calls
// that carry it, concurrent ones included, and reads list spans one by
// one.
type TraceIngest interface {
	// AddPendingSpans stores spans; a span whose (workspace, group, key)
	// is already stored, or repeats an earlier span of the same call, is
	// skipped, so a retried export adds nothing. It returns how many were
	// added. ReceivedAt is set by the store when zero. Concurrent calls
	// on the Store for one group are serialised by the store, so added
	// never counts a span twice (in a Tx, whose snapshot may predate
	// another call's commit, a span is still stored once but may be
	// counted by both). An event is stored as JSON text without raw newlines
	// (one with newlines, which can only be whitespace, is compacted).
	AddPendingSpans(ctx context.Context, spans []PendingSpan) (added int, err error)
	// AddPendingSpansQuota is AddPendingSpans followed by AddTraceUsage
	// of the spans it added to workspace's count of the hour starting at
	// window, in one transaction, refused past quota: when quota > 0 and
	// the spans added would bring the count above it, nothing is stored
	// (the transaction rolls back) and over is true. used is the count
	// before this call's spans. Exports of one group that run at once
	// count each span once, as AddPendingSpans stores it once. Call it on
	// the Store: in a Tx, an over-quota answer leaves the rollback to the
	// caller.
	AddPendingSpansQuota(ctx context.Context, spans []PendingSpan, workspace string, window time.Time, quota int64) (added int, used int64, over bool, err error)
	// ListPendingSpans returns a group's spans ordered by StartUnixNano,
	// then Key, each key once (as first received).
	ListPendingSpans(ctx context.Context, workspace, group string) ([]PendingSpan, error)
	// ListPendingSpansOf is ListPendingSpans of several groups in one
	// read: the spans of each group that has any (a group with none has
	// no entry).
	ListPendingSpansOf(ctx context.Context, groups []PendingGroupRef) (map[PendingGroupRef][]PendingSpan, error)
	// SealPendingGroup seals an external group held in one record of
	// Canonical spans, all with a start time and at most maxEvents of
	// them, as the trajectory t names (Workspace, RunID: the group,
	// Source, SealedAt, Audience) with the record's events, in its order,
	// as they are: the events the sweep would otherwise read out, join
	// and digest, which the record's digest already covers. It drops the
	// group's spans in the same statement sequence and returns the sealed
	// trajectory (without Events) and true. Any other group, or one whose
	// run id is sealed already, is left as it is and sealed is false: the
	// caller then seals it the general way. Call it in the transaction
	// that decides the group is to be sealed.
	SealPendingGroup(ctx context.Context, t Trajectory, maxEvents int) (_ Trajectory, sealed bool, err error)
	// DeletePendingSpans drops a group's spans (once sealed or refused).
	DeletePendingSpans(ctx context.Context, workspace, group string) error
	// GetPendingGroup returns the group of a workspace's pending spans
	// named group (a run id or an external trajectory's id), as
	// ListPendingGroups lists it, or ErrNotFound when none waits.
	GetPendingGroup(ctx context.Context, workspace, group string) (PendingGroup, error)
	// ListPendingGroups returns the groups whose latest span was received
	// before idleSince (zero: all groups), oldest first, at most limit
	// (0 means 100). Spans counts the group's stored spans.
	ListPendingGroups(ctx context.Context, idleSince time.Time, limit int) ([]PendingGroup, error)

	// AddTraceUsage adds n events to the workspace's count of the hour
	// starting at window and returns the new count.
	AddTraceUsage(ctx context.Context, workspace string, window time.Time, n int64) (int64, error)
	// GetTraceUsage returns the workspace's count of the hour starting at
	// window (0 when none).
	GetTraceUsage(ctx context.Context, workspace string, window time.Time) (int64, error)

	// GetTraceSettings returns the workspace's settings, or ErrNotFound
	// when it never set any.
	GetTraceSettings(ctx context.Context, workspace string) (TraceSettings, error)
	// PutTraceSettings inserts or replaces the workspace's settings and
	// sets UpdatedAt (when zero, to now).
	PutTraceSettings(ctx context.Context, s TraceSettings) (TraceSettings, error)

	// GetSpanAttrMapping returns a harness's overlay, or ErrNotFound.
	GetSpanAttrMapping(ctx context.Context, workspace, harnessID string) (SpanAttrMapping, error)
	// PutSpanAttrMapping inserts or replaces a harness's overlay.
	PutSpanAttrMapping(ctx context.Context, m SpanAttrMapping) (SpanAttrMapping, error)

	// DeleteTrajectoriesBefore deletes at most limit (0 means 1000) of the
	// workspace's trajectories sealed before cutoff, oldest first, and
	// returns how many (the retention sweep calls it until it returns
	// fewer than limit).
	DeleteTrajectoriesBefore(ctx context.Context, workspace string, cutoff time.Time, limit int) (int, error)
}
