package sqlstore

import (
	"context"

	"svc/internal/platform/derrors"
	"svc/store"
)

// Ciphertexts never appear in errors; delivery URLs do not either, since
// a receiver may carry a token in its query.

// PutWebhookSecret inserts or replaces a workspace's secret; see store.Webhooks.
// A rotation makes a new secret, so CreatedBy is the rotator's.
func (o ops) PutWebhookSecret(ctx context.Context, s store.WebhookSecret) (_ store.WebhookSecret, err error) {
	defer derrors.Wrap(&err, "%s.PutWebhookSecret(ctx, %q)", o.kind, s.Workspace)
	if err := required("workspace", s.Workspace); err != nil {
		return store.WebhookSecret{}, err
	}
	if err := checkText(s.Workspace, s.CreatedBy); err != nil {
		return store.WebhookSecret{}, err
	}
	if len(s.Ciphertext) == 0 {
		return store.WebhookSecret{}, derrors.Invalidf("ciphertext is required")
	}
	s.Ciphertext = append([]byte(nil), s.Ciphertext...)
	s.RotatedAt = normTime(s.RotatedAt)
	if _, err := o.w.ExecContext(ctx,
		`INSERT INTO webhook_secrets (workspace, ciphertext, created_by, rotated_at) VALUES ($1, $2, $3, $4)
		ON CONFLICT (workspace) DO UPDATE SET ciphertext = excluded.ciphertext, created_by = excluded.created_by, rotated_at = excluded.rotated_at`,
		s.Workspace, s.Ciphertext, s.CreatedBy, o.d.TimeArg(s.RotatedAt)); err != nil {
		return store.WebhookSecret{}, o.mapErr(err)
	}
	return s, nil
}

// GetWebhookSecret returns a workspace's secret; see store.Webhooks.
func (o ops) GetWebhookSecret(ctx context.Context, workspace string) (_ store.WebhookSecret, err error) {
	defer derrors.Wrap(&err, "%s.GetWebhookSecret(ctx, %q)", o.kind, workspace)
	if err := checkText(workspace); err != nil {
		return store.WebhookSecret{}, err
	}
	s := store.WebhookSecret{Workspace: workspace}
	var rotated dbTime
	err = o.r.QueryRowContext(ctx, `SELECT ciphertext, created_by, rotated_at FROM webhook_secrets WHERE workspace = $1`,
		workspace).Scan(&s.Ciphertext, &s.CreatedBy, &rotated)
	if err = o.found(err, "webhook secret of workspace %q", workspace); err != nil {
		return store.WebhookSecret{}, err
	}
	s.RotatedAt = rotated.Time
	return s, nil
}

// AddWebhookDelivery records one attempt once; see store.Webhooks.
func (o ops) AddWebhookDelivery(ctx context.Context, d store.WebhookDelivery) (err error) {
	defer derrors.Wrap(&err, "%s.AddWebhookDelivery(ctx, %q, %q, attempt %d)", o.kind, d.Workspace, d.MessageID, d.Attempt)
	if err := required("workspace", d.Workspace, "message id", d.MessageID, "url", d.URL); err != nil {
		return err
	}
	if err := checkText(d.Workspace, d.MessageID, d.RunID, d.URL, d.Error); err != nil {
		return err
	}
	if d.Attempt < 0 {
		return derrors.Invalidf("attempt %d is negative", d.Attempt)
	}
	_, err = o.insertOnce(ctx,
		`INSERT INTO webhook_deliveries (workspace, message_id, attempt, run_id, url, status, error, at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
		ON CONFLICT (workspace, message_id, attempt) DO NOTHING`,
		d.Workspace, d.MessageID, d.Attempt, d.RunID, d.URL, d.Status, d.Error, o.d.TimeArg(normTime(d.At)))
	return err
}

// ListWebhookDeliveries returns a run's attempts oldest first; see store.Webhooks.
func (o ops) ListWebhookDeliveries(ctx context.Context, workspace, runID string) (_ []store.WebhookDelivery, err error) {
	defer derrors.Wrap(&err, "%s.ListWebhookDeliveries(ctx, %q, %q)", o.kind, workspace, runID)
	if err := required("workspace", workspace, "run id", runID); err != nil {
		return nil, err
	}
	if err := checkText(workspace, runID); err != nil {
		return nil, err
	}
	return queryList(ctx, o, func(r rowScanner) (store.WebhookDelivery, error) {
		d := store.WebhookDelivery{Workspace: workspace, RunID: runID}
		var at dbTime
		if err := r.Scan(&d.MessageID, &d.Attempt, &d.URL, &d.Status, &d.Error, &at); err != nil {
			return store.WebhookDelivery{}, err
		}
		d.At = at.Time
		return d, nil
	}, `SELECT message_id, attempt, url, status, error, at FROM webhook_deliveries
		WHERE workspace = $1 AND run_id = $2 ORDER BY at, message_id, attempt`, workspace, runID)
}
