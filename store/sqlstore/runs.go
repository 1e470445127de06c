package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"svc/internal/domain/eval"
	"svc/internal/platform/derrors"
	"svc/store"
)

// Page sizes when a filter sets none.
const (
	defaultRunLimit    = 50
	defaultRunLogLimit = 1000
)

// runColumns are the columns scanRun reads, in its order.
const runColumns = `workspace, id, kind, status, audience, created_by, parent_scorecard_id, case_id, trial, canonical, outcome, created_at, updated_at, doc`

// sqlArgs collects the arguments of a query built piece by piece.
type sqlArgs []any

// add appends v and returns its placeholder.
func (a *sqlArgs) add(v any) string {
	*a = append(*a, v)
	return fmt.Sprintf("$%d", len(*a))
}

// audienceIn is the condition that a row's audience is one viewer may
// read: workspace-visible (the empty audience), viewer's own, one of teams (private team
// audiences, eval.TeamAudience), or, with anyTeam, every team's. The
// common case, no team, keeps the literal the indexes were planned with.
func audienceIn(args *sqlArgs, viewer string, teams []string, anyTeam bool) string {
	if eval.IsTeamAudience(viewer) {
		viewer = "" // a subject spelled like a team reads no team's
	}
	anyTeam = anyTeam || slices.Contains(teams, eval.AnyTeamAudience)
	c := `(audience = '' OR audience = ` + args.add(viewer)
	if anyTeam {
		c += ` OR audience LIKE 'team:%'`
	}
	for _, t := range teams {
		if !anyTeam {
			c += ` OR audience = ` + args.add(t)
		}
	}
	return c + `)`
}

// olderThan is the cursor condition (timeCol, idCol) < (t, id), spelled
// out rather than as a row-value comparison so that both databases
// range-scan the (workspace, timeCol, idCol) index on timeCol.
func olderThan(timeCol, idCol, t, id string) string {
	return fmt.Sprintf(` AND %[1]s <= %[3]s AND (%[1]s < %[3]s OR %[2]s < %[4]s)`, timeCol, idCol, t, id)
}

// checkPage validates a list's cursor and limit and returns the limit to use.
func checkPage(beforeTime time.Time, beforeID string, limit, def int) (int, error) {
	if beforeTime.IsZero() && beforeID != "" {
		return 0, derrors.Invalidf("cursor id %q has no time", beforeID)
	}
	if limit < 0 {
		return 0, derrors.Invalidf("limit %d is negative", limit)
	}
	if limit == 0 {
		limit = def
	}
	return limit, nil
}

// prepareRun validates r and returns it as it will be stored, Doc copied so
// that the caller's slice is not shared. Times are left to the caller.
func prepareRun(r store.Run) (store.Run, error) {
	if err := required("workspace", r.Workspace, "run id", r.ID, "run kind", r.Kind, "run status", r.Status); err != nil {
		return store.Run{}, err
	}
	if err := checkText(r.Workspace, r.ID, r.Kind, r.Status, r.Audience, r.CreatedBy, r.ParentScorecardID, r.CaseID, r.Outcome); err != nil {
		return store.Run{}, err
	}
	if r.Trial < 0 {
		return store.Run{}, derrors.Invalidf("trial %d is negative", r.Trial)
	}
	if err := checkJSON("run doc", r.Doc); err != nil {
		return store.Run{}, err
	}
	r.Doc = append([]byte(nil), r.Doc...)
	return r, nil
}

// scanRun reads a row of runColumns.
func scanRun(r rowScanner) (store.Run, error) {
	var run store.Run
	var created, updated dbTime
	if err := r.Scan(&run.Workspace, &run.ID, &run.Kind, &run.Status, &run.Audience, &run.CreatedBy,
		&run.ParentScorecardID, &run.CaseID, &run.Trial, &run.Canonical, &run.Outcome, &created, &updated, &run.Doc); err != nil {
		return store.Run{}, err
	}
	run.CreatedAt, run.UpdatedAt = created.Time, updated.Time
	return run, nil
}

// CreateRun inserts r; see store.Runs.
func (o ops) CreateRun(ctx context.Context, r store.Run) (_ store.Run, err error) {
	defer derrors.Wrap(&err, "%s.CreateRun(ctx, %q, %q)", o.kind, r.Workspace, r.ID)
	r, err = prepareRun(r)
	if err != nil {
		return store.Run{}, err
	}
	r.CreatedAt = normTime(r.CreatedAt)
	if r.UpdatedAt.IsZero() {
		r.UpdatedAt = r.CreatedAt
	}
	r.UpdatedAt = normTime(r.UpdatedAt)
	// No conflict target: DO NOTHING also covers runs_canonical_key, so a
	// second canonical run for a slot is ErrConflict without aborting a
	// PostgreSQL transaction.
	ok, err := o.insertOnce(ctx,
		`INSERT INTO runs (`+runColumns+`) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)
		ON CONFLICT DO NOTHING`,
		r.Workspace, r.ID, r.Kind, r.Status, r.Audience, r.CreatedBy, r.ParentScorecardID, r.CaseID, r.Trial, r.Canonical, r.Outcome,
		o.d.TimeArg(r.CreatedAt), o.d.TimeArg(r.UpdatedAt), string(r.Doc))
	if err != nil {
		return store.Run{}, err
	}
	if ok {
		return r, nil
	}
	// Which key was taken only shapes the message.
	var one int
	err = o.w.QueryRowContext(ctx, `SELECT 1 FROM runs WHERE workspace = $1 AND id = $2`, r.Workspace, r.ID).Scan(&one)
	switch {
	case err == nil:
		return store.Run{}, derrors.Conflictf("run %q already exists", r.ID)
	case !errors.Is(err, sql.ErrNoRows):
		return store.Run{}, o.mapErr(err)
	}
	return store.Run{}, derrors.Conflictf("scorecard %q already has a canonical run for case %q trial %d", r.ParentScorecardID, r.CaseID, r.Trial)
}

