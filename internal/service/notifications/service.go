// Package notifications is the use case behind a member's delivery
// channels (/notification-channels, issue 33, beyond the spec) and the
// internal routes an external agent runtime calls (/internal/agent-run-events,
// /internal/notifications/approval-clear; spec §4.9). The feed itself
// (GET /notifications, POST /notifications/read) is the runs service's;
// the kinds, their ids and links are eval's (notifications.go, links.go);
// delivery is the worker's (activities.NotificationDrainer).
package notifications

import (
	"context"
	"time"

	"svc/internal/integrations/webhooks"
	"svc/internal/platform/secrets"
	"svc/internal/service/approvals"
	"svc/store"
)

// Store is what the service uses of the store.
type Store interface {
	store.NotificationChannels
	store.Notifications
	Transact(ctx context.Context, fn func(tx store.Tx) error) error
}

// Parker parks an external runtime's action as an approval (the
// approvals service's Park).
type Parker interface {
	Park(ctx context.Context, r approvals.ParkRequest) (store.Approval, bool, error)
}

// Options build a Service.
type Options struct {
	Store     Store
	Sealer    *secrets.Sealer // seals webhook channels' secrets; nil refuses webhook channels
	Guard     *webhooks.Guard // refuses channel URLs aimed at private networks (SVC_WEBHOOK_ALLOW)
	Approvals Parker
	Now       func() time.Time
}

// Service is the notifications use case.
type Service struct{ o Options }

// New returns a Service over o.
func New(o Options) *Service {
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Guard == nil {
		o.Guard, _ = webhooks.NewGuard("") // allows no private network: cannot fail
	}
	return &Service{o: o}
}

// ClearApprovalNotification deletes (never marks read) the
// agent_approval_requested notification id of workspace ws inside tx: what
// a decision, an expiry, a sweep and POST
// /internal/notifications/approval-clear do (spec §3), so the next ask in
// the same session or comment pings again. Absent is not an error.
func ClearApprovalNotification(ctx context.Context, tx store.Tx, ws, id string) error {
	return tx.DeleteNotification(ctx, ws, id)
}
