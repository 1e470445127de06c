// Package sandboxes is the service behind the sandbox routes (spec §2.9,
// §3, §4.8): creating a session (validation, the capacity rule, the
// running record with its hard expiry, the session's durable workflow),
// reading sessions with the audience rule, exec, touch and close. A
// session's life is its workflow's (workflows/sandbox.go); its container
// is on the worker host that created it (activities/sandbox.go).
package sandboxes

import (
	"context"
	"log/slog"
	"path/filepath"
	"strings"
	"time"

	"svc/internal/domain/flows"
	"svc/internal/service/registries"
	"svc/store"
)

// Orchestrator starts and drives session workflows (orchestration.Starter).
type Orchestrator interface {
	// StartSandbox starts SandboxSessionWorkflow (workflow id = run id).
	StartSandbox(ctx context.Context, in flows.SandboxInput) error
	// SandboxReady waits for the session's container: its host, or the
	// error that stopped its creation.
	SandboxReady(ctx context.Context, runID string) (flows.SandboxCreated, error)
	// TouchSandbox and CloseSandbox signal the session's workflow; a
	// workflow already gone is not an error.
	TouchSandbox(ctx context.Context, runID string, t flows.SandboxTouch) error
	CloseSandbox(ctx context.Context, runID string, c flows.SandboxClose) error
	// ExecSandbox runs a command through the workflow (an update whose
	// activity runs on the session's host).
	ExecSandbox(ctx context.Context, in flows.SandboxExecInput) (flows.SandboxExecResult, error)
	// WaitSandbox waits until the session's workflow has ended.
	WaitSandbox(ctx context.Context, runID string) error
}

// LocalHost is the sandbox host sharing this process (svc dev): an exec
// for a session it holds runs in process, without a round trip through
// Temporal.
type LocalHost interface {
	// Host is the host name sessions it created record.
	Host() string
	// Available says why this host cannot run sandboxes (nil: it can).
	Available() error
	// Exec runs the command and records it, as the ExecSandbox activity.
	Exec(ctx context.Context, in flows.SandboxExecInput) (flows.SandboxExecResult, error)
}

// WorldResolver finds the image a world session starts from.
type WorldResolver interface {
	// ResolveWorld is version n (n < 1: the latest) of workspace ws's
	// world id, as a reference into the workspace's image store; not
	// found when the world has no such version.
	ResolveWorld(ctx context.Context, ws, id string, n int) (string, error)
}

// Options are the dependencies and settings of a Service.
type Options struct {
	Store      store.Store
	Registries *registries.Service
	// Orchestrator drives session workflows; nil: sessions answer 503.
	Orchestrator Orchestrator
	// Local is the sandbox host in this process; nil when there is none
	// (svc serve): execs then go through the workflow.
	Local LocalHost
	// Worlds resolves world sessions' images; nil: the deployment has no
	// image store, and world sessions are refused.
	Worlds WorldResolver
	// ImageStore says image references into the store can be opened.
	ImageStore bool
	// ImageDirs are where an image may be an OCI layout path.
	ImageDirs []string
	// TenantRuns is the workspace's run budget (SVC_TENANT_RUNS) a
	// playground task is admitted against; 0 admits everything.
	TenantRuns int
	// MaxPerAgent and MaxPerTenant are the capacity rule's caps.
	MaxPerAgent, MaxPerTenant int
	// MaxTTL bounds a ttl; DefaultTTL is a create's without one.
	MaxTTL, DefaultTTL time.Duration
	Now                func() time.Time
	Logger             *slog.Logger
}

// Defaults of Options.
const (
	DefaultTTL          = 30 * time.Minute
	DefaultMaxTTL       = 24 * time.Hour
	DefaultMaxPerAgent  = 1
	DefaultMaxPerTenant = 10
)

// Service implements the sandbox routes.
type Service struct{ o Options }

// New returns a Service.
func New(o Options) *Service {
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.MaxTTL <= 0 {
		o.MaxTTL = DefaultMaxTTL
	}
	if o.DefaultTTL <= 0 || o.DefaultTTL > o.MaxTTL {
		o.DefaultTTL = min(DefaultTTL, o.MaxTTL)
	}
	if o.MaxPerAgent <= 0 {
		o.MaxPerAgent = DefaultMaxPerAgent
	}
	if o.MaxPerTenant <= 0 {
		o.MaxPerTenant = DefaultMaxPerTenant
	}
	return &Service{o: o}
}

// ImageDirs splits SVC_SANDBOX_IMAGE_DIRS into clean absolute directories.
func ImageDirs(list string) []string {
	var out []string
	for _, d := range strings.Split(list, ",") {
		d = strings.TrimSpace(d)
		if d == "" || !filepath.IsAbs(d) {
			continue
		}
		out = append(out, filepath.Clean(d))
	}
	return out
}