// PutRun replaces an existing run's columns and doc; see store.Runs.
// CreatedAt is the stored one: it is the list order and the cursor, so a
// run never moves in a listing.
func (o ops) PutRun(ctx context.Context, r store.Run) (_ store.Run, err error) {
	defer derrors.Wrap(&err, "%s.PutRun(ctx, %q, %q)", o.kind, r.Workspace, r.ID)
	r, err = prepareRun(r)
	if err != nil {
		return store.Run{}, err
	}
	r.UpdatedAt = normTime(r.UpdatedAt)
	// Most puts (a run's finish) leave its slot and canonical flag as
	// stored: such an update cannot break runs_canonical_key, so it is
	// one statement, conditioned on exactly that.
	var created dbTime
	err = o.w.QueryRowContext(ctx,
		`UPDATE runs SET kind = $3, status = $4, audience = $5, created_by = $6, updated_at = $7, outcome = $8, doc = $9
		WHERE workspace = $1 AND id = $2
		AND parent_scorecard_id = $10 AND case_id = $11 AND trial = $12 AND canonical = $13
		RETURNING created_at`,
		r.Workspace, r.ID, r.Kind, r.Status, r.Audience, r.CreatedBy, o.d.TimeArg(r.UpdatedAt), r.Outcome, string(r.Doc),
		r.ParentScorecardID, r.CaseID, r.Trial, r.Canonical).Scan(&created)
	switch {
	case err == nil:
		r.CreatedAt = created.Time
		return r, nil
	case !errors.Is(err, sql.ErrNoRows):
		return store.Run{}, o.mapErr(err)
	}
	err = o.atomic(ctx, func(o ops) error {
		// Look for a canonical rival first: an UPDATE that broke
		// runs_canonical_key would abort a PostgreSQL transaction.
		if r.Canonical && r.ParentScorecardID != "" {
			var other string
			err := o.w.QueryRowContext(ctx,
				`SELECT id FROM runs WHERE workspace = $1 AND parent_scorecard_id = $2 AND case_id = $3 AND trial = $4 AND canonical AND id <> $5`,
				r.Workspace, r.ParentScorecardID, r.CaseID, r.Trial, r.ID).Scan(&other)
			switch {
			case err == nil:
				return derrors.Conflictf("run %q is already canonical for scorecard %q case %q trial %d", other, r.ParentScorecardID, r.CaseID, r.Trial)
			case !errors.Is(err, sql.ErrNoRows):
				return o.mapErr(err)
			}
		}
		err := o.w.QueryRowContext(ctx,
			`UPDATE runs SET kind = $3, status = $4, audience = $5, created_by = $6, parent_scorecard_id = $7, case_id = $8,
			trial = $9, canonical = $10, outcome = $11, updated_at = $12, doc = $13
			WHERE workspace = $1 AND id = $2
			RETURNING created_at`,
			r.Workspace, r.ID, r.Kind, r.Status, r.Audience, r.CreatedBy, r.ParentScorecardID, r.CaseID,
			r.Trial, r.Canonical, r.Outcome, o.d.TimeArg(r.UpdatedAt), string(r.Doc)).Scan(&created)
		if err = o.found(err, "run %q of workspace %q", r.ID, r.Workspace); err != nil {
			return err
		}
		r.CreatedAt = created.Time
		return nil
	})
	if err != nil {
		return store.Run{}, err
	}
	return r, nil
}

// GetRun returns one run with its doc; see store.Runs.
func (o ops) GetRun(ctx context.Context, workspace, id string) (_ store.Run, err error) {
	defer derrors.Wrap(&err, "%s.GetRun(ctx, %q, %q)", o.kind, workspace, id)
	if err := checkText(workspace, id); err != nil {
		return store.Run{}, err
	}
	r, err := scanRun(o.r.QueryRowContext(ctx, `SELECT `+runColumns+` FROM runs WHERE workspace = $1 AND id = $2`, workspace, id))
	if err = o.found(err, "run %q of workspace %q", id, workspace); err != nil {
		return store.Run{}, err
	}
	return r, nil
}

