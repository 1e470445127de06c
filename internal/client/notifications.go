package client

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"

	"svc/internal/domain/notificationwire"
)

// A member's feed and delivery channels (docs/notifications.md). The
// bodies are the service's own (internal/domain/notificationwire).

// ListNotifications is GET /notifications: the caller's feed, newest
// first, only unread ones when unread.
func (c *Client) ListNotifications(ctx context.Context, unread bool) ([]notificationwire.Notification, json.RawMessage, error) {
	path := "/notifications"
	if unread {
		path += "?unread=1"
	}
	return call[[]notificationwire.Notification](ctx, c, http.MethodGet, path, nil)
}

// ReadNotifications is POST /notifications/read (idempotent).
func (c *Client) ReadNotifications(ctx context.Context, req notificationwire.ReadRequest) (notificationwire.ReadResult, json.RawMessage, error) {
	return call[notificationwire.ReadResult](ctx, c, http.MethodPost, "/notifications/read", req)
}

func channelPath(id string) string { return "/notification-channels/" + url.PathEscape(id) }

// ListNotificationChannels is GET /notification-channels: the caller's own.
func (c *Client) ListNotificationChannels(ctx context.Context) ([]notificationwire.Channel, json.RawMessage, error) {
	return call[[]notificationwire.Channel](ctx, c, http.MethodGet, "/notification-channels", nil)
}

// CreateNotificationChannel is POST /notification-channels; a webhook
// channel's secret is in this answer only.
func (c *Client) CreateNotificationChannel(ctx context.Context, req notificationwire.CreateChannelRequest) (notificationwire.Channel, json.RawMessage, error) {
	return call[notificationwire.Channel](ctx, c, http.MethodPost, "/notification-channels", req)
}

// DeleteNotificationChannel is DELETE /notification-channels/:id.
func (c *Client) DeleteNotificationChannel(ctx context.Context, id string) error {
	_, err := c.Do(ctx, http.MethodDelete, channelPath(id), nil, nil)
	return err
}

// EnableNotificationChannel is POST /notification-channels/:id/enable.
func (c *Client) EnableNotificationChannel(ctx context.Context, id string) (notificationwire.Channel, json.RawMessage, error) {
	return call[notificationwire.Channel](ctx, c, http.MethodPost, channelPath(id)+"/enable", nil)
}
