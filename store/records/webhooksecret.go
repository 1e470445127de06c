package records

import (
	"context"
	"errors"
	"fmt"
	"time"

	"svc/internal/integrations/webhooks"
	"svc/internal/platform/derrors"
	"svc/internal/platform/secrets"
	"svc/store"
)

// WebhookSecret is a workspace's webhook signing secret, opened: the
// answer of the webhook-secret routes and what a delivery signs with.
type WebhookSecret struct {
	Secret    string    `json:"secret"`
	RotatedAt time.Time `json:"rotatedAt"`
}

// webhookSecretName binds the sealed secret to its purpose: a ciphertext
// of a workspace secret cannot be replayed as the signing secret.
const webhookSecretName = "svc.webhook-signing"

// EnsureWebhookSecret returns workspace's signing secret, creating one when
// there is none. The run service and the delivery activity both call it.
// Call it inside a transaction so that two first uses cannot mint two
// secrets.
func EnsureWebhookSecret(ctx context.Context, st store.Tx, sealer *secrets.Sealer, workspace, subject string, now func() time.Time) (WebhookSecret, error) {
	if sealer == nil {
		return WebhookSecret{}, fmt.Errorf("records: the webhook signing secret of %q: %w", workspace, derrors.ErrNoSecretKey)
	}
	ws, err := st.GetWebhookSecret(ctx, workspace)
	if errors.Is(err, derrors.ErrNotFound) {
		return PutWebhookSecret(ctx, st, sealer, workspace, subject, now())
	}
	if err != nil {
		return WebhookSecret{}, err
	}
	plain, err := sealer.Open(workspace, webhookSecretName, ws.Ciphertext)
	if err != nil {
		return WebhookSecret{}, fmt.Errorf("records: opening the webhook secret of %q: %w", workspace, err)
	}
	return WebhookSecret{Secret: string(plain), RotatedAt: ws.RotatedAt}, nil
}

// PutWebhookSecret mints a new signing secret for workspace and stores it
// sealed, replacing the one before.
func PutWebhookSecret(ctx context.Context, st store.Tx, sealer *secrets.Sealer, workspace, subject string, now time.Time) (WebhookSecret, error) {
	if sealer == nil {
		return WebhookSecret{}, fmt.Errorf("records: the webhook signing secret of %q: %w", workspace, derrors.ErrNoSecretKey)
	}
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
