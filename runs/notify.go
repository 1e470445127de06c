package runs

import (
	"context"
	"errors"
	"fmt"
	"time"

	"svc/auth"
	"svc/derrors"
	"svc/secrets"
	"svc/store"
	"svc/webhooks"
)

// MaxNotificationPage bounds ?limit= of GET /notifications.
const MaxNotificationPage = 200

// Notifications returns the caller's own feed in their workspace.
func (s *Service) Notifications(ctx context.Context, p auth.Principal, unreadOnly bool, limit int) ([]store.Notification, error) {
	switch {
	case limit == 0:
		limit = 50
	case limit < 0 || limit > MaxNotificationPage:
		return nil, derrors.Invalidf("limit must be between 1 and %d, not %d", MaxNotificationPage, limit)
	}
	return s.o.Store.ListNotifications(ctx, p.Workspace, p.Subject, unreadOnly, limit)
}

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

// MarkRead marks the caller's notifications read; ids that are not the
// caller's, or already read, are skipped, so the call is idempotent.
func (s *Service) MarkRead(ctx context.Context, p auth.Principal, req ReadRequest) (int, error) {
	if err := req.Validate(); err != nil {
		return 0, err
	}
	return s.o.Store.MarkNotificationsRead(ctx, p.Workspace, p.Subject, req.IDs, req.All, s.o.Now())
}

// WebhookSecret is the answer of the webhook-secret routes.
type WebhookSecret struct {
	Secret    string    `json:"secret"`
	RotatedAt time.Time `json:"rotatedAt"`
}

// webhookSecretName binds the sealed secret to its purpose: a ciphertext
// of a workspace secret cannot be replayed as the signing secret.
const webhookSecretName = "svc.webhook-signing"

// ErrNoSealer is the refusal to keep a signing secret without SVC_SECRET_KEY.
var ErrNoSealer = derrors.Unavailablef("webhook signing secrets are stored encrypted under SVC_SECRET_KEY, which is not set; an operator sets it to the base64 of 32 random bytes")

// GetWebhookSecret returns the workspace's signing secret, creating it on
// first use.
func (s *Service) GetWebhookSecret(ctx context.Context, p auth.Principal) (WebhookSecret, error) {
	var out WebhookSecret
	err := s.transact(ctx, func(tx store.Tx) (err error) {
		out, err = EnsureWebhookSecret(ctx, tx, s.o.Sealer, p.Workspace, p.Subject, s.o.Now)
		return err
	})
	return out, err
}

// RotateWebhookSecret replaces the workspace's signing secret; deliveries
// from then on are signed with the new one.
func (s *Service) RotateWebhookSecret(ctx context.Context, p auth.Principal) (WebhookSecret, error) {
	if s.o.Sealer == nil {
		return WebhookSecret{}, ErrNoSealer
	}
	return putWebhookSecret(ctx, s.o.Store, s.o.Sealer, p.Workspace, p.Subject, s.o.Now())
}

// EnsureWebhookSecret returns workspace's signing secret, creating one when
// there is none. The delivery activity calls it too. Call it inside a
// transaction so that two first uses cannot mint two secrets.
func EnsureWebhookSecret(ctx context.Context, st store.Tx, sealer *secrets.Sealer, workspace, subject string, now func() time.Time) (WebhookSecret, error) {
	if sealer == nil {
		return WebhookSecret{}, ErrNoSealer
	}
	ws, err := st.GetWebhookSecret(ctx, workspace)
	if errors.Is(err, derrors.ErrNotFound) {
		return putWebhookSecret(ctx, st, sealer, workspace, subject, now())
	}
	if err != nil {
		return WebhookSecret{}, err
	}
	plain, err := sealer.Open(workspace, webhookSecretName, ws.Ciphertext)
	if err != nil {
		return WebhookSecret{}, fmt.Errorf("runs: opening the webhook secret of %q: %w", workspace, err)
	}
	return WebhookSecret{Secret: string(plain), RotatedAt: ws.RotatedAt}, nil
}

func putWebhookSecret(ctx context.Context, st store.Tx, sealer *secrets.Sealer, workspace, subject string, now time.Time) (WebhookSecret, error) {
	secret, err := webhooks.NewSecret()
	if err != nil {
		return WebhookSecret{}, err
	}
	sealed, err := sealer.Seal(workspace, webhookSecretName, []byte(secret))
	if err != nil {
		return WebhookSecret{}, err
	}
	ws, err := st.PutWebhookSecret(ctx, store.WebhookSecret{Workspace: workspace, Ciphertext: sealed, CreatedBy: subject, RotatedAt: now})
	if err != nil {
		return WebhookSecret{}, err
	}
	return WebhookSecret{Secret: secret, RotatedAt: ws.RotatedAt}, nil
}
