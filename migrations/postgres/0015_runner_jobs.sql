-- The lease queue of self-hosted runtimes (issue 15, point 6): a row per
-- attempt of a case on a runtime of kind runner. The worker's runner driver
-- enqueues it (one per workspace, run and attempt, so a retried activity
-- adopts its row), a runner (`svc runner`) leases it over HTTP until
-- lease_expires and renews the lease with each heartbeat, and posts the
-- result, which the driver reads back and then deletes the row. A runner
-- that dies stops renewing: past lease_expires the job is leased again.
-- cancelled is set by a cancel; the runner learns it from its next
-- heartbeat. payload is the job without its secrets (JSON); secrets is
-- sealed with the service's secret key, never plaintext.
CREATE TABLE runner_jobs (
	workspace     TEXT NOT NULL,
	id            TEXT NOT NULL,
	runtime       TEXT NOT NULL,
	run_id        TEXT NOT NULL,
	attempt       INTEGER NOT NULL,
	scorecard_id  TEXT NOT NULL DEFAULT '',
	payload       TEXT NOT NULL,
	secrets       bytea,
	state         TEXT NOT NULL CHECK (state IN ('queued', 'leased', 'done')),
	cancelled     INTEGER NOT NULL DEFAULT 0,
	runner        TEXT NOT NULL DEFAULT '',
	lease_id      TEXT NOT NULL DEFAULT '',
	lease_expires timestamptz,
	leases        INTEGER NOT NULL DEFAULT 0,
	result        TEXT,
	created_at    timestamptz NOT NULL,
	updated_at    timestamptz NOT NULL,
	PRIMARY KEY (workspace, id)
);

-- One job per attempt of a run: a second enqueue adopts the first.
CREATE UNIQUE INDEX runner_jobs_run_idx ON runner_jobs (workspace, run_id, attempt);

-- A lease reads the oldest job of a workspace's runtime that is not done.
CREATE INDEX runner_jobs_lease_idx ON runner_jobs (workspace, state, created_at);

-- A batch's cancel marks its jobs.
CREATE INDEX runner_jobs_scorecard_idx ON runner_jobs (workspace, scorecard_id);
