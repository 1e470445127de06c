// Package notificationwire is the wire format of a member's feed and
// delivery channels (docs/notifications.md; spec §2.10, §6; issue 33): the
// bodies the API reads on POST /notifications/read and POST
// /notification-channels (the runs and notifications services alias them),
// and the fields of the answers of GET /notifications and
// /notification-channels that the API client and the CLI read. It is pure,
// so the client and the CLI speak it without linking a service or the
// store; a --json caller gets the service's body whole.
package notificationwire

import (
	"encoding/json"
	"net/url"
	"strings"
	"time"

	"svc/internal/domain/eval"
	"svc/internal/platform/derrors"
)

// The delivery channel types (store.ChannelWebhook, store.ChannelSlack).
const (
	// ChannelWebhook is a Standard Webhooks endpoint signed with the
	// channel's own secret, shown once at creation.
	ChannelWebhook = "webhook"
	// ChannelSlack is a Slack-compatible incoming-webhook URL.
	ChannelSlack = "slack"
)

// ReadRequest is the body of POST /notifications/read: ids, or all.
type ReadRequest struct {
	IDs []string `json:"ids,omitempty"`
	All bool     `json:"all,omitempty"`
}

// Validate refuses a body that says neither or both.
func (r *ReadRequest) Validate() error {
	switch {
	case r.All && len(r.IDs) > 0:
		return derrors.Invalidf("send either ids or all:true, not both")
	case !r.All && len(r.IDs) == 0:
		return derrors.Invalidf("send ids (the notifications to mark read) or all:true")
	case len(r.IDs) > 1000:
		return derrors.Invalidf("at most 1000 ids per request, not %d", len(r.IDs))
	}
	return nil
}

// ReadResult is the answer of POST /notifications/read.
type ReadResult struct {
	Marked int `json:"marked"`
}

// Notification is one entry of a member's feed as GET /notifications
// answers it: Href is the web view address of what it is about.
type Notification struct {
	ID        string          `json:"id"`
	Kind      string          `json:"kind"`
	Title     string          `json:"title"`
	Body      string          `json:"body,omitempty"`
	Link      json.RawMessage `json:"link,omitempty"`
	Href      string          `json:"href,omitempty"`
	CreatedAt time.Time       `json:"createdAt"`
	ReadAt    *time.Time      `json:"readAt,omitempty"`
}

// CreateChannelRequest is the body of POST /notification-channels.
type CreateChannelRequest struct {
	// Type is webhook (Standard Webhooks, signed with the channel's own
	// secret, shown once) or slack (a Slack-compatible incoming webhook:
	// {"text": ...}).
	Type string `json:"type"`
	URL  string `json:"url"`
	// Kinds are the notification kinds to send; empty means every kind.
	Kinds []string `json:"kinds,omitempty"`
}

// Validate checks the body without the network.
func (r *CreateChannelRequest) Validate() error {
	if r.Type != ChannelWebhook && r.Type != ChannelSlack {
		return derrors.Invalidf("type %q: want webhook (signed, Standard Webhooks) or slack (an incoming-webhook URL)", r.Type)
	}
	if r.URL == "" {
		return derrors.Invalidf("url is required")
	}
	if len(r.URL) > 2048 {
		return derrors.Invalidf("url is %d bytes; at most 2048", len(r.URL))
	}
	u, err := url.Parse(r.URL)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return derrors.Invalidf("url must be an absolute http or https URL")
	}
	seen := map[string]bool{}
	for _, k := range r.Kinds {
		if !eval.IsNotificationKind(k) {
			return derrors.Invalidf("kind %q is not a notification kind; the kinds are %s", k, strings.Join(eval.NotificationKinds(), ", "))
		}
		if seen[k] {
			return derrors.Invalidf("kind %q is listed twice", k)
		}
		seen[k] = true
	}
	return nil
}

// Channel is a delivery channel as its owner reads it; Secret only in the
// answer to a webhook channel's creation.
type Channel struct {
	ID         string     `json:"id"`
	Owner      string     `json:"owner"`
	Type       string     `json:"type"`
	URL        string     `json:"url"`
	Kinds      []string   `json:"kinds"`
	Enabled    bool       `json:"enabled"`
	Failures   int        `json:"failures"`
	LastError  string     `json:"lastError,omitempty"`
	DisabledAt *time.Time `json:"disabledAt,omitempty"`
	CreatedAt  time.Time  `json:"createdAt"`
	Secret     string     `json:"secret,omitempty"`
}
