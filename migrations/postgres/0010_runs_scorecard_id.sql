-- A batch's children in id order. A scoring pass and the paged detail
-- read walk a batch by keyset pages (ListChildRunPage: id > cursor ORDER
-- BY id LIMIT n); with this index a page range-scans from its cursor and
-- reads only its own rows, instead of every child of the batch. Partial,
-- as runs_scorecard_updated_idx: top-level runs are never read this way.
CREATE INDEX runs_scorecard_id_idx ON runs (workspace, parent_scorecard_id, id)
	WHERE parent_scorecard_id <> '';
