package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"svc/internal/platform/derrors"
	"svc/store"
)

// AcquireSlot takes or waits for a slot, in one transaction (SERIALIZABLE
// on PostgreSQL, the one writer on SQLite), so that two acquirers cannot
// both take the last slot; see store.Slots.
func (o ops) AcquireSlot(ctx context.Context, r store.SlotRequest) (held bool, err error) {
	defer derrors.Wrap(&err, "%s.AcquireSlot(ctx, %q, %q, %q)", o.kind, r.Workspace, r.Runtime, r.Holder)
	if err := required("workspace", r.Workspace, "runtime", r.Runtime, "holder", r.Holder); err != nil {
		return false, err
	}
	if err := checkText(r.Workspace, r.Runtime, r.Holder, r.ScorecardID); err != nil {
		return false, err
	}
	if r.MaxConcurrent < 1 || r.MemoryMb < 0 || r.MemoryBudgetMb < 0 || !r.Until.After(r.Now) {
		return false, derrors.Invalidf("slot request of %q: maxConcurrent %d, memory %d of %d MB, until %s after now %s", r.Holder, r.MaxConcurrent, r.MemoryMb, r.MemoryBudgetMb, r.Until, r.Now)
	}
	now, until := o.d.TimeArg(normTime(r.Now)), o.d.TimeArg(normTime(r.Until))
	err = o.atomic(ctx, func(o ops) error {
		held = false
		if _, err := o.w.ExecContext(ctx, `DELETE FROM runtime_slots WHERE workspace = $1 AND runtime = $2 AND expires_at < $3`,
			r.Workspace, r.Runtime, now); err != nil {
			return o.mapErr(err)
		}
		var state string
		err := o.w.QueryRowContext(ctx, `SELECT state FROM runtime_slots WHERE workspace = $1 AND runtime = $2 AND holder = $3`,
			r.Workspace, r.Runtime, r.Holder).Scan(&state)
		switch {
		case err == nil && state == store.SlotHeld:
			held = true
			_, err = o.w.ExecContext(ctx, `UPDATE runtime_slots SET expires_at = $4 WHERE workspace = $1 AND runtime = $2 AND holder = $3`,
				r.Workspace, r.Runtime, r.Holder, until)
			return o.mapErr(err)
		case err != nil && !errors.Is(err, sql.ErrNoRows):
			return o.mapErr(err)
		}
		var count, memory int64
		if err := o.w.QueryRowContext(ctx, `SELECT count(*), COALESCE(sum(memory_mb), 0) FROM runtime_slots
			WHERE workspace = $1 AND runtime = $2 AND state = 'held'`, r.Workspace, r.Runtime).Scan(&count, &memory); err != nil {
			return o.mapErr(err)
		}
		held = count < int64(r.MaxConcurrent) &&
			(r.MemoryMb == 0 || r.MemoryBudgetMb == 0 || memory+int64(r.MemoryMb) <= int64(r.MemoryBudgetMb))
		state = store.SlotWaiting
		if held {
			state = store.SlotHeld
		}
		// since is when the row first appeared: a waiter keeps its place
		// in the list, a holder shows since when it waited.
		_, err = o.w.ExecContext(ctx, `INSERT INTO runtime_slots (workspace, runtime, holder, state, memory_mb, scorecard_id, since, expires_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
			ON CONFLICT (workspace, runtime, holder) DO UPDATE SET state = excluded.state, memory_mb = excluded.memory_mb, expires_at = excluded.expires_at`,
			r.Workspace, r.Runtime, r.Holder, state, r.MemoryMb, r.ScorecardID, now, until)
		return o.mapErr(err)
	})
	return held, err
}

// RenewSlot extends a row's lease; see store.Slots.
func (o ops) RenewSlot(ctx context.Context, workspace, runtime, holder string, until time.Time) (err error) {
	defer derrors.Wrap(&err, "%s.RenewSlot(ctx, %q, %q, %q)", o.kind, workspace, runtime, holder)
	if err := checkText(workspace, runtime, holder); err != nil {
		return err
	}
	res, err := o.w.ExecContext(ctx, `UPDATE runtime_slots SET expires_at = $4 WHERE workspace = $1 AND runtime = $2 AND holder = $3`,
		workspace, runtime, holder, o.d.TimeArg(normTime(until)))
	if err != nil {
		return o.mapErr(err)
	}
	if n, err := res.RowsAffected(); err != nil {
		return o.mapErr(err)
	} else if n == 0 {
		return derrors.NotFoundf("slot of %q on runtime %q of workspace %q", holder, runtime, workspace)
	}
	return nil
}

// ReleaseSlot deletes a row; see store.Slots.
func (o ops) ReleaseSlot(ctx context.Context, workspace, runtime, holder string) (err error) {
	defer derrors.Wrap(&err, "%s.ReleaseSlot(ctx, %q, %q, %q)", o.kind, workspace, runtime, holder)
	if err := checkText(workspace, runtime, holder); err != nil {
		return err
	}
	_, err = o.w.ExecContext(ctx, `DELETE FROM runtime_slots WHERE workspace = $1 AND runtime = $2 AND holder = $3`, workspace, runtime, holder)
	return o.mapErr(err)
}

// ListSlots lists a workspace's live rows; see store.Slots.
func (o ops) ListSlots(ctx context.Context, workspace string, now time.Time) (_ []store.Slot, err error) {
	defer derrors.Wrap(&err, "%s.ListSlots(ctx, %q)", o.kind, workspace)
	if err := required("workspace", workspace); err != nil {
		return nil, err
	}
	if err := checkText(workspace); err != nil {
		return nil, err
	}
	return queryList(ctx, o, func(r rowScanner) (store.Slot, error) {
		s := store.Slot{Workspace: workspace}
		var since, expires dbTime
		err := r.Scan(&s.Runtime, &s.Holder, &s.State, &s.MemoryMb, &s.ScorecardID, &since, &expires)
		s.Since, s.ExpiresAt = since.Time, expires.Time
		return s, err
	}, `SELECT runtime, holder, state, memory_mb, scorecard_id, since, expires_at FROM runtime_slots
	WHERE workspace = $1 AND expires_at >= $2 ORDER BY state, since, holder`, workspace, o.d.TimeArg(normTime(now)))
}
