-- A batch's children by the time they last changed. The detail read
-- (GET /scorecards/:id, polled while a batch runs) keeps the children it
-- has read: ChildRunsUpdatedAt (max(updated_at)) tells it whether any
-- changed, ListChildRunStates which ones, and it reads the documents of
-- those only. The index holds every column those two read, so that they
-- read no row: a child's row holds its document, a page or more. Partial,
-- as runs_canonical_key: top-level runs are never read this way.
CREATE INDEX runs_scorecard_updated_idx ON runs
	(workspace, parent_scorecard_id, updated_at, id, status, outcome, audience, canonical, created_at)
	WHERE parent_scorecard_id <> '';
