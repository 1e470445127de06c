package sqlstore

import (
	"context"

	"svc/internal/platform/derrors"
	"svc/store"
)

// ListLiveSessions returns the running sandbox sessions; see store.Sessions.
// The query's kind and status match runs_live_sessions_idx's predicate
// (migration 0021), so it reads only the running sandbox runs (few: the
// sandbox caps bound them), in its order, not the workspace's every run.
// (A session is never a scorecard's child: no parent_scorecard_id test,
// which made SQLite read runs_toplevel_status_idx whole instead.)
func (o ops) ListLiveSessions(ctx context.Context, workspace string) (_ []store.Run, err error) {
	defer derrors.Wrap(&err, "%s.ListLiveSessions(ctx, %q)", o.kind, workspace)
	if err := checkText(workspace); err != nil {
		return nil, err
	}
	args := sqlArgs{}
	q := `SELECT ` + runColumns + ` FROM runs WHERE kind = 'sandbox' AND status = 'running'`
	if workspace != "" {
		q += ` AND workspace = ` + args.add(workspace)
	}
	q += ` ORDER BY created_at, id`
	return queryList(ctx, o, scanRun, q, args...)
}
