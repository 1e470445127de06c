-- Self-hosted runner jobs stream their output and send their spans while
-- they run (issue 15, point 6).
--
-- runner_job_logs holds the output chunks a runner posts while its job
-- runs, keyed by the lease that ran it and a sequence the runner numbers,
-- so a retried post stores nothing twice and the output of a lease that
-- was lost is never read as the next lease's. The worker's runner driver
-- reads them into the run's log and deletes them with the job. The runner
-- masks the job's secrets before it posts a chunk.
CREATE TABLE runner_job_logs (
	workspace TEXT NOT NULL,
	job_id    TEXT NOT NULL,
	lease_id  TEXT NOT NULL,
	seq       INTEGER NOT NULL,
	stream    TEXT NOT NULL,
	data      BLOB NOT NULL,
	at        TEXT NOT NULL,
	PRIMARY KEY (workspace, job_id, lease_id, seq)
);

-- runner_job_tokens holds the SHA-256 of the run-scoped OTLP token handed
-- out with a lease (never the token): the OTLP door takes it for spans of
-- run_id only, while lease_id still holds the job and before expires_at.
CREATE TABLE runner_job_tokens (
	token_hash BLOB NOT NULL PRIMARY KEY,
	workspace  TEXT NOT NULL,
	job_id     TEXT NOT NULL,
	lease_id   TEXT NOT NULL,
	run_id     TEXT NOT NULL,
	expires_at TEXT NOT NULL
);

-- A finished job's tokens are deleted with it.
CREATE INDEX runner_job_tokens_job_idx ON runner_job_tokens (workspace, job_id);