// ListRuns returns runs newest first; see store.Runs.
func (o ops) ListRuns(ctx context.Context, f store.RunFilter) (_ []store.Run, err error) {
	defer derrors.Wrap(&err, "%s.ListRuns(ctx, %q, viewer %q, scorecard %q)", o.kind, f.Workspace, f.Viewer, f.ScorecardID)
	if err := required("workspace", f.Workspace, "viewer", f.Viewer); err != nil {
		return nil, err
	}
	if err := checkText(f.Workspace, f.Viewer, f.ScorecardID, f.BeforeID); err != nil {
		return nil, err
	}
	limit, err := checkPage(f.BeforeTime, f.BeforeID, f.Limit, defaultRunLimit)
	if err != nil {
		return nil, err
	}
	if err := checkText(f.Teams...); err != nil {
		return nil, err
	}
	args := sqlArgs{f.Workspace}
	q := `SELECT ` + runColumns + ` FROM runs WHERE workspace = $1 AND ` + audienceIn(&args, f.Viewer, f.Teams, f.AnyTeam)
	switch {
	case f.ScorecardID != "":
		// The literal repeats the predicate of the partial
		// runs_scorecard_created_idx, so that both planners can use it.
		q += ` AND parent_scorecard_id = ` + args.add(f.ScorecardID) + ` AND parent_scorecard_id <> ''`
	case !f.IncludeChildren:
		// A literal, so that both planners match runs_toplevel_created_idx.
		q += ` AND parent_scorecard_id = ''`
	}
	if !f.BeforeTime.IsZero() {
		q += olderThan("created_at", "id", args.add(o.d.TimeArg(normTime(f.BeforeTime))), args.add(f.BeforeID))
	}
	q += ` ORDER BY created_at DESC, id DESC LIMIT ` + args.add(limit)
	return queryList(ctx, o, scanRun, q, args...)
}

// childRunIDsPerQuery bounds the ids of one ListChildRuns query, well under
// both databases' limits on placeholders.
const childRunIDsPerQuery = 500

// checkBatch validates the workspace and id of a batch.
func checkBatch(workspace, scorecardID string) error {
	if err := required("workspace", workspace, "scorecard id", scorecardID); err != nil {
		return err
	}
	return checkText(workspace, scorecardID)
}

// The child-run queries below repeat parent_scorecard_id <> '', the
// predicate of the partial runs_scorecard_updated_idx, so that both
// planners can prove it applies (a placeholder cannot); the index holds
// every column they read but doc, so they read no row.

// ChildRunsUpdatedAt returns the latest update of a batch's child runs;
// see store.Runs.
func (o ops) ChildRunsUpdatedAt(ctx context.Context, workspace, scorecardID string) (_ time.Time, err error) {
	defer derrors.Wrap(&err, "%s.ChildRunsUpdatedAt(ctx, %q, %q)", o.kind, workspace, scorecardID)
	if err := checkBatch(workspace, scorecardID); err != nil {
		return time.Time{}, err
	}
	// One probe of the index's last entry for the batch.
	var last dbTime
	if err := o.r.QueryRowContext(ctx,
		`SELECT max(updated_at) FROM runs WHERE workspace = $1 AND parent_scorecard_id = $2 AND parent_scorecard_id <> ''`,
		workspace, scorecardID).Scan(&last); err != nil {
		return time.Time{}, o.mapErr(err)
	}
	return last.Time, nil
}

// ListChildRunStates returns the state of a batch's child runs updated
// since; see store.Runs.
func (o ops) ListChildRunStates(ctx context.Context, workspace, scorecardID string, since time.Time) (_ []store.ChildRunState, err error) {
	defer derrors.Wrap(&err, "%s.ListChildRunStates(ctx, %q, %q, %s)", o.kind, workspace, scorecardID, since.UTC().Format(time.RFC3339Nano))
	if err := checkBatch(workspace, scorecardID); err != nil {
		return nil, err
	}
	// Not normTime, which makes a zero time now: truncating the bound to
	// the store's microseconds keeps every run at or after it.
	return queryList(ctx, o, func(r rowScanner) (store.ChildRunState, error) {
		var s store.ChildRunState
		var created, updated dbTime
		if err := r.Scan(&s.ID, &s.Status, &s.Outcome, &s.Audience, &s.Canonical, &created, &updated); err != nil {
			return store.ChildRunState{}, err
		}
		s.CreatedAt, s.UpdatedAt = created.Time, updated.Time
		return s, nil
	}, `SELECT id, status, outcome, audience, canonical, created_at, updated_at FROM runs
	WHERE workspace = $1 AND parent_scorecard_id = $2 AND parent_scorecard_id <> '' AND updated_at >= $3
	ORDER BY updated_at, id`,
		workspace, scorecardID, o.d.TimeArg(since.UTC().Truncate(time.Microsecond)))
}

// ListChildRuns returns a batch's child runs by id; see store.Runs.
func (o ops) ListChildRuns(ctx context.Context, workspace, scorecardID string, ids []string) (_ []store.Run, err error) {
	defer derrors.Wrap(&err, "%s.ListChildRuns(ctx, %q, %q, %d ids)", o.kind, workspace, scorecardID, len(ids))
	if err := checkBatch(workspace, scorecardID); err != nil {
		return nil, err
	}
	if err := checkText(ids...); err != nil {
		return nil, err
	}
	if ids == nil {
		return queryList(ctx, o, scanRun, `SELECT `+runColumns+` FROM runs WHERE workspace = $1 AND parent_scorecard_id = $2 ORDER BY id`,
			workspace, scorecardID)
	}
	out := []store.Run{}
	for i := 0; i < len(ids); i += childRunIDsPerQuery {
		// By primary key alone, the batch checked here: with the batch in
		// the WHERE clause SQLite's planner walks the batch's children by
		// an index on it and reads every row to test its id.
		args := sqlArgs{workspace}
		q := `SELECT ` + runColumns + ` FROM runs WHERE workspace = $1 AND id IN (`
		for j, id := range ids[i:min(i+childRunIDsPerQuery, len(ids))] {
			if j > 0 {
				q += `, `
			}
			q += args.add(id)
		}
		rows, err := queryList(ctx, o, scanRun, q+`)`, args...)
		if err != nil {
			return nil, err
		}
		for _, r := range rows {
			if r.ParentScorecardID == scorecardID {
				out = append(out, r)
			}
		}
	}
	slices.SortFunc(out, func(a, b store.Run) int { return strings.Compare(a.ID, b.ID) })
	return out, nil
}

