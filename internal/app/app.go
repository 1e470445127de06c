// Package app is svc's composition root: the one place that turns the
// settings (config.Config) and the dependencies a process has opened (the
// store, the Temporal client, the logger, the local runtime's driver) into
// the running parts, the worker's activities and the API server. cmd/svc
// (dev, serve, worker) and every test stack (internal/testing/stacktest) call it,
// so the tests run the production wiring; what differs between them is
// only what they open and the few options below.
package app

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"strings"
	"time"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"

	"svc/activities"
	"svc/activities/judges"
	"svc/api"
	"svc/drivers"
	"svc/internal/app/probers"
	"svc/internal/integrations/pull"
	"svc/internal/integrations/webhooks"
	"svc/internal/orchestration"
	"svc/internal/platform/config"
	"svc/internal/platform/netguard"
	"svc/internal/platform/secrets"
	"svc/internal/service/models"
	"svc/internal/service/registries"
	"svc/internal/service/runs"
	"svc/internal/service/sandboxes"
	"svc/internal/service/traces"
	"svc/store"
	"svc/workflows"
)

// Deps are what a process has opened before wiring: the caller owns them
// and closes them.
type Deps struct {
	Store    store.Store
	Temporal client.Client
	Logger   *slog.Logger
	// Driver runs the worker's local jobs and its code judges (a test
	// stack's plain local driver); nil: WorkerOptions.OpenDriver opens it.
	// The API does not use it.
	Driver drivers.Driver
	// Version is the build's version, which the API reports (/healthz,
	// the metrics' build info).
	Version string
	// Images is the managed image store svc dev serves (ServeManagedImages);
	// nil elsewhere, where worlds live in SVC_IMAGE_STORE's registry.
	Images *ManagedImages
}

// WorkerOptions are the worker's settings that are not config.Config's.
type WorkerOptions struct {
	// Role is "dev" (the API runs in the same process) or "worker": where
	// code judges reach the model proxy when SVC_PUBLIC_URL is unset
	// (ModelProxyURL).
	Role string
	// Host names the worker in provenance; os.Hostname when "".
	Host string
	// ModelProxyURL, when set, is the model proxy's API root code judges
	// are given instead of ModelProxyURL(cfg, Role): a test stack's API
	// listens on a port chosen at start.
	ModelProxyURL string
	// Temporal tunes the Temporal worker (concurrency, stop timeout).
	Temporal orchestration.WorkerOptions
	// OpenDriver opens the driver when Deps.Driver is nil (the binary's
	// local runtime under SVC_LOCAL_*, which may start a job server): it is
	// called once the settings Activities checks are known to be valid, so
	// a wrong setting is reported first.
	OpenDriver func() (drivers.Driver, error)
}

