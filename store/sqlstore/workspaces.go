package sqlstore

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"svc/internal/platform/derrors"
	"svc/store"
)

// CreateWorkspace inserts w; see store.Workspaces.
func (o ops) CreateWorkspace(ctx context.Context, w store.Workspace) (_ store.Workspace, err error) {
	defer derrors.Wrap(&err, "%s.CreateWorkspace(ctx, %q)", o.kind, w.ID)
	if w.ID == "" {
		return store.Workspace{}, derrors.Invalidf("workspace id is required")
	}
	if err := checkText(w.ID, w.Name, w.CreatedBy); err != nil {
		return store.Workspace{}, err
	}
	w.CreatedAt = normTime(w.CreatedAt)
	doc, err := json.Marshal(w)
	if err != nil {
		return store.Workspace{}, err
	}
	// ON CONFLICT DO NOTHING rather than a failing INSERT: on PostgreSQL an
	// error aborts the whole transaction, and a caller inside Transact must be
	// able to see ErrConflict and carry on, as it can on SQLite.
	res, err := o.w.ExecContext(ctx,
		`INSERT INTO workspaces (id, doc, created_at) VALUES ($1, $2, $3) ON CONFLICT (id) DO NOTHING`,
		w.ID, string(doc), o.d.TimeArg(w.CreatedAt))
	if err != nil {
		return store.Workspace{}, o.mapErr(err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return store.Workspace{}, err
	}
	if n == 0 {
		return store.Workspace{}, derrors.Conflictf("workspace %q already exists", w.ID)
	}
	return w, nil
}

// GetWorkspace returns one workspace; see store.Workspaces.
func (o ops) GetWorkspace(ctx context.Context, id string) (_ store.Workspace, err error) {
	defer derrors.Wrap(&err, "%s.GetWorkspace(ctx, %q)", o.kind, id)
	if err := checkText(id); err != nil {
		return store.Workspace{}, err
	}
	var doc []byte
	err = o.r.QueryRowContext(ctx, `SELECT doc FROM workspaces WHERE id = $1`, id).Scan(&doc)
	if err = o.found(err, "workspace %q", id); err != nil {
		return store.Workspace{}, err
	}
	var w store.Workspace
	if err := json.Unmarshal(doc, &w); err != nil {
		return store.Workspace{}, fmt.Errorf("decode workspace: %w", err)
	}
	return w, nil
}

// listChunk bounds the ids of one query: SQLite allows 32766 parameters
// and PostgreSQL 65535; a few hundred keep each statement small.
const listChunk = 500

// ListWorkspaces returns workspaces ordered by id; see store.Workspaces.
func (o ops) ListWorkspaces(ctx context.Context, ids []string) (_ []store.Workspace, err error) {
	defer derrors.Wrap(&err, "%s.ListWorkspaces(ctx, %d ids)", o.kind, len(ids))
	if ids == nil {
		return o.listWorkspaces(ctx, `SELECT doc FROM workspaces ORDER BY id`)
	}
	if err := checkText(ids...); err != nil {
		return nil, err
	}
	ids = slices.Compact(slices.Sorted(slices.Values(ids)))
	ws := []store.Workspace{}
	for chunk := range slices.Chunk(ids, listChunk) {
		// An IN list rather than = ANY($1): SQLite has no arrays.
		ph := make([]string, len(chunk))
		args := make([]any, len(chunk))
		for i, id := range chunk {
			ph[i] = fmt.Sprintf("$%d", i+1)
			args[i] = id
		}
		got, err := o.listWorkspaces(ctx, `SELECT doc FROM workspaces WHERE id IN (`+strings.Join(ph, ", ")+`) ORDER BY id`, args...)
		if err != nil {
			return nil, err
		}
		// Chunks cover ascending id ranges, so appending keeps the order.
		ws = append(ws, got...)
	}
	return ws, nil
}

func (o ops) listWorkspaces(ctx context.Context, query string, args ...any) ([]store.Workspace, error) {
	rows, err := o.r.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, o.mapErr(err)
	}
	defer rows.Close()
	ws := []store.Workspace{}
	for rows.Next() {
		var doc []byte
		if err := rows.Scan(&doc); err != nil {
			return nil, err
		}
		var w store.Workspace
		if err := json.Unmarshal(doc, &w); err != nil {
			return nil, fmt.Errorf("decode workspace: %w", err)
		}
		ws = append(ws, w)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	return ws, nil
}