// Child run pages: the size when a page asks for none, and the largest.
const (
	defaultChildRunPage = 500
	maxChildRunPage     = 5000
)

// ListChildRunPage returns one keyset page of a batch's child runs; see
// store.Runs.
func (o ops) ListChildRunPage(ctx context.Context, workspace, scorecardID string, p store.ChildRunPage) (_ []store.Run, err error) {
	defer derrors.Wrap(&err, "%s.ListChildRunPage(ctx, %q, %q, after %q, limit %d)", o.kind, workspace, scorecardID, p.After, p.Limit)
	if err := checkBatch(workspace, scorecardID); err != nil {
		return nil, err
	}
	if err := checkText(p.After); err != nil {
		return nil, err
	}
	limit, err := checkPage(time.Time{}, "", p.Limit, defaultChildRunPage)
	if err != nil {
		return nil, err
	}
	if limit > maxChildRunPage {
		return nil, derrors.Invalidf("limit %d is above %d", limit, maxChildRunPage)
	}
	// parent_scorecard_id <> '' is the predicate of the partial
	// runs_scorecard_id_idx (workspace, parent_scorecard_id, id): both
	// planners range-scan it from the cursor and stop at the limit, so a
	// page reads its own rows only.
	return queryList(ctx, o, scanRun, `SELECT `+runColumns+` FROM runs
	WHERE workspace = $1 AND parent_scorecard_id = $2 AND parent_scorecard_id <> '' AND id > $3
	ORDER BY id LIMIT $4`,
		workspace, scorecardID, p.After, limit)
}

// CountRuns counts a workspace's top-level runs created since; see store.Runs.
func (o ops) CountRuns(ctx context.Context, workspace string, since time.Time) (_ int, err error) {
	defer derrors.Wrap(&err, "%s.CountRuns(ctx, %q, %s)", o.kind, workspace, since.Format(time.RFC3339))
	if err := required("workspace", workspace); err != nil {
		return 0, err
	}
	if err := checkText(workspace); err != nil {
		return 0, err
	}
	// Not normTime: a zero since counts every run, not the runs since now.
	var n int
	if err := o.r.QueryRowContext(ctx,
		`SELECT count(*) FROM runs WHERE workspace = $1 AND parent_scorecard_id = '' AND created_at >= $2`,
		workspace, o.d.TimeArg(since.UTC().Truncate(time.Microsecond))).Scan(&n); err != nil {
		return 0, o.mapErr(err)
	}
	return n, nil
}

// AppendRunLogs stores log chunks, skipping those already stored; see store.RunLogs.
func (o ops) AppendRunLogs(ctx context.Context, chunks []store.RunLog) (err error) {
	defer derrors.Wrap(&err, "%s.AppendRunLogs(ctx, %d chunks)", o.kind, len(chunks))
	rows := make([][]any, len(chunks))
	for i, c := range chunks {
		if err := required("workspace", c.Workspace, "run id", c.RunID, "stream", c.Stream); err != nil {
			return fmt.Errorf("chunk %d: %w", i, err)
		}
		// Log data is text on both databases: the writer makes process
		// output valid UTF-8 without NUL before it gets here.
		if err := checkText(c.Workspace, c.RunID, c.Stream, c.Data); err != nil {
			return fmt.Errorf("chunk %d: %w", i, err)
		}
		if c.Seq < 1 {
			return derrors.Invalidf("chunk %d: seq %d is not positive", i, c.Seq)
		}
		rows[i] = []any{c.Workspace, c.RunID, c.Seq, c.Stream, c.Data, o.d.TimeArg(normTime(c.At))}
	}
	if len(rows) == 0 {
		return nil
	}
	// A few hundred rows per statement; several statements run in one
	// transaction so that a flush lands whole or not at all.
	const perStatement = 500
	return o.atomicIf(ctx, len(rows) > perStatement, func(o ops) error {
		for i := 0; i < len(rows); i += perStatement {
			batch := rows[i:min(i+perStatement, len(rows))]
			var args sqlArgs
			q := `INSERT INTO run_logs (workspace, run_id, seq, stream, data, at) VALUES `
			for j, r := range batch {
				if j > 0 {
					q += `, `
				}
				q += `(` + args.add(r[0]) + `, ` + args.add(r[1]) + `, ` + args.add(r[2]) + `, ` +
					args.add(r[3]) + `, ` + args.add(r[4]) + `, ` + args.add(r[5]) + `)`
			}
			q += ` ON CONFLICT (workspace, run_id, seq) DO NOTHING`
			if _, err := o.w.ExecContext(ctx, q, args...); err != nil {
				return o.mapErr(err)
			}
		}
		return nil
	})
}