// Activities builds the worker's activities over d under cfg: the
// registry service with the probe guard and the k8s operator namespaces,
// the secrets sealer (none without SVC_SECRET_KEY), the webhook, model
// and trace-pull guards of SVC_WEBHOOK_ALLOW, the judge runner on
// the driver, the trace ingest service with the ingest settings, and the
// trace sources service. An invalid setting is an error naming it.
func Activities(cfg config.Config, d Deps, o WorkerOptions) (*activities.Activities, error) {
	sealer, err := sealer(cfg)
	if err != nil {
		return nil, err
	}
	guard, err := webhooks.NewGuard(cfg.WebhookAllow)
	if err != nil {
		return nil, fmt.Errorf("SVC_WEBHOOK_ALLOW: %v", err)
	}
	// Runs on a nomad runtime reach its cluster through the same guard as
	// POST /runtimes/probe.
	probeGuard, err := netguard.NewProbeGuard(cfg.ProbeAllow)
	if err != nil {
		return nil, fmt.Errorf("SVC_PROBE_ALLOW: %v", err)
	}
	// Model judges reach their model servers through the webhook allow
	// list's guard (models.NewGuard).
	modelGuard, err := models.NewGuard(cfg.WebhookAllow)
	if err != nil {
		return nil, fmt.Errorf("SVC_WEBHOOK_ALLOW: %v", err)
	}
	driver := d.Driver
	if driver == nil && o.OpenDriver != nil {
		if driver, err = o.OpenDriver(); err != nil {
			return nil, err
		}
	}
	// Pulled batches read their platforms through the same allow list,
	// with errors that name the trace source's fields (pull.NewGuard).
	pullGuard, err := pull.NewGuard(cfg.WebhookAllow)
	if err != nil {
		return nil, fmt.Errorf("SVC_WEBHOOK_ALLOW: %v", err)
	}
	host := o.Host
	if host == "" {
		host, _ = os.Hostname()
	}
	proxy := o.ModelProxyURL
	if proxy == "" {
		proxy = ModelProxyURL(cfg, o.Role)
	}
	regs := registries.New(d.Store, sealer, time.Now, registries.WithProbeGuard(probeGuard),
		registries.WithK8sOperatorNamespaces(cfg.K8sOperatorNamespaceList()))
	acts := &activities.Activities{
		Store:      d.Store,
		Registries: regs,
		Sealer:     sealer,
		Driver:     driver,
		Judges:     &judges.Runner{Driver: driver},
		Models:     &models.Service{Store: d.Store, Sealer: sealer, Guard: modelGuard},
		// A delivery signs with the workspace's secret, minted on first
		// use as the runs service's routes mint it.
		WebhookSecrets: runs.New(runs.Options{Store: d.Store, Sealer: sealer, Logger: d.Logger,
			Now: func() time.Time { return time.Now().UTC() }}),
		Guard: guard,
		Host:  host,
		// An instrumented harness exports its spans here.
		OTLPEndpoint: cfg.HarnessOTLPEndpoint,
		// A code judge with a model binding calls its model here.
		ModelProxyURL: proxy,
		Logger:        d.Logger,
		TraceSources:  &traces.Sources{Store: d.Store, Sealer: sealer, Guard: pullGuard},
	}
	acts.TraceIngest = traces.New(traces.Options{Store: d.Store, Registries: regs,
		MaxEventsPerHour: int64(cfg.IngestMaxEventsPerHour), RetentionDays: cfg.TrajectoryRetentionDays,
		IdleWindow: cfg.IngestIdleWindow, Logger: d.Logger})
	// Runs on a runner runtime queue their jobs for the workspace's runners.
	acts.RunnerQueue = RunnerQueue(d.Store, sealer)
	// Approvals expire in the store; approved calls run through the API.
	acts.Approvals = newApprovalRunner(cfg, d.Store, o.Role)
	// Sandbox sessions' containers run on this host (sandbox.go).
	if err := wireSandboxes(cfg, acts, d.Logger); err != nil {
		return nil, err
	}
	// World snapshots publish into the image store (worlds.go).
	if acts.Worlds.Store, err = Worlds(context.Background(), cfg, d.Images, d.Store, sealer); err != nil {
		return nil, err
	}
	if d.Images != nil {
		acts.Worlds.GC = func() { d.Images.GC(d.Logger) }
	}
	return acts, nil
}

