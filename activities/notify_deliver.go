package activities

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"svc/internal/domain/eval"
	"svc/internal/integrations/webhooks"
	"svc/internal/platform/derrors"
	"svc/internal/platform/secrets"
	"svc/store"
)

// Delivery of notifications beyond the feed (issue 33): AddNotification
// queues one outbox row per subscribed channel in the notification's own
// transaction; the worker's NotificationDrainer sends them, retries with
// backoff, and disables a channel that failed ChannelFailureLimit times in
// a row, saying so in its owner's feed.

// ChannelFailureLimit is how many consecutive failed deliveries disable a
// channel.
const ChannelFailureLimit = 5

// maxDeliveryAttempts bounds one delivery's attempts; a channel that keeps
// failing is disabled well before, so this only ends a delivery to a
// channel that fails it alone while others succeed.
const maxDeliveryAttempts = 10

// NotificationMessageID is the webhook-id of a notification's delivery to a
// channel: the same on every attempt, so a receiver deduplicates retries.
func NotificationMessageID(channelID, notificationID string) string {
	return "ntf_" + channelID + "_" + notificationID
}

// NotificationStore is what the drainer reads and writes.
type NotificationStore interface {
	store.NotificationChannels
	store.Notifications
	Transact(ctx context.Context, fn func(tx store.Tx) error) error
}

// NotificationDrainer drains the delivery outbox.
type NotificationDrainer struct {
	Store  NotificationStore
	Sealer *secrets.Sealer // opens webhook channels' secrets
	Guard  *webhooks.Guard // re-checks every destination (SVC_WEBHOOK_ALLOW)
	HTTP   *http.Client    // Guard.Client when nil
	// PublicURL prefixes a notification's web view address in a Slack
	// message; relative when empty.
	PublicURL string
	// Backoff is the wait after a delivery's first failed attempt; it
	// doubles per attempt up to MaxBackoff (500 ms and 5 min when zero).
	Backoff, MaxBackoff time.Duration
	// SweepEvery is how often Run sweeps the approval notifications whose
	// approval is no longer pending (SweepApprovalNotices); 0 never.
	SweepEvery time.Duration
	Logger     *slog.Logger
	Now        func() time.Time
}

func (d *NotificationDrainer) now() time.Time {
	if d.Now != nil {
		return d.Now().UTC()
	}
	return time.Now().UTC()
}

