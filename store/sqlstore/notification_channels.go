package sqlstore

import (
	"context"
	"strings"
	"time"

	"svc/internal/platform/derrors"
	"svc/store"
)

// Channel URLs never appear in errors: an incoming-webhook URL is its own
// credential.

// channelColumns are the columns scanChannel reads, in its order.
const channelColumns = `workspace, id, owner, type, url, kinds, secret, failures, last_error, disabled_at, created_at`

// joinKinds is kinds as the kinds column holds them: ",k1,k2," or "" for
// every kind.
func joinKinds(kinds []string) string {
	if len(kinds) == 0 {
		return ""
	}
	return "," + strings.Join(kinds, ",") + ","
}

func scanChannel(r rowScanner) (store.NotificationChannel, error) {
	var c store.NotificationChannel
	var kinds string
	var disabled, created dbTime
	if err := r.Scan(&c.Workspace, &c.ID, &c.Owner, &c.Type, &c.URL, &kinds, &c.Secret, &c.Failures, &c.LastError, &disabled, &created); err != nil {
		return store.NotificationChannel{}, err
	}
	c.Kinds = []string{}
	if k := strings.Trim(kinds, ","); k != "" {
		c.Kinds = strings.Split(k, ",")
	}
	if disabled.Valid {
		c.DisabledAt = &disabled.Time
	}
	c.CreatedAt = created.Time
	return c, nil
}

// CreateNotificationChannel inserts a channel; see store.NotificationChannels.
func (o ops) CreateNotificationChannel(ctx context.Context, c store.NotificationChannel) (_ store.NotificationChannel, err error) {
	defer derrors.Wrap(&err, "%s.CreateNotificationChannel(ctx, %q, %q)", o.kind, c.Workspace, c.ID)
	if err := required("workspace", c.Workspace, "channel id", c.ID, "owner", c.Owner, "type", c.Type, "url", c.URL); err != nil {
		return store.NotificationChannel{}, err
	}
	if err := checkText(append([]string{c.Workspace, c.ID, c.Owner, c.Type, c.URL}, c.Kinds...)...); err != nil {
		return store.NotificationChannel{}, err
	}
	for _, k := range c.Kinds {
		if k == "" || strings.ContainsAny(k, ",%") {
			return store.NotificationChannel{}, derrors.Invalidf("kind %q is not a notification kind", k)
		}
	}
	if c.Type != store.ChannelWebhook && c.Type != store.ChannelSlack {
		return store.NotificationChannel{}, derrors.Invalidf("channel type %q is not webhook or slack", c.Type)
	}
	c.CreatedAt = normTime(c.CreatedAt)
	c.Failures, c.LastError, c.DisabledAt = 0, "", nil
	if c.Kinds == nil {
		c.Kinds = []string{}
	}
	var secret any
	if len(c.Secret) > 0 {
		c.Secret = append([]byte(nil), c.Secret...)
		secret = c.Secret
	}
	ok, err := o.insertOnce(ctx, `INSERT INTO notification_channels (workspace, id, owner, type, url, kinds, secret, created_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8) ON CONFLICT (workspace, id) DO NOTHING`,
		c.Workspace, c.ID, c.Owner, c.Type, c.URL, joinKinds(c.Kinds), secret, o.d.TimeArg(c.CreatedAt))
	if err != nil {
		return store.NotificationChannel{}, err
	}
	if !ok {
		return store.NotificationChannel{}, derrors.Conflictf("notification channel %q already exists", c.ID)
	}
	return c, nil
}

// GetNotificationChannel returns one channel; see store.NotificationChannels.
func (o ops) GetNotificationChannel(ctx context.Context, workspace, id string) (_ store.NotificationChannel, err error) {
	defer derrors.Wrap(&err, "%s.GetNotificationChannel(ctx, %q, %q)", o.kind, workspace, id)
	if err := checkText(workspace, id); err != nil {
		return store.NotificationChannel{}, err
	}
	c, err := scanChannel(o.r.QueryRowContext(ctx, `SELECT `+channelColumns+` FROM notification_channels WHERE workspace = $1 AND id = $2`, workspace, id))
	if err = o.found(err, "notification channel %q", id); err != nil {
		return store.NotificationChannel{}, err
	}
	return c, nil
}

