-- Identity fixes of issue 11.

-- Removed members. DELETE /members/:subject leaves a tombstone so that the
-- lazy promotion of a token's workspace claim (spec §5.6) does not make the
-- person a member again on their next request; accepting an invite clears
-- it. doc: removedBy. Times are fixed-width TEXT.
CREATE TABLE member_removals (
	workspace  TEXT NOT NULL,
	subject    TEXT NOT NULL,
	removed_at TEXT NOT NULL,
	doc        TEXT NOT NULL CHECK (json_valid(doc)),
	PRIMARY KEY (workspace, subject)
);

-- Keys minted by /internal/tenant-keys now act as their own subject
-- "key:<id>", which no person can hold. Keys stored with the old shared
-- subject "operator" (tenant keys, and the keys they minted) become their own
-- subject too: "operator" could be taken by an OIDC token, and it made every
-- tenant's key the same principal.
UPDATE api_keys SET subject = 'key:' || id WHERE subject = 'operator';
