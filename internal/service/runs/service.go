// Package runs is the service behind the run routes (spec §4.2, §4.9):
// submitting a single eval run (budget admission, the queued record, the
// durable workflow), reading runs, their logs and trajectories with the
// audience rule, the notification feed, and the workspace's webhook
// signing secret. The API calls it; the workflow that runs a case lives in
// package workflows and its side effects in package activities.
package runs

import (
	"context"
	"log/slog"
	"time"

	"svc/internal/integrations/webhooks"
	"svc/internal/platform/secrets"
	"svc/internal/service/models"
	"svc/internal/service/registries"
	"svc/store"
)

// Starter starts the durable workflow of a run. The workflow id is the run
// id, so a start retried by a client or a crashed API process can never run
// the same run twice.
type Starter interface {
	StartRun(ctx context.Context, workspace, runID string) error
}

// Store is what the runs service uses of the store: runs, their logs and
// trajectories, notifications, webhook deliveries and the sealed signing
// secret (a registry row), written in transactions.
type Store interface {
	store.Runs
	store.RunLogs
	store.Trajectories
	store.Notifications
	store.Webhooks
	store.Registry
	store.Identity
	Transact(ctx context.Context, fn func(tx store.Tx) error) error
}

// Options are the dependencies of a Service.
type Options struct {
	Store      Store
	Registries *registries.Service
	// Models resolves the model binding a harness calls (the model-key
	// rule at submit).
	Models *models.Service
	// Starter starts run workflows; nil means no orchestrator is
	// configured, and submits answer 503.
	Starter Starter
	// Sealer seals the webhook signing secrets; nil means they cannot be
	// stored and a submit naming a webhookUrl answers 503.
	Sealer *secrets.Sealer
	// Guard refuses webhook URLs aimed at private networks.
	Guard *webhooks.Guard
	// TenantRuns caps a workspace's runs per rolling quota.BudgetWindow; 0 or
	// less is unlimited.
	TenantRuns int
	// QueueMax bounds a workspace's waiting runs and case-trials
	// (SVC_SCHEDULER_QUEUE_MAX); 0 or less is unbounded.
	QueueMax int
	Now      func() time.Time
	// Logger records the writes that fail after the client's answer is
	// decided, with the request id; slog.Default() when nil.
	Logger *slog.Logger
}

// Service implements the run routes.
type Service struct {
	o Options
}

// New returns a Service.
func New(o Options) *Service {
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Guard == nil {
		o.Guard, _ = webhooks.NewGuard("") // "" allows no extra networks: cannot fail
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	return &Service{o: o}
}

// transact runs fn in one transaction and returns fn's own error as it is
// (the store's wrapping is for logs; fn's errors are for the client).
func (s *Service) transact(ctx context.Context, fn func(tx store.Tx) error) error {
	var inner error
	err := s.o.Store.Transact(ctx, func(tx store.Tx) error {
		inner = fn(tx)
		return inner
	})
	if inner != nil {
		return inner
	}
	return err
}
