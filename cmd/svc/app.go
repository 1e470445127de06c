package main

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"

	"svc/activities"
	"svc/api"
	"svc/internal/integrations/pull"
	"svc/internal/integrations/webhooks"
	"svc/internal/orchestration"
	"svc/internal/platform/config"
	"svc/internal/platform/netguard"
	"svc/internal/platform/secrets"
	"svc/internal/platform/telemetry"
	"svc/internal/service/models"
	"svc/internal/service/registries"
	"svc/internal/service/traceingest"
	"svc/internal/service/tracesources"
	"svc/judges"
	"svc/store"
	"svc/store/postgres"
	"svc/workflows"
)

// version is set at link time: -ldflags "-X main.version=v1.2.3".
var version = "dev"

// shutdowns collects the clean-up steps of a process, run in reverse order.
type shutdowns []func(ctx context.Context) error

func (s *shutdowns) add(f func(ctx context.Context) error) { *s = append(*s, f) }

func (s shutdowns) run(timeout time.Duration, log *slog.Logger) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(context.Background()), timeout)
	defer cancel()
	for i := len(s) - 1; i >= 0; i-- {
		if err := s[i](ctx); err != nil {
			log.Warn("shutdown step failed", "err", err)
		}
	}
}

func newLogger(cfg config.Config, w io.Writer) *slog.Logger {
	var level slog.Level
	if err := level.UnmarshalText([]byte(cfg.LogLevel)); err != nil {
		level = slog.LevelInfo
	}
	opts := &slog.HandlerOptions{Level: level}
	if strings.EqualFold(cfg.LogFormat, "text") {
		return slog.New(slog.NewTextHandler(w, opts))
	}
	return slog.New(slog.NewJSONHandler(w, opts))
}

// requireSetting returns an error naming the setting when it is empty.
func requireSetting(value, env, hint string) error {
	if value == "" {
		return fmt.Errorf("%s is not set: %s", env, hint)
	}
	return nil
}

// openPostgres opens, checks and migrates the production store; each failure
// is one line naming DATABASE_URL.
func openPostgres(ctx context.Context, cfg config.Config, migrate bool) (*postgres.Store, error) {
	if err := requireSetting(cfg.DatabaseURL, "DATABASE_URL",
		"give a PostgreSQL URL such as postgres://svc@db:5432/svc, or run `svc dev` for the embedded default"); err != nil {
		return nil, err
	}
	shown := cfg.Redacted().DatabaseURL
	st, err := postgres.Open(ctx, cfg.DatabaseURL)
	if err != nil {
		return nil, fmt.Errorf("DATABASE_URL=%s: cannot reach PostgreSQL: %v", shown, oneLine(err))
	}
	pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := st.Ping(pctx); err != nil {
		st.Close()
		return nil, fmt.Errorf("DATABASE_URL=%s: cannot reach PostgreSQL: %v", shown, oneLine(err))
	}
	if migrate {
		if _, err := st.Migrate(ctx); err != nil {
			st.Close()
			return nil, fmt.Errorf("DATABASE_URL=%s: migrations failed: %v", shown, oneLine(err))
		}
	}
	return st, nil
}

// dialTemporal connects to Temporal; a failure names TEMPORAL_ADDRESS (or
// the TEMPORAL_TLS_* setting at fault). tlsCfg nil is plain gRPC.
func dialTemporal(ctx context.Context, cfg config.Config, hostPort, setting string, tlsCfg *tls.Config, log *slog.Logger) (client.Client, error) {
	c, err := orchestration.Dial(ctx, orchestration.ClientOptions{
		HostPort:  hostPort,
		Namespace: cfg.TemporalNamespace,
		Logger:    log,
		Setting:   setting,
		TLS:       tlsCfg,
	})
	if err != nil {
		return nil, fmt.Errorf("%v", oneLine(err))
	}
	return c, nil
}

