-- Events compressed by the service (issue 16). PostgreSQL took a `json`
-- parameter of an export's events (half a megabyte for 1,000 spans) by
-- copying it twice and lexing it, a fifth of the machine on the OTLP
-- door. A pending row and a trajectory written from now on keep their
-- events in events_z instead: the same bytes, compressed by the service
-- as one Snappy block (github.com/google/snappy's format_description.txt),
-- sent and stored as they are (STORAGE EXTERNAL: PostgreSQL does not try
-- to compress them again). The service checks the JSON before
-- compressing it; digests are of the uncompressed bytes, unchanged. Rows
-- written before keep events and are read as before; exactly one of the
-- two columns is set. SQLite's 0020 does the same.
ALTER TABLE pending_span_batches ADD COLUMN events_z bytea;
ALTER TABLE pending_span_batches ALTER COLUMN events_z SET STORAGE EXTERNAL;
ALTER TABLE pending_span_batches ALTER COLUMN events DROP NOT NULL;
ALTER TABLE pending_span_batches ADD CONSTRAINT pending_span_batches_one_events
	CHECK ((events IS NULL) <> (events_z IS NULL));

ALTER TABLE trajectories ADD COLUMN events_z bytea;
ALTER TABLE trajectories ALTER COLUMN events_z SET STORAGE EXTERNAL;
ALTER TABLE trajectories ALTER COLUMN events DROP NOT NULL;
-- NOT VALID: every row written before has events; checking them would
-- read the whole table under a lock.
ALTER TABLE trajectories ADD CONSTRAINT trajectories_one_events
	CHECK ((events IS NULL) <> (events_z IS NULL)) NOT VALID;
