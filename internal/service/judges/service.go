// Package judges is the service behind the judge routes that execute or
// render a judge outside a batch (spec §4.4, §2.5): the preview of a
// judge's exact prompt over one case (POST /judges/preview), one real try
// of a judge (POST /judges/try, /judges/:id/try), the evidence of both
// (a stored run, a pasted trace or a live one-case dispatch), and the
// run-scoped model proxy that code judges and harness jobs call
// (/judge-proxy/v1, /model-proxy/v1). The API's handlers decode, call one
// method, and encode; the MCP tools reach it through those routes.
package judges

import (
	"context"
	"log/slog"
	"time"

	"svc/auth"
	"svc/internal/domain/eval"
	"svc/internal/domain/registry"
	"svc/internal/integrations/evidence"
	"svc/internal/service/models"
	"svc/internal/service/registries"
	"svc/internal/service/runs"
	"svc/store"
)

// Registries resolves the judges, rubrics and harnesses a request names
// (*registries.Service).
type Registries interface {
	Resolve(ctx context.Context, p auth.Principal, kind registry.Kind, id, version string) (registries.Resolved, error)
}

// Runs reads the runs evidence comes from and submits the runs a try or a
// live dispatch makes (*runs.Service).
type Runs interface {
	Get(ctx context.Context, p auth.Principal, id string) (eval.Run, error)
	Submit(ctx context.Context, p auth.Principal, req runs.SubmitRequest, source string) (eval.Run, error)
	SubmitJudgeTry(ctx context.Context, p auth.Principal, req runs.JudgeTryRequest, source string) (eval.Run, error)
}

// Models resolves model bindings with their keys and opens and meters the
// proxy's run-scoped tokens (*models.Service).
type Models interface {
	Resolve(ctx context.Context, workspace, name string) (models.Access, string, error)
	OpenProxyToken(ctx context.Context, token string) (models.ProxyGrant, error)
	RecordProxyCall(ctx context.Context, g models.ProxyGrant, call models.ProxyCall) error
}

// Events appends the proxy's model-call events (store.Store).
type Events interface {
	AppendEvent(ctx context.Context, e store.Event) (store.Event, error)
}

// Options are the dependencies of a Service.
type Options struct {
	Registries Registries
	Runs       Runs
	Models     Models
	Events     Events
	// Evidence binds a legacy judge's custom slots and screenshot from the
	// case's artifacts through the outbound address guard, as the worker
	// does; its zero value fetches nothing.
	Evidence evidence.Fetcher
	Now      func() time.Time
	// Logger records model calls and the writes that fail after the
	// answer is decided, with the request id; slog.Default() when nil.
	Logger *slog.Logger
}

// Service implements the judge preview, try and model proxy routes.
type Service struct {
	o Options
}

// New returns a Service.
func New(o Options) *Service {
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	return &Service{o: o}
}
