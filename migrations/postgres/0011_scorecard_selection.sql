-- A batch's selection, kept apart from its record: the case ids it runs
-- and the manifest's per-case digests (JSON {caseIds, cases,
-- gradingCases}). It grows with the batch (about 20 MB at 100,000 cases)
-- and never changes after the submit, while the record (doc) is read by
-- every poll and rewritten at start, cancel, finish and scoring: kept in
-- doc, each of those would decode and re-encode the whole selection.
-- NULL for a batch whose record still carries it (written before this
-- migration) and for one without a selection.
ALTER TABLE scorecards ADD COLUMN selection text;
