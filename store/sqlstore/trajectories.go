package sqlstore

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"svc/internal/platform/derrors"
	"svc/store"
)

// defaultTrajectoryLimit is ListTrajectories' page size when the filter sets none.
const defaultTrajectoryLimit = 50

// trajectoryColumns are the columns of a trajectory's meta, read by
// scanTrajectory; events is selected after them only when wanted.
const trajectoryColumns = `workspace, run_id, source, event_count, digest, sealed_at, audience`

// scanTrajectory reads a row of trajectoryColumns, followed by events when
// withEvents.
func scanTrajectory(r rowScanner, withEvents bool) (store.Trajectory, error) {
	var t store.Trajectory
	var sealed dbTime
	var events, eventsZ []byte
	dest := []any{&t.Workspace, &t.RunID, &t.Source, &t.EventCount, &t.Digest, &sealed, &t.Audience}
	if withEvents {
		dest = append(dest, &events, &eventsZ)
	}
	if err := r.Scan(dest...); err != nil {
		return store.Trajectory{}, err
	}
	t.SealedAt = sealed.Time
	if withEvents {
		ev, err := eventsOf(events, eventsZ)
		if err != nil {
			return store.Trajectory{}, fmt.Errorf("trajectory of run %q: %w", t.RunID, err)
		}
		t.Events = json.RawMessage(ev)
	}
	return t, nil
}

// SealTrajectory stores a trajectory once; see store.Trajectories.
func (o ops) SealTrajectory(ctx context.Context, t store.Trajectory) (_ store.Trajectory, _ bool, err error) {
	defer derrors.Wrap(&err, "%s.SealTrajectory(ctx, %q, %q)", o.kind, t.Workspace, t.RunID)
	t, err = prepareTrajectory(t)
	if err != nil {
		return store.Trajectory{}, false, err
	}
	// The events are kept compressed (events_z, migration 0020).
	ok, err := o.insertOnce(ctx,
		`INSERT INTO trajectories (`+trajectoryColumns+`, events_z) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
		ON CONFLICT (workspace, run_id) DO NOTHING`,
		t.Workspace, t.RunID, t.Source, t.EventCount, t.Digest, o.d.TimeArg(t.SealedAt), t.Audience, compressEvents(t.Events))
	if err != nil {
		return store.Trajectory{}, false, err
	}
	if ok {
		return t, true, nil
	}
	// Sealed before: a retried seal of the same events is harmless, other
	// events are never written over the sealed ones.
	stored, err := o.getTrajectory(ctx, o.w, t.Workspace, t.RunID)
	if err != nil {
		return store.Trajectory{}, false, err
	}
	if stored.Digest != t.Digest {
		return store.Trajectory{}, false, derrors.Conflictf("the trajectory of run %q is sealed with digest %s, not %s", t.RunID, stored.Digest, t.Digest)
	}
	return stored, false, nil
}

// prepareTrajectory validates t and returns it as it will be stored,
// Events copied and SealedAt set.
func prepareTrajectory(t store.Trajectory) (store.Trajectory, error) {
	if err := required("workspace", t.Workspace, "run id", t.RunID, "source", t.Source, "digest", t.Digest); err != nil {
		return store.Trajectory{}, err
	}
	if err := checkText(t.Workspace, t.RunID, t.Source, t.Audience); err != nil {
		return store.Trajectory{}, err
	}
	if !digestRE.MatchString(t.Digest) {
		return store.Trajectory{}, derrors.Invalidf("digest %q is not sha256:<64 lowercase hex>", t.Digest)
	}
	if t.EventCount < 0 {
		return store.Trajectory{}, derrors.Invalidf("event count %d is negative", t.EventCount)
	}
	if err := checkJSON("events", t.Events); err != nil {
		return store.Trajectory{}, err
	}
	if !bytes.HasPrefix(bytes.TrimLeft(t.Events, " \t\r\n"), []byte("[")) {
		return store.Trajectory{}, derrors.Invalidf("events is not a JSON array")
	}
	t.Events = append(json.RawMessage(nil), t.Events...)
	t.SealedAt = normTime(t.SealedAt)
	return t, nil
}

// trajectoryKey is a trajectory's primary key.
type trajectoryKey struct{ workspace, runID string }

