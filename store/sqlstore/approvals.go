package sqlstore

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"time"

	"svc/internal/platform/derrors"
	"svc/store"
)

// defaultApprovalLimit is ListApprovals' page size when the caller sets none.
const defaultApprovalLimit = 100

// checkApproval refuses what the table cannot hold.
func checkApproval(a store.Approval) error {
	if err := required("workspace", a.Workspace, "approval id", a.ID, "status", a.Status); err != nil {
		return err
	}
	if err := checkText(a.Workspace, a.ID, a.Status, a.Agent.ID, a.Agent.Conversation); err != nil {
		return err
	}
	if len(a.Body) > 0 {
		if err := checkJSON("approval body", a.Body); err != nil {
			return err
		}
	}
	return nil
}

// CreateApproval inserts a once per id; see store.Approvals.
func (o ops) CreateApproval(ctx context.Context, a store.Approval) (_ store.Approval, created bool, err error) {
	defer derrors.Wrap(&err, "%s.CreateApproval(ctx, %q, %q)", o.kind, a.Workspace, a.ID)
	if err := checkApproval(a); err != nil {
		return store.Approval{}, false, err
	}
	a.CreatedAt = normTime(a.CreatedAt)
	a.ExpiresAt = a.ExpiresAt.UTC().Truncate(time.Microsecond)
	doc, err := json.Marshal(a)
	if err != nil {
		return store.Approval{}, false, err
	}
	err = o.atomic(ctx, func(o ops) error {
		ok, err := o.insertOnce(ctx, `INSERT INTO approvals (workspace, id, status, agent_id, conversation, created_at, rev, doc)
			VALUES ($1, $2, $3, $4, $5, $6, 1, $7) ON CONFLICT (workspace, id) DO NOTHING`,
			a.Workspace, a.ID, a.Status, a.Agent.ID, a.Agent.Conversation, o.d.TimeArg(a.CreatedAt), string(doc))
		if err != nil {
			return err
		}
		if !ok {
			prev, _, err := o.getApproval(ctx, o.w, a.Workspace, a.ID)
			a = prev
			return err
		}
		created = true
		return nil
	})
	if err != nil {
		return store.Approval{}, false, err
	}
	return a, created, nil
}

func (o ops) getApproval(ctx context.Context, q querier, workspace, id string) (store.Approval, int64, error) {
	var doc []byte
	var rev int64
	err := q.QueryRowContext(ctx, `SELECT rev, doc FROM approvals WHERE workspace = $1 AND id = $2`, workspace, id).Scan(&rev, &doc)
	if err = o.found(err, "approval %q", id); err != nil {
		return store.Approval{}, 0, err
	}
	a, err := decodeApproval(doc)
	return a, rev, err
}

func decodeApproval(doc []byte) (store.Approval, error) {
	var a store.Approval
	if err := json.Unmarshal(doc, &a); err != nil {
		return store.Approval{}, err
	}
	return a, nil
}

// GetApproval returns one approval; see store.Approvals.
func (o ops) GetApproval(ctx context.Context, workspace, id string) (_ store.Approval, err error) {
	defer derrors.Wrap(&err, "%s.GetApproval(ctx, %q, %q)", o.kind, workspace, id)
	if err := checkText(workspace, id); err != nil {
		return store.Approval{}, err
	}
	a, _, err := o.getApproval(ctx, o.r, workspace, id)
	return a, err
}

// ListApprovals lists approvals newest first; see store.Approvals.
func (o ops) ListApprovals(ctx context.Context, f store.ApprovalFilter) (_ []store.Approval, err error) {
	defer derrors.Wrap(&err, "%s.ListApprovals(ctx, %q, %q)", o.kind, f.Workspace, f.Status)
	if err := checkText(f.Workspace, f.Status, f.AgentID, f.Conversation); err != nil {
		return nil, err
	}
	limit := f.Limit
	if limit <= 0 {
		limit = defaultApprovalLimit
	}
	where := []string{"workspace = $1"}
	args := []any{f.Workspace}
	add := func(cond string, v any) {
		args = append(args, v)
		where = append(where, strings.ReplaceAll(cond, "?", "$"+strconv.Itoa(len(args))))
	}
	if f.Status != "" {
		add("status = ?", f.Status)
	}
	if f.AgentID != "" {
		add("agent_id = ?", f.AgentID)
		add("conversation = ?", f.Conversation)
	}
	args = append(args, limit)
	q := `SELECT doc FROM approvals WHERE ` + strings.Join(where, " AND ") + ` ORDER BY created_at DESC, id DESC LIMIT $` + strconv.Itoa(len(args))
	list, err := queryList(ctx, o, func(r rowScanner) (store.Approval, error) {
		var doc []byte
		if err := r.Scan(&doc); err != nil {
			return store.Approval{}, err
		}
		return decodeApproval(doc)
	}, q, args...)
	if err != nil || !f.Halted {
		return list, err
	}
	out := list[:0]
	for _, a := range list {
		if a.Halted {
			out = append(out, a)
		}
	}
	return out, nil
}

