package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"svc/internal/platform/derrors"
	"svc/store"
)

// Page sizes when a caller sets none.
const (
	defaultScorecardLimit     = 50
	defaultScorecardStepLimit = 1000
)

// scorecardColumns are the columns scanScorecard reads, in its order.
const scorecardColumns = `workspace, id, kind, status, dataset_id, harness_id, created_by, version, created_at, updated_at, doc, selection IS NOT NULL`

// scorecardInsertColumns are the columns CreateScorecard writes.
const scorecardInsertColumns = `workspace, id, kind, status, dataset_id, harness_id, created_by, version, created_at, updated_at, doc, selection`

// scorecardStepColumns are the columns scanScorecardStep reads, in its order.
const scorecardStepColumns = `workspace, scorecard_id, seq, step_key, ts, phase, status, message, case_id`

// prepareScorecard validates s and returns it as it will be stored, Doc
// copied so that the caller's slice is not shared. Times and Version are
// left to the caller.
func prepareScorecard(s store.Scorecard) (store.Scorecard, error) {
	if err := required("workspace", s.Workspace, "scorecard id", s.ID, "scorecard kind", s.Kind, "scorecard status", s.Status); err != nil {
		return store.Scorecard{}, err
	}
	if err := checkText(s.Workspace, s.ID, s.Kind, s.Status, s.DatasetID, s.HarnessID, s.CreatedBy); err != nil {
		return store.Scorecard{}, err
	}
	if err := checkJSON("scorecard doc", s.Doc); err != nil {
		return store.Scorecard{}, err
	}
	if s.Selection != nil {
		if err := checkJSON("scorecard selection", s.Selection); err != nil {
			return store.Scorecard{}, err
		}
	}
	s.Doc = append([]byte(nil), s.Doc...)
	return s, nil
}

// scanScorecard reads a row of scorecardColumns.
func scanScorecard(r rowScanner) (store.Scorecard, error) {
	var s store.Scorecard
	var created, updated dbTime
	if err := r.Scan(&s.Workspace, &s.ID, &s.Kind, &s.Status, &s.DatasetID, &s.HarnessID, &s.CreatedBy,
		&s.Version, &created, &updated, &s.Doc, &s.HasSelection); err != nil {
		return store.Scorecard{}, err
	}
	s.CreatedAt, s.UpdatedAt = created.Time, updated.Time
	return s, nil
}

// scanScorecardStep reads a row of scorecardStepColumns.
func scanScorecardStep(r rowScanner) (store.ScorecardStep, error) {
	var st store.ScorecardStep
	var ts dbTime
	if err := r.Scan(&st.Workspace, &st.ScorecardID, &st.Seq, &st.Key, &ts, &st.Phase, &st.Status, &st.Message, &st.CaseID); err != nil {
		return store.ScorecardStep{}, err
	}
	st.TS = ts.Time
	return st, nil
}

// scorecardExists returns nil when the batch is stored, else ErrNotFound.
// It reads through q: the writer when the caller is about to write.
func (o ops) scorecardExists(ctx context.Context, q querier, workspace, id string) error {
	var one int
	err := q.QueryRowContext(ctx, `SELECT 1 FROM scorecards WHERE workspace = $1 AND id = $2`, workspace, id).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return derrors.NotFoundf("scorecard %q of workspace %q", id, workspace)
	}
	return o.mapErr(err)
}

