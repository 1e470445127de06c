-- Frozen analysis bundles: one per scoring revision of a batch, written
-- once when the revision is appended and never changed. Keyed by the
-- workspace first, so a lookup with another tenant's id finds nothing.
-- doc keeps the bytes it is given, so the digest still matches them on
-- read. The primary key also serves "the latest revision" (revision DESC
-- LIMIT 1). Times are fixed-width TEXT.
CREATE TABLE analyses (
	workspace    TEXT NOT NULL,
	scorecard_id TEXT NOT NULL,
	revision     INTEGER NOT NULL CHECK (revision >= 1),
	digest       TEXT NOT NULL,
	doc          TEXT NOT NULL CHECK (json_valid(doc)),
	created_at   TEXT NOT NULL,
	PRIMARY KEY (workspace, scorecard_id, revision)
);
