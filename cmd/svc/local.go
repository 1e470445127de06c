package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"

	"svc/config"
	"svc/drivers/local"
)

// localDriver builds the local runtime's driver for a process of the given
// role ("dev" or "worker") under the SVC_LOCAL_* settings: whether it runs
// jobs at all, and how they are isolated (docs/runtimes.md). A setting
// that cannot be honoured stops start-up with a line naming it; a worker
// that may not run local jobs still starts, and refuses them with the
// reason.
func localDriver(ctx context.Context, cfg config.Config, role, dataDir string, log *slog.Logger) (*local.Driver, error) {
	root := cfg.LocalWorkDir
	if root == "" {
		var note string
		if root, note = local.DefaultRoot(dataDir); note != "" {
			log.Warn("local runtime: work areas on the data directory's disk, not a tmpfs", "reason", note, "root", root)
		}
	}
	o := local.Options{
		Root:          root,
		Logger:        log,
		ShimPath:      local.FindShim(),
		MaxConcurrent: cfg.LocalMaxConcurrent,
	}
	dev := role == "dev"
	switch {
	case cfg.LocalRuntime == "off":
		o.Off = "the local runtime is off on this worker (SVC_LOCAL_RUNTIME=off): register a nomad or k8s runtime and run the case there"
	case cfg.LocalRuntime == "auto" && !dev && cfg.RequireAuth:
		o.Off = "the local runtime is for development and is off in svc worker when SVC_REQUIRE_AUTH=1: an operator can enable it with SVC_LOCAL_RUNTIME=on (see docs/runtimes.md), or register a nomad or k8s runtime"
	}
	if o.Off != "" {
		log.Info("local runtime off", "reason", o.Off)
		return local.New(o), nil
	}
	if cfg.LocalIsolation == "none" {
		log.Warn("local runtime: jobs are NOT isolated (SVC_LOCAL_ISOLATION=none): they run as svc's own user and can read its files and environment; trusted harnesses only")
		return local.New(o), nil
	}
	if cfg.LocalUser == "" && os.Geteuid() == 0 {
		// Root, no user named: every job as a uid of its own, from the
		// pool, on one job server.
		return localPool(ctx, cfg, dev, dataDir, o, log)
	}
	uid, gid, err := local.ResolveUser(cfg.LocalUser)
	if err != nil {
		return nil, fmt.Errorf("SVC_LOCAL_USER=%s: %v", cfg.LocalUser, oneLine(err))
	}
	if uid < 0 && !dev && cfg.LocalUser == "" {
		// Not root: jobs would run as the service's own user, if in a user
		// namespace of their own. An operator opts in by naming it.
		o.Off = "svc worker does not run as root, so local jobs would run as its own user: run it as root (jobs then run as uids of their own, from SVC_LOCAL_UIDS), or opt in with SVC_LOCAL_USER=<its own user>, or set SVC_LOCAL_RUNTIME=off"
		log.Warn("local runtime off", "reason", o.Off)
		return local.New(o), nil
	}
	o.Isolate = &local.Isolation{UID: uid, GID: gid, Hide: []string{dataDir}, NoNetwork: cfg.LocalNetwork == "none"}
	d := local.New(o)
	if err := d.Check(ctx); err != nil {
		switch {
		case cfg.LocalIsolation == "namespaces":
			return nil, fmt.Errorf("SVC_LOCAL_ISOLATION=namespaces: %v", oneLine(err))
		case !dev:
			o.Off = "local jobs cannot be isolated on this worker (" + oneLine(err) + "): give it the privileges (root, or user namespaces), or set SVC_LOCAL_ISOLATION=none for trusted harnesses"
			log.Warn("local runtime off", "reason", o.Off)
			return local.New(o), nil
		}
		log.Warn("local runtime: jobs cannot be isolated here and run as svc's own user; trusted harnesses only", "err", oneLine(err))
		o.Isolate = nil
		return local.New(o), nil
	}
	who := fmt.Sprintf("uid %d", uid)
	if uid < 0 {
		who = "root of a user namespace without capabilities"
	}
	log.Info("local runtime: jobs isolated in PID and mount namespaces", "user", who, "network", cfg.LocalNetwork, "shim", o.ShimPath)
	return d, nil
}

// localPool builds the driver whose jobs run on one job server, each as a
// uid of its own from SVC_LOCAL_UIDS, and starts that server: a server
// that cannot isolate jobs stops start-up or turns the runtime off, as in
// localDriver.
func localPool(ctx context.Context, cfg config.Config, dev bool, dataDir string, o local.Options, log *slog.Logger) (*local.Driver, error) {
	uids := local.DefaultUIDs
	if v := cfg.LocalUIDs; v != "" {
		r, err := local.ParseUIDRange(v)
		if err != nil {
			return nil, fmt.Errorf("SVC_LOCAL_UIDS=%s: %v", v, err)
		}
		uids = r
	}
	o.Isolate = &local.Isolation{UIDs: &uids, Hide: []string{dataDir}, NoNetwork: cfg.LocalNetwork == "none"}
	d := local.New(o)
	if err := d.Check(ctx); err != nil {
		_ = d.Close()
		o.Isolate = nil
		switch {
		case cfg.LocalIsolation == "namespaces":
			return nil, fmt.Errorf("SVC_LOCAL_ISOLATION=namespaces: %v", oneLine(err))
		case !dev:
			o.Off = "local jobs cannot be isolated on this worker (" + oneLine(err) + "): fix that, or set SVC_LOCAL_ISOLATION=none for trusted harnesses"
			log.Warn("local runtime off", "reason", o.Off)
			return local.New(o), nil
		}
		log.Warn("local runtime: jobs cannot be isolated here and run as svc's own user; trusted harnesses only", "err", oneLine(err))
		return local.New(o), nil
	}
	log.Info("local runtime: jobs isolated on a job server, each as a uid of its own", "uids", fmt.Sprintf("%d-%d", uids.First, uids.Last), "network", cfg.LocalNetwork, "shim", o.ShimPath)
	return d, nil
}
