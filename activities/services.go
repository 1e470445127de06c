package activities

import (
	"context"

	"svc/activities/judges"
	"svc/auth"
	"svc/internal/domain/eval"
	"svc/internal/domain/modelproxy"
	"svc/internal/domain/registry"
	"svc/internal/domain/trace"
	"svc/internal/integrations/pull"
)

// The worker never calls a request-side service: what it needs of one is
// a small interface declared here, in domain and store terms, which the
// service implements and internal/app wires in (app.Activities).

// Registry resolves what a run names as its creator sees it (harnesses,
// judges, rubrics, runtimes) and how to reach a remote runtime's cluster
// on behalf of a workspace: a runtime's credentials are read and checked
// as POST /runtimes/probe reads them. The registry service
// (internal/service/registries) implements it.
type Registry interface {
	Resolve(ctx context.Context, p auth.Principal, kind registry.Kind, id, version string) (registry.Resolved, error)
	// NomadConnection and K8sConnection return, besides an error, a
	// missing reason: why a named secret cannot be used.
	NomadConnection(ctx context.Context, workspace string, rt *registry.RuntimeSpec) (c registry.NomadConnection, missing string, err error)
	K8sConnection(ctx context.Context, workspace string, rt *registry.RuntimeSpec) (c registry.K8sConnection, missing string, err error)
}

// ModelAccess is the workspace's model bindings as a job or a judge uses
// them: whether a binding and its key can be had (a missing reason when
// not), a model judge's endpoint, a binding's live version (a judge's
// seal), and the model proxy's run-scoped tokens with what their calls
// cost. The models service (internal/service/models) implements it.
type ModelAccess interface {
	Check(ctx context.Context, workspace, name string) (missing string, err error)
	JudgeEndpoint(ctx context.Context, workspace, name string) (ep judges.Endpoint, missing string, err error)
	Version(ctx context.Context, workspace, name string) (string, error)
	MintProxyToken(ctx context.Context, g modelproxy.Grant) (string, error)
	RevokeProxyToken(ctx context.Context, token string) error
	ProxyUsage(ctx context.Context, token string) (modelproxy.Usage, error)
}

// TraceSealer is the trace ledger's side of a seal: the thresholds a
// sealed trajectory crosses, the spans that wait unsealed (a pull from
// the ledger waits for them, or seals them once idle), and the trace
// sweep. The trace service (internal/service/traces) implements it.
type TraceSealer interface {
	LandCrossings(ctx context.Context, workspace, runID, source string, events []eval.TraceEvent, processMs int64) ([]trace.Crossing, error)
	Pending(ctx context.Context, workspace, viewer string, teams []string, id string) (*trace.PendingError, error)
	SealIdle(ctx context.Context, workspace, id string) (bool, error)
	Sweep(ctx context.Context) (trace.SweepReport, error)
}

// TraceSourceClients opens a workspace's connection to a trace platform
// for a pulled batch, its credentials read from the workspace's secrets.
// The trace service's Sources implements it.
type TraceSourceClients interface {
	Client(ctx context.Context, workspace string, cfg pull.Config) (*pull.Client, error)
}

// WebhookSecrets gives a delivery the workspace's signing secret, minted
// on first use (by subject). The runs service (internal/service/runs),
// which owns the secret's lifecycle, implements it.
type WebhookSecrets interface {
	SigningSecret(ctx context.Context, workspace, subject string) (string, error)
}
