package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"

	"go.temporal.io/sdk/client"

	"svc/internal/app"
	"svc/internal/orchestration"
	"svc/internal/platform/config"
	"svc/store/postgres"
)

// runServe runs the stateless API front against PostgreSQL and an external
// Temporal. Missing or unreachable dependencies stop start-up with one line
// naming the setting; there is no silent fallback to the embedded default.
func runServe(ctx context.Context, cfg config.Config, args []string, stdout, stderr io.Writer) error {
	if len(args) > 0 {
		return fmt.Errorf("%w: unexpected arguments %q", errUsage, args)
	}
	var sd shutdowns
	log, st, tc, err := openExternal(ctx, cfg, "serve", true, stderr, &sd)
	defer func() { sd.run(cfg.ShutdownTimeout, log) }()
	if err != nil {
		return err
	}
	if err := startPprof(cfg, log); err != nil {
		return err
	}

	srv, err := app.API(cfg, app.Deps{Store: st, Temporal: tc, Logger: log, Version: version})
	if err != nil {
		return err
	}
	return serveHTTP(ctx, cfg, srv.Handler(), log, func(url string) {
		fmt.Fprintf(stdout, "svc serve: API on %s (Temporal %s, namespace %q)\n", url, cfg.TemporalAddress, cfg.TemporalNamespace)
	})
}

// requireExternal checks the two settings serve and worker cannot run without.
// openExternal opens what serve and worker (the production roles) run
// on, in order, each with its shutdown added to sd: the logger, the
// telemetry of role, PostgreSQL (migrated first with migrate) and the
// external Temporal. The logger is returned even with an error, for sd.
func openExternal(ctx context.Context, cfg config.Config, role string, migrate bool, stderr io.Writer, sd *shutdowns) (*slog.Logger, *postgres.Store, client.Client, error) {
	log := newLogger(cfg, stderr)
	if err := requireExternal(cfg); err != nil {
		return log, nil, nil, err
	}
	if err := startTelemetry(ctx, cfg, role, sd); err != nil {
		return log, nil, nil, err
	}
	st, err := openPostgres(ctx, cfg, migrate)
	if err != nil {
		return log, nil, nil, err
	}
	sd.add(func(context.Context) error { return st.Close() })
	tlsCfg, err := temporalTLS(cfg).Config()
	if err != nil {
		return log, nil, nil, err
	}
	tc, err := dialTemporal(ctx, cfg, cfg.TemporalAddress, "", tlsCfg, log)
	if err != nil {
		return log, nil, nil, err
	}
	sd.add(func(context.Context) error { tc.Close(); return nil })
	return log, st, tc, nil
}

// temporalTLS is the TLS of serve's and worker's connection to Temporal.
func temporalTLS(cfg config.Config) orchestration.TLSSettings {
	return orchestration.TLSSettings{
		Cert:       cfg.TemporalTLSCert,
		Key:        cfg.TemporalTLSKey,
		CA:         cfg.TemporalTLSCA,
		ServerName: cfg.TemporalTLSServerName,
	}
}

func requireExternal(cfg config.Config) error {
	if err := requireSetting(cfg.DatabaseURL, "DATABASE_URL",
		"give a PostgreSQL URL such as postgres://svc@db:5432/svc, or run `svc dev` for the embedded default"); err != nil {
		return err
	}
	return requireSetting(cfg.TemporalAddress, "TEMPORAL_ADDRESS",
		"give the Temporal frontend as host:port, such as temporal:7233, or run `svc dev` for the embedded default")
}
