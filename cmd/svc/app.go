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
	"strings"
	"time"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"

	"svc/api"
	"svc/drivers"
	"svc/internal/app"
	"svc/internal/orchestration"
	"svc/internal/platform/config"
	"svc/internal/platform/telemetry"
	"svc/store"
	"svc/store/postgres"
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
	st, err := postgres.OpenWith(ctx, cfg.DatabaseURL, postgres.Options{StatementTimeout: cfg.PGStatementTimeout})
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

// startWorker starts the Temporal worker with every workflow and activity,
// as internal/app wires it, on the local runtime of role (app.LocalDriver).
// Harness work areas live under dataDir/work. imgs is svc dev's managed
// image store (nil for the worker role).
func startWorker(ctx context.Context, c client.Client, cfg config.Config, role string, st store.Store, dataDir string, log *slog.Logger, imgs *app.ManagedImages) (worker.Worker, error) {
	return app.StartWorker(ctx, cfg, app.Deps{Store: st, Temporal: c, Logger: log, Version: version, Images: imgs}, app.WorkerOptions{
		Role: role,
		// SVC_WORKER_HOST; "" is os.Hostname.
		Host: cfg.WorkerHost,
		OpenDriver: func() (drivers.Driver, error) {
			d, err := app.LocalDriver(ctx, cfg, role, dataDir, log)
			if err != nil {
				return nil, err
			}
			return d, nil
		},
	})
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
