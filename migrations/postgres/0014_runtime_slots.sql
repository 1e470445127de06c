-- Admission slots of the remote runtimes (issue 15): a row per job that
-- holds or waits for a slot of a workspace's runtime, whose maxConcurrent
-- and memoryBudgetMb bound the rows in state 'held'. holder is the run id:
-- a retried attempt of a run finds its own row, so it never takes a second
-- slot. A row lives until expires_at unless its holder renews it while the
-- job runs: a worker killed while it held slots gives them back within the
-- lease, and no SIGKILL leaks one.
CREATE TABLE runtime_slots (
	workspace   TEXT NOT NULL,
	runtime     TEXT NOT NULL,
	holder      TEXT NOT NULL,
	state       TEXT NOT NULL CHECK (state IN ('held', 'waiting')),
	memory_mb   INTEGER NOT NULL DEFAULT 0,
	scorecard_id TEXT NOT NULL DEFAULT '',
	since       timestamptz NOT NULL,
	expires_at  timestamptz NOT NULL,
	PRIMARY KEY (workspace, runtime, holder)
);

-- The scheduler's queue bound counts a workspace's unfinished top-level
-- runs at each submit (CountQueued): this index holds them, and only them,
-- so that neither a batch's children nor finished runs are read.
CREATE INDEX runs_toplevel_status_idx ON runs (workspace, status)
	WHERE parent_scorecard_id = '';
