package store

import (
	"context"
	"encoding/json"
	"time"
)

// Run is a stored run: the indexed columns queries need plus Doc, the whole
// eval.Run as JSON. The store does not interpret Doc; the caller keeps the
// columns and the document in step.
type Run struct {
	ID        string `json:"id"`
	Workspace string `json:"workspace"`
	Kind      string `json:"kind"`   // eval, sandbox, agent-conversation, analysis
	Status    string `json:"status"` // queued, running, succeeded, failed
	// Audience is the only subject who may read the run, or "" when the
	// whole workspace may (eval.Run.Audience).
	Audience  string `json:"audience,omitempty"`
	CreatedBy string `json:"createdBy,omitempty"`
	// ParentScorecardID, CaseID, Trial and Canonical key a scorecard's
	// child runs; ParentScorecardID is "" for a top-level run.
	ParentScorecardID string `json:"parentScorecardId,omitempty"`
	CaseID            string `json:"caseId"`
	Trial             int    `json:"trial"`
	Canonical         bool   `json:"canonical"`
	// Outcome is the verdict of a finished run: pass, fail, error (could
	// not be dispatched) or cancelled; "" while it runs. Batch progress
	// counts it.
	Outcome   string    `json:"outcome,omitempty"`
	Doc       []byte    `json:"-"`
	CreatedAt time.Time `json:"createdAt"`
	UpdatedAt time.Time `json:"updatedAt"`
}

// RunFilter selects runs of one workspace, newest first (CreatedAt, then ID,
// both descending).
type RunFilter struct {
	Workspace string
	// Viewer is the caller: runs whose Audience is another subject are left
	// out. Required.
	Viewer string
	// Teams are the private teams' audiences (eval.TeamAudience) Viewer
	// may read; runs of other teams are left out. AnyTeam keeps every
	// team's (the service's own reads of a batch's children).
	Teams   []string
	AnyTeam bool
	// ScorecardID lists that scorecard's children only.
	ScorecardID string
	// IncludeChildren also lists scorecard children when ScorecardID is
	// empty; by default only top-level runs are listed.
	IncludeChildren bool
	// Before is the cursor: only runs strictly older than (CreatedAt, ID)
	// of the last run of the previous page. Zero value: from the newest.
	BeforeTime time.Time
	BeforeID   string
	Limit      int // 0 means 50
}

// ChildRunState is a batch's child run without its document: the indexed
// columns that change when the run is written, enough for a reader that
// keeps the batch's children to tell which changed since it read them,
// and to count them as ChildRunCounts does.
type ChildRunState struct {
	ID        string    `json:"id"`
	Status    string    `json:"status"`
	Outcome   string    `json:"outcome,omitempty"`
	Audience  string    `json:"audience,omitempty"`
	Canonical bool      `json:"canonical"`
	CreatedAt time.Time `json:"createdAt"`
	UpdatedAt time.Time `json:"updatedAt"`
}

// ChildRunPage selects one keyset page of a batch's child runs.
type ChildRunPage struct {
	// After is the cursor: only runs whose ID is greater. "" starts from
	// the first.
	After string
	Limit int // 0 means 500; at most 5000
}

