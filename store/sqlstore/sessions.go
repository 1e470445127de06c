package sqlstore

import (
	"context"

	"svc/internal/platform/derrors"
	"svc/store"
)

// ListLiveSessions returns the running sandbox sessions; see store.Sessions.
// A workspace's live sessions are few (the sandbox caps bound them), and
// the scan reads the workspace's runs through runs_workspace_created_idx.
func (o ops) ListLiveSessions(ctx context.Context, workspace string) (_ []store.Run, err error) {
	defer derrors.Wrap(&err, "%s.ListLiveSessions(ctx, %q)", o.kind, workspace)
	if err := checkText(workspace); err != nil {
		return nil, err
	}
	args := sqlArgs{}
	q := `SELECT ` + runColumns + ` FROM runs WHERE kind = 'sandbox' AND status = 'running' AND parent_scorecard_id = ''`
	if workspace != "" {
		q += ` AND workspace = ` + args.add(workspace)
	}
	q += ` ORDER BY created_at, id`
	return queryList(ctx, o, scanRun, q, args...)
}
