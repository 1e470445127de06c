-- Frozen analysis bundles: one per scoring revision of a batch, written
-- once when the revision is appended and never changed. Keyed by the
-- workspace first, so a lookup with another tenant's id finds nothing.
-- doc is json, not jsonb, so that the bytes the digest was computed over
-- come back unchanged (as trajectories.events in 0004). The primary key
-- also serves "the latest revision" (revision DESC LIMIT 1).
CREATE TABLE analyses (
	workspace    text COLLATE "C" NOT NULL,
	scorecard_id text COLLATE "C" NOT NULL,
	revision     integer NOT NULL CHECK (revision >= 1),
	digest       text COLLATE "C" NOT NULL,
	doc          json NOT NULL,
	created_at   timestamptz NOT NULL,
	PRIMARY KEY (workspace, scorecard_id, revision)
);
