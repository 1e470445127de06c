// Package api is the HTTP front of svc: one Echo server whose routes all
// come from one table, one error shape, and the middleware every request
// passes through (request id, access log and metrics, panic recovery, body
// limit, tracing). Handlers stay thin: decode with Bind, authorise, call one
// store or domain function, encode.
package api

import (
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/contrib/instrumentation/github.com/labstack/echo/otelecho"

	"svc/auth"
	"svc/internal/integrations/evidence"
	"svc/internal/integrations/pull"
	"svc/internal/integrations/webhooks"
	"svc/internal/platform/config"
	"svc/internal/platform/netguard"
	"svc/internal/platform/secrets"
	"svc/internal/service/approvals"
	"svc/internal/service/identity"
	"svc/internal/service/judges"
	"svc/internal/service/models"
	"svc/internal/service/notifications"
	"svc/internal/service/registries"
	"svc/internal/service/runners"
	"svc/internal/service/runs"
	"svc/internal/service/sandboxes"
	"svc/internal/service/scorecards"
	"svc/internal/service/traces"
	"svc/store"
)

// Route is one row of the route table: auth, the OpenAPI document and tests derive from it.
type Route struct {
	Method  string      // http.MethodGet, ...
	Path    string      // Echo path syntax: /runs/:id
	Action  auth.Action // required action; auth.Public for healthz etc.
	Summary string      // equals the operation's summary in openapi.json
	Handler echo.HandlerFunc
}

// Options are the dependencies of a Server. Config decides authentication
// (SVC_REQUIRE_AUTH, OIDC_*, SVC_INTERNAL_TOKEN, SVC_AUTH_FAIL_LIMIT,
// SVC_PUBLIC_URL); the resources read and write Store.
type Options struct {
	Store    store.Store
	Logger   *slog.Logger // slog.Default() when nil
	Config   config.Config
	Version  string
	Checkers []Checker // what /readyz probes
	// Probers reach remote runtimes for POST /runtimes/probe and a
	// kubeconfig's binding check (internal/probers.Drivers in the
	// binary); zero, probes answer that this process cannot probe.
	Probers  registries.Probers
	Registry *prometheus.Registry // optional; a new one when nil
	// Now is the clock for timestamps and invite expiry; time.Now when nil.
	// Tests move it instead of sleeping.
	Now func() time.Time
	// Sealer encrypts workspace secrets. When nil and Config.SecretKey is
	// set, NewServer builds it from the key (an invalid key is an error
	// naming SVC_SECRET_KEY); when both are empty the secret routes refuse
	// to store values (503) and probes cannot open secrets.
	Sealer *secrets.Sealer
	// Starter starts the durable workflows of runs; nil means no
	// orchestrator is configured and submits answer 503.
	Starter runs.Starter
	// Orchestrator starts, cancels and describes batch workflows; nil
	// means batch submits answer 503 and the driver-ops routes 404.
	Orchestrator scorecards.Orchestrator
	// Worlds is the image store's request side (world listing, image
	// import, whether a world session can snapshot); nil or without a
	// store, world sessions are refused and no world is listed.
	Worlds *sandboxes.Worlds
	// Sandboxes drives sandbox sessions: their workflows, and the
	// sandbox host sharing this process (svc dev); zero, sessions answer
	// 503.
	Sandboxes SandboxDeps
	// Approvals starts and signals approval workflows; nil, an approval's
	// expiry is applied when it is read and a call whose caller is gone
	// runs only when someone polls it (approvals.go).
	Approvals approvals.Orchestrator
	// ApprovalDefault parks agents' destructive calls in workspaces that
	// set no approval policy (approvals.DefaultTools); the binary sets it.
	ApprovalDefault bool
}

// SandboxDeps are what the sandbox routes reach beyond the store.
type SandboxDeps struct {
	Orchestrator sandboxes.Orchestrator
	// Local is the sandbox host in this process, nil when there is none.
	Local sandboxes.LocalHost
}

