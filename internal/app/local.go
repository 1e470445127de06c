package app

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strings"

	"svc/drivers/local"
	"svc/internal/platform/config"
)

// LocalDriver builds the local runtime's driver for a process of the given
// role ("dev" or "worker") under the SVC_LOCAL_* settings: whether it runs
// jobs at all, and how they are isolated (docs/runtimes.md). A setting
// that cannot be honoured stops start-up with a line naming it; a worker
// that may not run local jobs still starts, and refuses them with the
// reason. apiURLs are the API's addresses that jobs are told (where they
// send spans and model calls), which the isolated network lets them
// reach; none: those this process's settings name for role.
func LocalDriver(ctx context.Context, cfg config.Config, role, dataDir string, log *slog.Logger, apiURLs ...string) (*local.Driver, error) {
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
		log.Warn("local runtime: jobs are NOT isolated (SVC_LOCAL_ISOLATION=none): they run as svc's own user and can read its files and environment, and share the host's network; trusted harnesses only")
		return local.New(o), nil
	}
	network, err := localNetwork(ctx, cfg, role, apiURLs)
	if err != nil {
		return nil, err
	}
	if cfg.LocalUser == "" && os.Geteuid() == 0 {
		// Root, no user named: every job as a uid of its own, from the
		// pool, on one job server.
		return localPool(ctx, cfg, dev, dataDir, o, network, log)
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
	o.Isolate = &local.Isolation{UID: uid, GID: gid, Hide: []string{dataDir}, NoNetwork: cfg.LocalNetwork == "none", Network: network}
	d, o, checkErr, err := checkIsolation(ctx, cfg, dev, o, log)
	if err != nil || o.Off != "" {
		return d, err
	}
	if err := checkErr; err != nil {
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
	log.Info("local runtime: jobs isolated in PID and mount namespaces", "user", who, "network", networkMode(o), "shim", o.ShimPath)
	return d, nil
}

// localPool builds the driver whose jobs run on one job server, each as a
// uid of its own from SVC_LOCAL_UIDS, and starts that server: a server
// that cannot isolate jobs stops start-up or turns the runtime off, as in
// LocalDriver.
func localPool(ctx context.Context, cfg config.Config, dev bool, dataDir string, o local.Options, network *local.Network, log *slog.Logger) (*local.Driver, error) {
	uids := local.DefaultUIDs
	if v := cfg.LocalUIDs; v != "" {
		r, err := local.ParseUIDRange(v)
		if err != nil {
			return nil, fmt.Errorf("SVC_LOCAL_UIDS=%s: %v", v, err)
		}
		uids = r
	}
	o.Isolate = &local.Isolation{UIDs: &uids, Hide: []string{dataDir}, NoNetwork: cfg.LocalNetwork == "none", Network: network}
	d, o, checkErr, err := checkIsolation(ctx, cfg, dev, o, log)
	if err != nil || o.Off != "" {
		return d, err
	}
	if err := checkErr; err != nil {
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
	log.Info("local runtime: jobs isolated on a job server, each as a uid of its own", "uids", fmt.Sprintf("%d-%d", uids.First, uids.Last), "network", networkMode(o), "shim", o.ShimPath)
	return d, nil
}

// networkMode names the network jobs of o get, for the start-up line.
func networkMode(o local.Options) string {
	switch {
	case o.Isolate == nil:
		return "host"
	case o.Isolate.NoNetwork:
		return "none"
	case o.Isolate.Network != nil:
		n := o.Isolate.Network
		s := "isolated (public addresses through " + local.SlirpName + "; private networks, link-local (cloud metadata) and the host's own addresses refused"
		if len(n.Reach) > 0 {
			var nets []string
			for _, p := range n.Reach {
				nets = append(nets, p.String())
			}
			s += " but " + strings.Join(nets, ", ")
		}
		return s + "; relayed: " + strings.Join(n.Forward, ", ") + ")"
	}
	return "host"
}

// slirpHint is what an operator does when jobs cannot get the isolated
// network.
const slirpHint = "install " + local.SlirpName + " (apt-get install " + local.SlirpName + "), or set SVC_LOCAL_NETWORK=host to let jobs share the host's network, loopback services (Temporal, PostgreSQL, pprof) included"

// localNetwork returns the isolated network jobs get under
// SVC_LOCAL_NETWORK: nil for host or none; for auto and isolated, the
// API's addresses jobs are told (apiURLs, else those cfg names for role)
// that they do not reach through the way out forwarded, with
// SVC_LOCAL_NETWORK_ALLOW's services by port, its networks routed to, and
// slirp4netns found on PATH (Slirp "" when it is not: checkNetwork
// decides).
func localNetwork(ctx context.Context, cfg config.Config, role string, apiURLs []string) (*local.Network, error) {
	if cfg.LocalNetwork != "auto" && cfg.LocalNetwork != "isolated" {
		return nil, nil
	}
	if len(apiURLs) == 0 {
		apiURLs = []string{cfg.HarnessOTLPEndpoint, cfg.PublicURL, ModelProxyURL(cfg, role)}
	}
	fwd, err := local.Forwards(ctx, apiURLs...)
	if err != nil {
		return nil, fmt.Errorf("the API's address for local jobs: %v", err)
	}
	extra, reach, err := local.ParseAllow(ctx, cfg.LocalNetworkAllow)
	if err != nil {
		return nil, fmt.Errorf("SVC_LOCAL_NETWORK_ALLOW=%s: %v", cfg.LocalNetworkAllow, err)
	}
	for _, a := range extra {
		if !containsAddr(fwd, a) {
			fwd = append(fwd, a)
		}
	}
	return &local.Network{Slirp: local.FindSlirp(), Forward: fwd, Reach: reach}, nil
}

func containsAddr(list []string, a string) bool {
	for _, x := range list {
		if x == a {
			return true
		}
	}
	return false
}

// checkIsolation builds the driver of o and checks its isolation
// (Driver.Check), settling on the way the isolated network (SVC_LOCAL_NETWORK
// auto or isolated): where jobs cannot get it (no slirp4netns, or it
// cannot be set up here) while the rest of the isolation works, isolated
// stops start-up (err), and auto falls back to the host's network in svc
// dev, with a warning saying what to install, and turns the runtime off
// in a worker (o.Off set: the driver is the one to use as it is).
// checkErr is the check's error of the driver returned.
func checkIsolation(ctx context.Context, cfg config.Config, dev bool, o local.Options, log *slog.Logger) (d *local.Driver, _ local.Options, checkErr, err error) {
	n := o.Isolate.Network
	var why string
	if n != nil && n.Slirp == "" {
		why = local.SlirpName + " is not installed"
	} else {
		d = local.New(o)
		checkErr = d.Check(ctx)
		if checkErr == nil || n == nil {
			return d, o, checkErr, nil
		}
		why = oneLine(checkErr)
		_ = d.Close()
	}
	// The same isolation without the network tells whether the network is
	// what fails.
	iso := *o.Isolate
	iso.Network = nil
	o.Isolate = &iso
	d = local.New(o)
	if checkErr = d.Check(ctx); checkErr != nil {
		return d, o, checkErr, nil
	}
	switch {
	case cfg.LocalNetwork == "isolated":
		_ = d.Close()
		return nil, o, nil, fmt.Errorf("SVC_LOCAL_NETWORK=isolated: local jobs cannot get the isolated network here: %s; %s", why, slirpHint)
	case !dev:
		_ = d.Close()
		o.Off = "local jobs cannot get the isolated network on this worker (" + why + "): " + slirpHint
		o.Isolate = nil
		log.Warn("local runtime off", "reason", o.Off)
		return local.New(o), o, nil, nil
	}
	log.Warn("local runtime: jobs share the host's network, loopback services included (Temporal, PostgreSQL, pprof): they cannot get the isolated network here; "+slirpHint, "reason", why)
	return d, o, nil, nil
}

// oneLine flattens an error to a single line for start-up messages.
func oneLine(err error) string {
	return strings.Join(strings.Fields(err.Error()), " ")
}
