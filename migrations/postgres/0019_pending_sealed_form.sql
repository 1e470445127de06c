-- Pending rows in the form they are sealed in (issue 16): a row written
-- from now on keeps its events as the trajectory they would make on their
-- own ('[' + events joined by ',' + ']', no newline between them) and
-- each event's length in bytes in sizes (a JSON array, in order), which is
-- how readers split them. When the writer says every event is already as
-- a trajectory keeps it and every span has a start time (so the row's
-- order is the trajectory's), digest is the digest of those bytes: the
-- sweep then seals a group held in one such row inside the database,
-- without reading its events out. Rows written before keep sizes NULL and
-- one event a line (0017), and are sealed as before.
ALTER TABLE pending_span_batches ADD COLUMN sizes text;
ALTER TABLE pending_span_batches ADD COLUMN digest text;

-- keys, starts and sizes are tens of kilobytes a row too; pglz, the
-- default, was a tenth of PostgreSQL's time on the door (0017 moved only
-- events to lz4). A server built without lz4 keeps pglz.
DO $$
BEGIN
	ALTER TABLE pending_span_batches ALTER COLUMN keys SET COMPRESSION lz4;
	ALTER TABLE pending_span_batches ALTER COLUMN starts SET COMPRESSION lz4;
	ALTER TABLE pending_span_batches ALTER COLUMN sizes SET COMPRESSION lz4;
EXCEPTION WHEN feature_not_supported THEN
	NULL;
END $$;