// Server is the HTTP API. Build it with New; serve Handler.
type Server struct {
	e             *echo.Echo
	store         store.Store
	logger        *slog.Logger
	cfg           config.Config
	version       string
	checkers      []Checker
	checkTimeout  time.Duration
	maxBody       int64
	registry      *prometheus.Registry
	metrics       *httpMetrics
	routes        []Route
	patterns      map[string]bool // "GET /runs/:id" for each row of routes
	now           func() time.Time
	resolver      *auth.Resolver
	dev           devWorkspaces
	mcp           http.Handler // the MCP SDK's streamable-HTTP handler
	mcpServer     *mcp.Server  // its tools are the route table's (registerMCPTools)
	mcpPosts      sync.Map     // serveMCP's token -> the context of the POST carrying a tool call
	registries    *registries.Service
	runs          *runs.Service
	scorecards    *scorecards.Service
	identity      *identity.Service
	traceIngest   *traces.Service
	models        *models.Service // model bindings, the model proxy's tokens; built once, with the sealer
	traceSources  *traces.Sources // trace sources, through the pull guard (SVC_WEBHOOK_ALLOW)
	sealer        *secrets.Sealer // opens model keys for inline judge tries; nil without SVC_SECRET_KEY
	runners       *runners.Service
	judges        *judges.Service        // judge preview and try, the run-scoped model proxy
	worlds        *sandboxes.Worlds      // worlds and image imports (worlds.go)
	sandboxes     *sandboxes.Service     // sandbox sessions (sandboxes.go)
	approvals     *approvals.Service     // parked agent calls (approvals.go, approvals_park.go)
	notifications *notifications.Service // delivery channels and the agent runtime's internal routes
	parkNames     parkingToolNames       // the routes' tool names, for the policies
}

// probeRoutes are hit every few seconds by orchestrators and scrapers:
// they are not traced, and their successes are logged at debug level, so
// that they do not drown the requests people make.
var probeRoutes = map[string]bool{"/healthz": true, "/readyz": true, "/metrics": true}

// New is NewServer for configurations known to be valid; it panics on the
// error NewServer would return (a malformed OIDC_ISSUER).
func New(o Options) *Server {
	s, err := NewServer(o)
	if err != nil {
		panic(err)
	}
	return s
}

