-- Tenants. Records are JSON documents plus the columns that queries need.
-- Times are TEXT in the fixed-width form 2006-01-02T15:04:05.000000Z, so
-- they sort as they compare.
CREATE TABLE workspaces (
	id         TEXT NOT NULL PRIMARY KEY,
	doc        TEXT NOT NULL CHECK (json_valid(doc)),
	created_at TEXT NOT NULL
);

-- The append-only platform event log. seq is the cursor clients poll with;
-- AUTOINCREMENT so that a seq is never reused, as with a PostgreSQL identity.
CREATE TABLE events (
	seq        INTEGER PRIMARY KEY AUTOINCREMENT,
	id         TEXT NOT NULL,
	workspace  TEXT NOT NULL,
	type       TEXT NOT NULL,
	subject    TEXT NOT NULL DEFAULT '',
	created_at TEXT NOT NULL,
	doc        TEXT NOT NULL CHECK (json_valid(doc))
);
CREATE UNIQUE INDEX events_id_key ON events (id);
CREATE INDEX events_workspace_seq_idx ON events (workspace, seq);
CREATE INDEX events_workspace_type_seq_idx ON events (workspace, type, seq);