// atomicIf runs fn in a transaction (as atomic does) when needed, else
// directly: one statement is atomic by itself.
func (o ops) atomicIf(ctx context.Context, needed bool, fn func(o ops) error) error {
	if !needed {
		return fn(o)
	}
	return o.atomic(ctx, fn)
}

// ListRunLogs returns a run's chunks after afterSeq in seq order; see store.RunLogs.
func (o ops) ListRunLogs(ctx context.Context, workspace, runID string, afterSeq int64, limit int) (_ []store.RunLog, err error) {
	defer derrors.Wrap(&err, "%s.ListRunLogs(ctx, %q, %q, after %d, limit %d)", o.kind, workspace, runID, afterSeq, limit)
	if err := checkText(workspace, runID); err != nil {
		return nil, err
	}
	limit, err = checkPage(time.Time{}, "", limit, defaultRunLogLimit)
	if err != nil {
		return nil, err
	}
	return queryList(ctx, o, func(r rowScanner) (store.RunLog, error) {
		l := store.RunLog{Workspace: workspace, RunID: runID}
		var at dbTime
		if err := r.Scan(&l.Seq, &l.Stream, &l.Data, &at); err != nil {
			return store.RunLog{}, err
		}
		l.At = at.Time
		return l, nil
	}, `SELECT seq, stream, data, at FROM run_logs WHERE workspace = $1 AND run_id = $2 AND seq > $3 ORDER BY seq LIMIT $4`,
		workspace, runID, afterSeq, limit)
}

// DeleteRunLogs drops every chunk of a run; see store.RunLogs.
func (o ops) DeleteRunLogs(ctx context.Context, workspace, runID string) (err error) {
	defer derrors.Wrap(&err, "%s.DeleteRunLogs(ctx, %q, %q)", o.kind, workspace, runID)
	if err := checkText(workspace, runID); err != nil {
		return err
	}
	if _, err := o.w.ExecContext(ctx, `DELETE FROM run_logs WHERE workspace = $1 AND run_id = $2`, workspace, runID); err != nil {
		return o.mapErr(err)
	}
	return nil
}

// rowsPerStatement bounds the rows of one multi-row statement of the batch
// methods: 14 placeholders a run stays well under both databases' limits.
const rowsPerStatement = 500

// runKey is a run's primary key.
type runKey struct{ workspace, id string }

// slotKey is a scorecard slot of the canonical rule.
type slotKey struct {
	workspace, scorecard, caseID string
	trial                        int
}

// slotOf returns r's canonical slot, and whether the rule applies to r.
func slotOf(r store.Run) (slotKey, bool) {
	return slotKey{r.Workspace, r.ParentScorecardID, r.CaseID, r.Trial}, r.ParentScorecardID != ""
}

// hasDuplicateIDs reports whether two of rs share a key.
func hasDuplicateIDs(rs []store.Run) bool {
	seen := make(map[runKey]bool, len(rs))
	for _, r := range rs {
		k := runKey{r.Workspace, r.ID}
		if seen[k] {
			return true
		}
		seen[k] = true
	}
	return false
}

