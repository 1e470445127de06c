package sqlstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"time"

	"svc/internal/platform/derrors"
	"svc/store"
)

// runnerJobColumns are the columns scanRunnerJob reads, in its order.
const runnerJobColumns = `id, runtime, run_id, attempt, scorecard_id, payload, secrets, state, cancelled,
	runner, lease_id, lease_expires, leases, result, created_at, updated_at`

// scanRunnerJob reads a row of runnerJobColumns.
func scanRunnerJob(workspace string, r rowScanner) (store.RunnerJob, error) {
	j := store.RunnerJob{Workspace: workspace}
	var (
		payload          string
		result           sql.NullString
		cancelled        int64
		expires          dbTime
		created, updated dbTime
	)
	if err := r.Scan(&j.ID, &j.Runtime, &j.RunID, &j.Attempt, &j.ScorecardID, &payload, &j.Secrets, &j.State, &cancelled,
		&j.Runner, &j.LeaseID, &expires, &j.Leases, &result, &created, &updated); err != nil {
		return j, err
	}
	j.Payload = json.RawMessage(payload)
	j.Cancelled = cancelled != 0
	if expires.Valid {
		t := expires.Time
		j.LeaseExpires = &t
	}
	if result.Valid {
		j.Result = json.RawMessage(result.String)
	}
	j.CreatedAt, j.UpdatedAt = created.Time, updated.Time
	return j, nil
}

// EnqueueRunnerJob stores a queued job, or returns the one of the same
// run and attempt; see store.RunnerJobs.
func (o ops) EnqueueRunnerJob(ctx context.Context, j store.RunnerJob) (out store.RunnerJob, created bool, err error) {
	defer derrors.Wrap(&err, "%s.EnqueueRunnerJob(ctx, %q, %q, %q)", o.kind, j.Workspace, j.ID, j.RunID)
	if err := required("workspace", j.Workspace, "id", j.ID, "runtime", j.Runtime, "run id", j.RunID); err != nil {
		return store.RunnerJob{}, false, err
	}
	if err := checkText(j.Workspace, j.ID, j.Runtime, j.RunID, j.ScorecardID, string(j.Payload)); err != nil {
		return store.RunnerJob{}, false, err
	}
	if !json.Valid(j.Payload) {
		return store.RunnerJob{}, false, derrors.Invalidf("runner job %q: the payload is not JSON", j.ID)
	}
	in, now := j, normTime(j.CreatedAt)
	err = o.atomic(ctx, func(o ops) error {
		j := in
		res, err := o.w.ExecContext(ctx, `INSERT INTO runner_jobs (workspace, id, runtime, run_id, attempt, scorecard_id, payload, secrets, state, created_at, updated_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, 'queued', $9, $9) ON CONFLICT DO NOTHING`,
			j.Workspace, j.ID, j.Runtime, j.RunID, j.Attempt, j.ScorecardID, string(j.Payload), j.Secrets, o.d.TimeArg(now))
		if err != nil {
			return o.mapErr(err)
		}
		n, err := res.RowsAffected()
		if err != nil {
			return o.mapErr(err)
		}
		created = n == 1
		row := o.w.QueryRowContext(ctx, `SELECT `+runnerJobColumns+` FROM runner_jobs WHERE workspace = $1 AND run_id = $2 AND attempt = $3`,
			j.Workspace, j.RunID, j.Attempt)
		out, err = scanRunnerJob(j.Workspace, row)
		return o.found(err, "runner job of run %q attempt %d", j.RunID, j.Attempt)
	})
	return out, created, err
}

// GetRunnerJob reads one job; see store.RunnerJobs.
func (o ops) GetRunnerJob(ctx context.Context, workspace, id string) (_ store.RunnerJob, err error) {
	defer derrors.Wrap(&err, "%s.GetRunnerJob(ctx, %q, %q)", o.kind, workspace, id)
	if err := checkText(workspace, id); err != nil {
		return store.RunnerJob{}, err
	}
	row := o.r.QueryRowContext(ctx, `SELECT `+runnerJobColumns+` FROM runner_jobs WHERE workspace = $1 AND id = $2`, workspace, id)
	j, err := scanRunnerJob(workspace, row)
	return j, o.found(err, "runner job %q", id)
}