// CreateScorecard inserts s at version 1; see store.Scorecards.
func (o ops) CreateScorecard(ctx context.Context, s store.Scorecard) (_ store.Scorecard, err error) {
	defer derrors.Wrap(&err, "%s.CreateScorecard(ctx, %q, %q)", o.kind, s.Workspace, s.ID)
	s, err = prepareScorecard(s)
	if err != nil {
		return store.Scorecard{}, err
	}
	s.Version = 1
	s.CreatedAt = normTime(s.CreatedAt)
	if s.UpdatedAt.IsZero() {
		s.UpdatedAt = s.CreatedAt
	}
	s.UpdatedAt = normTime(s.UpdatedAt)
	ok, err := o.insertOnce(ctx,
		`INSERT INTO scorecards (`+scorecardInsertColumns+`) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)
		ON CONFLICT (workspace, id) DO NOTHING`,
		s.Workspace, s.ID, s.Kind, s.Status, s.DatasetID, s.HarnessID, s.CreatedBy, s.Version,
		o.d.TimeArg(s.CreatedAt), o.d.TimeArg(s.UpdatedAt), string(s.Doc), selectionArg(s.Selection))
	if err != nil {
		return store.Scorecard{}, err
	}
	if !ok {
		return store.Scorecard{}, derrors.Conflictf("scorecard %q already exists", s.ID)
	}
	s.HasSelection = s.Selection != nil
	s.Selection = nil
	return s, nil
}

// selectionArg is a Selection as a query argument: NULL when there is
// none.
func selectionArg(sel []byte) any {
	if sel == nil {
		return nil
	}
	return string(sel)
}

// GetScorecardSelection returns a batch's selection; see store.Scorecards.
func (o ops) GetScorecardSelection(ctx context.Context, workspace, id string) (_ []byte, err error) {
	defer derrors.Wrap(&err, "%s.GetScorecardSelection(ctx, %q, %q)", o.kind, workspace, id)
	if err := checkText(workspace, id); err != nil {
		return nil, err
	}
	var sel sql.NullString
	err = o.r.QueryRowContext(ctx, `SELECT selection FROM scorecards WHERE workspace = $1 AND id = $2`, workspace, id).Scan(&sel)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, derrors.NotFoundf("scorecard %q of workspace %q", id, workspace)
	}
	if err != nil {
		return nil, o.mapErr(err)
	}
	if !sel.Valid {
		return nil, nil
	}
	return []byte(sel.String), nil
}

// GetScorecard returns one batch with its doc; see store.Scorecards.
func (o ops) GetScorecard(ctx context.Context, workspace, id string) (_ store.Scorecard, err error) {
	defer derrors.Wrap(&err, "%s.GetScorecard(ctx, %q, %q)", o.kind, workspace, id)
	if err := checkText(workspace, id); err != nil {
		return store.Scorecard{}, err
	}
	s, err := scanScorecard(o.r.QueryRowContext(ctx,
		`SELECT `+scorecardColumns+` FROM scorecards WHERE workspace = $1 AND id = $2`, workspace, id))
	if err = o.found(err, "scorecard %q of workspace %q", id, workspace); err != nil {
		return store.Scorecard{}, err
	}
	return s, nil
}

// ScorecardVersion returns a batch's version; see store.Scorecards.
func (o ops) ScorecardVersion(ctx context.Context, workspace, id string) (_ int64, err error) {
	defer derrors.Wrap(&err, "%s.ScorecardVersion(ctx, %q, %q)", o.kind, workspace, id)
	if err := checkText(workspace, id); err != nil {
		return 0, err
	}
	var v int64
	err = o.r.QueryRowContext(ctx, `SELECT version FROM scorecards WHERE workspace = $1 AND id = $2`, workspace, id).Scan(&v)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, derrors.NotFoundf("scorecard %q of workspace %q", id, workspace)
	}
	if err != nil {
		return 0, o.mapErr(err)
	}
	return v, nil
}

