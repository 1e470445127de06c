-- Runs and what hangs off them: run logs, sealed trajectories (the owned
-- trace ledger), members' notification feeds, webhook secrets and delivery
-- attempts. Every record is keyed by its workspace first, so a lookup with
-- another tenant's id finds nothing.

-- Runs: the indexed columns plus doc, the whole eval.Run as the caller
-- wrote it (the store never reads inside it). Children of a scorecard carry
-- parent_scorecard_id, case_id, trial and canonical; a top-level run has
-- parent_scorecard_id ''.
CREATE TABLE runs (
	workspace           text COLLATE "C" NOT NULL,
	id                  text COLLATE "C" NOT NULL,
	kind                text COLLATE "C" NOT NULL,
	status              text COLLATE "C" NOT NULL,
	audience            text COLLATE "C" NOT NULL DEFAULT '',
	created_by          text COLLATE "C" NOT NULL DEFAULT '',
	parent_scorecard_id text COLLATE "C" NOT NULL DEFAULT '',
	case_id             text COLLATE "C" NOT NULL DEFAULT '',
	trial               integer NOT NULL DEFAULT 0,
	canonical           boolean NOT NULL DEFAULT false,
	created_at          timestamptz NOT NULL,
	updated_at          timestamptz NOT NULL,
	doc                 jsonb NOT NULL,
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
	workspace text COLLATE "C" NOT NULL,
	run_id    text COLLATE "C" NOT NULL,
	seq       bigint NOT NULL,
	stream    text COLLATE "C" NOT NULL,
	data      text NOT NULL,
	at        timestamptz NOT NULL,
	PRIMARY KEY (workspace, run_id, seq)
);

-- Sealed trajectories. events is json, not jsonb, so that the canonical
-- bytes the digest was computed over come back unchanged (as
-- registry_versions.spec in 0003).
CREATE TABLE trajectories (
	workspace   text COLLATE "C" NOT NULL,
	run_id      text COLLATE "C" NOT NULL,
	source      text COLLATE "C" NOT NULL,
	event_count integer NOT NULL,
	digest      text COLLATE "C" NOT NULL,
	sealed_at   timestamptz NOT NULL,
	audience    text COLLATE "C" NOT NULL DEFAULT '',
	events      json NOT NULL,
	PRIMARY KEY (workspace, run_id)
);
CREATE INDEX trajectories_workspace_sealed_idx ON trajectories (workspace, sealed_at, run_id);

-- Members' notification feeds. id is chosen by the writer, deterministic
-- per cause.
CREATE TABLE notifications (
	workspace  text COLLATE "C" NOT NULL,
	id         text COLLATE "C" NOT NULL,
	recipient  text COLLATE "C" NOT NULL,
	kind       text COLLATE "C" NOT NULL,
	title      text NOT NULL,
	body       text NOT NULL DEFAULT '',
	link       jsonb,
	created_at timestamptz NOT NULL,
	read_at    timestamptz,
	PRIMARY KEY (workspace, id)
);
CREATE INDEX notifications_recipient_created_idx ON notifications (workspace, recipient, created_at, id);

-- One webhook signing secret per workspace, encrypted by the caller.
CREATE TABLE webhook_secrets (
	workspace  text COLLATE "C" PRIMARY KEY,
	ciphertext bytea NOT NULL,
	created_by text COLLATE "C" NOT NULL DEFAULT '',
	rotated_at timestamptz NOT NULL
);

-- Webhook delivery attempts: one row per (message, attempt).
CREATE TABLE webhook_deliveries (
	workspace  text COLLATE "C" NOT NULL,
	message_id text COLLATE "C" NOT NULL,
	attempt    integer NOT NULL,
	run_id     text COLLATE "C" NOT NULL DEFAULT '',
	url        text NOT NULL,
	status     integer NOT NULL DEFAULT 0,
	error      text NOT NULL DEFAULT '',
	at         timestamptz NOT NULL,
	PRIMARY KEY (workspace, message_id, attempt)
);
CREATE INDEX webhook_deliveries_run_idx ON webhook_deliveries (workspace, run_id, at);
