-- Versioned registries (datasets, harnesses, harness templates, judges,
-- rubrics, runtimes) and the workspace secret store.
--
-- Unlike 0001 and 0002 these tables have no doc column: every field is a
-- column, because reads select parts of a record (a version without its
-- spec, a page of cases) and writes change single fields atomically (tags,
-- origin, deleted_at, team_id). Times are fixed-width TEXT.

-- One row per entity; ownership metadata that is not part of any version.
CREATE TABLE registry_entities (
	kind       TEXT NOT NULL,
	owner      TEXT NOT NULL,
	id         TEXT NOT NULL,
	team_id    TEXT NOT NULL DEFAULT '',
	created_by TEXT NOT NULL DEFAULT '',
	created_at TEXT NOT NULL,
	PRIMARY KEY (kind, owner, id)
);

-- Immutable versions. seq is max(seq) + 1, drawn inside the write
-- transaction (one writer at a time); the unique index makes max cheap.
-- The JSON columns keep the bytes they are given. deleted_at is the
-- tombstone.
CREATE TABLE registry_versions (
	kind       TEXT NOT NULL,
	owner      TEXT NOT NULL,
	id         TEXT NOT NULL,
	version    TEXT NOT NULL,
	digest     TEXT NOT NULL,
	seq        INTEGER NOT NULL,
	spec       TEXT NOT NULL CHECK (json_valid(spec)),
	case_count INTEGER NOT NULL DEFAULT 0,
	tags       TEXT NOT NULL CHECK (json_valid(tags)),
	origin     TEXT CHECK (origin IS NULL OR json_valid(origin)),
	created_by TEXT NOT NULL DEFAULT '',
	created_at TEXT NOT NULL,
	deleted_at TEXT,
	PRIMARY KEY (kind, owner, id, version)
);
CREATE UNIQUE INDEX registry_versions_seq_key ON registry_versions (seq);

-- The cases of dataset versions, one row each, so that large datasets are
-- read a page or a selection at a time.
CREATE TABLE dataset_cases (
	owner      TEXT NOT NULL,
	dataset_id TEXT NOT NULL,
	version    TEXT NOT NULL,
	case_id    TEXT NOT NULL,
	ord        INTEGER NOT NULL,
	digest     TEXT NOT NULL,
	tags       TEXT NOT NULL CHECK (json_valid(tags)),
	doc        TEXT NOT NULL CHECK (json_valid(doc)),
	PRIMARY KEY (owner, dataset_id, version, case_id)
);
CREATE UNIQUE INDEX dataset_cases_ord_key ON dataset_cases (owner, dataset_id, version, ord);

-- One row per (case, tag), for tag selection: a plain indexed table works
-- the same on both dialects, where JSON functions would scan every case.
-- The key leads with the case: a selection walks the cases in ord order and
-- probes each case's tags.
CREATE TABLE dataset_case_tags (
	owner      TEXT NOT NULL,
	dataset_id TEXT NOT NULL,
	version    TEXT NOT NULL,
	case_id    TEXT NOT NULL,
	tag        TEXT NOT NULL,
	PRIMARY KEY (owner, dataset_id, version, case_id, tag)
);

-- Workspace secrets. The value is encrypted by the caller; only the
-- ciphertext is stored.
CREATE TABLE secrets (
	workspace  TEXT NOT NULL,
	name       TEXT NOT NULL,
	ciphertext BLOB NOT NULL,
	created_by TEXT NOT NULL DEFAULT '',
	updated_at TEXT NOT NULL,
	PRIMARY KEY (workspace, name)
);