// ListNotificationChannels returns an owner's channels; see store.NotificationChannels.
func (o ops) ListNotificationChannels(ctx context.Context, workspace, owner string) (_ []store.NotificationChannel, err error) {
	defer derrors.Wrap(&err, "%s.ListNotificationChannels(ctx, %q, %q)", o.kind, workspace, owner)
	if err := required("workspace", workspace, "owner", owner); err != nil {
		return nil, err
	}
	if err := checkText(workspace, owner); err != nil {
		return nil, err
	}
	return queryList(ctx, o, scanChannel, `SELECT `+channelColumns+` FROM notification_channels
		WHERE workspace = $1 AND owner = $2 ORDER BY created_at, id`, workspace, owner)
}

// DeleteNotificationChannel removes an owner's channel; see store.NotificationChannels.
func (o ops) DeleteNotificationChannel(ctx context.Context, workspace, owner, id string) (err error) {
	defer derrors.Wrap(&err, "%s.DeleteNotificationChannel(ctx, %q, %q)", o.kind, workspace, id)
	if err := checkText(workspace, owner, id); err != nil {
		return err
	}
	return o.atomic(ctx, func(o ops) error {
		n, err := o.execCount(ctx, `DELETE FROM notification_channels WHERE workspace = $1 AND owner = $2 AND id = $3`, workspace, owner, id)
		if err != nil {
			return err
		}
		if n == 0 {
			return derrors.NotFoundf("notification channel %q", id)
		}
		_, err = o.execCount(ctx, `DELETE FROM notification_deliveries WHERE workspace = $1 AND channel_id = $2`, workspace, id)
		return err
	})
}

// EnableNotificationChannel re-enables an owner's channel; see store.NotificationChannels.
func (o ops) EnableNotificationChannel(ctx context.Context, workspace, owner, id string) (_ store.NotificationChannel, err error) {
	defer derrors.Wrap(&err, "%s.EnableNotificationChannel(ctx, %q, %q)", o.kind, workspace, id)
	if err := checkText(workspace, owner, id); err != nil {
		return store.NotificationChannel{}, err
	}
	var out store.NotificationChannel
	err = o.atomic(ctx, func(o ops) error {
		n, err := o.execCount(ctx, `UPDATE notification_channels SET disabled_at = NULL, failures = 0
			WHERE workspace = $1 AND owner = $2 AND id = $3`, workspace, owner, id)
		if err != nil {
			return err
		}
		if n == 0 {
			return derrors.NotFoundf("notification channel %q", id)
		}
		out, err = o.GetNotificationChannel(ctx, workspace, id)
		return err
	})
	return out, err
}

// RecordChannelResult counts a delivery's outcome; see store.NotificationChannels.
func (o ops) RecordChannelResult(ctx context.Context, workspace, id string, ok bool, errText string) (_ store.NotificationChannel, err error) {
	defer derrors.Wrap(&err, "%s.RecordChannelResult(ctx, %q, %q, ok %t)", o.kind, workspace, id, ok)
	if err := checkText(workspace, id, errText); err != nil {
		return store.NotificationChannel{}, err
	}
	var out store.NotificationChannel
	err = o.atomic(ctx, func(o ops) error {
		q := `UPDATE notification_channels SET failures = 0 WHERE workspace = $1 AND id = $2`
		args := []any{workspace, id}
		if !ok {
			q = `UPDATE notification_channels SET failures = failures + 1, last_error = $3 WHERE workspace = $1 AND id = $2`
			args = append(args, errText)
		}
		n, err := o.execCount(ctx, q, args...)
		if err != nil {
			return err
		}
		if n == 0 {
			return derrors.NotFoundf("notification channel %q", id)
		}
		out, err = o.GetNotificationChannel(ctx, workspace, id)
		return err
	})
	return out, err
}

