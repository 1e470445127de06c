-- Approvals (spec §4.9; issue 33): an agent's call that a policy parks until
-- a person decides. doc holds the call as the agent sent it, who asked and
-- how it settled; the columns are what the queue's reads select on. rev
-- makes UpdateApproval's read-change-write fail rather than lose a
-- concurrent update. SQLite's 0022 is the same.
CREATE TABLE approvals (
	workspace    text COLLATE "C" NOT NULL,
	id           text COLLATE "C" NOT NULL,
	status       text COLLATE "C" NOT NULL,
	agent_id     text COLLATE "C" NOT NULL,
	conversation text COLLATE "C" NOT NULL,
	created_at   timestamptz NOT NULL,
	rev          bigint NOT NULL,
	doc          jsonb NOT NULL,
	PRIMARY KEY (workspace, id)
);
CREATE INDEX approvals_status_idx ON approvals (workspace, status, created_at);
CREATE INDEX approvals_agent_idx ON approvals (workspace, agent_id, conversation);

-- A workspace's approval policies (GET/PUT /approval-policies).
CREATE TABLE approval_policies (
	workspace  text COLLATE "C" NOT NULL PRIMARY KEY,
	updated_at timestamptz NOT NULL,
	doc        jsonb NOT NULL
);
