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
ALTER TABLE pending_span_batches ADD COLUMN sizes TEXT;
ALTER TABLE pending_span_batches ADD COLUMN digest TEXT;
