-- Events compressed by the service (issue 16), as PostgreSQL's 0020: a
-- pending row and a trajectory written from now on keep their events in
-- events_z, one Snappy block of the same JSON bytes, which the service
-- checks before compressing; SQLite no longer runs json_valid over half a
-- megabyte an export. Rows written before keep events; exactly one of the
-- two is set. SQLite cannot drop a NOT NULL in place, so both tables are
-- rebuilt (its documented procedure: new table, copy, drop, rename).
CREATE TABLE pending_span_batches_0020 (
	workspace   TEXT NOT NULL,
	grp         TEXT NOT NULL,
	seq         INTEGER NOT NULL,
	external    INTEGER NOT NULL DEFAULT 0 CHECK (external IN (0, 1)),
	received_at TEXT NOT NULL,
	spans       INTEGER NOT NULL CHECK (spans > 0),
	keys        TEXT NOT NULL,
	starts      TEXT NOT NULL,
	events      TEXT CHECK (json_valid(events)),
	sizes       TEXT,
	digest      TEXT,
	events_z    BLOB,
	PRIMARY KEY (workspace, grp, seq),
	CHECK ((events IS NULL) <> (events_z IS NULL))
);
INSERT INTO pending_span_batches_0020 (workspace, grp, seq, external, received_at, spans, keys, starts, events, sizes, digest)
	SELECT workspace, grp, seq, external, received_at, spans, keys, starts, events, sizes, digest FROM pending_span_batches;
DROP TABLE pending_span_batches;
ALTER TABLE pending_span_batches_0020 RENAME TO pending_span_batches;
CREATE INDEX pending_span_batches_received_idx ON pending_span_batches (received_at);

CREATE TABLE trajectories_0020 (
	workspace   TEXT NOT NULL,
	run_id      TEXT NOT NULL,
	source      TEXT NOT NULL,
	event_count INTEGER NOT NULL,
	digest      TEXT NOT NULL,
	sealed_at   TEXT NOT NULL,
	audience    TEXT NOT NULL DEFAULT '',
	events      TEXT CHECK (json_valid(events)),
	events_z    BLOB,
	PRIMARY KEY (workspace, run_id),
	CHECK ((events IS NULL) <> (events_z IS NULL))
);
INSERT INTO trajectories_0020 (workspace, run_id, source, event_count, digest, sealed_at, audience, events)
	SELECT workspace, run_id, source, event_count, digest, sealed_at, audience, events FROM trajectories;
DROP TABLE trajectories;
ALTER TABLE trajectories_0020 RENAME TO trajectories;
CREATE INDEX trajectories_workspace_sealed_idx ON trajectories (workspace, sealed_at, run_id);
