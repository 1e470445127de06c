package records

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"svc/internal/domain/eval"
	"svc/internal/platform/derrors"
	"svc/store"
)

// decodeScorecard decodes a stored scorecard; the row's times are the
// record's.
func decodeScorecard(row store.Scorecard) (eval.Scorecard, error) {
	var sc eval.Scorecard
	if err := json.Unmarshal(row.Doc, &sc); err != nil {
		return eval.Scorecard{}, fmt.Errorf("stored scorecard %s does not decode: %w", row.ID, err)
	}
	sc.CreatedAt, sc.UpdatedAt = row.CreatedAt, row.UpdatedAt
	return sc, nil
}

// LoadScorecard reads a batch's record, without its selection (see
// Selection and LoadScorecardFull).
func LoadScorecard(ctx context.Context, st store.Scorecards, ws, id string) (eval.Scorecard, store.Scorecard, error) {
	row, err := st.GetScorecard(ctx, ws, id)
	if err != nil {
		return eval.Scorecard{}, store.Scorecard{}, err
	}
	sc, err := decodeScorecard(row)
	if err != nil {
		return eval.Scorecard{}, row, err
	}
	return sc, row, nil
}

// ScorecardRow is the stored form of sc, at the version it was read: the
// selection sc carries, if any, goes to the row's Selection, never into
// its Doc (a record read by LoadScorecard carries none, so its write
// leaves the stored selection as it is).
func ScorecardRow(sc eval.Scorecard, version int64) (store.Scorecard, error) {
	sc, sel, err := detach(sc)
	if err != nil {
		return store.Scorecard{}, err
	}
	doc, err := json.Marshal(sc)
	if err != nil {
		return store.Scorecard{}, fmt.Errorf("encoding scorecard %s: %w", sc.ID, err)
	}
	return store.Scorecard{
		ID: sc.ID, Workspace: sc.Tenant, Kind: sc.Kind, Status: string(sc.Status),
		DatasetID: sc.Dataset.ID, HarnessID: sc.Harness.ID, CreatedBy: sc.CreatedBy,
		Doc: doc, Selection: sel, Version: version, CreatedAt: sc.CreatedAt, UpdatedAt: sc.UpdatedAt,
	}, nil
}

// UpdateScorecard applies fn to the batch's record and stores it, retrying
// when another writer got there first (optimistic concurrency).
func UpdateScorecard(ctx context.Context, st store.Scorecards, ws, id string, fn func(sc *eval.Scorecard) error) (eval.Scorecard, error) {
	for attempt := 0; ; attempt++ {
		sc, row, err := LoadScorecard(ctx, st, ws, id)
		if err != nil {
			return eval.Scorecard{}, err
		}
		if err := fn(&sc); err != nil {
			return sc, err
		}
		next, err := ScorecardRow(sc, row.Version)
		if err != nil {
			return eval.Scorecard{}, err
		}
		next.UpdatedAt = sc.UpdatedAt
		stored, err := st.PutScorecard(ctx, next)
		if errors.Is(err, derrors.ErrConflict) && attempt < 20 {
			continue
		}
		if err != nil {
			return eval.Scorecard{}, err
		}
		sc.UpdatedAt = stored.UpdatedAt
		return sc, nil
	}
}

// AnalysisRef names the analysis bundle a scoring revision freezes.
func AnalysisRef(scorecardID string, revision int) string {
	return fmt.Sprintf("analysis:%s@%d", scorecardID, revision)
}

// ScorecardReader is what a PlanCache reads: the record's version, the
// record when the version changed, and the selection once.
type ScorecardReader interface {
	ScorecardVersion(ctx context.Context, ws, id string) (int64, error)
	GetScorecard(ctx context.Context, ws, id string) (store.Scorecard, error)
	GetScorecardSelection(ctx context.Context, ws, id string) ([]byte, error)
}

// PlanCache keeps decoded batch records by workspace, id and version. Every
// case activity of a batch reads the same record, which changes only at
// start, cancel, finish and scoring; decoding it per case (it holds the
// selection and the manifest, hundreds of KB for a large batch) would make
// a batch cost quadratic time. The zero value is ready to use.
type PlanCache struct {
	mu   sync.Mutex
	m    map[string]cachedPlan
	sels map[string]Selection
}

type cachedPlan struct {
	version int64
	sc      eval.Scorecard
}

// selCacheSize bounds the selections a PlanCache keeps (a selection is
// about 200 bytes a case): the batches a worker runs at once.
const selCacheSize = 8

const planCacheSize = 256

// Plan returns the batch's record, decoded once per version. Callers must
// not modify what it returns.
func (c *PlanCache) Plan(ctx context.Context, st ScorecardReader, ws, id string) (eval.Scorecard, error) {
	// The record holds the selection and the manifest (hundreds of KB for
	// a large batch): read only its version while the cached plan is
	// current.
	version, err := st.ScorecardVersion(ctx, ws, id)
	if err != nil {
		return eval.Scorecard{}, err
	}
	key := ws + "\x00" + id
	c.mu.Lock()
	p, ok := c.m[key]
	c.mu.Unlock()
	if ok && p.version == version {
		return p.sc, nil
	}
	row, err := st.GetScorecard(ctx, ws, id)
	if err != nil {
		return eval.Scorecard{}, err
	}
	sc, err := decodeScorecard(row)
	if err != nil {
		return eval.Scorecard{}, err
	}
	c.mu.Lock()
	if c.m == nil || len(c.m) >= planCacheSize {
		c.m = map[string]cachedPlan{}
	}
	c.m[key] = cachedPlan{version: row.Version, sc: sc}
	c.mu.Unlock()
	return sc, nil
}

// Selection returns the batch's selection, read once: it never changes.
// Callers must not modify what it returns.
func (c *PlanCache) Selection(ctx context.Context, st ScorecardReader, ws, id string) (Selection, error) {
	key := ws + "\x00" + id
	c.mu.Lock()
	s, ok := c.sels[key]
	c.mu.Unlock()
	if ok {
		return s, nil
	}
	row, err := st.GetScorecard(ctx, ws, id)
	if err != nil {
		return Selection{}, err
	}
	sc, err := decodeScorecard(row)
	if err != nil {
		return Selection{}, err
	}
	if s, err = LoadSelection(ctx, st, sc, row); err != nil {
		return Selection{}, err
	}
	c.mu.Lock()
	if c.sels == nil || len(c.sels) >= selCacheSize {
		c.sels = map[string]Selection{}
	}
	c.sels[key] = s
	c.mu.Unlock()
	return s, nil
}