// DisableNotificationChannel disables a channel once; see store.NotificationChannels.
func (o ops) DisableNotificationChannel(ctx context.Context, workspace, id string, at time.Time) (changed bool, err error) {
	defer derrors.Wrap(&err, "%s.DisableNotificationChannel(ctx, %q, %q)", o.kind, workspace, id)
	if err := checkText(workspace, id); err != nil {
		return false, err
	}
	err = o.atomic(ctx, func(o ops) error {
		n, err := o.execCount(ctx, `UPDATE notification_channels SET disabled_at = $3
			WHERE workspace = $1 AND id = $2 AND disabled_at IS NULL`, workspace, id, o.d.TimeArg(normTime(at)))
		if err != nil || n == 0 {
			return err
		}
		changed = true
		_, err = o.execCount(ctx, `DELETE FROM notification_deliveries WHERE workspace = $1 AND channel_id = $2`, workspace, id)
		return err
	})
	return changed, err
}

// queueDeliveries queues notification n for every enabled channel of its
// recipient subscribed to its kind; AddNotification calls it when it
// creates n, in the same transaction.
func (o ops) queueDeliveries(ctx context.Context, n store.Notification) error {
	_, err := o.execCount(ctx, `INSERT INTO notification_deliveries (workspace, notification_id, channel_id, attempts, next_at, created_at)
		SELECT workspace, $3, id, 0, $5, $5 FROM notification_channels
		WHERE workspace = $1 AND owner = $2 AND disabled_at IS NULL AND (kinds = '' OR kinds LIKE '%,' || $4 || ',%')
		ON CONFLICT (workspace, notification_id, channel_id) DO NOTHING`,
		n.Workspace, n.Recipient, n.ID, n.Kind, o.d.TimeArg(n.CreatedAt))
	return err
}

const deliveryColumns = `workspace, notification_id, channel_id, attempts, next_at, last_error`

func scanDelivery(r rowScanner) (store.NotificationDelivery, error) {
	var d store.NotificationDelivery
	var next dbTime
	if err := r.Scan(&d.Workspace, &d.NotificationID, &d.ChannelID, &d.Attempts, &next, &d.LastError); err != nil {
		return store.NotificationDelivery{}, err
	}
	d.NextAt = next.Time
	return d, nil
}

// ClaimNotificationDeliveries leases due deliveries; see store.NotificationChannels.
func (o ops) ClaimNotificationDeliveries(ctx context.Context, now time.Time, lease time.Duration, limit int) (_ []store.NotificationDelivery, err error) {
	defer derrors.Wrap(&err, "%s.ClaimNotificationDeliveries(ctx, limit %d)", o.kind, limit)
	if limit <= 0 || limit > 1000 {
		limit = 100
	}
	nowArg := o.d.TimeArg(normTime(now))
	until := o.d.TimeArg(normTime(now.Add(lease)))
	var out []store.NotificationDelivery
	err = o.atomic(ctx, func(o ops) error {
		out = nil
		due, err := queryList(ctx, o, scanDelivery, `SELECT `+deliveryColumns+` FROM notification_deliveries
			WHERE next_at <= $1 AND (claimed_until IS NULL OR claimed_until <= $1) ORDER BY next_at, workspace, notification_id LIMIT $2`, nowArg, limit)
		if err != nil {
			return err
		}
		for _, d := range due {
			n, err := o.execCount(ctx, `UPDATE notification_deliveries SET claimed_until = $4
				WHERE workspace = $1 AND notification_id = $2 AND channel_id = $3 AND (claimed_until IS NULL OR claimed_until <= $5)`,
				d.Workspace, d.NotificationID, d.ChannelID, until, nowArg)
			if err != nil {
				return err
			}
			if n == 1 {
				out = append(out, d)
			}
		}
		return nil
	})
	return out, err
}

