package main

import (
	"context"
	"fmt"
	"io"
	"path/filepath"

	"svc/internal/platform/config"
)

// runWorker runs the Temporal worker only: workflows and activities, against
// PostgreSQL and an external Temporal.
func runWorker(ctx context.Context, cfg config.Config, args []string, stdout, stderr io.Writer) error {
	if len(args) > 0 {
		return fmt.Errorf("%w: unexpected arguments %q", errUsage, args)
	}
	// The worker does not migrate: serve and migrate own the schema, so a
	// worker fleet rolling out never races a schema change.
	var sd shutdowns
	log, st, tc, err := openExternal(ctx, cfg, "worker", false, stderr, &sd)
	defer func() { sd.run(cfg.ShutdownTimeout, log) }()
	if err != nil {
		return err
	}
	dataDir, err := filepath.Abs(cfg.DataDir)
	if err != nil {
		return fmt.Errorf("SVC_DATA_DIR=%s: %v", cfg.DataDir, err)
	}
	if err := startPprof(cfg, log); err != nil {
		return err
	}
	w, err := startWorker(ctx, tc, cfg, "worker", st, dataDir, log, nil)
	if err != nil {
		return err
	}
	sd.add(func(context.Context) error { w.Stop(); return nil })
	fmt.Fprintf(stdout, "svc worker: polling task queue %q on %s (namespace %q)\n", cfg.TaskQueue, cfg.TemporalAddress, cfg.TemporalNamespace)
	<-ctx.Done()
	log.Info("shutting down", "reason", "signal")
	return nil
}
