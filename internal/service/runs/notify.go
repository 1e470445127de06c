package runs

import (
	"context"

	"svc/auth"
	"svc/internal/domain/eval"
	"svc/internal/domain/notificationwire"
	"svc/internal/platform/derrors"
	"svc/store"
)

// MaxNotificationPage bounds ?limit= of GET /notifications.
const MaxNotificationPage = 200

// Notifications returns the caller's own feed in their workspace.
func (s *Service) Notifications(ctx context.Context, p auth.Principal, unreadOnly bool, limit int) ([]Notification, error) {
	switch {
	case limit == 0:
		limit = 50
	case limit < 0 || limit > MaxNotificationPage:
		return nil, derrors.Invalidf("limit must be between 1 and %d, not %d", MaxNotificationPage, limit)
	}
	list, err := s.o.Store.ListNotifications(ctx, p.Workspace, p.Subject, unreadOnly, limit)
	if err != nil {
		return nil, err
	}
	out := make([]Notification, len(list))
	for i, n := range list {
		out[i] = Notification{Notification: n, Href: eval.LinkHref(n.Link)}
	}
	return out, nil
}

// Notification is a notification as its recipient reads it: the stored
// one and, resolved from its link, the web view address of what it is
// about (eval.NotificationLink.Href), so that every reader (the web view,
// the CLI, an agent) opens the same page.
type Notification struct {
	store.Notification
	Href string `json:"href,omitempty"`
}

// ReadRequest is the body of POST /notifications/read: ids, or all
// (notificationwire.ReadRequest, the wire format the client shares).
type ReadRequest = notificationwire.ReadRequest

// MarkRead marks the caller's notifications read; ids that are not the
// caller's, or already read, are skipped, so the call is idempotent.
func (s *Service) MarkRead(ctx context.Context, p auth.Principal, req ReadRequest) (int, error) {
	if err := req.Validate(); err != nil {
		return 0, err
	}
	return s.o.Store.MarkNotificationsRead(ctx, p.Workspace, p.Subject, req.IDs, req.All, s.o.Now())
}

// GetWebhookSecret returns the workspace's signing secret, creating it on
// first use.
func (s *Service) GetWebhookSecret(ctx context.Context, p auth.Principal) (WebhookSecret, error) {
	var out WebhookSecret
	err := s.transact(ctx, func(tx store.Tx) (err error) {
		out, err = ensureWebhookSecret(ctx, tx, s.o.Sealer, p.Workspace, p.Subject, s.o.Now)
		return err
	})
	return out, err
}

// RotateWebhookSecret replaces the workspace's signing secret; deliveries
// from then on are signed with the new one.
func (s *Service) RotateWebhookSecret(ctx context.Context, p auth.Principal) (WebhookSecret, error) {
	return putWebhookSecret(ctx, s.o.Store, s.o.Sealer, p.Workspace, p.Subject, s.o.Now())
}
