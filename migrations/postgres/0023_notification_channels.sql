-- Notification delivery channels (issue 33, beyond the spec): a member
-- subscribes a signed webhook or a Slack-compatible incoming webhook to
-- chosen notification kinds. kinds is ',k1,k2,' ('' for every kind), so one
-- LIKE picks the channels of a kind on both dialects. A channel is enabled
-- while disabled_at is NULL; failures counts consecutive failed deliveries.
-- The secret is sealed by the caller (only the ciphertext is stored).
-- SQLite's 0023 is the same.
CREATE TABLE notification_channels (
	workspace   text COLLATE "C" NOT NULL,
	id          text COLLATE "C" NOT NULL,
	owner       text COLLATE "C" NOT NULL,
	type        text COLLATE "C" NOT NULL CHECK (type IN ('webhook', 'slack')),
	url         text NOT NULL,
	kinds       text COLLATE "C" NOT NULL DEFAULT '',
	secret      bytea,
	failures    integer NOT NULL DEFAULT 0,
	last_error  text NOT NULL DEFAULT '',
	disabled_at timestamptz,
	created_at  timestamptz NOT NULL,
	PRIMARY KEY (workspace, id)
);
CREATE INDEX notification_channels_owner_idx ON notification_channels (workspace, owner, created_at, id);

-- The delivery outbox: one row per (notification, channel), written in the
-- transaction that stores the notification, drained by the worker, deleted
-- once delivered (or given up). claimed_until is a drainer's lease.
CREATE TABLE notification_deliveries (
	workspace       text COLLATE "C" NOT NULL,
	notification_id text COLLATE "C" NOT NULL,
	channel_id      text COLLATE "C" NOT NULL,
	attempts        integer NOT NULL DEFAULT 0,
	next_at         timestamptz NOT NULL,
	claimed_until   timestamptz,
	last_error      text NOT NULL DEFAULT '',
	created_at      timestamptz NOT NULL,
	PRIMARY KEY (workspace, notification_id, channel_id)
);
CREATE INDEX notification_deliveries_due_idx ON notification_deliveries (next_at);