// startWorker starts the Temporal worker with every workflow and activity.
// Harness work areas live under dataDir/work.
func startWorker(ctx context.Context, c client.Client, cfg config.Config, role string, st store.Store, dataDir string, log *slog.Logger) (worker.Worker, error) {
	var sealer *secrets.Sealer
	if cfg.SecretKey != "" {
		var err error
		if sealer, err = secrets.NewSealer(cfg.SecretKey); err != nil {
			return nil, err
		}
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
	host, _ := os.Hostname()
	driver, err := localDriver(ctx, cfg, role, dataDir, log)
	if err != nil {
		return nil, err
	}
	acts := &activities.Activities{
		Store: st,
		Registries: service.New(st, sealer, time.Now, service.WithProbeGuard(probeGuard),
			service.WithK8sOperatorNamespaces(cfg.K8sOperatorNamespaceList())),
		Sealer: sealer,
		Driver: driver,
		Judges: &judges.Runner{Driver: driver},
		Models: &models.Service{Store: st, Sealer: sealer, Guard: modelGuard},
		Guard:  guard,
		Host:   host,
		// An instrumented harness exports its spans here.
		OTLPEndpoint: cfg.HarnessOTLPEndpoint,
		// A code judge with a model binding calls its model here.
		ModelProxyURL: modelProxyURL(cfg, role),
		Logger:        log,
	}
	acts.TraceIngest = traceingest.New(traceingest.Options{Store: st, Registries: acts.Registries,
		MaxEventsPerHour: int64(cfg.IngestMaxEventsPerHour), RetentionDays: cfg.TrajectoryRetentionDays,
		IdleWindow: cfg.IngestIdleWindow, Logger: log})
	// Pulled batches read their platforms through the same allow list,
	// with errors that name the trace source's fields (pull.NewGuard).
	pullGuard, err := pull.NewGuard(cfg.WebhookAllow)
	if err != nil {
		return nil, fmt.Errorf("SVC_WEBHOOK_ALLOW: %v", err)
	}
	acts.TraceSources = &tracesources.Service{Store: st, Sealer: sealer, Guard: pullGuard}
	w := orchestration.NewWorker(c, cfg.TaskQueue, func(r worker.Registry) {
		workflows.Register(r)
		activities.Register(r, acts)
	}, orchestration.WorkerOptions{})
	if err := w.Start(); err != nil {
		return nil, fmt.Errorf("start Temporal worker on task queue %q: %w", cfg.TaskQueue, err)
	}
	// The trace sweep seals idle external trajectories and applies
	// retention; a failure to start it is logged, the next start retries.
	if err := orchestration.StartTraceSweep(ctx, c, cfg.TaskQueue); err != nil {
		log.Warn("starting the trace sweep", "err", err)
	}
	// What a dead svc of this host was running is retried now, not when its
	// heartbeats time out.
	go orchestration.ReclaimDeadAttempts(context.WithoutCancel(ctx), c, cfg.TemporalNamespace, cfg.TaskQueue, log)
	return w, nil
}

// modelProxyURL is the judge model proxy's API root as this worker's
// judge processes reach it: below SVC_PUBLIC_URL when set; else, for svc
// dev (whose API is in the same process), below SVC_ADDR when its port is
// fixed, a wildcard host read as loopback. "" otherwise: such judges skip,
// saying to set SVC_PUBLIC_URL.
func modelProxyURL(cfg config.Config, role string) string {
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

// startTelemetry installs our own OpenTelemetry tracing when an OTLP endpoint is set.
func startTelemetry(ctx context.Context, cfg config.Config, role string, sd *shutdowns) error {
	shutdown, err := telemetry.Setup(ctx, "svc-"+role, version, cfg.OTLPEndpoint)
	if err != nil {
		return fmt.Errorf("OTEL_EXPORTER_OTLP_ENDPOINT=%s: %w", cfg.OTLPEndpoint, err)
	}
	sd.add(shutdown)
	return nil
}

type checker struct {
	name  string
	check func(ctx context.Context) error
}

func (c checker) Name() string                    { return c.name }
func (c checker) Check(ctx context.Context) error { return c.check(ctx) }

func readiness(st store.Store, c client.Client) []api.Checker {
	return []api.Checker{
		checker{"database", st.Ping},
		checker{"temporal", func(ctx context.Context) error { return orchestration.Ready(ctx, c) }},
	}
}

// serveHTTP listens on cfg.Addr, prints where, and serves until ctx is done.
func serveHTTP(ctx context.Context, cfg config.Config, h http.Handler, log *slog.Logger, announce func(url string)) error {
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return fmt.Errorf("SVC_ADDR=%s: cannot listen: %v", cfg.Addr, oneLine(err))
	}
	url := "http://" + ln.Addr().String()
	srv := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    api.TransportMaxHeaderBytes, // above api.MaxHeaderBytes, whose 431 is JSON
	}
	errc := make(chan error, 1)
	// net/http's own refusals (malformed request, oversized headers) in the JSON error shape.
	go func() { errc <- srv.Serve(api.TransportErrors(ln, log)) }()
	log.Info("api listening", "url", url)
	announce(url)
	select {
	case err := <-errc:
		return fmt.Errorf("http server: %w", err)
	case <-ctx.Done():
	}
	log.Info("shutting down", "reason", "signal")
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cfg.ShutdownTimeout)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("http shutdown: %w", err)
	}
	return nil
}

// oneLine flattens an error to a single line for start-up messages.
func oneLine(err error) string {
	return strings.Join(strings.Fields(err.Error()), " ")
}
