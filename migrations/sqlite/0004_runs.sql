-- Runs and what hangs off them: run logs, sealed trajectories (the owned
-- trace ledger), members' notification feeds, webhook secrets and delivery
-- attempts. Every record is keyed by its workspace first, so a lookup with
-- another tenant's id finds nothing. Times are fixed-width TEXT; booleans
-- are INTEGER 0 or 1.

-- Runs: the indexed columns plus doc, the whole eval.Run as the caller
-- wrote it (the store never reads inside it). Children of a scorecard carry
-- parent_scorecard_id, case_id, trial and canonical; a top-level run has
-- parent_scorecard_id ''.
CREATE TABLE runs (
	workspace           TEXT NOT NULL,
	id                  TEXT NOT NULL,
	kind                TEXT NOT NULL,
	status              TEXT NOT NULL,
	audience            TEXT NOT NULL DEFAULT '',
	created_by          TEXT NOT NULL DEFAULT '',
	parent_scorecard_id TEXT NOT NULL DEFAULT '',
	case_id             TEXT NOT NULL DEFAULT '',
	trial               INTEGER NOT NULL DEFAULT 0,
	canonical           INTEGER NOT NULL DEFAULT 0 CHECK (canonical IN (0, 1)),
	created_at          TEXT NOT NULL,
	updated_at          TEXT NOT NULL,
	doc                 TEXT NOT NULL CHECK (json_valid(doc)),
	PRIMARY KEY (workspace, id)
);
-- Listing with children (newest first, the cursor's order).
CREATE INDEX runs_workspace_created_idx ON runs (workspace, created_at, id);
-- The default listing and CountRuns read top-level runs only: a partial
-- index keeps them from walking past thousands of scorecard children.
CREATE INDEX runs_toplevel_created_idx ON runs (workspace, created_at, id) WHERE parent_scorecard_id = '';
-- A scorecard's children by case and trial.
CREATE INDEX runs_scorecard_case_idx ON runs (workspace, parent_scorecard_id, case_id, trial);
-- At most one canonical child per scorecard slot (case, trial), so that a
-- retried or raced dispatch cannot make two runs count for one trial.
CREATE UNIQUE INDEX runs_canonical_key ON runs (workspace, parent_scorecard_id, case_id, trial)
	WHERE canonical AND parent_scorecard_id <> '';

-- Run logs: stdout, stderr and system chunks, in seq order per run.
CREATE TABLE run_logs (
	workspace TEXT NOT NULL,
	run_id    TEXT NOT NULL,
	seq       INTEGER NOT NULL,
	stream    TEXT NOT NULL,
	data      TEXT NOT NULL,
	at        TEXT NOT NULL,
	PRIMARY KEY (workspace, run_id, seq)
);

-- Sealed trajectories. events keeps the bytes it is given, so the digest
-- still matches them on read.
CREATE TABLE trajectories (
	workspace   TEXT NOT NULL,
	run_id      TEXT NOT NULL,
	source      TEXT NOT NULL,
	event_count INTEGER NOT NULL,
	digest      TEXT NOT NULL,
	sealed_at   TEXT NOT NULL,
	audience    TEXT NOT NULL DEFAULT '',
	events      TEXT NOT NULL CHECK (json_valid(events)),
	PRIMARY KEY (workspace, run_id)
);
CREATE INDEX trajectories_workspace_sealed_idx ON trajectories (workspace, sealed_at, run_id);

-- Members' notification feeds. id is chosen by the writer, deterministic
-- per cause.
CREATE TABLE notifications (
	workspace  TEXT NOT NULL,
	id         TEXT NOT NULL,
	recipient  TEXT NOT NULL,
	kind       TEXT NOT NULL,
	title      TEXT NOT NULL,
	body       TEXT NOT NULL DEFAULT '',
	link       TEXT CHECK (link IS NULL OR json_valid(link)),
	created_at TEXT NOT NULL,
	read_at    TEXT,
	PRIMARY KEY (workspace, id)
);
CREATE INDEX notifications_recipient_created_idx ON notifications (workspace, recipient, created_at, id);

-- One webhook signing secret per workspace, encrypted by the caller.
CREATE TABLE webhook_secrets (
	workspace  TEXT NOT NULL PRIMARY KEY,
	ciphertext BLOB NOT NULL,
	created_by TEXT NOT NULL DEFAULT '',
	rotated_at TEXT NOT NULL
);

-- Webhook delivery attempts: one row per (message, attempt).
CREATE TABLE webhook_deliveries (
	workspace  TEXT NOT NULL,
	message_id TEXT NOT NULL,
	attempt    INTEGER NOT NULL,
	run_id     TEXT NOT NULL DEFAULT '',
	url        TEXT NOT NULL,
	status     INTEGER NOT NULL DEFAULT 0,
	error      TEXT NOT NULL DEFAULT '',
	at         TEXT NOT NULL,
	PRIMARY KEY (workspace, message_id, attempt)
);
CREATE INDEX webhook_deliveries_run_idx ON webhook_deliveries (workspace, run_id, at);
