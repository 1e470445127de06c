package api

import (
	"context"
	"errors"
	"net/http"

	"github.com/labstack/echo/v4"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"

	"svc/auth"
	"svc/internal/domain/trace"
	"svc/internal/platform/derrors"
	"svc/internal/service/identity"
	"svc/internal/service/runners"
)

// Self-hosted runners (issue 15, point 6). An admin mints a runner key
// (rnr_...); `svc runner` leases the workspace's jobs with it by long
// poll, heartbeats each job (the answer carries the cancel) and posts its
// result. The runner routes are machine routes, declared with the Runner
// action: they take only a runner key, which opens nothing else (Authorize
// refuses it on every other route, /me and /mcp included), and they are
// not MCP tools. Handlers read the request and call package runners.
//
// A runner also posts its running jobs' output (POST
// /runner/jobs/:id/logs), and each leased job gets a run-scoped token
// that the OTLP door (POST /v1/traces) takes for that run's spans only
// (runTokenPrincipal, checkRunTokenSpans).

func (s *Server) runnerRoutes() []Route {
	return []Route{
		{Method: http.MethodPost, Path: "/runner-keys", Action: auth.KeysWrite,
			Summary: "Mint a runner key (rnr_) for the workspace's self-hosted runners; its plaintext is shown once", Handler: s.createRunnerKey},
		{Method: http.MethodGet, Path: "/runner-jobs", Action: auth.RuntimesRead,
			Summary: "List the self-hosted jobs that are queued or leased", Handler: s.listRunnerJobs},
		{Method: http.MethodPost, Path: "/runner/lease", Action: auth.Runner,
			Summary: "Runner: lease a job by long poll (204 when none came)", Handler: s.leaseRunnerJob},
		{Method: http.MethodPost, Path: "/runner/jobs/:id/heartbeat", Action: auth.Runner,
			Summary: "Runner: renew a job's lease; the answer says whether it was cancelled", Handler: s.heartbeatRunnerJob},
		{Method: http.MethodPost, Path: "/runner/jobs/:id/result", Action: auth.Runner,
			Summary: "Runner: post a job's result", Handler: s.completeRunnerJob},
		{Method: http.MethodPost, Path: "/runner/jobs/:id/logs", Action: auth.Runner,
			Summary: "Runner: post chunks of a running job's output", Handler: s.appendRunnerJobLogs},
	}
}

func (s *Server) appendRunnerJobLogs(c echo.Context) error {
	id, err := pathParam(c, "id")
	if err != nil {
		return err
	}
	var req runners.LogBatch
	if err := Bind(c, &req); err != nil {
		return err
	}
	if err := s.runnerService().AppendLogs(c.Request().Context(), principal(c), id, req); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

// otlpDoorPath is the one route a run-scoped OTLP token (rjt_) opens.
const otlpDoorPath = "/v1/traces"

// viaRunToken is the Via of a principal authenticated by a run token.
const viaRunToken = "run-token"

// runTokenKey keys the run a request's run-scoped token is bound to.
type runTokenKey struct{}

// runTokenPrincipal authenticates a request of the OTLP door that carries
// a runner job's run-scoped token (runners.OTLPTokenPrefix): recognised
// is false for any other route or credential, which the resolver chain
// then handles. The request returned carries the principal, a member of
// the job's workspace acting for its run only (exportTraces refuses spans
// of another run; as the run's audience when it has one), and the run.
func (s *Server) runTokenPrincipal(req *http.Request, r Route) (_ *http.Request, recognised bool, err error) {
	if r.Path != otlpDoorPath {
		return req, false, nil
	}
	token, ok := auth.BearerToken(req)
	if !ok || !runners.IsOTLPToken(token) {
		return req, false, nil
	}
	ctx := req.Context()
	g, err := s.runnerService().VerifyOTLPToken(ctx, token)
	if err != nil {
		return req, true, err
	}
	p := auth.Principal{Subject: "runner-job:" + g.JobID, Workspace: g.Workspace, Roles: []auth.Role{auth.RoleMember}, Via: viaRunToken}
	if run, err := s.store.GetRun(ctx, g.Workspace, g.RunID); err == nil && run.Audience != "" {
		p.Subject = run.Audience
	}
	if err := auth.Authorize(p, r.Action); err != nil {
		return req, true, err
	}
	ctx = context.WithValue(auth.WithPrincipal(ctx, p), runTokenKey{}, g.RunID)
	return req.WithContext(ctx), true, nil
}

// runTokenFailed is the answer to a run token that did not verify: a
// refused credential counts against the client's failure limit as a
// failed login does; a dependency's failure is returned as it is.
func (s *Server) runTokenFailed(req *http.Request, err error) error {
	if errors.Is(err, derrors.ErrUnauthenticated) {
		return s.resolver.Failed(req, "", err)
	}
	return err
}

// checkRunTokenSpans refuses, for a request authenticated by a run-scoped
// token, an export holding a span of any other run than the token's (or
// of none): such a token speaks for its run only.
func checkRunTokenSpans(ctx context.Context, export *coltracepb.ExportTraceServiceRequest) error {
	run, ok := ctx.Value(runTokenKey{}).(string)
	if !ok {
		return nil
	}
	spans, _ := trace.FlattenSpansCompact(export)
	for _, sp := range spans {
		if sp.RunID != run {
			return derrors.Forbiddenf("this run token sends spans of run %s only; span %q has %s %q", run, sp.Name, trace.RunIDAttribute, sp.RunID)
		}
	}
	return nil
}

func (s *Server) createRunnerKey(c echo.Context) error {
	var req identity.RunnerKeyRequest
	if err := bindIfBody(c, &req); err != nil {
		return err
	}
	k, err := s.identityService().CreateRunnerKey(c.Request().Context(), principal(c), req)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusCreated, k)
}

func (s *Server) listRunnerJobs(c echo.Context) error {
	jobs, err := s.store.ListRunnerJobs(c.Request().Context(), principal(c).Workspace)
	if err != nil {
		return err
	}
	return listJSON(c, jobs)
}

func (s *Server) leaseRunnerJob(c echo.Context) error {
	var req runners.LeaseRequest
	if err := bindIfBody(c, &req); err != nil {
		return err
	}
	l, err := s.runnerService().Lease(c.Request().Context(), principal(c), req)
	if err != nil {
		return err
	}
	if l == nil {
		return c.NoContent(http.StatusNoContent)
	}
	return c.JSON(http.StatusOK, l)
}

func (s *Server) heartbeatRunnerJob(c echo.Context) error {
	id, err := pathParam(c, "id")
	if err != nil {
		return err
	}
	var req runners.Heartbeat
	if err := Bind(c, &req); err != nil {
		return err
	}
	reply, err := s.runnerService().Heartbeat(c.Request().Context(), principal(c), id, req)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, reply)
}

func (s *Server) completeRunnerJob(c echo.Context) error {
	id, err := pathParam(c, "id")
	if err != nil {
		return err
	}
	var req runners.Completion
	if err := Bind(c, &req); err != nil {
		return err
	}
	if err := s.runnerService().Complete(c.Request().Context(), principal(c), id, req); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

// bindIfBody is Bind for a route whose body is optional: no body leaves v
// as it is.
func bindIfBody(c echo.Context, v any) error {
	if c.Request().ContentLength == 0 {
		return nil
	}
	return Bind(c, v)
}

// runnerService is the runner routes' service.
func (s *Server) runnerService() *runners.Service { return s.runners }
