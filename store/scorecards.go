package store

import (
	"context"
	"time"
)

// Scorecard is a stored batch (scorecard or experiment): the indexed
// columns plus Doc, the eval.Scorecard as JSON. Progress and steps live
// apart (child runs and ScorecardStep rows), so the case activities of a
// batch never contend on this row.
type Scorecard struct {
	ID        string `json:"id"`
	Workspace string `json:"workspace"`
	Kind      string `json:"kind"`   // scorecard or experiment
	Status    string `json:"status"` // queued, running, succeeded, failed, superseded, cancelled
	DatasetID string `json:"datasetId"`
	HarnessID string `json:"harnessId"`
	CreatedBy string `json:"createdBy,omitempty"`
	Doc       []byte `json:"-"`
	// Selection is the batch's selection kept apart from Doc (the case
	// ids and the manifest's per-case digests, as JSON), which grows with
	// the batch and never changes after the submit. CreateScorecard
	// stores it; PutScorecard stores it only when it is not nil (a record
	// written before the selection moved out of Doc moves it on its next
	// write) and otherwise leaves the stored one. GetScorecard and
	// ListScorecards never return it (they set HasSelection):
	// GetScorecardSelection reads it.
	Selection []byte `json:"-"`
	// HasSelection reports, on a read, that a Selection is stored.
	HasSelection bool `json:"-"`
	// Version counts writes; PutScorecard succeeds only when it matches the
	// stored one (optimistic concurrency), and returns the next.
	Version   int64     `json:"version"`
	CreatedAt time.Time `json:"createdAt"`
	UpdatedAt time.Time `json:"updatedAt"`
}

// ScorecardFilter selects batches of one workspace, newest first
// (CreatedAt, then ID, both descending).
type ScorecardFilter struct {
	Workspace string
	Kind      string   // "" for both kinds
	Statuses  []string // empty for any
	DatasetID string
	HarnessID string
	// Cursor: only batches strictly older than (BeforeTime, BeforeID).
	BeforeTime time.Time
	BeforeID   string
	Limit      int // 0 means 50
}

// ScorecardStep is one entry of a batch's timeline.
type ScorecardStep struct {
	Workspace   string `json:"-"`
	ScorecardID string `json:"-"`
	// Key makes the append idempotent: a retried activity appending the
	// same step again (same key) adds nothing. Empty means always append.
	Key     string    `json:"-"`
	Seq     int64     `json:"-"` // set by the store, increasing
	TS      time.Time `json:"ts"`
	Phase   string    `json:"phase"`
	Status  string    `json:"status"`
	Message string    `json:"message"`
	CaseID  string    `json:"caseId,omitempty"`
}

// RunCounts counts a batch's canonical child runs by status and by outcome.
type RunCounts struct {
	Total     int            `json:"total"`
	ByStatus  map[string]int `json:"byStatus"`
	ByOutcome map[string]int `json:"byOutcome"`
	// FirstCreatedAt is the CreatedAt of the earliest counted run, when
	// the batch's first case started; zero when there is none.
	FirstCreatedAt time.Time `json:"firstCreatedAt"`
}

// CaseTrialPage selects one keyset page of a batch's canonical child runs
// in the detail table's order: by case id (byte order), then trial.
type CaseTrialPage struct {
	// AfterCase and AfterTrial are the cursor: only runs whose (case id,
	// trial) comes after it. An empty AfterCase with AfterTrial -1 starts
	// from the first.
	AfterCase  string
	AfterTrial int
	Limit      int // 1 to 10,000
}

// Scorecards stores batches.
type Scorecards interface {
	// CreateScorecard inserts s with Version 1; an existing ID is
	// ErrConflict. CreatedAt and UpdatedAt are set when zero.
	CreateScorecard(ctx context.Context, s Scorecard) (Scorecard, error)
	// GetScorecard returns one batch or ErrNotFound.
	GetScorecard(ctx context.Context, workspace, id string) (Scorecard, error)
	// ScorecardVersion returns a batch's Version (every write bumps it)
	// without its Doc, or ErrNotFound: for readers that cache the Doc.
	ScorecardVersion(ctx context.Context, workspace, id string) (int64, error)
	// GetScorecardSelection returns the Selection stored with a batch: nil
	// when it has none, ErrNotFound when there is no such batch.
	GetScorecardSelection(ctx context.Context, workspace, id string) ([]byte, error)
	// PutScorecard replaces the columns and Doc of s.ID when s.Version is
	// the stored version (ErrConflict otherwise; ErrNotFound when absent),
	// and returns it with Version+1 and UpdatedAt set (to now when zero).
	PutScorecard(ctx context.Context, s Scorecard) (Scorecard, error)
	// ListScorecards returns batches with their Doc, newest first.
	ListScorecards(ctx context.Context, f ScorecardFilter) ([]Scorecard, error)
	// AppendScorecardSteps appends steps in order (skipping any whose
	// non-empty Key is already recorded for the batch).
	AppendScorecardSteps(ctx context.Context, steps []ScorecardStep) error
	// ListScorecardSteps returns a batch's steps in Seq order, at most
	// limit (0 means 1000), after afterSeq.
	ListScorecardSteps(ctx context.Context, workspace, scorecardID string, afterSeq int64, limit int) ([]ScorecardStep, error)
	// ListCanonicalChildPage returns one keyset page of a batch's
	// canonical child runs, of every Audience, with their Doc, ordered by
	// case id, then trial: at most p.Limit of those after the
	// cursor. A page costs its own rows, whatever the batch's size.
	ListCanonicalChildPage(ctx context.Context, workspace, scorecardID string, p CaseTrialPage) ([]Run, error)
	// ChildRunCounts counts the canonical child runs of a batch.
	ChildRunCounts(ctx context.Context, workspace, scorecardID string) (RunCounts, error)
}