// Runs stores run records.
type Runs interface {
	// CreateRun inserts r; an existing ID is ErrConflict. CreatedAt and
	// UpdatedAt are set by the store when zero.
	CreateRun(ctx context.Context, r Run) (Run, error)
	// PutRun replaces the columns and Doc of an existing run (ErrNotFound
	// when there is none) and sets UpdatedAt (when zero, to now).
	PutRun(ctx context.Context, r Run) (Run, error)
	// GetRun returns one run with its Doc, or ErrNotFound.
	GetRun(ctx context.Context, workspace, id string) (Run, error)
	// CreateRuns inserts each of rs as CreateRun does, in as few
	// statements as the database allows: created[i] reports whether rs[i]
	// was inserted, false where CreateRun would be ErrConflict (its ID
	// exists, or its canonical slot is taken, also by an earlier row of
	// rs); the other rows are inserted all the same. stored[i] is rs[i]
	// as stored when created[i]. A row that is invalid fails the call and
	// inserts none.
	CreateRuns(ctx context.Context, rs []Run) (stored []Run, created []bool, err error)
	// GetRuns returns the runs of a workspace with the given ids, with
	// their Doc, in the order of ids; an id of no run is skipped, an id
	// given twice is returned once.
	GetRuns(ctx context.Context, workspace string, ids []string) ([]Run, error)
	// PutRuns is PutRun of each of rs in order, in as few statements as
	// the database allows; out[i] is rs[i] as stored. It fails as the
	// first failing PutRun would (ErrNotFound, ErrConflict for the
	// canonical rule, also against an earlier row of rs), and then stores
	// none of rs when called on the Store (in a transaction, the caller
	// rolls back).
	PutRuns(ctx context.Context, rs []Run) (out []Run, err error)
	// ListRuns returns runs with their Doc, newest first.
	ListRuns(ctx context.Context, f RunFilter) ([]Run, error)
	// ChildRunsUpdatedAt returns the latest UpdatedAt among a batch's
	// child runs, canonical or not, from an index alone; zero when the
	// batch has none (or does not exist). A reader that keeps the
	// children and finds the time it saw last has nothing to read again,
	// once writes stamped before it have had time to commit (see
	// ListChildRunStates).
	ChildRunsUpdatedAt(ctx context.Context, workspace, scorecardID string) (time.Time, error)
	// ListChildRunStates returns the state of a batch's child runs whose
	// UpdatedAt is at or after since (zero for all; since is taken to the
	// microsecond, as the store keeps times), in (UpdatedAt, ID) order,
	// from an index alone. It lists them canonical or not and of every
	// Audience, so that a reader keeping the canonical children sees a
	// run leave them. UpdatedAt is the writer's clock when it built the
	// record, not the commit order: a run can commit after another one
	// stamped later, so a reader passes the latest UpdatedAt it has seen
	// less a margin, and tells changed runs by their state.
	ListChildRunStates(ctx context.Context, workspace, scorecardID string, since time.Time) ([]ChildRunState, error)
	// ListChildRuns returns a batch's child runs with their Doc, canonical
	// or not and of every Audience, in ID order: those with the given ids,
	// or all of them when ids is nil. Ids of no child of the batch are
	// skipped.
	ListChildRuns(ctx context.Context, workspace, scorecardID string, ids []string) ([]Run, error)
	// ListChildRunPage returns one keyset page of a batch's child runs
	// with their Doc, canonical or not and of every Audience, in ID order:
	// at most p.Limit of those whose ID is greater than p.After. A reader
	// walks the batch by passing the last ID of a page as the next After,
	// and is done at a page shorter than its limit; each page costs its
	// own size, whatever the size of the batch.
	ListChildRunPage(ctx context.Context, workspace, scorecardID string, p ChildRunPage) ([]Run, error)
	// CountRuns counts the workspace's top-level runs (no parent scorecard)
	// created at or after since: the budget admission reads it in the
	// same transaction as CreateRun.
	CountRuns(ctx context.Context, workspace string, since time.Time) (int, error)
	// CountBatchRuns sums the case-trials of the workspace's batches
	// created at or after since (Usage.BatchRuns): with CountRuns, what the
	// budget admission of a run or a batch counts, in the transaction that
	// creates it.
	CountBatchRuns(ctx context.Context, workspace string, since time.Time) (int, error)
	// CountQueued counts what the workspace has waiting to run: the
	// case-trials its unfinished batches have not finished (a batch's
	// progress total less its done, as the record last counted them) and
	// its unfinished top-level runs. The scheduler's queue bound
	// (SVC_SCHEDULER_QUEUE_MAX) reads it at a submit.
	CountQueued(ctx context.Context, workspace string) (int, error)
	// WorkspaceUsage is what the workspace spent since (at or after), as an
	// admin reads it (GET /workspace/usage). Its cost reads every run of
	// the window, so admissions do not call it.
	WorkspaceUsage(ctx context.Context, workspace string, since time.Time) (Usage, error)
}

