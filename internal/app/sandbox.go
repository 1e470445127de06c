package app

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"sync"
	"sync/atomic"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"

	"svc/activities"
	"svc/drivers/local/sandbox"
	"svc/internal/domain/eval"
	"svc/internal/domain/flows"
	"svc/internal/orchestration"
	"svc/internal/platform/config"
)

// The local sandbox runtime of a process (drivers/local/sandbox), its
// host queue, and the in-process exec path of svc dev.

var (
	runtimesMu sync.Mutex
	runtimes   = map[string]*sandbox.Runtime{}
)

// SandboxRoot is the local sandbox runtime's state directory:
// SVC_SANDBOX_ROOT, else <data dir>/sandbox.
func SandboxRoot(cfg config.Config) string {
	if cfg.SandboxRoot != "" {
		return cfg.SandboxRoot
	}
	return filepath.Join(cmp.Or(cfg.DataDir, ".svc"), "sandbox")
}

// SandboxRuntime is the process's local sandbox runtime under
// SandboxRoot(cfg): one per root, shared by the worker and the API of svc
// dev so that calls on one session are serialised.
func SandboxRuntime(cfg config.Config, log *slog.Logger) (*sandbox.Runtime, error) {
	root, err := filepath.Abs(SandboxRoot(cfg))
	if err != nil {
		return nil, fmt.Errorf("SVC_SANDBOX_ROOT: %v", err)
	}
	runtimesMu.Lock()
	defer runtimesMu.Unlock()
	if rt, ok := runtimes[root]; ok {
		return rt, nil
	}
	rt, err := sandbox.New(sandbox.Options{Root: root, Runc: cfg.SandboxRunc, MaxCaptureBytes: cfg.WorldMaxCaptureBytes, Logger: log})
	if err != nil {
		return nil, err
	}
	runtimes[root] = rt
	return rt, nil
}

// localSandboxes is the sandbox host a worker of this process runs, for
// the API of the same process (svc dev): set by StartWorker.
var localSandboxes atomic.Pointer[activities.Activities]

// localHost is sandboxes.LocalHost over the worker of this process: an
// exec for a session this host holds runs the ExecSandbox activity's code
// in process (about a millisecond of overhead instead of an update's
// round trips through Temporal). Without a worker in the process it
// reports no host, and execs go through the workflow.
type localHost struct{}

func (localHost) Host() string {
	if a := localSandboxes.Load(); a != nil && a.Sandbox != nil && a.Sandbox.Runtime != nil {
		return a.Host
	}
	return ""
}

func (localHost) Available() error {
	a := localSandboxes.Load()
	if a == nil || a.Sandbox == nil || a.Sandbox.Runtime == nil {
		return nil // the create activity, on the worker's host, decides
	}
	return a.Sandbox.Runtime.Available()
}

func (localHost) Exec(ctx context.Context, in flows.SandboxExecInput) (flows.SandboxExecResult, error) {
	a := localSandboxes.Load()
	res, err := a.ExecSandbox(ctx, in)
	if err != nil && orchestration.IsSandboxLost(err) {
		return res, fmt.Errorf("%w", eval.ErrSessionLost)
	}
	return res, err
}

// wireSandboxes gives the worker's activities the local sandbox runtime
// and this host's sandbox queue.
func wireSandboxes(cfg config.Config, acts *activities.Activities, log *slog.Logger) error {
	rt, err := SandboxRuntime(cfg, log)
	if err != nil {
		return err
	}
	acts.Sandbox = &activities.Sandboxes{Runtime: rt, HostQueue: flows.SandboxHostQueue(cfg.TaskQueue, acts.Host)}
	if acts.Worlds.Sessions == nil {
		acts.Worlds.Sessions = rt
	}
	return nil
}

// startSandboxHost starts, when this host's sandbox runtime is available,
// the workers of the sandbox create queue (flows.SandboxCreateQueue: a
// session's create, which makes this host its host) and of this host's
// own queue (the session activities after create), and settles orphaned,
// in the background, the live sessions of this host whose container a
// restart lost. A host whose runtime is unavailable (no runc, not root)
// polls neither, so it never takes a create it cannot run; it says why
// in its log.
func startSandboxHost(ctx context.Context, cfg config.Config, d Deps, acts *activities.Activities, o WorkerOptions) ([]worker.Worker, error) {
	if acts.Sandbox == nil {
		return nil, nil
	}
	// svc dev's API asks this host whether sessions can run (its 400).
	localSandboxes.Store(acts)
	if err := acts.Sandbox.Runtime.Available(); err != nil {
		d.Logger.Warn("this worker hosts no sandbox sessions: its sandbox runtime is unavailable, so it does not poll the sandbox create queue",
			"queue", flows.SandboxCreateQueue(cfg.TaskQueue), "why", err.Error())
		return nil, nil
	}
	var started []worker.Worker
	for _, q := range []string{acts.Sandbox.HostQueue, flows.SandboxCreateQueue(cfg.TaskQueue)} {
		w := orchestration.NewWorker(d.Temporal, q, func(r worker.Registry) {
			activities.Register(r, acts)
		}, o.Temporal)
		if err := w.Start(); err != nil {
			for _, s := range started {
				s.Stop()
			}
			return nil, fmt.Errorf("start the sandbox worker on task queue %q: %w", q, err)
		}
		started = append(started, w)
	}
	go settleLostSandboxes(context.WithoutCancel(ctx), d.Temporal, cfg.TaskQueue, acts, d.Logger)
	return started, nil
}

// settleLostSandboxes closes, as orphaned, this host's live sessions whose
// container is not running.
func settleLostSandboxes(ctx context.Context, c client.Client, queue string, acts *activities.Activities, log *slog.Logger) {
	lost, err := acts.LostSandboxes(ctx)
	if err != nil {
		log.Warn("listing the sandbox sessions a restart may have lost", "err", err)
		return
	}
	st := &orchestration.Starter{Client: c, TaskQueue: queue}
	for _, ref := range lost {
		if err := st.CloseSandbox(ctx, ref.RunID, flows.SandboxClose{Reason: eval.ClosedOrphaned}); err != nil {
			log.Warn("settling a lost sandbox session orphaned", "run", ref.RunID, "err", err)
			continue
		}
		log.Info("a sandbox session's container was lost; settling it orphaned", "run", ref.RunID, "workspace", ref.Workspace)
	}
}

// bothWorkers is the main worker with the sandbox host's: stopping it
// stops them all.
type bothWorkers struct {
	worker.Worker
	host []worker.Worker
}

func (b bothWorkers) Stop() {
	for _, h := range b.host {
		h.Stop()
	}
	b.Worker.Stop()
}
