package sqlstore

import (
	"context"
	"fmt"

	"svc/internal/platform/derrors"
	"svc/store"
)

// runnerLogStreams are the streams a runner job's chunk may name.
var runnerLogStreams = map[string]bool{"stdout": true, "stderr": true, "system": true}

// AppendRunnerJobLogs stores a lease's chunks; see store.RunnerJobOutput.
func (o ops) AppendRunnerJobLogs(ctx context.Context, workspace, id, leaseID string, chunks []store.RunnerLogChunk, maxBytes int64) (err error) {
	defer derrors.Wrap(&err, "%s.AppendRunnerJobLogs(ctx, %q, %q, %d chunks)", o.kind, workspace, id, len(chunks))
	if err := required("workspace", workspace, "id", id, "lease id", leaseID); err != nil {
		return err
	}
	if err := checkText(workspace, id, leaseID); err != nil {
		return err
	}
	var size int64
	for i, c := range chunks {
		if c.Seq < 1 {
			return derrors.Invalidf("chunk %d: seq %d is not positive", i, c.Seq)
		}
		if !runnerLogStreams[c.Stream] {
			return derrors.Invalidf("chunk %d: stream %q is not stdout, stderr or system", i, c.Stream)
		}
		size += int64(len(c.Data))
	}
	return o.atomic(ctx, func(o ops) error {
		// The lease must hold the job, read in the transaction that
		// writes: a lost lease's late chunks are never stored.
		var state, holder string
		err := o.w.QueryRowContext(ctx, `SELECT state, lease_id FROM runner_jobs WHERE workspace = $1 AND id = $2`, workspace, id).Scan(&state, &holder)
		if err != nil {
			return o.found(err, "runner job %q", id)
		}
		if state != store.RunnerJobLeased || holder != leaseID {
			return derrors.Conflictf("runner job %q is %s and this lease no longer holds it (it expired and the job was leased again, or it ended): its output is not taken", id, state)
		}
		if len(chunks) == 0 {
			return nil
		}
		var stored int64
		if err := o.w.QueryRowContext(ctx, `SELECT COALESCE(SUM(LENGTH(data)), 0) FROM runner_job_logs
			WHERE workspace = $1 AND job_id = $2 AND lease_id = $3`, workspace, id, leaseID).Scan(&stored); err != nil {
			return o.mapErr(err)
		}
		if stored+size > maxBytes {
			return fmt.Errorf("%w: runner job %q: its output would pass %d bytes (%d stored, %d more sent); send a last system chunk saying it was cut",
				derrors.ErrTooLarge, id, maxBytes, stored, size)
		}
		var args sqlArgs
		q := `INSERT INTO runner_job_logs (workspace, job_id, lease_id, seq, stream, data, at) VALUES `
		for i, c := range chunks {
			if i > 0 {
				q += `, `
			}
			data := c.Data
			if data == nil {
				data = []byte{}
			}
			q += `(` + args.add(workspace) + `, ` + args.add(id) + `, ` + args.add(leaseID) + `, ` + args.add(c.Seq) + `, ` +
				args.add(c.Stream) + `, ` + args.add(data) + `, ` + args.add(o.d.TimeArg(normTime(c.At))) + `)`
		}
		q += ` ON CONFLICT (workspace, job_id, lease_id, seq) DO NOTHING`
		_, err = o.w.ExecContext(ctx, q, args...)
		return o.mapErr(err)
	})
}

// ListRunnerJobLogs reads a lease's chunks; see store.RunnerJobOutput.
func (o ops) ListRunnerJobLogs(ctx context.Context, workspace, id, leaseID string, after int64, limit int) (_ []store.RunnerLogChunk, err error) {
	defer derrors.Wrap(&err, "%s.ListRunnerJobLogs(ctx, %q, %q, %d)", o.kind, workspace, id, after)
	if err := checkText(workspace, id, leaseID); err != nil {
		return nil, err
	}
	if limit <= 0 {
		return nil, derrors.Invalidf("limit %d is not positive", limit)
	}
	return queryList(ctx, o, func(r rowScanner) (store.RunnerLogChunk, error) {
		var c store.RunnerLogChunk
		var at dbTime
		err := r.Scan(&c.Seq, &c.Stream, &c.Data, &at)
		c.At = at.Time
		return c, err
	}, `SELECT seq, stream, data, at FROM runner_job_logs WHERE workspace = $1 AND job_id = $2 AND lease_id = $3 AND seq > $4
		ORDER BY seq LIMIT $5`, workspace, id, leaseID, after, limit)
}

// PutRunnerJobToken stores a token's hash; see store.RunnerJobOutput.
func (o ops) PutRunnerJobToken(ctx context.Context, t store.RunnerJobToken) (err error) {
	defer derrors.Wrap(&err, "%s.PutRunnerJobToken(ctx, %q, %q)", o.kind, t.Workspace, t.JobID)
	if err := required("workspace", t.Workspace, "job id", t.JobID, "lease id", t.LeaseID, "run id", t.RunID); err != nil {
		return err
	}
	if err := checkText(t.Workspace, t.JobID, t.LeaseID, t.RunID); err != nil {
		return err
	}
	if len(t.Hash) == 0 {
		return derrors.Invalidf("the token hash is required")
	}
	return o.atomic(ctx, func(o ops) error {
		if _, err := o.w.ExecContext(ctx, `DELETE FROM runner_job_tokens WHERE workspace = $1 AND expires_at < $2`,
			t.Workspace, o.d.TimeArg(normTime(t.IssuedAt))); err != nil {
			return o.mapErr(err)
		}
		_, err := o.w.ExecContext(ctx, `INSERT INTO runner_job_tokens (token_hash, workspace, job_id, lease_id, run_id, expires_at)
			VALUES ($1, $2, $3, $4, $5, $6)`, t.Hash, t.Workspace, t.JobID, t.LeaseID, t.RunID, o.d.TimeArg(normTime(t.ExpiresAt)))
		return o.mapErr(err)
	})
}

// RunnerJobTokenByHash reads a token; see store.RunnerJobOutput.
func (o ops) RunnerJobTokenByHash(ctx context.Context, hash []byte) (_ store.RunnerJobToken, err error) {
	defer derrors.Wrap(&err, "%s.RunnerJobTokenByHash(ctx)", o.kind)
	t := store.RunnerJobToken{Hash: hash}
	var expires dbTime
	err = o.r.QueryRowContext(ctx, `SELECT workspace, job_id, lease_id, run_id, expires_at FROM runner_job_tokens WHERE token_hash = $1`, hash).
		Scan(&t.Workspace, &t.JobID, &t.LeaseID, &t.RunID, &expires)
	t.ExpiresAt = expires.Time
	return t, o.found(err, "runner job token")
}

// DeleteRunnerJobOutput deletes a job's chunks and tokens, and those of
// jobs no longer stored; see store.RunnerJobOutput.
func (o ops) DeleteRunnerJobOutput(ctx context.Context, workspace, id string) (err error) {
	defer derrors.Wrap(&err, "%s.DeleteRunnerJobOutput(ctx, %q, %q)", o.kind, workspace, id)
	if err := checkText(workspace, id); err != nil {
		return err
	}
	return o.atomic(ctx, func(o ops) error {
		for _, table := range []string{"runner_job_logs", "runner_job_tokens"} {
			if _, err := o.w.ExecContext(ctx, `DELETE FROM `+table+` WHERE workspace = $1 AND (job_id = $2
				OR job_id NOT IN (SELECT id FROM runner_jobs WHERE workspace = $1))`, workspace, id); err != nil {
				return o.mapErr(err)
			}
		}
		return nil
	})
}
