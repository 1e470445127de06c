-- Notification delivery channels (issue 33, beyond the spec): a member
-- subscribes a signed webhook or a Slack-compatible incoming webhook to
-- chosen notification kinds. kinds is ',k1,k2,' ('' for every kind), so one
-- LIKE picks the channels of a kind on both dialects. A channel is enabled
-- while disabled_at is NULL; failures counts consecutive failed deliveries.
-- The secret is sealed by the caller (only the ciphertext is stored).
-- PostgreSQL's 0023 is the same.
CREATE TABLE notification_channels (
	workspace   TEXT NOT NULL,
	id          TEXT NOT NULL,
	owner       TEXT NOT NULL,
	type        TEXT NOT NULL CHECK (type IN ('webhook', 'slack')),
	url         TEXT NOT NULL,
	kinds       TEXT NOT NULL DEFAULT '',
	secret      BLOB,
	failures    INTEGER NOT NULL DEFAULT 0,
	last_error  TEXT NOT NULL DEFAULT '',
	disabled_at TEXT,
	created_at  TEXT NOT NULL,
	PRIMARY KEY (workspace, id)
);
CREATE INDEX notification_channels_owner_idx ON notification_channels (workspace, owner, created_at, id);

-- The delivery outbox: one row per (notification, channel), written in the
-- transaction that stores the notification, drained by the worker, deleted
-- once delivered (or given up). claimed_until is a drainer's lease.
CREATE TABLE notification_deliveries (
	workspace       TEXT NOT NULL,
	notification_id TEXT NOT NULL,
	channel_id      TEXT NOT NULL,
	attempts        INTEGER NOT NULL DEFAULT 0,
	next_at         TEXT NOT NULL,
	claimed_until   TEXT,
	last_error      TEXT NOT NULL DEFAULT '',
	created_at      TEXT NOT NULL,
	PRIMARY KEY (workspace, notification_id, channel_id)
);
CREATE INDEX notification_deliveries_due_idx ON notification_deliveries (next_at);
