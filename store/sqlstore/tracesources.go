package sqlstore

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"svc/internal/platform/derrors"
	"svc/store"
)

// sourceDoc is the stored document of a trace source: its configuration
// and who made and changed it.
type sourceDoc struct {
	Config    json.RawMessage `json:"config"`
	CreatedBy string          `json:"createdBy,omitempty"`
	UpdatedBy string          `json:"updatedBy,omitempty"`
	CreatedAt time.Time       `json:"createdAt"`
}

// PutTraceSource inserts or replaces a source; see store.TraceSources.
func (o ops) PutTraceSource(ctx context.Context, s store.TraceSource) (_ store.TraceSource, err error) {
	defer derrors.Wrap(&err, "%s.PutTraceSource(ctx, %q, %q)", o.kind, s.Workspace, s.Name)
	if err := required("workspace", s.Workspace, "trace source name", s.Name); err != nil {
		return store.TraceSource{}, err
	}
	if err := checkText(s.Workspace, s.Name, s.CreatedBy, s.UpdatedBy); err != nil {
		return store.TraceSource{}, err
	}
	if err := checkJSON("trace source", s.Doc); err != nil {
		return store.TraceSource{}, err
	}
	s.UpdatedAt = normTime(s.UpdatedAt)
	err = o.atomic(ctx, func(o ops) error {
		created := s.UpdatedAt
		createdBy := s.CreatedBy
		if prev, err := o.getTraceSource(ctx, o.w, s.Workspace, s.Name); err == nil {
			created, createdBy = prev.CreatedAt, prev.CreatedBy
		} else if !errors.Is(err, derrors.ErrNotFound) {
			return err
		}
		doc, err := json.Marshal(sourceDoc{Config: s.Doc, CreatedBy: createdBy, UpdatedBy: s.UpdatedBy, CreatedAt: created})
		if err != nil {
			return err
		}
		if _, err := o.w.ExecContext(ctx, `INSERT INTO trace_sources (workspace, name, updated_at, doc) VALUES ($1, $2, $3, $4)
			ON CONFLICT (workspace, name) DO UPDATE SET updated_at = excluded.updated_at, doc = excluded.doc`,
			s.Workspace, s.Name, o.d.TimeArg(s.UpdatedAt), string(doc)); err != nil {
			return o.mapErr(err)
		}
		s.CreatedAt, s.CreatedBy = created, createdBy
		return nil
	})
	if err != nil {
		return store.TraceSource{}, err
	}
	return s, nil
}

func (o ops) getTraceSource(ctx context.Context, q querier, workspace, name string) (store.TraceSource, error) {
	var doc []byte
	var updated dbTime
	err := q.QueryRowContext(ctx, `SELECT updated_at, doc FROM trace_sources WHERE workspace = $1 AND name = $2`, workspace, name).Scan(&updated, &doc)
	if err = o.found(err, "trace source %q", name); err != nil {
		return store.TraceSource{}, err
	}
	return decodeSource(workspace, name, updated, doc)
}

func decodeSource(workspace, name string, updated dbTime, doc []byte) (store.TraceSource, error) {
	var d sourceDoc
	if err := json.Unmarshal(doc, &d); err != nil {
		return store.TraceSource{}, err
	}
	return store.TraceSource{Workspace: workspace, Name: name, Doc: d.Config, CreatedBy: d.CreatedBy, UpdatedBy: d.UpdatedBy,
		CreatedAt: d.CreatedAt, UpdatedAt: updated.Time}, nil
}

// GetTraceSource returns one source; see store.TraceSources.
func (o ops) GetTraceSource(ctx context.Context, workspace, name string) (_ store.TraceSource, err error) {
	defer derrors.Wrap(&err, "%s.GetTraceSource(ctx, %q, %q)", o.kind, workspace, name)
	if err := checkText(workspace, name); err != nil {
		return store.TraceSource{}, err
	}
	return o.getTraceSource(ctx, o.r, workspace, name)
}

// ListTraceSources lists a workspace's sources; see store.TraceSources.
func (o ops) ListTraceSources(ctx context.Context, workspace string) (_ []store.TraceSource, err error) {
	defer derrors.Wrap(&err, "%s.ListTraceSources(ctx, %q)", o.kind, workspace)
	if err := checkText(workspace); err != nil {
		return nil, err
	}
	return queryList(ctx, o, func(r rowScanner) (store.TraceSource, error) {
		var name string
		var updated dbTime
		var doc []byte
		if err := r.Scan(&name, &updated, &doc); err != nil {
			return store.TraceSource{}, err
		}
		return decodeSource(workspace, name, updated, doc)
	}, `SELECT name, updated_at, doc FROM trace_sources WHERE workspace = $1 ORDER BY name`, workspace)
}

// DeleteTraceSource deletes a source; see store.TraceSources.
func (o ops) DeleteTraceSource(ctx context.Context, workspace, name string) (err error) {
	defer derrors.Wrap(&err, "%s.DeleteTraceSource(ctx, %q, %q)", o.kind, workspace, name)
	if err := checkText(workspace, name); err != nil {
		return err
	}
	res, err := o.w.ExecContext(ctx, `DELETE FROM trace_sources WHERE workspace = $1 AND name = $2`, workspace, name)
	if err != nil {
		return o.mapErr(err)
	}
	if n, err := res.RowsAffected(); err != nil {
		return o.mapErr(err)
	} else if n == 0 {
		return derrors.NotFoundf("trace source %q", name)
	}
	return nil
}

// PutTracePulls inserts pulls, keeping rows written before; see store.TraceSources.
func (o ops) PutTracePulls(ctx context.Context, ps []store.TracePull) (err error) {
	defer derrors.Wrap(&err, "%s.PutTracePulls(ctx, %d pulls)", o.kind, len(ps))
	for _, p := range ps {
		if err := required("workspace", p.Workspace, "run id", p.RunID); err != nil {
			return err
		}
		if err := checkText(p.Workspace, p.RunID, p.ScorecardID); err != nil {
			return err
		}
		if err := checkJSON("trace pull", p.Doc); err != nil {
			return err
		}
	}
	return o.atomic(ctx, func(o ops) error {
		for _, p := range ps {
			if _, err := o.w.ExecContext(ctx, `INSERT INTO trace_pulls (workspace, run_id, scorecard_id, created_at, doc) VALUES ($1, $2, $3, $4, $5)
				ON CONFLICT (workspace, run_id) DO NOTHING`,
				p.Workspace, p.RunID, p.ScorecardID, o.d.TimeArg(normTime(p.CreatedAt)), string(p.Doc)); err != nil {
				return o.mapErr(err)
			}
		}
		return nil
	})
}

// GetTracePull returns a run's pull; see store.TraceSources.
func (o ops) GetTracePull(ctx context.Context, workspace, runID string) (_ store.TracePull, err error) {
	defer derrors.Wrap(&err, "%s.GetTracePull(ctx, %q, %q)", o.kind, workspace, runID)
	if err := checkText(workspace, runID); err != nil {
		return store.TracePull{}, err
	}
	p := store.TracePull{Workspace: workspace, RunID: runID}
	var created dbTime
	var doc []byte
	err = o.r.QueryRowContext(ctx, `SELECT scorecard_id, created_at, doc FROM trace_pulls WHERE workspace = $1 AND run_id = $2`,
		workspace, runID).Scan(&p.ScorecardID, &created, &doc)
	if err = o.found(err, "trace pull of run %q", runID); err != nil {
		return store.TracePull{}, err
	}
	p.CreatedAt, p.Doc = created.Time, json.RawMessage(doc)
	return p, nil
}
