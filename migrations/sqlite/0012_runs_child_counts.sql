-- A batch's progress counts its canonical children by status and outcome
-- (ChildRunCounts), on every light read of a running batch. Through
-- runs_canonical_key that reads each child's row: 190 ms a count at
-- 100,000 children on SQLite, so a poll every 2 s took a tenth of a core.
-- This index holds what the count reads, so the count reads it alone.
-- (0005 declined such an index to keep run updates HOT on PostgreSQL;
-- runs_scorecard_updated_idx, since 0009, holds updated_at, which every
-- run update changes, so they are not HOT either way.)
CREATE INDEX runs_child_counts_idx ON runs (workspace, parent_scorecard_id, status, outcome, created_at)
	WHERE canonical AND parent_scorecard_id <> '';

-- GET /runs?scorecardId= lists a batch's children newest first
-- (ListRuns: created_at DESC, id DESC), a page at a time by that cursor.
-- Without an index in that order PostgreSQL sorted every child of the
-- batch for each page: 62 ms a page of 100 at 100,000 children.
CREATE INDEX runs_scorecard_created_idx ON runs (workspace, parent_scorecard_id, created_at, id)
	WHERE parent_scorecard_id <> '';