// LeaseRunnerJob leases the oldest leasable job in one statement, so two
// runners asking at once never get the same job; see store.RunnerJobs.
func (o ops) LeaseRunnerJob(ctx context.Context, l store.RunnerLease) (_ store.RunnerJob, err error) {
	defer derrors.Wrap(&err, "%s.LeaseRunnerJob(ctx, %q, %q, %q)", o.kind, l.Workspace, l.Runtime, l.Runner)
	if err := required("workspace", l.Workspace, "lease id", l.LeaseID); err != nil {
		return store.RunnerJob{}, err
	}
	if err := checkText(l.Workspace, l.Runtime, l.Runner, l.LeaseID); err != nil {
		return store.RunnerJob{}, err
	}
	if !l.Until.After(l.Now) {
		return store.RunnerJob{}, derrors.Invalidf("lease of %q: until %s is not after now %s", l.Runner, l.Until, l.Now)
	}
	now, until := o.d.TimeArg(normTime(l.Now)), o.d.TimeArg(normTime(l.Until))
	// A cancelled job that nobody follows any more (its worker died after
	// the cancel, and its runner too or it was never leased) would stay
	// forever: past OrphanedRunnerJob after the cancel it is dropped.
	if _, err := o.w.ExecContext(ctx, `DELETE FROM runner_jobs WHERE workspace = $1 AND cancelled = 1 AND state <> 'done'
		AND (state = 'queued' OR lease_expires < $2) AND updated_at < $3`,
		l.Workspace, now, o.d.TimeArg(normTime(l.Now.Add(-store.OrphanedRunnerJob)))); err != nil {
		return store.RunnerJob{}, o.mapErr(err)
	}
	// The condition is repeated in the outer WHERE: on PostgreSQL a
	// concurrent lease of the same row makes this one re-check it against
	// the row the other committed, and update nothing.
	const leasable = `cancelled = 0 AND (state = 'queued' OR (state = 'leased' AND lease_expires < $2))`
	row := o.w.QueryRowContext(ctx, `UPDATE runner_jobs SET state = 'leased', runner = $4, lease_id = $5, lease_expires = $6,
		leases = leases + 1, updated_at = $2
		WHERE workspace = $1 AND `+leasable+` AND id = (
			SELECT id FROM runner_jobs WHERE workspace = $1 AND ($3 = '' OR runtime = $3) AND `+leasable+`
			ORDER BY created_at, id LIMIT 1)
		RETURNING `+runnerJobColumns, l.Workspace, now, l.Runtime, l.Runner, l.LeaseID, until)
	j, err := scanRunnerJob(l.Workspace, row)
	return j, o.found(err, "a job to lease in workspace %q", l.Workspace)
}

// RenewRunnerLease extends a lease; see store.RunnerJobs.
func (o ops) RenewRunnerLease(ctx context.Context, workspace, id, leaseID string, now, until time.Time) (_ store.RunnerJob, err error) {
	defer derrors.Wrap(&err, "%s.RenewRunnerLease(ctx, %q, %q)", o.kind, workspace, id)
	if err := checkText(workspace, id, leaseID); err != nil {
		return store.RunnerJob{}, err
	}
	row := o.w.QueryRowContext(ctx, `UPDATE runner_jobs SET lease_expires = $4, updated_at = $5
		WHERE workspace = $1 AND id = $2 AND lease_id = $3 AND state = 'leased'
		RETURNING `+runnerJobColumns, workspace, id, leaseID, o.d.TimeArg(normTime(until)), o.d.TimeArg(normTime(now)))
	j, err := scanRunnerJob(workspace, row)
	if errors.Is(err, sql.ErrNoRows) {
		return store.RunnerJob{}, o.lostLease(ctx, workspace, id)
	}
	return j, o.mapErr(err)
}

// lostLease is the error for a lease that does not hold job id: conflict
// when the job exists, not found when it does not.
func (o ops) lostLease(ctx context.Context, workspace, id string) error {
	var state string
	err := o.w.QueryRowContext(ctx, `SELECT state FROM runner_jobs WHERE workspace = $1 AND id = $2`, workspace, id).Scan(&state)
	if err != nil {
		return o.found(err, "runner job %q", id)
	}
	return derrors.Conflictf("runner job %q is %s and this lease no longer holds it (it expired and the job was leased again, or it ended): drop the job", id, state)
}

