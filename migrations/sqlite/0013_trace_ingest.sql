-- The OTLP door (spec §4.2, issue 16): spans received and not yet sealed,
-- the hourly usage its quota counts, the workspace's trace settings and
-- the per-harness span attribute mapping overlays.

-- A span waits here, normalised to its TraceEvent, until the trajectory
-- of its group is sealed: a run's when the run ends, an external one
-- after an idle window (the trace sweep). (workspace, grp, span_key) is
-- unique so a retried export stores nothing twice.
CREATE TABLE pending_spans (
	workspace       TEXT NOT NULL,
	grp             TEXT NOT NULL,
	span_key        TEXT NOT NULL,
	external        INTEGER NOT NULL DEFAULT 0 CHECK (external IN (0, 1)),
	start_unix_nano INTEGER NOT NULL,
	received_at     TEXT NOT NULL,
	event           TEXT NOT NULL CHECK (json_valid(event)),
	PRIMARY KEY (workspace, grp, span_key)
);
-- The sweep finds idle groups by their latest span.
CREATE INDEX pending_spans_received_idx ON pending_spans (received_at);

-- Events ingested per workspace and hour (window is the hour's start).
CREATE TABLE trace_usage (
	workspace TEXT NOT NULL,
	window_start TEXT NOT NULL,
	events    INTEGER NOT NULL,
	PRIMARY KEY (workspace, window_start)
);

-- A workspace's trace ingestion settings and thresholds.
CREATE TABLE trace_settings (
	workspace  TEXT NOT NULL PRIMARY KEY,
	updated_at TEXT NOT NULL,
	doc        TEXT NOT NULL CHECK (json_valid(doc))
);

-- Per-harness span attribute mapping overlays (harness id of the workspace).
CREATE TABLE span_attr_mappings (
	workspace  TEXT NOT NULL,
	harness_id TEXT NOT NULL,
	updated_at TEXT NOT NULL,
	doc        TEXT NOT NULL CHECK (json_valid(doc)),
	PRIMARY KEY (workspace, harness_id)
);
