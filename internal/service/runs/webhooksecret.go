package runs

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

// The webhook signing secret's lifecycle: a workspace's secret is minted
// on first use (the secret's route, or the first delivery), stored sealed,
// and replaced by a rotation. The routes call GetWebhookSecret and
// RotateWebhookSecret; the worker signs a delivery with SigningSecret,
// through an interface of its own (activities.WebhookSecrets).

// WebhookSecret is a workspace's webhook signing secret, opened: the
// answer of the webhook-secret routes and what a delivery signs with.
type WebhookSecret struct {
	Secret    string    `json:"secret"`
	RotatedAt time.Time `json:"rotatedAt"`
}

// webhookSecretName binds the sealed secret to its purpose: a ciphertext
// of a workspace secret cannot be replayed as the signing secret.
const webhookSecretName = "svc.webhook-signing"

// SigningSecret is workspace's signing secret, minted (by subject) when
// there is none, in its own transaction so that two first uses cannot
// mint two secrets: what a webhook delivery signs with.
func (s *Service) SigningSecret(ctx context.Context, workspace, subject string) (string, error) {
	var secret WebhookSecret
	if err := s.o.Store.Transact(ctx, func(tx store.Tx) (err error) {
		secret, err = ensureWebhookSecret(ctx, tx, s.o.Sealer, workspace, subject, s.o.Now)
		return err
	}); err != nil {
		return "", err
	}
	return secret.Secret, nil
}

// ensureWebhookSecret returns workspace's signing secret, creating one
// when there is none. Call it inside a transaction so that two first uses
// cannot mint two secrets.
func ensureWebhookSecret(ctx context.Context, st store.Webhooks, sealer *secrets.Sealer, workspace, subject string, now func() time.Time) (WebhookSecret, error) {
	if sealer == nil {
		return WebhookSecret{}, fmt.Errorf("records: the webhook signing secret of %q: %w", workspace, derrors.ErrNoSecretKey)
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
		return WebhookSecret{}, fmt.Errorf("records: opening the webhook secret of %q: %w", workspace, err)
	}
	return WebhookSecret{Secret: string(plain), RotatedAt: ws.RotatedAt}, nil
}

// putWebhookSecret mints a new signing secret for workspace and stores it
// sealed, replacing the one before.
func putWebhookSecret(ctx context.Context, st store.Webhooks, sealer *secrets.Sealer, workspace, subject string, now time.Time) (WebhookSecret, error) {
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