// SealTrajectories stores trajectories once each; see store.Trajectories.
// One INSERT seals the new ones; a run sealed before (a retry) is read
// back and compared as SealTrajectory does.
func (o ops) SealTrajectories(ctx context.Context, ts []store.Trajectory) (_ []store.Trajectory, _ []bool, err error) {
	defer derrors.Wrap(&err, "%s.SealTrajectories(ctx, %d trajectories)", o.kind, len(ts))
	prepared := make([]store.Trajectory, len(ts))
	for i, t := range ts {
		t, err := prepareTrajectory(t)
		if err != nil {
			return nil, nil, fmt.Errorf("trajectory %d: %w", i, err)
		}
		prepared[i] = t
	}
	var out []store.Trajectory
	created := make([]bool, len(ts))
	if len(ts) == 0 {
		return prepared, created, nil
	}
	err = o.atomic(ctx, func(o ops) error {
		out = slices.Clone(prepared)
		clear(created)
		first := map[trajectoryKey]int{} // the row of rs that seals each run
		for i := 0; i < len(out); i += rowsPerStatement {
			batch := out[i:min(i+rowsPerStatement, len(out))]
			var args sqlArgs
			var q strings.Builder
			q.WriteString(`INSERT INTO trajectories (` + trajectoryColumns + `, events_z) VALUES `)
			n := 0
			for j, t := range batch {
				k := trajectoryKey{t.Workspace, t.RunID}
				if _, ok := first[k]; ok {
					continue
				}
				first[k] = i + j
				if n > 0 {
					q.WriteString(`, `)
				}
				n++
				q.WriteString(`(` + strings.Join([]string{
					args.add(t.Workspace), args.add(t.RunID), args.add(t.Source), args.add(t.EventCount), args.add(t.Digest),
					args.add(o.d.TimeArg(t.SealedAt)), args.add(t.Audience), args.add(compressEvents(t.Events)),
				}, `, `) + `)`)
			}
			if n == 0 {
				continue
			}
			q.WriteString(` ON CONFLICT (workspace, run_id) DO NOTHING RETURNING workspace, run_id`)
			keys, err := queryWriter(ctx, o, func(r rowScanner) (trajectoryKey, error) {
				var k trajectoryKey
				err := r.Scan(&k.workspace, &k.runID)
				return k, err
			}, q.String(), args...)
			if err != nil {
				return err
			}
			for _, k := range keys {
				created[first[k]] = true
			}
		}
		// The rest were sealed before, or earlier in ts: the same events
		// are harmless, others are never written over the sealed ones.
		for i, t := range out {
			if created[i] {
				continue
			}
			stored, err := o.getTrajectory(ctx, o.w, t.Workspace, t.RunID)
			if err != nil {
				return err
			}
			if stored.Digest != t.Digest {
				return derrors.Conflictf("the trajectory of run %q is sealed with digest %s, not %s", t.RunID, stored.Digest, t.Digest)
			}
			out[i] = stored
		}
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	return out, created, nil
}

// getTrajectory reads one trajectory with its events through q, or
// ErrNotFound. SealTrajectory reads through the writer, which has just met
// the row.
func (o ops) getTrajectory(ctx context.Context, q querier, workspace, runID string) (store.Trajectory, error) {
	t, err := scanTrajectory(q.QueryRowContext(ctx,
		`SELECT `+trajectoryColumns+`, events, events_z FROM trajectories WHERE workspace = $1 AND run_id = $2`, workspace, runID), true)
	if err = o.found(err, "trajectory of run %q of workspace %q", runID, workspace); err != nil {
		return store.Trajectory{}, err
	}
	return t, nil
}

// GetTrajectory returns a run's trajectory with its events; see store.Trajectories.
func (o ops) GetTrajectory(ctx context.Context, workspace, runID string) (_ store.Trajectory, err error) {
	defer derrors.Wrap(&err, "%s.GetTrajectory(ctx, %q, %q)", o.kind, workspace, runID)
	if err := checkText(workspace, runID); err != nil {
		return store.Trajectory{}, err
	}
	return o.getTrajectory(ctx, o.r, workspace, runID)
}

// ListTrajectories returns metas newest first; see store.Trajectories.
func (o ops) ListTrajectories(ctx context.Context, f store.TrajectoryFilter) (_ []store.Trajectory, err error) {
	defer derrors.Wrap(&err, "%s.ListTrajectories(ctx, %q, viewer %q)", o.kind, f.Workspace, f.Viewer)
	if err := required("workspace", f.Workspace); err != nil {
		return nil, err
	}
	if err := checkText(f.Workspace, f.Viewer, f.BeforeID); err != nil {
		return nil, err
	}
	limit, err := checkPage(f.BeforeTime, f.BeforeID, f.Limit, defaultTrajectoryLimit)
	if err != nil {
		return nil, err
	}
	// events is not selected: a page of metas must not read every payload.
	if err := checkText(f.Teams...); err != nil {
		return nil, err
	}
	args := sqlArgs{f.Workspace}
	q := `SELECT ` + trajectoryColumns + ` FROM trajectories WHERE workspace = $1 AND ` + audienceIn(&args, f.Viewer, f.Teams, false)
	if !f.BeforeTime.IsZero() {
		q += olderThan("sealed_at", "run_id", args.add(o.d.TimeArg(normTime(f.BeforeTime))), args.add(f.BeforeID))
	}
	q += ` ORDER BY sealed_at DESC, run_id DESC LIMIT ` + args.add(limit)
	return queryList(ctx, o, func(r rowScanner) (store.Trajectory, error) { return scanTrajectory(r, false) }, q, args...)
}