// NewServer builds the Echo instance with all middleware and routes. Call
// telemetry.Setup first: the tracing middleware binds to the global tracer
// provider here. It fails only when the authentication settings cannot
// work, such as an OIDC_ISSUER that is not an http(s) URL.
func NewServer(o Options) (*Server, error) {
	s := &Server{
		store:        o.Store,
		logger:       o.Logger,
		cfg:          o.Config,
		version:      o.Version,
		checkers:     o.Checkers,
		checkTimeout: defaultCheckTimeout,
		maxBody:      o.Config.MaxBodyBytes,
		registry:     o.Registry,
		patterns:     map[string]bool{},
		now:          o.Now,
		dev:          devWorkspaces{done: map[string]bool{}},
	}
	if s.now == nil {
		s.now = time.Now
	}
	if s.logger == nil {
		s.logger = slog.Default()
	}
	rv, err := newResolver(o, s.now)
	if err != nil {
		return nil, err
	}
	s.resolver = rv
	sealer := o.Sealer
	if sealer == nil && o.Config.SecretKey != "" {
		if sealer, err = secrets.NewSealer(o.Config.SecretKey); err != nil {
			return nil, fmt.Errorf("api: %w", err)
		}
	}
	s.sealer = sealer
	probeGuard, err := netguard.NewProbeGuard(o.Config.ProbeAllow)
	if err != nil {
		return nil, fmt.Errorf("api: SVC_PROBE_ALLOW: %w", err)
	}
	s.registries = registries.New(o.Store, sealer, s.now, registries.WithProbeGuard(probeGuard), registries.WithProbers(o.Probers),
		registries.WithK8sOperatorNamespaces(o.Config.K8sOperatorNamespaceList()))
	guard, err := webhooks.NewGuard(o.Config.WebhookAllow)
	if err != nil {
		return nil, fmt.Errorf("api: SVC_WEBHOOK_ALLOW: %w", err)
	}
	s.identity = identity.New(identity.Options{Store: o.Store, Now: s.now})
	s.traceIngest = traces.New(traces.Options{Store: o.Store, Registries: s.registries,
		MaxEventsPerHour: int64(o.Config.IngestMaxEventsPerHour), RetentionDays: o.Config.TrajectoryRetentionDays,
		IdleWindow: o.Config.IngestIdleWindow, Now: s.now, Logger: s.logger})
	modelGuard, err := models.NewGuard(o.Config.WebhookAllow)
	if err != nil {
		return nil, fmt.Errorf("api: SVC_WEBHOOK_ALLOW: %w", err)
	}
	s.models = &models.Service{Store: o.Store, Sealer: sealer, Guard: modelGuard, Now: s.now}
	s.runs = runs.New(runs.Options{
		Store: o.Store, Registries: s.registries, Models: s.models, Starter: o.Starter, Sealer: sealer,
		Guard: guard, TenantRuns: o.Config.TenantRuns, QueueMax: o.Config.SchedulerQueueMax, Now: s.now, Logger: s.logger,
	})
	s.scorecards = scorecards.New(scorecards.Options{Store: o.Store, Registries: s.registries, Models: s.models, Orchestrator: o.Orchestrator, TenantRuns: o.Config.TenantRuns, QueueMax: o.Config.SchedulerQueueMax, Now: s.now, Logger: s.logger})
	pullGuard, err := pull.NewGuard(o.Config.WebhookAllow)
	if err != nil {
		return nil, fmt.Errorf("api: SVC_WEBHOOK_ALLOW: %w", err)
	}
	s.traceSources = &traces.Sources{Store: o.Store, Sealer: sealer, Guard: pullGuard, Now: s.now}
	// The evidence of a preview or try is fetched through the webhook guard,
	// as the worker fetches a judge's (internal/integrations/evidence).
	s.judges = judges.New(judges.Options{Registries: s.registries, Runs: s.runs, Models: s.models, Events: o.Store,
		Evidence: evidence.Fetcher{Guard: guard}, Now: s.now, Logger: s.logger})
	ro := runners.Options{Store: o.Store, Now: s.now, Logger: s.logger}
	if sealer != nil {
		ro.Sealer = sealer
	}
	s.runners = runners.New(ro)
	s.worlds = o.Worlds
	if s.worlds == nil {
		s.worlds = &sandboxes.Worlds{}
	}
	s.sandboxes = sandboxes.New(sandboxes.Options{
		Store: o.Store, Registries: s.registries, Orchestrator: o.Sandboxes.Orchestrator, Local: o.Sandboxes.Local,
		Worlds: s.worlds, ImageStore: s.worlds.Store != nil, ImageDirs: sandboxes.ImageDirs(o.Config.SandboxImageDirs),
		TenantRuns: o.Config.TenantRuns, MaxPerAgent: o.Config.SandboxMaxPerAgent, MaxPerTenant: o.Config.SandboxMaxPerTenant, MaxTTL: o.Config.SandboxMaxTTL,
		Now: s.now, Logger: s.logger,
	})
	s.approvals = approvals.New(approvals.Options{Store: o.Store, Orchestrator: o.Approvals, Now: s.now, Logger: s.logger, Default: o.ApprovalDefault})
	s.notifications = notifications.New(notifications.Options{Store: o.Store, Sealer: sealer, Guard: guard, Approvals: s.approvals, Now: s.now})
	if s.maxBody <= 0 {
		// A zero Config (tests, embedders) still gets the documented limit.
		s.maxBody = config.Defaults().MaxBodyBytes
	}
	s.mcp = s.newMCPHandler()
	if s.registry == nil {
		s.registry = prometheus.NewRegistry()
	}
	s.metrics = newHTTPMetrics(s.registry, s.version)

	e := echo.New()
	// The client address (RealIP) trusts X-Forwarded-For only from
	// SVC_TRUSTED_PROXIES, as the failure limiter does (newResolver).
	e.IPExtractor = s.resolver.ClientAddr
	e.HideBanner = true
	e.HidePort = true
	e.HTTPErrorHandler = s.handleError
	// Outermost first. The tracer wraps everything so its span has the final
	// status; observe turns errors into responses (c.Error) so that it, and
	// the tracer, see the status the client gets; recovery sits inside
	// observe so a panic is logged and counted as the 500 it becomes.
	e.Use(
		otelecho.Middleware("svc", otelecho.WithSkipper(func(c echo.Context) bool { return probeRoutes[c.Path()] })),
		s.requestID,
		s.observe,
		recoverPanic,
		s.limitHeaders,
		s.limitBody,
	)
	s.e = e

	s.routes = s.table()
	for _, r := range s.routes {
		key := r.Method + " " + r.Path
		if s.patterns[key] {
			panic(fmt.Sprintf("api: route %s is declared twice", key))
		}
		s.patterns[key] = true
		// Authentication is derived from the row's action, so no route can
		// be added without saying who may call it; likewise every path
		// parameter is vetted (pathid.go), so no route can skip the check.
		e.Add(r.Method, r.Path, r.Handler, s.authenticate(r), checkPathParams, s.park(r))
	}
	if err := s.registerMCPTools(s.routes); err != nil {
		return nil, err
	}
	// The web view (package ui) sits outside the table: its assets are
	// public, and its pages read the table's routes with the user's bearer.
	// See ui_config.go.
	if err := s.mountUI(e); err != nil {
		return nil, err
	}
	return s, nil
}

