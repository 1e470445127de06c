// Package activities holds every side effect a workflow needs (dispatching a
// case through a driver, running judges, persisting results, webhooks). The
// activities are methods on Activities, which carries their dependencies;
// the worker registers each under its method's name, and workflows call it
// by that name and with the input and result types of package flows (the
// workflows' contract; this package's RunRef, FinishInput, ... are aliases):
//
//	workflow.ExecuteActivity(ctx, flows.ActivityDispatchRun, flows.RunRef{...})
//
// Every activity is idempotent: Temporal runs an activity at least once, so
// each one checks what a previous attempt already did (a terminal run is
// not dispatched again, a notification id is deterministic, a webhook keeps
// one message id across attempts).
package activities

import (
	"context"
	"log/slog"
	"net/http"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/worker"

	"svc/activities/judges"
	"svc/drivers"
	"svc/drivers/runner"
	"svc/internal/integrations/webhooks"
	"svc/internal/platform/secrets"
	"svc/store/records"
)

// Activities carries the dependencies of every activity method.
type Activities struct {
	Store Store // the records activities read and write (store.go)
	// Approvals settles expiries and runs approved calls (approval.go).
	Approvals ApprovalRunner
	// Registries resolves harnesses and runtimes as a run's creator sees
	// them, and a remote runtime's connection (its secrets, and the probe
	// guard the registry service was built with).
	Registries Registry
	// Sealer opens workspace secrets (harness secretEnv); nil when
	// SVC_SECRET_KEY is unset.
	Sealer *secrets.Sealer
	// Driver runs process harnesses on the local runtime: a run naming no
	// runtime, or a local one. A run on a nomad runtime runs on a
	// nomad.Driver built from the runtime (see place), kept per runtime.
	Driver drivers.Driver
	// RunnerQueue is the lease queue of self-hosted runtimes (kind runner):
	// a run on one queues its job there for a runner of its workspace
	// (drivers/runner); internal/app wires the runners service's.
	RunnerQueue runner.Queue
	// Judges runs code judges over finished cases.
	Judges *judges.Runner
	// Models resolves a model judge's model to the workspace's binding
	// and its key, and mints the model proxy's tokens; nil skips model
	// judges with a reason.
	Models ModelAccess
	// WebhookSecrets gives a delivery its workspace's signing secret.
	WebhookSecrets WebhookSecrets
	// Guard re-checks webhook destinations at delivery time; HTTP sends
	// them (Guard.Client when nil).
	Guard *webhooks.Guard
	HTTP  *http.Client
	// OTLPEndpoint is where an instrumented harness sends its spans.
	OTLPEndpoint string
	// ModelProxyURL is the API root of the control plane's judge model
	// proxy as a judge process reaches it ("http://host:port/judge-proxy/v1");
	// empty means below OTLPEndpoint (see modelProxyURL).
	ModelProxyURL string
	// TraceIngest lands the thresholds a sealed trajectory crosses, seals
	// the OTLP door's external trajectories and applies trajectory
	// retention (SweepTraces).
	TraceIngest TraceSealer
	// TraceSources opens the trace sources pulled batches read (pull.go).
	TraceSources TraceSourceClients
	// Worlds publishes sandbox sessions' changes as world versions
	// (sandbox_world.go).
	Worlds Worlds
	// Sandbox hosts sandbox sessions' containers (sandbox.go); nil when
	// this worker runs none.
	Sandbox *Sandboxes
	// Host names the worker in provenance.
	Host   string
	Logger *slog.Logger
	Now    func() time.Time

	plans      records.PlanCache // decoded batch records, see batchPlan
	commits    groupCommit       // the queue of case writes, see groupCommit
	harnesses  harnessMemo       // the chunks' harness resolutions, see resolveHarness
	thresholds thresholdCache    // which workspaces have trace thresholds, see afterSeal
	spanReads  pendingReads      // the worker's coalesced reads of pending spans, see withRunSpans
	remotes    remoteDrivers     // the drivers of nomad runtimes, see nomadDriver
}

// Register adds a's activity methods to r.
func Register(r worker.Registry, a *Activities) {
	r.RegisterActivity(a)
}

func (a *Activities) now() time.Time {
	if a.Now != nil {
		return a.Now().UTC()
	}
	return time.Now().UTC()
}

func (a *Activities) logger() *slog.Logger {
	if a.Logger != nil {
		return a.Logger
	}
	return slog.Default()
}

// activityAttrs are the log attributes that find the activity of ctx in
// Temporal: its workflow id and run id, type and attempt. A write an
// activity logs rather than returns (a side record after the main write
// succeeded) is logged with them. Outside an activity (unit tests) there
// are none.
func activityAttrs(ctx context.Context) []any {
	if !activity.IsActivity(ctx) {
		return nil
	}
	info := activity.GetInfo(ctx)
	return []any{"workflowId", info.WorkflowExecution.ID, "workflowRunId", info.WorkflowExecution.RunID,
		"activity", info.ActivityType.Name, "attempt", info.Attempt}
}