// UpdateApproval is the read-change-write of one approval; see store.Approvals.
func (o ops) UpdateApproval(ctx context.Context, workspace, id string, change func(*store.Approval) error) (_ store.Approval, err error) {
	defer derrors.Wrap(&err, "%s.UpdateApproval(ctx, %q, %q)", o.kind, workspace, id)
	if err := checkText(workspace, id); err != nil {
		return store.Approval{}, err
	}
	var out store.Approval
	err = o.atomic(ctx, func(o ops) error {
		a, rev, err := o.getApproval(ctx, o.w, workspace, id)
		if err != nil {
			return err
		}
		out = a
		next := a
		if err := change(&next); err != nil {
			return err
		}
		// The key is the record's; change may not move it.
		next.Workspace, next.ID, next.CreatedAt = a.Workspace, a.ID, a.CreatedAt
		if err := checkApproval(next); err != nil {
			return err
		}
		doc, err := json.Marshal(next)
		if err != nil {
			return err
		}
		res, err := o.w.ExecContext(ctx, `UPDATE approvals SET status = $1, rev = rev + 1, doc = $2 WHERE workspace = $3 AND id = $4 AND rev = $5`,
			next.Status, string(doc), workspace, id, rev)
		if err != nil {
			return o.mapErr(err)
		}
		if n, err := res.RowsAffected(); err != nil {
			return o.mapErr(err)
		} else if n == 0 {
			return derrors.Conflictf("approval %q changed meanwhile; try again", id)
		}
		out = next
		return nil
	})
	return out, err
}

// GetApprovalPolicies returns a workspace's policies; see store.Approvals.
func (o ops) GetApprovalPolicies(ctx context.Context, workspace string) (_ store.ApprovalPolicies, err error) {
	defer derrors.Wrap(&err, "%s.GetApprovalPolicies(ctx, %q)", o.kind, workspace)
	if err := checkText(workspace); err != nil {
		return store.ApprovalPolicies{}, err
	}
	var doc []byte
	var updated dbTime
	err = o.r.QueryRowContext(ctx, `SELECT updated_at, doc FROM approval_policies WHERE workspace = $1`, workspace).Scan(&updated, &doc)
	if err = o.found(err, "approval policies of workspace %q", workspace); err != nil {
		return store.ApprovalPolicies{}, err
	}
	var p store.ApprovalPolicies
	if err := json.Unmarshal(doc, &p); err != nil {
		return store.ApprovalPolicies{}, err
	}
	p.Workspace, p.UpdatedAt = workspace, updated.Time
	return p, nil
}

// PutApprovalPolicies replaces a workspace's policies; see store.Approvals.
func (o ops) PutApprovalPolicies(ctx context.Context, p store.ApprovalPolicies) (_ store.ApprovalPolicies, err error) {
	defer derrors.Wrap(&err, "%s.PutApprovalPolicies(ctx, %q)", o.kind, p.Workspace)
	if err := required("workspace", p.Workspace); err != nil {
		return store.ApprovalPolicies{}, err
	}
	if err := checkText(p.Workspace, p.UpdatedBy); err != nil {
		return store.ApprovalPolicies{}, err
	}
	for _, r := range p.Policies {
		if err := checkText(append([]string{r.Name, r.Team, r.Expiry, r.OnExpiry}, r.Tools...)...); err != nil {
			return store.ApprovalPolicies{}, err
		}
	}
	if p.Policies == nil {
		p.Policies = []store.ApprovalPolicy{}
	}
	p.UpdatedAt = normTime(p.UpdatedAt)
	doc, err := json.Marshal(p)
	if err != nil {
		return store.ApprovalPolicies{}, err
	}
	if _, err := o.w.ExecContext(ctx, `INSERT INTO approval_policies (workspace, updated_at, doc) VALUES ($1, $2, $3)
		ON CONFLICT (workspace) DO UPDATE SET updated_at = excluded.updated_at, doc = excluded.doc`,
		p.Workspace, o.d.TimeArg(p.UpdatedAt), string(doc)); err != nil {
		return store.ApprovalPolicies{}, o.mapErr(err)
	}
	return p, nil
}