// PutScorecard replaces a batch's columns and doc when s.Version is the
// stored version; see store.Scorecards. CreatedAt is the stored one: it is
// the list order and the cursor, so a batch never moves in a listing.
func (o ops) PutScorecard(ctx context.Context, s store.Scorecard) (_ store.Scorecard, err error) {
	defer derrors.Wrap(&err, "%s.PutScorecard(ctx, %q, %q, version %d)", o.kind, s.Workspace, s.ID, s.Version)
	s, err = prepareScorecard(s)
	if err != nil {
		return store.Scorecard{}, err
	}
	if s.Version < 1 {
		return store.Scorecard{}, derrors.Invalidf("version %d is not one a read returns (1 or more)", s.Version)
	}
	s.UpdatedAt = normTime(s.UpdatedAt)
	// The version test is in the UPDATE itself, so that two writers that
	// read the same version cannot both succeed, at any isolation level.
	var created dbTime
	err = o.w.QueryRowContext(ctx,
		`UPDATE scorecards SET kind = $4, status = $5, dataset_id = $6, harness_id = $7, created_by = $8,
		version = version + 1, updated_at = $9, doc = $10, selection = COALESCE($11, selection)
		WHERE workspace = $1 AND id = $2 AND version = $3
		RETURNING created_at, selection IS NOT NULL`,
		s.Workspace, s.ID, s.Version, s.Kind, s.Status, s.DatasetID, s.HarnessID, s.CreatedBy,
		o.d.TimeArg(s.UpdatedAt), string(s.Doc), selectionArg(s.Selection)).Scan(&created, &s.HasSelection)
	if err == nil {
		s.Version++
		s.CreatedAt = created.Time
		s.Selection = nil
		return s, nil
	}
	if !errors.Is(err, sql.ErrNoRows) {
		return store.Scorecard{}, o.mapErr(err)
	}
	// Nothing matched: absent, or written since the caller read it. Batches
	// are never deleted, so a row seen here was there for the UPDATE too.
	var stored int64
	err = o.w.QueryRowContext(ctx, `SELECT version FROM scorecards WHERE workspace = $1 AND id = $2`, s.Workspace, s.ID).Scan(&stored)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return store.Scorecard{}, derrors.NotFoundf("scorecard %q of workspace %q", s.ID, s.Workspace)
	case err != nil:
		return store.Scorecard{}, o.mapErr(err)
	}
	return store.Scorecard{}, derrors.Conflictf("scorecard %q is at version %d, not %d: it changed since it was read", s.ID, stored, s.Version)
}

// ListScorecards returns batches newest first; see store.Scorecards.
func (o ops) ListScorecards(ctx context.Context, f store.ScorecardFilter) (_ []store.Scorecard, err error) {
	defer derrors.Wrap(&err, "%s.ListScorecards(ctx, %q, kind %q, statuses %q, dataset %q, harness %q)",
		o.kind, f.Workspace, f.Kind, f.Statuses, f.DatasetID, f.HarnessID)
	if err := required("workspace", f.Workspace); err != nil {
		return nil, err
	}
	if err := checkText(f.Workspace, f.Kind, f.DatasetID, f.HarnessID, f.BeforeID); err != nil {
		return nil, err
	}
	if err := checkText(f.Statuses...); err != nil {
		return nil, err
	}
	limit, err := checkPage(f.BeforeTime, f.BeforeID, f.Limit, defaultScorecardLimit)
	if err != nil {
		return nil, err
	}
	args := sqlArgs{f.Workspace}
	q := `SELECT ` + scorecardColumns + ` FROM scorecards WHERE workspace = $1`
	if f.Kind != "" {
		q += ` AND kind = ` + args.add(f.Kind)
	}
	if len(f.Statuses) > 0 {
		q += ` AND status IN (`
		for i, st := range f.Statuses {
			if i > 0 {
				q += `, `
			}
			q += args.add(st)
		}
		q += `)`
	}
	if f.DatasetID != "" {
		q += ` AND dataset_id = ` + args.add(f.DatasetID)
	}
	if f.HarnessID != "" {
		q += ` AND harness_id = ` + args.add(f.HarnessID)
	}
	if !f.BeforeTime.IsZero() {
		q += olderThan("created_at", "id", args.add(o.d.TimeArg(normTime(f.BeforeTime))), args.add(f.BeforeID))
	}
	q += ` ORDER BY created_at DESC, id DESC LIMIT ` + args.add(limit)
	return queryList(ctx, o, scanScorecard, q, args...)
}