// table is the whole API. Each resource file contributes its rows; a new
// resource adds its function here.
func (s *Server) table() []Route {
	return slices.Concat(
		s.healthRoutes(),
		s.metricsRoutes(),
		s.openapiRoutes(),
		s.identityRoutes(),
		s.workspaceRoutes(),
		s.keyRoutes(),
		s.memberRoutes(),
		s.inviteRoutes(),
		s.teamRoutes(),
		s.registryRoutes(),
		s.secretRoutes(),
		s.modelRoutes(),
		s.judgePreviewRoutes(),
		s.judgeTryRoutes(),
		s.judgeProxyRoutes(),
		s.runRoutes(),
		s.scorecardRoutes(),
		s.ingestRoutes(),
		s.runnerRoutes(),
		s.ingestPullRoutes(),
		s.traceSourceRoutes(),
		s.sandboxRoutes(),
		s.sandboxTaskRoutes(),
		s.sandboxWorldRoutes(),
		s.worldRoutes(),
		s.traceRoutes(),
		s.eventRoutes(),
		s.mcpRoutes(),
		s.approvalRoutes(),
		s.notificationChannelRoutes(),
		s.internalAgentRoutes(),
	)
}

// Handler returns the server as an http.Handler.
func (s *Server) Handler() http.Handler { return s.e }

// Routes returns a copy of the route table, for tests and the OpenAPI check.
func (s *Server) Routes() []Route { return slices.Clone(s.routes) }

// Echo returns the Echo instance, for wiring that the table does not cover
// (such as a test-only route).
func (s *Server) Echo() *echo.Echo { return s.e }

// routeLabel is the route pattern of the request when it matched a row of
// the table, else "unmatched": metrics and logs carry it instead of the raw
// path, so their cardinality stays bounded whatever clients send.
func (s *Server) routeLabel(c echo.Context) string {
	if s.patterns[c.Request().Method+" "+c.Path()] {
		return c.Path()
	}
	return "unmatched"
}

// listJSON answers 200 with items as a JSON array: [] rather than null when
// there are none, so clients can always iterate.
func listJSON[T any](c echo.Context, items []T) error {
	if items == nil {
		items = []T{}
	}
	return c.JSON(http.StatusOK, items)
}
