-- Identity and tenancy: API keys, workspace members, invite links, teams.
-- As in 0001, a record is a JSON document plus the columns that queries,
-- constraints or atomic updates need; a value lives in one place only (a
-- column is never copied into the document).

-- API keys. hash is the SHA-256 of the plaintext, which is never stored.
-- doc: label, prefix, roles, scopes, createdBy.
CREATE TABLE api_keys (
	id         text COLLATE "C" PRIMARY KEY,
	workspace  text COLLATE "C" NOT NULL,
	subject    text COLLATE "C" NOT NULL,
	hash       bytea NOT NULL,
	kind       text COLLATE "C" NOT NULL,
	created_at timestamptz NOT NULL,
	doc        jsonb NOT NULL
);
CREATE UNIQUE INDEX api_keys_hash_key ON api_keys (hash);
CREATE INDEX api_keys_workspace_created_idx ON api_keys (workspace, created_at);

-- Workspace memberships. doc: email.
CREATE TABLE members (
	workspace text COLLATE "C" NOT NULL,
	subject   text COLLATE "C" NOT NULL,
	role      text COLLATE "C" NOT NULL,
	added_at  timestamptz NOT NULL,
	doc       jsonb NOT NULL,
	PRIMARY KEY (workspace, subject)
);
-- A subject's memberships in every workspace (workspace selection at sign-in).
CREATE INDEX members_subject_idx ON members (subject, workspace);

-- Reusable invite links. hash is the SHA-256 of the token. accepted_count
-- and revoked_at are columns so that they change in one atomic UPDATE.
-- doc: role, createdBy.
CREATE TABLE invites (
	id             text COLLATE "C" PRIMARY KEY,
	workspace      text COLLATE "C" NOT NULL,
	hash           bytea NOT NULL,
	expires_at     timestamptz NOT NULL,
	revoked_at     timestamptz,
	accepted_count integer NOT NULL DEFAULT 0,
	created_at     timestamptz NOT NULL,
	doc            jsonb NOT NULL
);
CREATE UNIQUE INDEX invites_hash_key ON invites (hash);
CREATE INDEX invites_workspace_created_idx ON invites (workspace, created_at);

-- Teams inside a workspace. doc: name, private, createdBy.
CREATE TABLE teams (
	workspace  text COLLATE "C" NOT NULL,
	id         text COLLATE "C" NOT NULL,
	doc        jsonb NOT NULL,
	created_at timestamptz NOT NULL,
	PRIMARY KEY (workspace, id)
);

-- Team memberships; deleted with the team or the workspace membership.
CREATE TABLE team_members (
	workspace text COLLATE "C" NOT NULL,
	team_id   text COLLATE "C" NOT NULL,
	subject   text COLLATE "C" NOT NULL,
	added_at  timestamptz NOT NULL,
	PRIMARY KEY (workspace, team_id, subject)
);
-- The teams of a subject (TeamsOf, DeleteMember).
CREATE INDEX team_members_subject_idx ON team_members (workspace, subject);