// AppendScorecardSteps appends steps in order, skipping keys already
// recorded; see store.Scorecards.
func (o ops) AppendScorecardSteps(ctx context.Context, steps []store.ScorecardStep) (err error) {
	defer derrors.Wrap(&err, "%s.AppendScorecardSteps(ctx, %d steps)", o.kind, len(steps))
	for i, st := range steps {
		if err := required("workspace", st.Workspace, "scorecard id", st.ScorecardID, "phase", st.Phase, "status", st.Status); err != nil {
			return fmt.Errorf("step %d: %w", i, err)
		}
		if err := checkText(st.Workspace, st.ScorecardID, st.Key, st.Phase, st.Status, st.Message, st.CaseID); err != nil {
			return fmt.Errorf("step %d: %w", i, err)
		}
	}
	if len(steps) == 0 {
		return nil
	}
	return o.atomic(ctx, func(o ops) error {
		type batch struct{ workspace, id string }
		checked := map[batch]bool{}
		for _, st := range steps {
			if b := (batch{st.Workspace, st.ScorecardID}); !checked[b] {
				// A step of another workspace's batch, or of none, would
				// be an orphan nobody can list.
				if err := o.scorecardExists(ctx, o.w, st.Workspace, st.ScorecardID); err != nil {
					return err
				}
				checked[b] = true
			}
			// seq is the batch's next, drawn in this transaction: SQLite
			// has one writer, and on PostgreSQL (SERIALIZABLE) two appends
			// that drew the same seq collide on the primary key and one is
			// retried, so seqs commit in order and a reader polling with
			// afterSeq never passes over a step that commits late. The
			// conflict target names only the key index, so a seq collision
			// is an error, never a silently dropped step.
			if _, err := o.w.ExecContext(ctx,
				`INSERT INTO scorecard_steps (`+scorecardStepColumns+`) VALUES ($1, $2,
				(SELECT coalesce(max(seq), 0) + 1 FROM scorecard_steps WHERE workspace = $1 AND scorecard_id = $2),
				$3, $4, $5, $6, $7, $8)
				ON CONFLICT (workspace, scorecard_id, step_key) WHERE step_key <> '' DO NOTHING`,
				st.Workspace, st.ScorecardID, st.Key, o.d.TimeArg(normTime(st.TS)), st.Phase, st.Status, st.Message, st.CaseID); err != nil {
				return o.mapErr(err)
			}
		}
		return nil
	})
}

// ListScorecardSteps returns a batch's steps after afterSeq in seq order;
// see store.Scorecards.
func (o ops) ListScorecardSteps(ctx context.Context, workspace, scorecardID string, afterSeq int64, limit int) (_ []store.ScorecardStep, err error) {
	defer derrors.Wrap(&err, "%s.ListScorecardSteps(ctx, %q, %q, after %d, limit %d)", o.kind, workspace, scorecardID, afterSeq, limit)
	if err := required("workspace", workspace, "scorecard id", scorecardID); err != nil {
		return nil, err
	}
	if err := checkText(workspace, scorecardID); err != nil {
		return nil, err
	}
	limit, err = checkPage(time.Time{}, "", limit, defaultScorecardStepLimit)
	if err != nil {
		return nil, err
	}
	steps, err := queryList(ctx, o, scanScorecardStep,
		`SELECT `+scorecardStepColumns+` FROM scorecard_steps
		WHERE workspace = $1 AND scorecard_id = $2 AND seq > $3 ORDER BY seq LIMIT $4`,
		workspace, scorecardID, afterSeq, limit)
	if err != nil {
		return nil, err
	}
	// Steps exist only for stored batches, so only an empty page needs to
	// tell "no steps yet" from "no such batch".
	if len(steps) == 0 {
		if err := o.scorecardExists(ctx, o.r, workspace, scorecardID); err != nil {
			return nil, err
		}
	}
	return steps, nil
}