// StartWorker starts the Temporal worker of cfg.TaskQueue with every
// workflow and the activities of Activities, starts the trace sweep (its
// failure is logged: the next start retries) and, in the background,
// reclaims what a dead svc of this host was running. The caller stops the
// worker.
func StartWorker(ctx context.Context, cfg config.Config, d Deps, o WorkerOptions) (worker.Worker, error) {
	acts, err := Activities(cfg, d, o)
	if err != nil {
		return nil, err
	}
	w := orchestration.NewWorker(d.Temporal, cfg.TaskQueue, func(r worker.Registry) {
		workflows.Register(r)
		activities.Register(r, acts)
	}, o.Temporal)
	if err := w.Start(); err != nil {
		return nil, fmt.Errorf("start Temporal worker on task queue %q: %w", cfg.TaskQueue, err)
	}
	// The sandbox host's own queue: a session's activities after its
	// create run on the host holding its container.
	hw, err := startSandboxHost(ctx, cfg, d, acts, o)
	if err != nil {
		w.Stop()
		return nil, err
	}
	if hw != nil {
		w = bothWorkers{Worker: w, host: hw}
	}
	// The trace sweep seals idle external trajectories and applies
	// retention; a failure to start it is logged, the next start retries.
	if err := orchestration.StartTraceSweep(ctx, d.Temporal, cfg.TaskQueue); err != nil {
		d.Logger.Warn("starting the trace sweep", "err", err)
	}
	// What a dead svc of this host was running is retried now, not when its
	// heartbeats time out.
	go orchestration.ReclaimDeadAttempts(context.WithoutCancel(ctx), d.Temporal, cfg.TemporalNamespace, cfg.TaskQueue, d.Logger)
	// Notifications go out to their recipients' channels (notify.go).
	w = startNotificationDrainer(cfg, d, acts, w)
	return w, nil
}

// API builds the API server over d under cfg: workflows start on
// cfg.TaskQueue through d.Temporal, /readyz checks the store and
// Temporal, and runtime probes reach the drivers (internal/probers).
func API(cfg config.Config, d Deps) (*api.Server, error) {
	starter := &orchestration.Starter{Client: d.Temporal, TaskQueue: cfg.TaskQueue, WebhookAttempts: cfg.WebhookAttempts}
	seal, err := sealer(cfg)
	if err != nil {
		return nil, err
	}
	worlds, err := Worlds(context.Background(), cfg, d.Images, d.Store, seal)
	if err != nil {
		return nil, err
	}
	srv, err := api.NewServer(api.Options{
		Approvals: starter,
		// Agents' destructive calls park unless a workspace says otherwise.
		ApprovalDefault: true,
		Worlds:          &sandboxes.Worlds{Store: worlds},
		Store:           d.Store,
		Logger:          d.Logger,
		Config:          cfg,
		Version:         d.Version,
		Checkers:        Readiness(d.Store, d.Temporal),
		Probers:         probers.Drivers(),
		Starter:         starter,
		Orchestrator:    starter,
		Sandboxes:       api.SandboxDeps{Orchestrator: starter, Local: localHost{}},
	})
	if err == nil {
		// A worker of this process runs approved calls in process.
		localAPIs.Store(d.Store, srv)
	}
	return srv, err
}

// ModelProxyURL is the judge model proxy's API root as a worker's judge
// processes reach it: below SVC_PUBLIC_URL when set; else, for svc dev
// (role "dev", whose API is in the same process), below SVC_ADDR when its
// port is fixed, a wildcard host read as loopback. "" otherwise: such
// judges skip, saying to set SVC_PUBLIC_URL.
func ModelProxyURL(cfg config.Config, role string) string {
	const path = "/judge-proxy/v1"
	if cfg.PublicURL != "" {
		return strings.TrimRight(cfg.PublicURL, "/") + path
	}
	if role != "dev" {
		return ""
	}
	host, port, err := net.SplitHostPort(cfg.Addr)
	if err != nil || port == "0" || port == "" {
		return ""
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		host = "127.0.0.1"
	}
	return "http://" + net.JoinHostPort(host, port) + path
}

type checker struct {
	name  string
	check func(ctx context.Context) error
}

func (c checker) Name() string                    { return c.name }
func (c checker) Check(ctx context.Context) error { return c.check(ctx) }

// Readiness is what /readyz probes: the store and Temporal.
func Readiness(st store.Store, c client.Client) []api.Checker {
	return []api.Checker{
		checker{"database", st.Ping},
		checker{"temporal", func(ctx context.Context) error { return orchestration.Ready(ctx, c) }},
	}
}

// sealer is the secrets sealer of SVC_SECRET_KEY; nil when it is unset.
func sealer(cfg config.Config) (*secrets.Sealer, error) {
	if cfg.SecretKey == "" {
		return nil, nil
	}
	return secrets.NewSealer(cfg.SecretKey)
}