// CompleteRunnerJob records a result; see store.RunnerJobs.
func (o ops) CompleteRunnerJob(ctx context.Context, workspace, id, leaseID string, result json.RawMessage, now time.Time) (_ store.RunnerJob, err error) {
	defer derrors.Wrap(&err, "%s.CompleteRunnerJob(ctx, %q, %q)", o.kind, workspace, id)
	if err := checkText(workspace, id, leaseID, string(result)); err != nil {
		return store.RunnerJob{}, err
	}
	if !json.Valid(result) {
		return store.RunnerJob{}, derrors.Invalidf("runner job %q: the result is not JSON", id)
	}
	var j store.RunnerJob
	err = o.atomic(ctx, func(o ops) error {
		row := o.w.QueryRowContext(ctx, `UPDATE runner_jobs SET state = 'done', result = $4, updated_at = $5
			WHERE workspace = $1 AND id = $2 AND lease_id = $3 AND state = 'leased'
			RETURNING `+runnerJobColumns, workspace, id, leaseID, string(result), o.d.TimeArg(normTime(now)))
		var err error
		j, err = scanRunnerJob(workspace, row)
		if !errors.Is(err, sql.ErrNoRows) {
			return o.mapErr(err)
		}
		// A repeat of the post that completed it is answered the same.
		row = o.w.QueryRowContext(ctx, `SELECT `+runnerJobColumns+` FROM runner_jobs WHERE workspace = $1 AND id = $2`, workspace, id)
		if j, err = scanRunnerJob(workspace, row); err != nil {
			return o.found(err, "runner job %q", id)
		}
		if j.State == store.RunnerJobDone && j.LeaseID == leaseID {
			return nil
		}
		return derrors.Conflictf("runner job %q is %s and this lease no longer holds it (it expired and the job was leased again): its result is not taken", id, j.State)
	})
	return j, err
}

// CancelRunnerJobs marks a run's or a batch's jobs cancelled; see
// store.RunnerJobs.
func (o ops) CancelRunnerJobs(ctx context.Context, workspace, runID, scorecardID string, now time.Time) (_ int, err error) {
	defer derrors.Wrap(&err, "%s.CancelRunnerJobs(ctx, %q, %q, %q)", o.kind, workspace, runID, scorecardID)
	if runID == "" && scorecardID == "" {
		return 0, derrors.Invalidf("cancelling runner jobs needs a run id or a scorecard id")
	}
	if err := checkText(workspace, runID, scorecardID); err != nil {
		return 0, err
	}
	res, err := o.w.ExecContext(ctx, `UPDATE runner_jobs SET cancelled = 1, updated_at = $4
		WHERE workspace = $1 AND state <> 'done' AND cancelled = 0
		AND (($2 <> '' AND run_id = $2) OR ($3 <> '' AND scorecard_id = $3))`,
		workspace, runID, scorecardID, o.d.TimeArg(normTime(now)))
	if err != nil {
		return 0, o.mapErr(err)
	}
	n, err := res.RowsAffected()
	return int(n), o.mapErr(err)
}

// DeleteRunnerJob deletes a job; see store.RunnerJobs.
func (o ops) DeleteRunnerJob(ctx context.Context, workspace, id string) (err error) {
	defer derrors.Wrap(&err, "%s.DeleteRunnerJob(ctx, %q, %q)", o.kind, workspace, id)
	if err := checkText(workspace, id); err != nil {
		return err
	}
	_, err = o.w.ExecContext(ctx, `DELETE FROM runner_jobs WHERE workspace = $1 AND id = $2`, workspace, id)
	return o.mapErr(err)
}

// ListRunnerJobs lists a workspace's open jobs; see store.RunnerJobs.
func (o ops) ListRunnerJobs(ctx context.Context, workspace string) (_ []store.RunnerJob, err error) {
	defer derrors.Wrap(&err, "%s.ListRunnerJobs(ctx, %q)", o.kind, workspace)
	if err := checkText(workspace); err != nil {
		return nil, err
	}
	return queryList(ctx, o, func(r rowScanner) (store.RunnerJob, error) { return scanRunnerJob(workspace, r) },
		`SELECT `+runnerJobColumns+` FROM runner_jobs WHERE workspace = $1 AND state <> 'done' ORDER BY created_at, id`, workspace)
}
