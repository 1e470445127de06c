-- Pull ingest and trace sources (spec §4.2, §4.5; issue 16, points 6 and 7).

-- A workspace's named connections to its observability platforms
-- (Langfuse, LangSmith, Phoenix, MLflow, an OTLP-JSON trace query API).
-- doc holds the kind, endpoint, project, correlation, span attribute
-- mapping and the NAME of the workspace secret with the credential, never
-- a credential.
CREATE TABLE trace_sources (
	workspace  TEXT NOT NULL,
	name       TEXT NOT NULL,
	updated_at TEXT NOT NULL,
	doc        TEXT NOT NULL CHECK (json_valid(doc)),
	PRIMARY KEY (workspace, name)
);

-- What a pulled batch's child run reads (POST /scorecards/ingest/pull):
-- the source as it was at submit and the platform's id of the trace. The
-- case activity fetches it, seals it in the ledger under run_id and
-- grades it; a retried attempt reads the same row.
CREATE TABLE trace_pulls (
	workspace    TEXT NOT NULL,
	run_id       TEXT NOT NULL,
	scorecard_id TEXT NOT NULL,
	created_at   TEXT NOT NULL,
	doc          TEXT NOT NULL CHECK (json_valid(doc)),
	PRIMARY KEY (workspace, run_id)
);
