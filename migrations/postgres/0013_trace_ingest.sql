-- The OTLP door (spec §4.2, issue 16): spans received and not yet sealed,
-- the hourly usage its quota counts, the workspace's trace settings and
-- the per-harness span attribute mapping overlays.

-- A span waits here, normalised to its TraceEvent, until the trajectory
-- of its group is sealed: a run's when the run ends, an external one
-- after an idle window (the trace sweep). (workspace, grp, span_key) is
-- unique so a retried export stores nothing twice.
CREATE TABLE pending_spans (
	workspace       text COLLATE "C" NOT NULL,
	grp             text COLLATE "C" NOT NULL,
	span_key        text COLLATE "C" NOT NULL,
	external        boolean NOT NULL DEFAULT false,
	start_unix_nano bigint NOT NULL,
	received_at     timestamptz NOT NULL,
	event           json NOT NULL,
	PRIMARY KEY (workspace, grp, span_key)
);
-- The sweep finds idle groups by their latest span.
CREATE INDEX pending_spans_received_idx ON pending_spans (received_at);

-- Events ingested per workspace and hour (window is the hour's start).
CREATE TABLE trace_usage (
	workspace text COLLATE "C" NOT NULL,
	window_start timestamptz NOT NULL,
	events    bigint NOT NULL,
	PRIMARY KEY (workspace, window_start)
);

-- A workspace's trace ingestion settings and thresholds.
CREATE TABLE trace_settings (
	workspace  text COLLATE "C" NOT NULL PRIMARY KEY,
	updated_at timestamptz NOT NULL,
	doc        jsonb NOT NULL
);

-- Per-harness span attribute mapping overlays (harness id of the workspace).
CREATE TABLE span_attr_mappings (
	workspace  text COLLATE "C" NOT NULL,
	harness_id text COLLATE "C" NOT NULL,
	updated_at timestamptz NOT NULL,
	doc        jsonb NOT NULL,
	PRIMARY KEY (workspace, harness_id)
);