// Usage is what a workspace spent in a window.
type Usage struct {
	// Runs counts its top-level runs; BatchRuns the case-trials of its
	// batches (scorecards, experiments, groups), counted at their submit
	// (every case-trial a batch admitted, whether it has run yet or not).
	Runs      int `json:"runs"`
	BatchRuns int `json:"batchRuns"`
	// CostUSD sums the usage.costUsd its runs reported when they finished,
	// a batch's child runs included.
	CostUSD float64 `json:"costUsd"`
}

// RunLog is one chunk of a run's stdout or stderr, in order of Seq within
// the run.
type RunLog struct {
	Workspace string    `json:"-"`
	RunID     string    `json:"runId"`
	Seq       int64     `json:"seq"`    // from 1, chosen by the writer
	Stream    string    `json:"stream"` // stdout, stderr or system
	Data      string    `json:"data"`
	At        time.Time `json:"at"`
}

// RunLogs stores the logs of runs: appended while the run runs, so that a
// reader on another process sees them live.
type RunLogs interface {
	// AppendRunLogs stores chunks; a chunk whose (run, seq) is already
	// stored is skipped (a retried flush is harmless).
	AppendRunLogs(ctx context.Context, chunks []RunLog) error
	// ListRunLogs returns the chunks of a run with Seq > afterSeq, in Seq
	// order, at most limit (0 means 1000).
	ListRunLogs(ctx context.Context, workspace, runID string, afterSeq int64, limit int) ([]RunLog, error)
	// DeleteRunLogs drops every chunk of a run: a retried dispatch starts
	// its log afresh.
	DeleteRunLogs(ctx context.Context, workspace, runID string) error
}

// Trajectory is a sealed, append-only trace of one run in the owned trace
// ledger: its events, their sha256 and count, when and from where it was
// sealed.
type Trajectory struct {
	Workspace string `json:"-"`
	RunID     string `json:"runId"`
	// Source is where the events came from: svc (a run of this service),
	// import (ingested), otlp (the OTLP door).
	Source     string `json:"source"`
	EventCount int    `json:"eventCount"`
	// Digest is "sha256:<64 hex>" over the canonical events array.
	Digest   string    `json:"digest"`
	SealedAt time.Time `json:"sealedAt"`
	// Audience is the run's audience: "" for workspace-visible.
	Audience string `json:"-"`
	// Events is the JSON array of TraceEvents; empty in list reads.
	Events json.RawMessage `json:"-"`
}

// TrajectoryFilter selects sealed trajectories of one workspace, newest
// first (SealedAt, then RunID, both descending).
type TrajectoryFilter struct {
	Workspace string
	Viewer    string // trajectories with another subject's Audience are left out
	// Teams are the private teams' audiences (eval.TeamAudience) Viewer
	// may read; other teams' trajectories are left out.
	Teams []string
	// Cursor: only trajectories strictly older than (BeforeTime, BeforeID).
	BeforeTime time.Time
	BeforeID   string
	Limit      int // 0 means 50
}

// Trajectories is the owned trace ledger. A trajectory is sealed once and
// never changed.
type Trajectories interface {
	// SealTrajectory stores t. Sealing the same run again with the same
	// Digest returns the stored one with created=false; with another
	// Digest it is ErrConflict (a seal is never rewritten). SealedAt is
	// set by the store when zero.
	SealTrajectory(ctx context.Context, t Trajectory) (stored Trajectory, created bool, err error)
	// SealTrajectories is SealTrajectory of each of ts in order, in as
	// few statements as the database allows: stored[i] and created[i] are
	// what SealTrajectory of ts[i] returns (a run given twice with the
	// same Digest is created once). A run already sealed with another
	// Digest, or an invalid trajectory, fails the call with the error
	// SealTrajectory would return; on the Store nothing of ts is then
	// stored.
	SealTrajectories(ctx context.Context, ts []Trajectory) (stored []Trajectory, created []bool, err error)
	// GetTrajectory returns a run's trajectory with its events, or
	// ErrNotFound.
	GetTrajectory(ctx context.Context, workspace, runID string) (Trajectory, error)
	// ListTrajectories returns metas (no Events), newest first.
	ListTrajectories(ctx context.Context, f TrajectoryFilter) ([]Trajectory, error)
}