// ChildRunCounts counts a batch's canonical child runs by status and
// outcome, with the earliest CreatedAt; see store.Scorecards. Runs without
// an outcome yet (still running) count in Total and ByStatus but not in
// ByOutcome.
func (o ops) ChildRunCounts(ctx context.Context, workspace, scorecardID string) (_ store.RunCounts, err error) {
	defer derrors.Wrap(&err, "%s.ChildRunCounts(ctx, %q, %q)", o.kind, workspace, scorecardID)
	if err := required("workspace", workspace, "scorecard id", scorecardID); err != nil {
		return store.RunCounts{}, err
	}
	if err := checkText(workspace, scorecardID); err != nil {
		return store.RunCounts{}, err
	}
	type group struct {
		status, outcome string
		n               int
		first           dbTime
	}
	// parent_scorecard_id <> '' repeats the predicate of the partial
	// runs_canonical_key, which holds exactly the canonical children:
	// with it both planners can prove that index applies (a placeholder
	// cannot), and read only the batch's children.
	groups, err := queryList(ctx, o, func(r rowScanner) (group, error) {
		var g group
		err := r.Scan(&g.status, &g.outcome, &g.n, &g.first)
		return g, err
	}, `SELECT status, outcome, count(*), min(created_at) FROM runs
	WHERE workspace = $1 AND parent_scorecard_id = $2 AND canonical AND parent_scorecard_id <> ''
	GROUP BY status, outcome`, workspace, scorecardID)
	if err != nil {
		return store.RunCounts{}, err
	}
	c := store.RunCounts{ByStatus: map[string]int{}, ByOutcome: map[string]int{}}
	for _, g := range groups {
		c.Total += g.n
		c.ByStatus[g.status] += g.n
		if g.outcome != "" {
			c.ByOutcome[g.outcome] += g.n
		}
		if g.first.Valid && (c.FirstCreatedAt.IsZero() || g.first.Time.Before(c.FirstCreatedAt)) {
			c.FirstCreatedAt = g.first.Time
		}
	}
	if c.Total == 0 {
		if err := o.scorecardExists(ctx, o.r, workspace, scorecardID); err != nil {
			return store.RunCounts{}, err
		}
	}
	return c, nil
}

// maxCaseTrialPage is the most runs one ListCanonicalChildPage returns.
const maxCaseTrialPage = 10_000

// ListCanonicalChildPage returns a page of a batch's canonical children
// in (case id, trial) order; see store.Scorecards.
func (o ops) ListCanonicalChildPage(ctx context.Context, workspace, scorecardID string, p store.CaseTrialPage) (_ []store.Run, err error) {
	defer derrors.Wrap(&err, "%s.ListCanonicalChildPage(ctx, %q, %q, after %q#%d, limit %d)", o.kind, workspace, scorecardID, p.AfterCase, p.AfterTrial, p.Limit)
	if err := checkBatch(workspace, scorecardID); err != nil {
		return nil, err
	}
	if err := checkText(p.AfterCase); err != nil {
		return nil, err
	}
	if p.Limit < 1 || p.Limit > maxCaseTrialPage {
		return nil, derrors.Invalidf("limit %d: want 1 to %d", p.Limit, maxCaseTrialPage)
	}
	// canonical AND parent_scorecard_id <> '' is the predicate of the
	// partial unique runs_canonical_key (workspace, parent_scorecard_id,
	// case_id, trial): both planners range-scan it from the row-value
	// cursor, in its order, and stop at the limit. The key is unique, so
	// (case_id, trial) orders the page whole; a tie-break on id, which the
	// index does not hold, would make both sort every child of the batch.
	return queryList(ctx, o, scanRun, `SELECT `+runColumns+` FROM runs
	WHERE workspace = $1 AND parent_scorecard_id = $2 AND canonical AND parent_scorecard_id <> ''
	AND (case_id, trial) > ($3, $4)
	ORDER BY case_id, trial LIMIT $5`,
		workspace, scorecardID, p.AfterCase, p.AfterTrial, p.Limit)
}
