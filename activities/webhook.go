package activities

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"

	"svc/internal/domain/flows"
	"svc/internal/integrations/webhooks"
	"svc/internal/platform/derrors"
	"svc/store"
)

// WebhookMessageID is the webhook-id of a run's final-record webhook: one
// per run, the same on every attempt, so a receiver deduplicates retries
// and a delivery repeated after a crash.
func WebhookMessageID(runID string) string { return "msg_" + runID }

// DeliverWebhook POSTs the run's final record to its webhookUrl, signed the
// Standard Webhooks way with the workspace's secret. The destination is
// checked again now (it may resolve elsewhere than at submit) and at
// connect time. Every attempt is recorded; an error makes Temporal retry
// with the workflow's backoff.
func (a *Activities) DeliverWebhook(ctx context.Context, ref RunRef) error {
	run, err := a.loadRun(ctx, ref)
	if err != nil {
		return err
	}
	if run.WebhookURL == "" {
		return nil
	}
	attempt := int(activity.GetInfo(ctx).Attempt)
	msgID := WebhookMessageID(run.ID)
	record := func(status int, derr error) error {
		d := store.WebhookDelivery{Workspace: run.Tenant, MessageID: msgID, RunID: run.ID, URL: run.WebhookURL, Attempt: attempt, Status: status, At: a.now()}
		if derr != nil {
			d.Error = clip(derrors.Message(derr), 500)
		}
		wctx, cancel := detached(ctx, recordWriteTimeout)
		defer cancel()
		return a.Store.AddWebhookDelivery(wctx, d)
	}
	if err := a.Guard.CheckURL(ctx, run.WebhookURL); err != nil {
		if rerr := record(0, err); rerr != nil {
			return rerr
		}
		return temporal.NewNonRetryableApplicationError("webhook destination refused: "+derrors.Message(err), string(flows.WebhookRefused), nil)
	}
	if a.WebhookSecrets == nil {
		return errors.New("this worker signs no webhooks: Activities.WebhookSecrets is not wired (internal/app wires the runs service)")
	}
	secret, err := a.WebhookSecrets.SigningSecret(ctx, run.Tenant, run.CreatedBy)
	if err != nil {
		return err
	}
	body, err := json.Marshal(run)
	if err != nil {
		return fmt.Errorf("encoding run %s: %w", run.ID, err)
	}
	client := a.HTTP
	if client == nil {
		client = a.Guard.Client(webhookClientTimeout)
	}
	status, derr := webhooks.Deliver(ctx, client, run.WebhookURL, secret, webhooks.Message{ID: msgID, Timestamp: a.now(), Body: body})
	if err := record(status, derr); err != nil {
		return err
	}
	if derr != nil {
		return fmt.Errorf("webhook attempt %d to %s: %w", attempt, run.WebhookURL, derr)
	}
	return nil
}

const webhookClientTimeout = 20 * time.Second
