package main

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"

	"svc/internal/app"
	"svc/internal/orchestration/devserver"
	"svc/internal/platform/config"
	"svc/store/sqlite"
)

// devMemoryLimit is the soft memory limit svc dev gives Go's garbage
// collector unless GOMEMLIMIT sets one. svc dev is one process on a
// developer's machine; its live heap stays near 100 MB even at 100,000
// cases, but without a limit the collector lets the heap double between
// collections, so the bursts of a large dataset's registration or a
// batch's end left the process at 500 to 770 MB. With the limit the
// collector runs earlier as the heap nears it (it is soft: the heap may
// pass it, at the cost of more collections, never of an error).
const devMemoryLimit = 192 << 20

// runDev runs the embedded default: Temporal's own server (SQLite file), the
// embedded store (SQLite file), the API and the worker, in one process. A
// second start on the same data dir keeps every record and resumes workflows.
func runDev(ctx context.Context, cfg config.Config, args []string, stdout, stderr io.Writer) error {
	if len(args) > 0 {
		return fmt.Errorf("%w: unexpected arguments %q", errUsage, args)
	}
	log := newLogger(cfg, stderr)
	if os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(devMemoryLimit)
	}
	var sd shutdowns
	defer func() { sd.run(cfg.ShutdownTimeout, log) }()

	dataDir, err := filepath.Abs(cfg.DataDir)
	if err != nil {
		return fmt.Errorf("SVC_DATA_DIR=%s: %v", cfg.DataDir, err)
	}
	if err := os.MkdirAll(dataDir, 0o700); err != nil {
		return fmt.Errorf("SVC_DATA_DIR=%s: cannot create: %v", cfg.DataDir, oneLine(err))
	}
	if err := startTelemetry(ctx, cfg, "dev", &sd); err != nil {
		return err
	}

	st, err := sqlite.Open(ctx, filepath.Join(dataDir, "svc.db"))
	if err != nil {
		return fmt.Errorf("SVC_DATA_DIR=%s: cannot open the embedded store: %v", cfg.DataDir, oneLine(err))
	}
	sd.add(func(context.Context) error { return st.Close() })
	if _, err := st.Migrate(ctx); err != nil {
		return fmt.Errorf("SVC_DATA_DIR=%s: migrations failed: %v", cfg.DataDir, oneLine(err))
	}

	ts, err := devserver.Start(ctx, devserver.Options{
		DBPath:       filepath.Join(dataDir, "temporal.db"),
		FrontendPort: cfg.TemporalPort,
		Namespace:    cfg.TemporalNamespace,
		Logger:       log,
	})
	if err != nil {
		return fmt.Errorf("embedded Temporal: %v", oneLine(err))
	}
	sd.add(func(context.Context) error { return ts.Stop() })

	// The embedded server requires mutual TLS with the certificates it
	// keeps in the data dir; TEMPORAL_TLS_* are for serve and worker.
	tc, err := dialTemporal(ctx, cfg, ts.HostPort(), "embedded Temporal", ts.ClientTLS(), log)
	if err != nil {
		return err
	}
	sd.add(func(context.Context) error { tc.Close(); return nil })

	if cfg.SecretKey == "" {
		if cfg.SecretKey, err = devSecretKey(dataDir); err != nil {
			return err
		}
	}
	if err := startPprof(cfg, log); err != nil {
		return err
	}
	// The managed image store of worlds and imported images, on loopback,
	// on disk under the data dir, unless SVC_IMAGE_STORE names a registry.
	var imgs *app.ManagedImages
	if cfg.ImageStore == "" {
		var stop func(context.Context) error
		if imgs, stop, err = app.ServeManagedImages(ctx, dataDir, log); err != nil {
			return err
		}
		sd.add(stop)
	}
	w, err := startWorker(ctx, tc, cfg, "dev", st, dataDir, log, imgs)
	if err != nil {
		return err
	}
	sd.add(func(context.Context) error { w.Stop(); return nil })

	srv, err := app.API(cfg, app.Deps{Store: st, Temporal: tc, Logger: log, Version: version, Images: imgs})
	if err != nil {
		return err
	}
	return serveHTTP(ctx, cfg, srv.Handler(), log, func(url string) {
		fmt.Fprintf(stdout, "svc dev: API on %s (data in %s, Temporal on %s, task queue %q)\n", url, dataDir, ts.HostPort(), cfg.TaskQueue)
		f := ts.TLSFiles()
		fmt.Fprintf(stdout, "Temporal requires mutual TLS: a client uses TEMPORAL_TLS_CA=%s TEMPORAL_TLS_CERT=%s TEMPORAL_TLS_KEY=%s\n", f.CA, f.Cert, f.Key)
		fmt.Fprintf(stdout, "try: curl -s %s/healthz\n", url)
		fmt.Fprintf(stdout, "web view: %s/ui/\n", url)
	})
}

// devSecretKey is SVC_SECRET_KEY for `svc dev` when none is set: a random
// key kept in the data dir (mode 0600), so that secrets and webhook signing
// work out of the box and survive restarts. Production sets the variable.
func devSecretKey(dataDir string) (string, error) {
	path := filepath.Join(dataDir, "secret.key")
	if b, err := os.ReadFile(path); err == nil {
		return strings.TrimSpace(string(b)), nil
	} else if !errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("SVC_DATA_DIR: reading %s: %v", path, err)
	}
	var k [32]byte
	if _, err := rand.Read(k[:]); err != nil {
		return "", err
	}
	key := base64.StdEncoding.EncodeToString(k[:])
	if err := os.WriteFile(path, []byte(key+"\n"), 0o600); err != nil {
		return "", fmt.Errorf("SVC_DATA_DIR: writing %s: %v", path, err)
	}
	return key, nil
}
