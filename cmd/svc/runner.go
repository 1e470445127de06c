package main

import (
	"context"
	"log/slog"

	"svc/internal/app"
	"svc/internal/cli"
	"svc/internal/platform/config"
)

// openLocalDriver is the driver `svc runner` runs its leased jobs with:
// the team's own machine running its own workspace's harnesses, under the
// local runtime's rules of svc dev (isolate where the host allows).
func openLocalDriver(ctx context.Context, cfg config.Config, log *slog.Logger, apiURL string) (cli.LocalDriver, error) {
	d, err := app.LocalDriver(ctx, cfg, "dev", cfg.DataDir, log, apiURL)
	if err != nil {
		return nil, err
	}
	return d, nil
}