// RetryNotificationDelivery records a failed attempt; see store.NotificationChannels.
func (o ops) RetryNotificationDelivery(ctx context.Context, d store.NotificationDelivery) (err error) {
	defer derrors.Wrap(&err, "%s.RetryNotificationDelivery(ctx, %q, %q, %q)", o.kind, d.Workspace, d.NotificationID, d.ChannelID)
	if err := checkText(d.Workspace, d.NotificationID, d.ChannelID, d.LastError); err != nil {
		return err
	}
	_, err = o.execCount(ctx, `UPDATE notification_deliveries SET attempts = $4, next_at = $5, last_error = $6, claimed_until = NULL
		WHERE workspace = $1 AND notification_id = $2 AND channel_id = $3`,
		d.Workspace, d.NotificationID, d.ChannelID, d.Attempts, o.d.TimeArg(normTime(d.NextAt)), d.LastError)
	return err
}

// DeleteNotificationDelivery removes a delivery; see store.NotificationChannels.
func (o ops) DeleteNotificationDelivery(ctx context.Context, workspace, notificationID, channelID string) (err error) {
	defer derrors.Wrap(&err, "%s.DeleteNotificationDelivery(ctx, %q, %q, %q)", o.kind, workspace, notificationID, channelID)
	if err := checkText(workspace, notificationID, channelID); err != nil {
		return err
	}
	_, err = o.execCount(ctx, `DELETE FROM notification_deliveries WHERE workspace = $1 AND notification_id = $2 AND channel_id = $3`,
		workspace, notificationID, channelID)
	return err
}

// ListNotificationDeliveries returns a workspace's queue; see store.NotificationChannels.
func (o ops) ListNotificationDeliveries(ctx context.Context, workspace string) (_ []store.NotificationDelivery, err error) {
	defer derrors.Wrap(&err, "%s.ListNotificationDeliveries(ctx, %q)", o.kind, workspace)
	if err := checkText(workspace); err != nil {
		return nil, err
	}
	return queryList(ctx, o, scanDelivery, `SELECT `+deliveryColumns+` FROM notification_deliveries
		WHERE workspace = $1 ORDER BY created_at, notification_id, channel_id`, workspace)
}

// GetNotification returns one notification; see store.NotificationChannels.
func (o ops) GetNotification(ctx context.Context, workspace, id string) (_ store.Notification, err error) {
	defer derrors.Wrap(&err, "%s.GetNotification(ctx, %q, %q)", o.kind, workspace, id)
	if err := checkText(workspace, id); err != nil {
		return store.Notification{}, err
	}
	n, err := scanNotification(o.r.QueryRowContext(ctx, `SELECT `+notificationColumns+` FROM notifications WHERE workspace = $1 AND id = $2`, workspace, id))
	if err = o.found(err, "notification %q", id); err != nil {
		return store.Notification{}, err
	}
	return n, nil
}

// SweepApprovalNotifications deletes approval notifications no pending
// approval names; see store.NotificationChannels. One statement, so a
// notification parked in a transaction with its approval is never seen
// without it.
func (o ops) SweepApprovalNotifications(ctx context.Context, kind string) (deleted int, err error) {
	defer derrors.Wrap(&err, "%s.SweepApprovalNotifications(ctx, %q)", o.kind, kind)
	if err := required("kind", kind); err != nil {
		return 0, err
	}
	if err := checkText(kind); err != nil {
		return 0, err
	}
	return o.execCount(ctx, `DELETE FROM notifications WHERE kind = $1 AND NOT EXISTS (
		SELECT 1 FROM approvals WHERE approvals.workspace = notifications.workspace AND approvals.status = $2
			AND approvals.doc ->> 'notification' = notifications.id)`, kind, store.ApprovalPending)
}
