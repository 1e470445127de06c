package sqlstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"time"

	"svc/derrors"
	"svc/store"
)

// defaultPendingGroupLimit is ListPendingGroups' page size when none is given.
const defaultPendingGroupLimit = 100

// spansPerStatement is how many spans one INSERT of AddPendingSpans holds
// on SQLite, which resolves each $N placeholder by a linear search among
// the statement's: a statement of rowsPerStatement spans (3,500
// placeholders) spent most of its time naming them. PostgreSQL takes
// rowsPerStatement, saving round trips.
const spansPerStatement = 64

// spanBatch is AddPendingSpans' rows per INSERT on o's database.
func (o ops) spanBatch() int {
	if o.d.Name() == "postgres" {
		return rowsPerStatement
	}
	return spansPerStatement
}

// defaultTrajectoryDeleteLimit is DeleteTrajectoriesBefore's batch when none is given.
const defaultTrajectoryDeleteLimit = 1000

// AddPendingSpans stores spans once each; see store.TraceIngest.
func (o ops) AddPendingSpans(ctx context.Context, spans []store.PendingSpan) (added int, err error) {
	defer derrors.Wrap(&err, "%s.AddPendingSpans(ctx, %d spans)", o.kind, len(spans))
	spans = slices.Clone(spans)
	for i, s := range spans {
		if err := required("workspace", s.Workspace, "group", s.Group, "key", s.Key); err != nil {
			return 0, err
		}
		if err := checkText(s.Workspace, s.Group, s.Key); err != nil {
			return 0, err
		}
		if err := checkJSON("event", s.Event); err != nil {
			return 0, err
		}
		spans[i].ReceivedAt = normTime(s.ReceivedAt)
	}
	if len(spans) == 0 {
		return 0, nil
	}
	if o.d.Name() == "postgres" {
		return o.addPendingSpansArrays(ctx, spans)
	}
	err = o.atomic(ctx, func(o ops) error {
		added = 0
		per := o.spanBatch()
		for i := 0; i < len(spans); i += per {
			batch := spans[i:min(i+per, len(spans))]
			var args sqlArgs
			var q strings.Builder
			q.WriteString(`INSERT INTO pending_spans (workspace, grp, span_key, external, start_unix_nano, received_at, event) VALUES `)
			for j, s := range batch {
				if j > 0 {
					q.WriteString(`, `)
				}
				q.WriteString(`(` + strings.Join([]string{
					args.add(s.Workspace), args.add(s.Group), args.add(s.Key), args.add(s.External),
					args.add(s.StartUnixNano), args.add(o.d.TimeArg(s.ReceivedAt)), args.add(string(s.Event)),
				}, `, `) + `)`)
			}
			q.WriteString(` ON CONFLICT (workspace, grp, span_key) DO NOTHING`)
			res, err := o.w.ExecContext(ctx, q.String(), args...)
			if err != nil {
				return o.mapErr(err)
			}
			n, err := res.RowsAffected()
			if err != nil {
				return err
			}
			added += int(n)
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	return added, nil
}

// addPendingSpansArrays is AddPendingSpans on PostgreSQL: one INSERT ...
// SELECT FROM unnest of seven arrays, whatever the number of spans, so
// the statement is parsed and planned once per connection rather than
// once per batch size, and carries seven parameters rather than seven a
// span.
func (o ops) addPendingSpansArrays(ctx context.Context, spans []store.PendingSpan) (int, error) {
	n := len(spans)
	ws, grp, key, event := make([]string, n), make([]string, n), make([]string, n), make([]string, n)
	ext, start, at := make([]bool, n), make([]int64, n), make([]time.Time, n)
	for i, s := range spans {
		ws[i], grp[i], key[i], event[i] = s.Workspace, s.Group, s.Key, string(s.Event)
		ext[i], start[i], at[i] = s.External, s.StartUnixNano, s.ReceivedAt
	}
	res, err := o.w.ExecContext(ctx, `INSERT INTO pending_spans (workspace, grp, span_key, external, start_unix_nano, received_at, event)
		SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::boolean[], $5::bigint[], $6::timestamptz[], $7::json[])
		ON CONFLICT (workspace, grp, span_key) DO NOTHING`, ws, grp, key, ext, start, at, event)
	if err != nil {
		return 0, o.mapErr(err)
	}
	added, err := res.RowsAffected()
	return int(added), err
}

// ListPendingSpans returns a group's spans in start order; see store.TraceIngest.
func (o ops) ListPendingSpans(ctx context.Context, workspace, group string) (_ []store.PendingSpan, err error) {
	defer derrors.Wrap(&err, "%s.ListPendingSpans(ctx, %q, %q)", o.kind, workspace, group)
	if err := checkText(workspace, group); err != nil {
		return nil, err
	}
	return queryWriter(ctx, o, func(r rowScanner) (store.PendingSpan, error) {
		var s store.PendingSpan
		var at dbTime
		var event []byte
		if err := r.Scan(&s.Workspace, &s.Group, &s.Key, &s.External, &s.StartUnixNano, &at, &event); err != nil {
			return s, err
		}
		s.ReceivedAt, s.Event = at.Time, json.RawMessage(event)
		return s, nil
	}, `SELECT workspace, grp, span_key, external, start_unix_nano, received_at, event FROM pending_spans
		WHERE workspace = $1 AND grp = $2 ORDER BY start_unix_nano, span_key`, workspace, group)
}

// DeletePendingSpans drops a group's spans; see store.TraceIngest.
func (o ops) DeletePendingSpans(ctx context.Context, workspace, group string) (err error) {
	defer derrors.Wrap(&err, "%s.DeletePendingSpans(ctx, %q, %q)", o.kind, workspace, group)
	if err := checkText(workspace, group); err != nil {
		return err
	}
	_, err = o.w.ExecContext(ctx, `DELETE FROM pending_spans WHERE workspace = $1 AND grp = $2`, workspace, group)
	return o.mapErr(err)
}

// ListPendingGroups returns idle groups, oldest first; see store.TraceIngest.
func (o ops) ListPendingGroups(ctx context.Context, idleSince time.Time, limit int) (_ []store.PendingGroup, err error) {
	defer derrors.Wrap(&err, "%s.ListPendingGroups(ctx, %v, %d)", o.kind, idleSince, limit)
	if limit < 0 {
		return nil, derrors.Invalidf("limit %d is negative", limit)
	}
	if limit == 0 {
		limit = defaultPendingGroupLimit
	}
	var args sqlArgs
	q := `SELECT workspace, grp, MAX(CASE WHEN external THEN 1 ELSE 0 END), COUNT(*), MAX(received_at) FROM pending_spans
		GROUP BY workspace, grp`
	if !idleSince.IsZero() {
		q += ` HAVING MAX(received_at) < ` + args.add(o.d.TimeArg(normTime(idleSince)))
	}
	q += ` ORDER BY MAX(received_at), workspace, grp LIMIT ` + args.add(limit)
	return queryWriter(ctx, o, func(r rowScanner) (store.PendingGroup, error) {
		var g store.PendingGroup
		var external int
		var last dbTime
		if err := r.Scan(&g.Workspace, &g.Group, &external, &g.Spans, &last); err != nil {
			return g, err
		}
		g.External, g.LastReceived = external == 1, last.Time
		return g, nil
	}, q, args...)
}

// hourWindow checks that window is the start of an hour.
func hourWindow(window time.Time) (time.Time, error) {
	w := window.UTC()
	if w.IsZero() || !w.Equal(w.Truncate(time.Hour)) {
		return time.Time{}, derrors.Invalidf("usage window %v is not the start of an hour", window)
	}
	return w, nil
}

// AddTraceUsage adds to an hour's count; see store.TraceIngest.
func (o ops) AddTraceUsage(ctx context.Context, workspace string, window time.Time, n int64) (_ int64, err error) {
	defer derrors.Wrap(&err, "%s.AddTraceUsage(ctx, %q, %v, %d)", o.kind, workspace, window, n)
	if err := required("workspace", workspace); err != nil {
		return 0, err
	}
	if err := checkText(workspace); err != nil {
		return 0, err
	}
	if n < 0 {
		return 0, derrors.Invalidf("usage %d is negative", n)
	}
	w, err := hourWindow(window)
	if err != nil {
		return 0, err
	}
	var total int64
	err = o.w.QueryRowContext(ctx, `INSERT INTO trace_usage (workspace, window_start, events) VALUES ($1, $2, $3)
		ON CONFLICT (workspace, window_start) DO UPDATE SET events = trace_usage.events + excluded.events
		RETURNING events`, workspace, o.d.TimeArg(w), n).Scan(&total)
	if err != nil {
		return 0, o.mapErr(err)
	}
	return total, nil
}

// GetTraceUsage reads an hour's count; see store.TraceIngest.
func (o ops) GetTraceUsage(ctx context.Context, workspace string, window time.Time) (_ int64, err error) {
	defer derrors.Wrap(&err, "%s.GetTraceUsage(ctx, %q, %v)", o.kind, workspace, window)
	if err := checkText(workspace); err != nil {
		return 0, err
	}
	w, err := hourWindow(window)
	if err != nil {
		return 0, err
	}
	var total int64
	err = o.w.QueryRowContext(ctx, `SELECT events FROM trace_usage WHERE workspace = $1 AND window_start = $2`,
		workspace, o.d.TimeArg(w)).Scan(&total)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, nil
	}
	if err != nil {
		return 0, o.mapErr(err)
	}
	return total, nil
}

// GetTraceSettings reads a workspace's settings; see store.TraceIngest.
func (o ops) GetTraceSettings(ctx context.Context, workspace string) (_ store.TraceSettings, err error) {
	defer derrors.Wrap(&err, "%s.GetTraceSettings(ctx, %q)", o.kind, workspace)
	if err := checkText(workspace); err != nil {
		return store.TraceSettings{}, err
	}
	var doc []byte
	err = o.r.QueryRowContext(ctx, `SELECT doc FROM trace_settings WHERE workspace = $1`, workspace).Scan(&doc)
	if errors.Is(err, sql.ErrNoRows) {
		return store.TraceSettings{}, derrors.NotFoundf("trace settings of workspace %q", workspace)
	}
	if err != nil {
		return store.TraceSettings{}, o.mapErr(err)
	}
	var s store.TraceSettings
	if err := json.Unmarshal(doc, &s); err != nil {
		return store.TraceSettings{}, err
	}
	s.Workspace = workspace
	return s, nil
}

// PutTraceSettings writes a workspace's settings; see store.TraceIngest.
func (o ops) PutTraceSettings(ctx context.Context, s store.TraceSettings) (_ store.TraceSettings, err error) {
	defer derrors.Wrap(&err, "%s.PutTraceSettings(ctx, %q)", o.kind, s.Workspace)
	if err := required("workspace", s.Workspace); err != nil {
		return store.TraceSettings{}, err
	}
	if err := checkText(s.Workspace, s.UpdatedBy); err != nil {
		return store.TraceSettings{}, err
	}
	if len(s.Thresholds) > 0 {
		if err := checkJSON("thresholds", s.Thresholds); err != nil {
			return store.TraceSettings{}, err
		}
	}
	s.UpdatedAt = normTime(s.UpdatedAt)
	doc, err := json.Marshal(s)
	if err != nil {
		return store.TraceSettings{}, derrors.Invalidf("trace settings: %v", err)
	}
	_, err = o.w.ExecContext(ctx, `INSERT INTO trace_settings (workspace, updated_at, doc) VALUES ($1, $2, $3)
		ON CONFLICT (workspace) DO UPDATE SET updated_at = excluded.updated_at, doc = excluded.doc`,
		s.Workspace, o.d.TimeArg(s.UpdatedAt), string(doc))
	if err != nil {
		return store.TraceSettings{}, o.mapErr(err)
	}
	// Read back as a reader would (jsonb normalises the thresholds).
	var out store.TraceSettings
	if err := json.Unmarshal(doc, &out); err != nil {
		return store.TraceSettings{}, err
	}
	out.Workspace = s.Workspace
	return out, nil
}

// GetSpanAttrMapping reads a harness's overlay; see store.TraceIngest.
func (o ops) GetSpanAttrMapping(ctx context.Context, workspace, harnessID string) (_ store.SpanAttrMapping, err error) {
	defer derrors.Wrap(&err, "%s.GetSpanAttrMapping(ctx, %q, %q)", o.kind, workspace, harnessID)
	if err := checkText(workspace, harnessID); err != nil {
		return store.SpanAttrMapping{}, err
	}
	var doc []byte
	err = o.r.QueryRowContext(ctx, `SELECT doc FROM span_attr_mappings WHERE workspace = $1 AND harness_id = $2`, workspace, harnessID).Scan(&doc)
	if errors.Is(err, sql.ErrNoRows) {
		return store.SpanAttrMapping{}, derrors.NotFoundf("span attribute mapping of harness %q", harnessID)
	}
	if err != nil {
		return store.SpanAttrMapping{}, o.mapErr(err)
	}
	var m store.SpanAttrMapping
	if err := json.Unmarshal(doc, &m); err != nil {
		return store.SpanAttrMapping{}, err
	}
	m.Workspace = workspace
	return m, nil
}

// PutSpanAttrMapping writes a harness's overlay; see store.TraceIngest.
func (o ops) PutSpanAttrMapping(ctx context.Context, m store.SpanAttrMapping) (_ store.SpanAttrMapping, err error) {
	defer derrors.Wrap(&err, "%s.PutSpanAttrMapping(ctx, %q, %q)", o.kind, m.Workspace, m.HarnessID)
	if err := required("workspace", m.Workspace, "harness id", m.HarnessID); err != nil {
		return store.SpanAttrMapping{}, err
	}
	if err := checkText(m.Workspace, m.HarnessID, m.UpdatedBy); err != nil {
		return store.SpanAttrMapping{}, err
	}
	if err := checkJSON("mapping", m.Mapping); err != nil {
		return store.SpanAttrMapping{}, err
	}
	m.UpdatedAt = normTime(m.UpdatedAt)
	doc, err := json.Marshal(m)
	if err != nil {
		return store.SpanAttrMapping{}, derrors.Invalidf("span attribute mapping: %v", err)
	}
	_, err = o.w.ExecContext(ctx, `INSERT INTO span_attr_mappings (workspace, harness_id, updated_at, doc) VALUES ($1, $2, $3, $4)
		ON CONFLICT (workspace, harness_id) DO UPDATE SET updated_at = excluded.updated_at, doc = excluded.doc`,
		m.Workspace, m.HarnessID, o.d.TimeArg(m.UpdatedAt), string(doc))
	if err != nil {
		return store.SpanAttrMapping{}, o.mapErr(err)
	}
	var out store.SpanAttrMapping
	if err := json.Unmarshal(doc, &out); err != nil {
		return store.SpanAttrMapping{}, err
	}
	out.Workspace = m.Workspace
	return out, nil
}

// DeleteTrajectoriesBefore deletes a batch of expired trajectories; see store.TraceIngest.
func (o ops) DeleteTrajectoriesBefore(ctx context.Context, workspace string, cutoff time.Time, limit int) (_ int, err error) {
	defer derrors.Wrap(&err, "%s.DeleteTrajectoriesBefore(ctx, %q, %v, %d)", o.kind, workspace, cutoff, limit)
	if err := required("workspace", workspace); err != nil {
		return 0, err
	}
	if err := checkText(workspace); err != nil {
		return 0, err
	}
	if limit < 0 {
		return 0, derrors.Invalidf("limit %d is negative", limit)
	}
	if limit == 0 {
		limit = defaultTrajectoryDeleteLimit
	}
	res, err := o.w.ExecContext(ctx, `DELETE FROM trajectories WHERE workspace = $1 AND run_id IN (
		SELECT run_id FROM trajectories WHERE workspace = $1 AND sealed_at < $2 ORDER BY sealed_at, run_id LIMIT $3)`,
		workspace, o.d.TimeArg(normTime(cutoff)), limit)
	if err != nil {
		return 0, o.mapErr(err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return 0, err
	}
	return int(n), nil
}
