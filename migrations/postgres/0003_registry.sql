-- Versioned registries (datasets, harnesses, harness templates, judges,
-- rubrics, runtimes) and the workspace secret store.
--
-- Unlike 0001 and 0002 these tables have no doc column: every field is a
-- column, because reads select parts of a record (a version without its
-- spec, a page of cases) and writes change single fields atomically (tags,
-- origin, deleted_at, team_id).

-- One row per entity; ownership metadata that is not part of any version.
CREATE TABLE registry_entities (
	kind       text COLLATE "C" NOT NULL,
	owner      text COLLATE "C" NOT NULL,
	id         text COLLATE "C" NOT NULL,
	team_id    text COLLATE "C" NOT NULL DEFAULT '',
	created_by text COLLATE "C" NOT NULL DEFAULT '',
	created_at timestamptz NOT NULL,
	PRIMARY KEY (kind, owner, id)
);

-- seq is drawn from a sequence, not max(seq) + 1: concurrent SERIALIZABLE
-- registrations would otherwise draw the same number and fail.
CREATE SEQUENCE registry_seq AS bigint;

-- Immutable versions. spec is json, not jsonb, so that the canonical bytes
-- the digest was computed over come back unchanged (jsonb reorders keys).
-- deleted_at is the tombstone.
CREATE TABLE registry_versions (
	kind       text COLLATE "C" NOT NULL,
	owner      text COLLATE "C" NOT NULL,
	id         text COLLATE "C" NOT NULL,
	version    text COLLATE "C" NOT NULL,
	digest     text COLLATE "C" NOT NULL,
	seq        bigint NOT NULL,
	spec       json NOT NULL,
	case_count integer NOT NULL DEFAULT 0,
	tags       jsonb NOT NULL,
	origin     jsonb,
	created_by text COLLATE "C" NOT NULL DEFAULT '',
	created_at timestamptz NOT NULL,
	deleted_at timestamptz,
	PRIMARY KEY (kind, owner, id, version)
);
CREATE UNIQUE INDEX registry_versions_seq_key ON registry_versions (seq);

-- The cases of dataset versions, one row each, so that large datasets are
-- read a page or a selection at a time. doc is json for the same reason as
-- spec.
CREATE TABLE dataset_cases (
	owner      text COLLATE "C" NOT NULL,
	dataset_id text COLLATE "C" NOT NULL,
	version    text COLLATE "C" NOT NULL,
	case_id    text COLLATE "C" NOT NULL,
	ord        integer NOT NULL,
	digest     text COLLATE "C" NOT NULL,
	tags       jsonb NOT NULL,
	doc        json NOT NULL,
	PRIMARY KEY (owner, dataset_id, version, case_id)
);
CREATE UNIQUE INDEX dataset_cases_ord_key ON dataset_cases (owner, dataset_id, version, ord);

-- One row per (case, tag), for tag selection: a plain indexed table works
-- the same on both dialects, where JSON containment would need a GIN index
-- on PostgreSQL and a scan through json_each on SQLite. The key leads with
-- the case, so a selection walks the cases in ord order and probes each
-- case's tags: one index lookup per case whatever the planner's statistics
-- (a tag-first key let PostgreSQL pick a nested loop over every tag row on
-- a freshly loaded, unanalysed dataset: 300 ms instead of 3).
CREATE TABLE dataset_case_tags (
	owner      text COLLATE "C" NOT NULL,
	dataset_id text COLLATE "C" NOT NULL,
	version    text COLLATE "C" NOT NULL,
	case_id    text COLLATE "C" NOT NULL,
	tag        text COLLATE "C" NOT NULL,
	PRIMARY KEY (owner, dataset_id, version, case_id, tag)
);

-- Workspace secrets. The value is encrypted by the caller; only the
-- ciphertext is stored.
CREATE TABLE secrets (
	workspace  text COLLATE "C" NOT NULL,
	name       text COLLATE "C" NOT NULL,
	ciphertext bytea NOT NULL,
	created_by text COLLATE "C" NOT NULL DEFAULT '',
	updated_at timestamptz NOT NULL,
	PRIMARY KEY (workspace, name)
);
