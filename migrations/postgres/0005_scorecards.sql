-- Batches (scorecards and experiments), their timelines, and the outcome of
-- a run, which batch progress counts. Every record is keyed by its
-- workspace first, so a lookup with another tenant's id finds nothing.

-- Batches: the indexed columns plus doc, the whole eval.Scorecard as the
-- caller wrote it (the store never reads inside it). version counts writes:
-- a put names the version it read and fails when another write came
-- between (optimistic concurrency).
CREATE TABLE scorecards (
	workspace  text COLLATE "C" NOT NULL,
	id         text COLLATE "C" NOT NULL,
	kind       text COLLATE "C" NOT NULL,
	status     text COLLATE "C" NOT NULL,
	dataset_id text COLLATE "C" NOT NULL DEFAULT '',
	harness_id text COLLATE "C" NOT NULL DEFAULT '',
	created_by text COLLATE "C" NOT NULL DEFAULT '',
	doc        jsonb NOT NULL,
	version    bigint NOT NULL,
	created_at timestamptz NOT NULL,
	updated_at timestamptz NOT NULL,
	PRIMARY KEY (workspace, id)
);
-- Listing newest first (the cursor's order), with or without the kind and
-- status filters, which leave few batches out.
CREATE INDEX scorecards_workspace_created_idx ON scorecards (workspace, created_at, id);
-- A dataset's or a harness's batches, newest first: selective filters that
-- must not walk the whole workspace.
CREATE INDEX scorecards_dataset_created_idx ON scorecards (workspace, dataset_id, created_at, id);
CREATE INDEX scorecards_harness_created_idx ON scorecards (workspace, harness_id, created_at, id);

-- A batch's timeline. seq is drawn by the store, from 1 per batch, inside
-- the appending transaction; step_key, when not '', makes a retried append
-- add nothing.
CREATE TABLE scorecard_steps (
	workspace    text COLLATE "C" NOT NULL,
	scorecard_id text COLLATE "C" NOT NULL,
	seq          bigint NOT NULL,
	step_key     text COLLATE "C" NOT NULL DEFAULT '',
	ts           timestamptz NOT NULL,
	phase        text COLLATE "C" NOT NULL,
	status       text COLLATE "C" NOT NULL,
	message      text NOT NULL DEFAULT '',
	case_id      text COLLATE "C" NOT NULL DEFAULT '',
	PRIMARY KEY (workspace, scorecard_id, seq)
);
CREATE UNIQUE INDEX scorecard_steps_key ON scorecard_steps (workspace, scorecard_id, step_key) WHERE step_key <> '';

-- A finished run's verdict: pass, fail, error or cancelled; '' while it runs.
-- Batch progress counts a batch's canonical children by status and outcome
-- through runs_canonical_key (0004), which holds exactly those runs; an
-- index on status and outcome would make every run update that changes
-- them a non-HOT update on PostgreSQL, for a read of a few pages.
ALTER TABLE runs ADD COLUMN outcome text COLLATE "C" NOT NULL DEFAULT '';
