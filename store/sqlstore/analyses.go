package sqlstore

import (
	"context"
	"database/sql"
	"errors"

	"svc/internal/platform/derrors"
	"svc/store"
)

// analysisColumns are the columns of an analysis, read by scanAnalysis.
const analysisColumns = `workspace, scorecard_id, revision, digest, doc, created_at`

// scanAnalysis reads a row of analysisColumns.
func scanAnalysis(r rowScanner) (store.Analysis, error) {
	var a store.Analysis
	var created dbTime
	if err := r.Scan(&a.Workspace, &a.ScorecardID, &a.Revision, &a.Digest, &a.Doc, &created); err != nil {
		return store.Analysis{}, err
	}
	a.CreatedAt = created.Time
	return a, nil
}

// PutAnalysis stores a frozen analysis bundle once; see store.Analyses.
func (o ops) PutAnalysis(ctx context.Context, a store.Analysis) (_ store.Analysis, _ bool, err error) {
	defer derrors.Wrap(&err, "%s.PutAnalysis(ctx, %q, %q, %d)", o.kind, a.Workspace, a.ScorecardID, a.Revision)
	if err := required("workspace", a.Workspace, "scorecard id", a.ScorecardID, "digest", a.Digest); err != nil {
		return store.Analysis{}, false, err
	}
	if err := checkText(a.Workspace, a.ScorecardID); err != nil {
		return store.Analysis{}, false, err
	}
	if a.Revision < 1 {
		return store.Analysis{}, false, derrors.Invalidf("revision %d is not 1 or more", a.Revision)
	}
	if !digestRE.MatchString(a.Digest) {
		return store.Analysis{}, false, derrors.Invalidf("digest %q is not sha256:<64 lowercase hex>", a.Digest)
	}
	if err := checkJSON("doc", a.Doc); err != nil {
		return store.Analysis{}, false, err
	}
	// The caller may reuse its buffer; the returned record must not change with it.
	a.Doc = append([]byte(nil), a.Doc...)
	a.CreatedAt = normTime(a.CreatedAt)
	ok, err := o.insertOnce(ctx,
		`INSERT INTO analyses (`+analysisColumns+`) VALUES ($1, $2, $3, $4, $5, $6)
		ON CONFLICT (workspace, scorecard_id, revision) DO NOTHING`,
		a.Workspace, a.ScorecardID, a.Revision, a.Digest, string(a.Doc), o.d.TimeArg(a.CreatedAt))
	if err != nil {
		return store.Analysis{}, false, err
	}
	if ok {
		return a, true, nil
	}
	// Frozen before: a retried activity writing the same bundle is harmless,
	// another bundle is never written over the frozen one.
	stored, err := o.getAnalysis(ctx, o.w, a.Workspace, a.ScorecardID, a.Revision)
	if err != nil {
		return store.Analysis{}, false, err
	}
	if stored.Digest != a.Digest {
		return store.Analysis{}, false, derrors.Conflictf("revision %d of scorecard %q is frozen with digest %s, not %s",
			a.Revision, a.ScorecardID, stored.Digest, a.Digest)
	}
	return stored, false, nil
}

// getAnalysis reads one analysis through q, the highest revision when
// revision is 0, or ErrNotFound. PutAnalysis reads through the writer,
// which has just met the row.
func (o ops) getAnalysis(ctx context.Context, q querier, workspace, scorecardID string, revision int) (store.Analysis, error) {
	query := `SELECT ` + analysisColumns + ` FROM analyses WHERE workspace = $1 AND scorecard_id = $2`
	args := sqlArgs{workspace, scorecardID}
	if revision > 0 {
		query += ` AND revision = ` + args.add(revision)
	}
	query += ` ORDER BY revision DESC LIMIT 1`
	a, err := scanAnalysis(q.QueryRowContext(ctx, query, args...))
	if errors.Is(err, sql.ErrNoRows) {
		if revision == 0 {
			return store.Analysis{}, derrors.NotFoundf("analysis of scorecard %q of workspace %q", scorecardID, workspace)
		}
		return store.Analysis{}, derrors.NotFoundf("analysis of revision %d of scorecard %q of workspace %q", revision, scorecardID, workspace)
	}
	if err != nil {
		return store.Analysis{}, o.mapErr(err)
	}
	return a, nil
}

// GetAnalysis returns one frozen bundle with its doc; see store.Analyses.
func (o ops) GetAnalysis(ctx context.Context, workspace, scorecardID string, revision int) (_ store.Analysis, err error) {
	defer derrors.Wrap(&err, "%s.GetAnalysis(ctx, %q, %q, %d)", o.kind, workspace, scorecardID, revision)
	if err := checkText(workspace, scorecardID); err != nil {
		return store.Analysis{}, err
	}
	if revision < 0 {
		return store.Analysis{}, derrors.Invalidf("revision %d is negative", revision)
	}
	return o.getAnalysis(ctx, o.r, workspace, scorecardID, revision)
}
