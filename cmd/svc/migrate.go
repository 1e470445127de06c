package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"svc/internal/platform/config"
	"svc/store/sqlite"
)

// runMigrate applies pending migrations to PostgreSQL when DATABASE_URL is
// set, else to the embedded SQLite store under SVC_DATA_DIR.
func runMigrate(ctx context.Context, cfg config.Config, args []string, stdout, stderr io.Writer) error {
	if len(args) > 0 {
		return fmt.Errorf("%w: unexpected arguments %q", errUsage, args)
	}
	if cfg.DatabaseURL != "" {
		st, err := openPostgres(ctx, cfg, true)
		if err != nil {
			return err
		}
		defer st.Close()
		fmt.Fprintf(stdout, "svc migrate: PostgreSQL %s is up to date\n", cfg.Redacted().DatabaseURL)
		return nil
	}
	if err := os.MkdirAll(cfg.DataDir, 0o700); err != nil {
		return fmt.Errorf("SVC_DATA_DIR=%s: cannot create: %v", cfg.DataDir, oneLine(err))
	}
	path := filepath.Join(cfg.DataDir, "svc.db")
	st, err := sqlite.Open(ctx, path)
	if err != nil {
		return fmt.Errorf("SVC_DATA_DIR=%s: cannot open the embedded store: %v", cfg.DataDir, oneLine(err))
	}
	defer st.Close()
	if _, err := st.Migrate(ctx); err != nil {
		return fmt.Errorf("SVC_DATA_DIR=%s: migrations failed: %v", cfg.DataDir, oneLine(err))
	}
	fmt.Fprintf(stdout, "svc migrate: SQLite %s is up to date\n", path)
	return nil
}
