-- Tenants. Records are JSON documents plus the columns that queries need.
-- Text keys use the "C" collation so that ORDER BY id is byte order, as it is
-- on SQLite, whatever the database's default collation.
CREATE TABLE workspaces (
	id         text COLLATE "C" PRIMARY KEY,
	doc        jsonb NOT NULL,
	created_at timestamptz NOT NULL
);

-- The append-only platform event log. seq is the cursor clients poll with.
CREATE TABLE events (
	seq        bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
	id         text COLLATE "C" NOT NULL,
	workspace  text COLLATE "C" NOT NULL,
	type       text COLLATE "C" NOT NULL,
	subject    text COLLATE "C" NOT NULL DEFAULT '',
	created_at timestamptz NOT NULL,
	doc        jsonb NOT NULL
);
-- Named unique index (not an inline UNIQUE) so both dialects carry the same
-- index name and AppendEvent's ON CONFLICT (id) has its arbiter.
CREATE UNIQUE INDEX events_id_key ON events (id);
CREATE INDEX events_workspace_seq_idx ON events (workspace, seq);
CREATE INDEX events_workspace_type_seq_idx ON events (workspace, type, seq);
