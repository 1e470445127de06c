package store

import (
	"context"
	"time"
)

// Analysis is the analysis bundle a scoring revision of a batch freezes
// (spec §9.6): written once when the revision is appended, never changed.
type Analysis struct {
	Workspace   string    `json:"-"`
	ScorecardID string    `json:"scorecardId"`
	Revision    int       `json:"revision"` // from 1
	Digest      string    `json:"digest"`   // "sha256:<64 hex>" of Doc, chosen by the writer
	Doc         []byte    `json:"-"`        // the bundle as JSON, kept byte for byte
	CreatedAt   time.Time `json:"createdAt"`
}

// Analyses stores frozen analysis bundles.
type Analyses interface {
	// PutAnalysis stores a. The same (workspace, scorecard, revision) again
	// with the same Digest returns the stored one with created=false (a
	// retried activity); with another Digest it is ErrConflict (a frozen
	// bundle is never rewritten). CreatedAt is set when zero.
	PutAnalysis(ctx context.Context, a Analysis) (stored Analysis, created bool, err error)
	// GetAnalysis returns one bundle with its Doc; revision 0 means the
	// highest revision stored. ErrNotFound when there is none.
	GetAnalysis(ctx context.Context, workspace, scorecardID string, revision int) (Analysis, error)
}