// Notification is one row of a member's feed (spec §2.10).
type Notification struct {
	// ID is chosen by the writer and deterministic per cause (for example
	// run_completed:<run id>), so a retried activity adds nothing twice.
	ID        string          `json:"id"`
	Workspace string          `json:"workspace"`
	Recipient string          `json:"recipient"`
	Kind      string          `json:"kind"`
	Title     string          `json:"title"`
	Body      string          `json:"body,omitempty"`
	Link      json.RawMessage `json:"link,omitempty"`
	CreatedAt time.Time       `json:"createdAt"`
	ReadAt    *time.Time      `json:"readAt,omitempty"`
}

// Notifications stores members' feeds.
type Notifications interface {
	// AddNotification inserts n; when its ID exists it returns the stored
	// one with created=false. CreatedAt is set by the store when zero.
	AddNotification(ctx context.Context, n Notification) (stored Notification, created bool, err error)
	// ListNotifications returns a recipient's notifications in a
	// workspace, newest first, only unread ones when unreadOnly, at most
	// limit (0 means 50).
	ListNotifications(ctx context.Context, workspace, recipient string, unreadOnly bool, limit int) ([]Notification, error)
	// MarkNotificationsRead sets ReadAt = at on the recipient's unread
	// notifications with the given ids (all of them when all is true);
	// ids of others or already read are skipped. It returns how many
	// changed.
	MarkNotificationsRead(ctx context.Context, workspace, recipient string, ids []string, all bool, at time.Time) (int, error)
	// DeleteNotification removes one notification; absent is not an error.
	DeleteNotification(ctx context.Context, workspace, id string) error
}

// WebhookSecret is a workspace's webhook signing secret, sealed by the
// caller (only the ciphertext is stored).
type WebhookSecret struct {
	Workspace  string    `json:"-"`
	Ciphertext []byte    `json:"-"`
	CreatedBy  string    `json:"createdBy,omitempty"`
	RotatedAt  time.Time `json:"rotatedAt"`
}

// WebhookDelivery is one attempt to deliver a webhook.
type WebhookDelivery struct {
	Workspace string `json:"-"`
	// MessageID is the webhook-id header: one per event, the same on
	// every attempt, so receivers deduplicate.
	MessageID string    `json:"messageId"`
	RunID     string    `json:"runId,omitempty"`
	URL       string    `json:"url"`
	Attempt   int       `json:"attempt"`
	Status    int       `json:"status,omitempty"` // HTTP status; 0 when no answer
	Error     string    `json:"error,omitempty"`
	At        time.Time `json:"at"`
}

// Webhooks stores signing secrets and delivery attempts.
type Webhooks interface {
	// PutWebhookSecret inserts or replaces the workspace's secret.
	PutWebhookSecret(ctx context.Context, s WebhookSecret) (WebhookSecret, error)
	// GetWebhookSecret returns the workspace's secret or ErrNotFound.
	GetWebhookSecret(ctx context.Context, workspace string) (WebhookSecret, error)
	// AddWebhookDelivery records one attempt; (MessageID, Attempt) already
	// recorded is skipped.
	AddWebhookDelivery(ctx context.Context, d WebhookDelivery) error
	// ListWebhookDeliveries returns a run's attempts, oldest first.
	ListWebhookDeliveries(ctx context.Context, workspace, runID string) ([]WebhookDelivery, error)
}