// CreateRuns inserts runs, skipping those CreateRun would refuse as a
// conflict; see store.Runs.
func (o ops) CreateRuns(ctx context.Context, rs []store.Run) (_ []store.Run, _ []bool, err error) {
	defer derrors.Wrap(&err, "%s.CreateRuns(ctx, %d runs)", o.kind, len(rs))
	out := make([]store.Run, len(rs))
	for i, r := range rs {
		r, err := prepareRun(r)
		if err != nil {
			return nil, nil, fmt.Errorf("run %d: %w", i, err)
		}
		r.CreatedAt = normTime(r.CreatedAt)
		if r.UpdatedAt.IsZero() {
			r.UpdatedAt = r.CreatedAt
		}
		r.UpdatedAt = normTime(r.UpdatedAt)
		out[i] = r
	}
	created := make([]bool, len(rs))
	if len(rs) == 0 {
		return out, created, nil
	}
	if hasDuplicateIDs(out) {
		// RETURNING names the inserted keys, not which of two rows with
		// one key went in: one statement each.
		err := o.atomic(ctx, func(o ops) error {
			for i, r := range out {
				_, err := o.CreateRun(ctx, r)
				switch {
				case errors.Is(err, derrors.ErrConflict):
				case err != nil:
					return err
				default:
					created[i] = true
				}
			}
			return nil
		})
		if err != nil {
			return nil, nil, err
		}
		return out, created, nil
	}
	err = o.atomicIf(ctx, len(out) > rowsPerStatement, func(o ops) error {
		clear(created)
		at := map[runKey]int{}
		for i := 0; i < len(out); i += rowsPerStatement {
			batch := out[i:min(i+rowsPerStatement, len(out))]
			var args sqlArgs
			var q strings.Builder
			q.WriteString(`INSERT INTO runs (` + runColumns + `) VALUES `)
			for j, r := range batch {
				at[runKey{r.Workspace, r.ID}] = i + j
				if j > 0 {
					q.WriteString(`, `)
				}
				q.WriteString(`(` + strings.Join([]string{
					args.add(r.Workspace), args.add(r.ID), args.add(r.Kind), args.add(r.Status), args.add(r.Audience),
					args.add(r.CreatedBy), args.add(r.ParentScorecardID), args.add(r.CaseID), args.add(r.Trial),
					args.add(r.Canonical), args.add(r.Outcome), args.add(o.d.TimeArg(r.CreatedAt)),
					args.add(o.d.TimeArg(r.UpdatedAt)), args.add(string(r.Doc)),
				}, `, `) + `)`)
			}
			// No conflict target, as in CreateRun: a taken ID or canonical
			// slot skips the row without aborting a PostgreSQL transaction.
			q.WriteString(` ON CONFLICT DO NOTHING RETURNING workspace, id`)
			keys, err := queryWriter(ctx, o, func(r rowScanner) (runKey, error) {
				var k runKey
				err := r.Scan(&k.workspace, &k.id)
				return k, err
			}, q.String(), args...)
			if err != nil {
				return err
			}
			for _, k := range keys {
				if j, ok := at[k]; ok {
					created[j] = true
				}
			}
		}
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	return out, created, nil
}

// GetRuns returns a workspace's runs by id; see store.Runs.
func (o ops) GetRuns(ctx context.Context, workspace string, ids []string) (_ []store.Run, err error) {
	defer derrors.Wrap(&err, "%s.GetRuns(ctx, %q, %d ids)", o.kind, workspace, len(ids))
	if err := checkText(workspace); err != nil {
		return nil, err
	}
	if err := checkText(ids...); err != nil {
		return nil, err
	}
	byID := make(map[string]store.Run, len(ids))
	for i := 0; i < len(ids); i += childRunIDsPerQuery {
		args := sqlArgs{workspace}
		var q strings.Builder
		q.WriteString(`SELECT ` + runColumns + ` FROM runs WHERE workspace = $1 AND id IN (`)
		for j, id := range ids[i:min(i+childRunIDsPerQuery, len(ids))] {
			if j > 0 {
				q.WriteString(`, `)
			}
			q.WriteString(args.add(id))
		}
		q.WriteString(`)`)
		rows, err := queryList(ctx, o, scanRun, q.String(), args...)
		if err != nil {
			return nil, err
		}
		for _, r := range rows {
			byID[r.ID] = r
		}
	}
	out := make([]store.Run, 0, len(byID))
	for _, id := range ids {
		if r, ok := byID[id]; ok {
			out = append(out, r)
			delete(byID, id)
		}
	}
	return out, nil
}

// PutRuns replaces existing runs as PutRun does each; see store.Runs.
//
// On PostgreSQL, when no two rows of rs share an ID, one UPDATE ... FROM
// (VALUES ...) first writes every row that leaves its run's slot and
// canonical flag as stored (a finish does), which cannot break the
// canonical rule in any order. The other rows, when no two share a
// canonical slot, take two statements whatever their number: one SELECT
// of the rows and of their slots' canonical runs, which decides every
// error PutRun would return, and one UPDATE. Otherwise, and on SQLite (in
// process, where a statement costs no round trip), it is PutRun of each
// row in one transaction, whose order then decides the canonical rule
// exactly.
func (o ops) PutRuns(ctx context.Context, rs []store.Run) (_ []store.Run, err error) {
	defer derrors.Wrap(&err, "%s.PutRuns(ctx, %d runs)", o.kind, len(rs))
	out := make([]store.Run, len(rs))
	for i, r := range rs {
		r, err := prepareRun(r)
		if err != nil {
			return nil, fmt.Errorf("run %d: %w", i, err)
		}
		r.UpdatedAt = normTime(r.UpdatedAt)
		out[i] = r
	}
	if len(out) == 0 {
		return out, nil
	}
	err = o.atomic(ctx, func(o ops) error {
		rest := out
		var restAt []int // the index in out of each row of rest
		if o.d.Name() == "postgres" && len(out) > 1 && !hasDuplicateIDs(out) {
			// First every row that leaves its run's slot and canonical
			// flag as stored (a finish): no such update can break
			// runs_canonical_key, whatever the order.
			stamps, err := o.updateRunsFrom(ctx, out, unmovedRun...)
			if err != nil {
				return err
			}
			done := make(map[runKey]time.Time, len(stamps))
			for _, s := range stamps {
				done[s.k] = s.created.Time
			}
			rest = nil
			for i, r := range out {
				if t, ok := done[runKey{r.Workspace, r.ID}]; ok {
					out[i].CreatedAt = t
					continue
				}
				rest, restAt = append(rest, r), append(restAt, i)
			}
			if len(rest) == 0 {
				return nil
			}
			if len(rest) > 1 {
				ok, err := o.putRunsTogether(ctx, rest)
				if err != nil {
					return err
				}
				if ok {
					for j, i := range restAt {
						out[i] = rest[j]
					}
					return nil
				}
			}
		}
		for j, r := range rest {
			stored, err := o.PutRun(ctx, r)
			if err != nil {
				return err
			}
			if restAt != nil {
				out[restAt[j]] = stored
			} else {
				out[j] = stored
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// putRunsTogether is PutRuns' two statements on PostgreSQL; see PutRuns.
// It reports false, having written nothing, when rows of rs share an ID
// or a slot (or a row takes the slot of another row of rs as stored), for
// the caller to put them one by one.
func (o ops) putRunsTogether(ctx context.Context, rs []store.Run) (bool, error) {
	if hasDuplicateIDs(rs) {
		return false, nil
	}
	inBatch := map[runKey]bool{}
	slots := map[slotKey]bool{}
	canonical := map[slotKey]string{} // the slots rows of rs take, to the ID taking each
	byWorkspace := map[string][]int{}
	for i, r := range rs {
		inBatch[runKey{r.Workspace, r.ID}] = true
		if s, ok := slotOf(r); ok {
			if slots[s] {
				return false, nil
			}
			slots[s] = true
			if r.Canonical {
				canonical[s] = r.ID
			}
		}
		byWorkspace[r.Workspace] = append(byWorkspace[r.Workspace], i)
	}
	type seen struct {
		id        string
		slot      slotKey
		canonical bool
	}
	exists := map[runKey]bool{}
	rivals := map[slotKey]string{} // a stored canonical run outside rs in a slot a row takes
	for ws, idx := range byWorkspace {
		args := sqlArgs{ws}
		var ids, parents, cases []string
		seenP, seenC := map[string]bool{}, map[string]bool{}
		for _, i := range idx {
			r := rs[i]
			ids = append(ids, args.add(r.ID))
			if r.Canonical && r.ParentScorecardID != "" {
				if !seenP[r.ParentScorecardID] {
					seenP[r.ParentScorecardID] = true
					parents = append(parents, args.add(r.ParentScorecardID))
				}
				if !seenC[r.CaseID] {
					seenC[r.CaseID] = true
					cases = append(cases, args.add(r.CaseID))
				}
			}
		}
		q := `SELECT id, parent_scorecard_id, case_id, trial, canonical FROM runs WHERE workspace = $1 AND (id IN (` + strings.Join(ids, `, `) + `)`
		if len(parents) > 0 {
			// A superset of the slots (every trial of their cases), read
			// from runs_canonical_key, whose predicate is spelled out.
			q += ` OR (canonical AND parent_scorecard_id <> '' AND parent_scorecard_id IN (` + strings.Join(parents, `, `) +
				`) AND case_id IN (` + strings.Join(cases, `, `) + `))`
		}
		q += `)`
		rows, err := queryWriter(ctx, o, func(r rowScanner) (seen, error) {
			var s seen
			s.slot.workspace = ws
			err := r.Scan(&s.id, &s.slot.scorecard, &s.slot.caseID, &s.slot.trial, &s.canonical)
			return s, err
		}, q, args...)
		if err != nil {
			return false, err
		}
		for _, s := range rows {
			k := runKey{ws, s.id}
			if inBatch[k] {
				exists[k] = true
			}
			taker, ok := canonical[s.slot]
			switch {
			case !s.canonical || s.slot.scorecard == "" || !ok || taker == s.id:
			case inBatch[k]:
				// A row of rs leaves the slot another row takes: their
				// order decides.
				return false, nil
			default:
				rivals[s.slot] = s.id
			}
		}
	}
	// The first row PutRun would refuse decides the error.
	for _, r := range rs {
		if r.Canonical && r.ParentScorecardID != "" {
			s, _ := slotOf(r)
			if other, ok := rivals[s]; ok {
				return false, derrors.Conflictf("run %q is already canonical for scorecard %q case %q trial %d", other, r.ParentScorecardID, r.CaseID, r.Trial)
			}
		}
		if !exists[runKey{r.Workspace, r.ID}] {
			return false, derrors.NotFoundf("run %q of workspace %q", r.ID, r.Workspace)
		}
	}
	stamps, err := o.updateRunsFrom(ctx, rs)
	if err != nil {
		return false, err
	}
	createdAt := make(map[runKey]time.Time, len(stamps))
	for _, s := range stamps {
		createdAt[s.k] = s.created.Time
	}
	for i, r := range rs {
		t, ok := createdAt[runKey{r.Workspace, r.ID}]
		if !ok {
			return false, derrors.NotFoundf("run %q of workspace %q", r.ID, r.Workspace)
		}
		rs[i].CreatedAt = t
	}
	return true, nil
}

// updateRunsFrom updates the runs of rs in one UPDATE ... FROM (VALUES
// ...), each row where its stored run matches the row on the columns
// listed in same (besides workspace and id), and returns the key and
// creation time of each run it updated. rs must not repeat an ID.
func (o ops) updateRunsFrom(ctx context.Context, rs []store.Run, same ...string) ([]runStamp, error) {
	var args sqlArgs
	var q strings.Builder
	q.WriteString(`UPDATE runs SET kind = v.kind, status = v.status, audience = v.audience, created_by = v.created_by,
	parent_scorecard_id = v.parent_scorecard_id, case_id = v.case_id, trial = v.trial, canonical = v.canonical,
	outcome = v.outcome, updated_at = v.updated_at, doc = v.doc
	FROM (VALUES `)
	for i, r := range rs {
		if i > 0 {
			q.WriteString(`, `)
		}
		// Typed placeholders: outside an INSERT, VALUES does not take its
		// types from the target columns.
		q.WriteString(`(` + args.add(r.Workspace) + `::text, ` + args.add(r.ID) + `::text, ` + args.add(r.Kind) + `::text, ` +
			args.add(r.Status) + `::text, ` + args.add(r.Audience) + `::text, ` + args.add(r.CreatedBy) + `::text, ` +
			args.add(r.ParentScorecardID) + `::text, ` + args.add(r.CaseID) + `::text, ` + args.add(r.Trial) + `::integer, ` +
			args.add(r.Canonical) + `::boolean, ` + args.add(r.Outcome) + `::text, ` + args.add(o.d.TimeArg(r.UpdatedAt)) + `::timestamptz, ` +
			args.add(string(r.Doc)) + `::jsonb)`)
	}
	q.WriteString(`) AS v (workspace, id, kind, status, audience, created_by, parent_scorecard_id, case_id, trial, canonical, outcome, updated_at, doc)
	WHERE runs.workspace = v.workspace AND runs.id = v.id`)
	for _, c := range same {
		if c != "" {
			q.WriteString(` AND runs.` + c + ` = v.` + c)
		}
	}
	q.WriteString(`
	RETURNING runs.workspace, runs.id, runs.created_at`)
	return queryWriter(ctx, o, func(r rowScanner) (runStamp, error) {
		var s runStamp
		err := r.Scan(&s.k.workspace, &s.k.id, &s.created)
		return s, err
	}, q.String(), args...)
}

// unmovedRun are the columns a put that moves no run between slots, nor
// in or out of its slot's canonical place, leaves as stored.
var unmovedRun = []string{"parent_scorecard_id", "case_id", "trial", "canonical"}

// runStamp is a run updateRunsFrom updated.
type runStamp struct {
	k       runKey
	created dbTime
}

// queryWriter is queryList through the writer: for a statement that
// writes and returns rows, or a read a write of the same call depends on.
func queryWriter[T any](ctx context.Context, o ops, scan func(rowScanner) (T, error), query string, args ...any) ([]T, error) {
	o.r = o.w
	return queryList(ctx, o, scan, query, args...)
}

// CountBatchRuns sums the progress totals of a workspace's batches
// created since; see store.Runs. Read from the documents: a batch's total
// never changes after its submit, and batches are few beside runs.
func (o ops) CountBatchRuns(ctx context.Context, workspace string, since time.Time) (_ int, err error) {
	defer derrors.Wrap(&err, "%s.CountBatchRuns(ctx, %q, %s)", o.kind, workspace, since.Format(time.RFC3339))
	if err := required("workspace", workspace); err != nil {
		return 0, err
	}
	if err := checkText(workspace); err != nil {
		return 0, err
	}
	var n int64
	if err := o.r.QueryRowContext(ctx,
		`SELECT CAST(COALESCE(sum(`+o.d.JSONNumberSQL("doc", "progress", "total")+`), 0) AS bigint) FROM scorecards WHERE workspace = $1 AND created_at >= $2`,
		workspace, o.d.TimeArg(since.UTC().Truncate(time.Microsecond))).Scan(&n); err != nil {
		return 0, o.mapErr(err)
	}
	return int(n), nil
}

// WorkspaceUsage sums what a workspace spent since; see store.Runs. The
// cost is read from the runs' documents (usage.costUsd) rather than from a
// column of its own, so that no write of a run pays for it: the read is an
// admin's, over one window of one workspace.
func (o ops) WorkspaceUsage(ctx context.Context, workspace string, since time.Time) (_ store.Usage, err error) {
	var u store.Usage
	if u.Runs, err = o.CountRuns(ctx, workspace, since); err != nil {
		return store.Usage{}, err
	}
	if u.BatchRuns, err = o.CountBatchRuns(ctx, workspace, since); err != nil {
		return store.Usage{}, err
	}
	defer derrors.Wrap(&err, "%s.WorkspaceUsage(ctx, %q, %s)", o.kind, workspace, since.Format(time.RFC3339))
	var cost sql.NullFloat64
	if err := o.r.QueryRowContext(ctx,
		`SELECT sum(`+o.d.JSONNumberSQL("doc", "usage", "costUsd")+`) FROM runs WHERE workspace = $1 AND created_at >= $2`,
		workspace, o.d.TimeArg(since.UTC().Truncate(time.Microsecond))).Scan(&cost); err != nil {
		return store.Usage{}, o.mapErr(err)
	}
	u.CostUSD = cost.Float64
	return u, nil
}

// CountQueued counts a workspace's unfinished work; see store.Runs.
func (o ops) CountQueued(ctx context.Context, workspace string) (_ int, err error) {
	defer derrors.Wrap(&err, "%s.CountQueued(ctx, %q)", o.kind, workspace)
	if err := required("workspace", workspace); err != nil {
		return 0, err
	}
	if err := checkText(workspace); err != nil {
		return 0, err
	}
	var batched, runs int64
	total, done := o.d.JSONNumberSQL("doc", "progress", "total"), o.d.JSONNumberSQL("doc", "progress", "done")
	if err := o.r.QueryRowContext(ctx,
		`SELECT CAST(COALESCE(sum(COALESCE(`+total+`, 0) - COALESCE(`+done+`, 0)), 0) AS bigint)
		FROM scorecards WHERE workspace = $1 AND status IN ('queued', 'running')`, workspace).Scan(&batched); err != nil {
		return 0, o.mapErr(err)
	}
	if err := o.r.QueryRowContext(ctx,
		`SELECT count(*) FROM runs WHERE workspace = $1 AND parent_scorecard_id = '' AND status IN ('queued', 'running')`,
		workspace).Scan(&runs); err != nil {
		return 0, o.mapErr(err)
	}
	return int(batched + runs), nil
}
