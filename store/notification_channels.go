package store

import (
	"context"
	"time"
)

// Notification channel types.
const (
	// ChannelWebhook is a Standard Webhooks endpoint signed with the
	// channel's own secret.
	ChannelWebhook = "webhook"
	// ChannelSlack is a Slack-compatible incoming-webhook URL: a POST of
	// {"text": ...}.
	ChannelSlack = "slack"
)

// NotificationChannel is a member's delivery channel: where notifications
// of chosen kinds are sent beyond the feed (issue 33, beyond the spec).
type NotificationChannel struct {
	ID        string `json:"id"`
	Workspace string `json:"-"`
	Owner     string `json:"owner"` // the member (subject) whose feed it mirrors
	Type      string `json:"type"`  // ChannelWebhook or ChannelSlack
	URL       string `json:"url"`
	// Kinds are the notification kinds sent; empty means every kind.
	Kinds []string `json:"kinds"`
	// Secret is the sealed signing secret of a webhook channel; never
	// encoded.
	Secret []byte `json:"-"`
	// Failures counts consecutive failed deliveries; a success resets it.
	Failures   int        `json:"failures"`
	LastError  string     `json:"lastError,omitempty"`
	DisabledAt *time.Time `json:"disabledAt,omitempty"`
	CreatedAt  time.Time  `json:"createdAt"`
}

// NotificationDelivery is one outbox row: a notification still to be sent
// to one channel.
type NotificationDelivery struct {
	Workspace      string
	NotificationID string
	ChannelID      string
	Attempts       int // attempts made so far
	NextAt         time.Time
	LastError      string
}

// NotificationChannels stores members' delivery channels and the outbox
// of their deliveries. AddNotification (Notifications) queues a delivery
// for every enabled channel of the recipient subscribed to the kind, in
// the same transaction as the notification.
type NotificationChannels interface {
	// CreateNotificationChannel inserts c; an existing id is ErrConflict.
	// CreatedAt is set by the store when zero.
	CreateNotificationChannel(ctx context.Context, c NotificationChannel) (NotificationChannel, error)
	// GetNotificationChannel returns one channel or ErrNotFound.
	GetNotificationChannel(ctx context.Context, workspace, id string) (NotificationChannel, error)
	// ListNotificationChannels returns owner's channels, oldest first.
	ListNotificationChannels(ctx context.Context, workspace, owner string) ([]NotificationChannel, error)
	// DeleteNotificationChannel removes owner's channel id and its queued
	// deliveries; another owner's or an absent one is ErrNotFound.
	DeleteNotificationChannel(ctx context.Context, workspace, owner, id string) error
	// EnableNotificationChannel re-enables owner's channel id (clearing
	// its failure count); another owner's or an absent one is ErrNotFound.
	EnableNotificationChannel(ctx context.Context, workspace, owner, id string) (NotificationChannel, error)
	// RecordChannelResult resets the channel's failure count on success or
	// increments it and stores errText on failure; it returns the channel
	// as updated.
	RecordChannelResult(ctx context.Context, workspace, id string, ok bool, errText string) (NotificationChannel, error)
	// DisableNotificationChannel disables an enabled channel at `at` and
	// drops its queued deliveries; changed is false when it was already
	// disabled (so one disabling is announced once).
	DisableNotificationChannel(ctx context.Context, workspace, id string, at time.Time) (changed bool, err error)
	// ClaimNotificationDeliveries leases up to limit deliveries due at now
	// (NextAt <= now, no live lease) until now+lease, oldest first, across
	// workspaces: the worker's drain.
	ClaimNotificationDeliveries(ctx context.Context, now time.Time, lease time.Duration, limit int) ([]NotificationDelivery, error)
	// RetryNotificationDelivery records a failed attempt of d and makes it
	// due again at d.NextAt (releasing the lease).
	RetryNotificationDelivery(ctx context.Context, d NotificationDelivery) error
	// DeleteNotificationDelivery removes a delivery (sent or given up);
	// absent is not an error.
	DeleteNotificationDelivery(ctx context.Context, workspace, notificationID, channelID string) error
	// GetNotification returns one notification of a workspace (what a
	// delivery sends), or ErrNotFound once it is deleted.
	GetNotification(ctx context.Context, workspace, id string) (Notification, error)
	// ListNotificationDeliveries returns a workspace's queued deliveries,
	// oldest first (for tests and operators).
	ListNotificationDeliveries(ctx context.Context, workspace string) ([]NotificationDelivery, error)
	// SweepApprovalNotifications deletes (never marks read), across
	// workspaces, every notification of kind (agent_approval_requested)
	// that no pending approval of its workspace names as its Notification:
	// its approval was decided or expired by a path that did not delete
	// it, or is gone. It returns how many it deleted. A row with a pending
	// approval stays, even when other approvals naming it settled.
	SweepApprovalNotifications(ctx context.Context, kind string) (deleted int, err error)
}
