-- Pending spans one row per (export, group) rather than one per span
-- (issue 16): PostgreSQL's cost per inserted row bounded the OTLP door.
-- A row holds the events one export brought for one trajectory, in their
-- canonical form, as a JSON array with one event a line ('[' + events
-- joined by ",\n" + ']'; an event holds no raw newline), and beside them
-- the spans' keys and start times as JSON arrays in the same order. A span
-- received twice is kept once: the writer stores only the keys its group
-- does not hold yet (under a per-group lock), and readers keep a key's
-- first row (lowest seq) should two ever hold it. seq orders a group's
-- rows by receipt.
CREATE TABLE pending_span_batches (
	workspace   TEXT NOT NULL,
	grp         TEXT NOT NULL,
	seq         INTEGER NOT NULL,
	external    INTEGER NOT NULL DEFAULT 0 CHECK (external IN (0, 1)),
	received_at TEXT NOT NULL,
	spans       INTEGER NOT NULL CHECK (spans > 0),
	keys        TEXT NOT NULL,
	starts      TEXT NOT NULL,
	events      TEXT NOT NULL CHECK (json_valid(events)),
	PRIMARY KEY (workspace, grp, seq)
);
-- The sweep finds idle groups by their latest row.
CREATE INDEX pending_span_batches_received_idx ON pending_span_batches (received_at);

-- The spans already pending become one row per group, in start order.
INSERT INTO pending_span_batches (workspace, grp, seq, external, received_at, spans, keys, starts, events)
SELECT workspace, grp, 1, max(external), max(received_at), count(*),
	json_group_array(span_key), json_group_array(start_unix_nano),
	'[' || group_concat(replace(event, char(10), ' '), ',' || char(10)) || ']'
FROM (SELECT * FROM pending_spans ORDER BY workspace, grp, start_unix_nano, span_key)
GROUP BY workspace, grp;

DROP TABLE pending_spans;
