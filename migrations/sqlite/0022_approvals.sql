-- Approvals (spec §4.9; issue 33): an agent's call that a policy parks until
-- a person decides. doc holds the call as the agent sent it, who asked and
-- how it settled; the columns are what the queue's reads select on. rev
-- makes UpdateApproval's read-change-write fail rather than lose a
-- concurrent update. PostgreSQL's 0022 is the same.
CREATE TABLE approvals (
	workspace    TEXT NOT NULL,
	id           TEXT NOT NULL,
	status       TEXT NOT NULL,
	agent_id     TEXT NOT NULL,
	conversation TEXT NOT NULL,
	created_at   TEXT NOT NULL,
	rev          INTEGER NOT NULL,
	doc          TEXT NOT NULL CHECK (json_valid(doc)),
	PRIMARY KEY (workspace, id)
);
CREATE INDEX approvals_status_idx ON approvals (workspace, status, created_at);
CREATE INDEX approvals_agent_idx ON approvals (workspace, agent_id, conversation);

-- A workspace's approval policies (GET/PUT /approval-policies).
CREATE TABLE approval_policies (
	workspace  TEXT NOT NULL PRIMARY KEY,
	updated_at TEXT NOT NULL,
	doc        TEXT NOT NULL CHECK (json_valid(doc))
);