// Run drains every interval, and sweeps approval notifications at start
// and every SweepEvery (when positive), until ctx ends.
func (d *NotificationDrainer) Run(ctx context.Context, interval time.Duration) {
	if d.Logger == nil {
		d.Logger = slog.Default()
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	var sweep <-chan time.Time
	if d.SweepEvery > 0 {
		st := time.NewTicker(d.SweepEvery)
		defer st.Stop()
		sweep = st.C
		d.sweep(ctx)
	}
	for {
		if _, err := d.DrainOnce(ctx); err != nil && ctx.Err() == nil {
			d.Logger.Warn("draining notification deliveries", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-sweep:
			d.sweep(ctx)
		case <-t.C:
		}
	}
}

// SweepApprovalNotices deletes (never marks read) the
// agent_approval_requested notifications whose approval is no longer
// pending: decided, expired or gone (spec §3). A decision and an expiry
// delete their notification in their own transaction; the sweep catches
// what a path that skipped it left behind (an approval settled by an
// operator in the store, a runtime that parked and never cleared). It
// returns how many it deleted.
func (d *NotificationDrainer) SweepApprovalNotices(ctx context.Context) (int, error) {
	return d.Store.SweepApprovalNotifications(ctx, eval.NotifyAgentApprovalRequested)
}

func (d *NotificationDrainer) sweep(ctx context.Context) {
	n, err := d.SweepApprovalNotices(ctx)
	switch {
	case err != nil && ctx.Err() == nil:
		d.Logger.Warn("sweeping approval notifications", "err", err)
	case n > 0:
		d.Logger.Info("swept approval notifications whose approval is settled or gone", "deleted", n)
	}
}

// deliveryLease is how long a claimed delivery is the claimer's; a worker
// that dies holding it leaves it to the next drain after this.
const deliveryLease = time.Minute

// DrainOnce claims the due deliveries and attempts each; it returns how
// many it attempted.
func (d *NotificationDrainer) DrainOnce(ctx context.Context) (int, error) {
	if d.Logger == nil {
		d.Logger = slog.Default()
	}
	due, err := d.Store.ClaimNotificationDeliveries(ctx, d.now(), deliveryLease, 50)
	if err != nil {
		return 0, err
	}
	for _, del := range due {
		if err := d.attempt(ctx, del); err != nil {
			d.Logger.Warn("notification delivery", "workspace", del.Workspace, "notification", del.NotificationID,
				"channel", del.ChannelID, "err", err)
		}
	}
	return len(due), nil
}

// attempt sends one delivery and records its outcome.
func (d *NotificationDrainer) attempt(ctx context.Context, del store.NotificationDelivery) error {
	drop := func() error {
		return d.Store.DeleteNotificationDelivery(ctx, del.Workspace, del.NotificationID, del.ChannelID)
	}
	ch, err := d.Store.GetNotificationChannel(ctx, del.Workspace, del.ChannelID)
	if errors.Is(err, derrors.ErrNotFound) {
		return drop()
	}
	if err != nil {
		return err
	}
	if ch.DisabledAt != nil {
		return drop()
	}
	n, err := d.Store.GetNotification(ctx, del.Workspace, del.NotificationID)
	if errors.Is(err, derrors.ErrNotFound) {
		return drop() // deleted (an approval decided) before it went out
	}
	if err != nil {
		return err
	}
	sendErr := d.send(ctx, ch, n)
	if sendErr == nil {
		if _, err := d.Store.RecordChannelResult(ctx, ch.Workspace, ch.ID, true, ""); err != nil {
			return err
		}
		return drop()
	}
	msg := clip(derrors.Message(sendErr), 300)
	ch, err = d.Store.RecordChannelResult(ctx, ch.Workspace, ch.ID, false, msg)
	if err != nil {
		return err
	}
	if ch.Failures >= ChannelFailureLimit {
		return d.disable(ctx, ch, msg)
	}
	del.Attempts++
	if del.Attempts >= maxDeliveryAttempts {
		return drop()
	}
	del.LastError = msg
	del.NextAt = d.now().Add(d.backoff(del.Attempts))
	return d.Store.RetryNotificationDelivery(ctx, del)
}

// disable turns ch off and tells its owner, once per disabling.
func (d *NotificationDrainer) disable(ctx context.Context, ch store.NotificationChannel, lastError string) error {
	at := d.now()
	return d.Store.Transact(ctx, func(tx store.Tx) error {
		changed, err := tx.DisableNotificationChannel(ctx, ch.Workspace, ch.ID, at)
		if err != nil || !changed {
			return err
		}
		return addNotice(ctx, tx, ch.Workspace, eval.ChannelDisabledNotice(ch.Owner, ch.ID, lastError, ch.Failures, at.Unix()))
	})
}

func (d *NotificationDrainer) backoff(attempts int) time.Duration {
	b, maxB := d.Backoff, d.MaxBackoff
	if b <= 0 {
		b = 500 * time.Millisecond
	}
	if maxB <= 0 {
		maxB = 5 * time.Minute
	}
	for i := 1; i < attempts && b < maxB; i++ {
		b *= 2
	}
	return min(b, maxB)
}

// NotificationPayload is the body of a webhook channel's delivery: a
// Standard Webhooks style envelope around the notification as its
// recipient reads it.
type NotificationPayload struct {
	Type      string                `json:"type"` // notification.created
	Timestamp time.Time             `json:"timestamp"`
	Data      NotificationDataShape `json:"data"`
}

// NotificationDataShape is the notification in a delivery, with its web
// view address.
type NotificationDataShape struct {
	store.Notification
	Href string `json:"href,omitempty"`
}

// send delivers n to ch once.
func (d *NotificationDrainer) send(ctx context.Context, ch store.NotificationChannel, n store.Notification) error {
	if d.Guard == nil {
		return errors.New("this worker has no webhook guard; internal/app wires it")
	}
	if err := d.Guard.CheckURL(ctx, ch.URL); err != nil {
		return err
	}
	client := d.HTTP
	if client == nil {
		client = d.Guard.Client(webhookClientTimeout)
	}
	href := eval.LinkHref(n.Link)
	switch ch.Type {
	case store.ChannelWebhook:
		if d.Sealer == nil {
			return derrors.ErrNoSecretKey
		}
		secret, err := d.Sealer.Open(ch.Workspace, eval.ChannelSecretName(ch.ID), ch.Secret)
		if err != nil {
			return fmt.Errorf("opening channel %s's secret: %w", ch.ID, err)
		}
		body, err := json.Marshal(NotificationPayload{Type: "notification.created", Timestamp: n.CreatedAt,
			Data: NotificationDataShape{Notification: n, Href: href}})
		if err != nil {
			return err
		}
		_, err = webhooks.Deliver(ctx, client, ch.URL, string(secret),
			webhooks.Message{ID: NotificationMessageID(ch.ID, n.ID), Timestamp: d.now(), Body: body})
		return err
	case store.ChannelSlack:
		return postSlack(ctx, client, ch.URL, slackText(n, d.PublicURL, href))
	}
	return derrors.Invalidf("channel type %q is not webhook or slack", ch.Type)
}

// slackText is n as a Slack message's text (mrkdwn): the title in bold,
// the body, and a link to the web view.
func slackText(n store.Notification, publicURL, href string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "*%s*", n.Title)
	if n.Body != "" {
		b.WriteString("\n" + n.Body)
	}
	if href != "" {
		fmt.Fprintf(&b, "\n<%s|Open>", strings.TrimRight(publicURL, "/")+href)
	}
	return b.String()
}

// postSlack POSTs {"text": text} to an incoming-webhook URL; a 2xx is
// success. Errors never repeat the URL (it is its own credential).
func postSlack(ctx context.Context, c *http.Client, url, text string) error {
	body, _ := json.Marshal(map[string]string{"text": text})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return derrors.Invalidf("channel URL does not parse")
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", webhooks.UserAgent)
	resp, err := c.Do(req)
	if err != nil {
		return fmt.Errorf("POST to %s failed", req.URL.Host)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return fmt.Errorf("POST to %s: receiver answered %s", req.URL.Host, resp.Status)
	}
	return nil
}
