package api

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"svc/auth"
	"svc/identity"
	"svc/runners"
)

// Self-hosted runners (issue 15, point 6). An admin mints a runner key
// (rnr_...); `svc runner` leases the workspace's jobs with it by long
// poll, heartbeats each job (the answer carries the cancel) and posts its
// result. The three runner routes are machine routes: they take only a
// runner key, which opens nothing else (it holds no role), and they are
// not MCP tools. Handlers read the request and call package runners.

func (s *Server) runnerRoutes() []Route {
	return []Route{
		{Method: http.MethodPost, Path: "/runner-keys", Action: auth.KeysWrite,
			Summary: "Mint a runner key (rnr_) for the workspace's self-hosted runners; its plaintext is shown once", Handler: s.createRunnerKey},
		{Method: http.MethodGet, Path: "/runner-jobs", Action: auth.RuntimesRead,
			Summary: "List the self-hosted jobs that are queued or leased", Handler: s.listRunnerJobs},
		{Method: http.MethodPost, Path: "/runner/lease", Action: auth.Authenticated,
			Summary: "Runner: lease a job by long poll (204 when none came)", Handler: s.leaseRunnerJob},
		{Method: http.MethodPost, Path: "/runner/jobs/:id/heartbeat", Action: auth.Authenticated,
			Summary: "Runner: renew a job's lease; the answer says whether it was cancelled", Handler: s.heartbeatRunnerJob},
		{Method: http.MethodPost, Path: "/runner/jobs/:id/result", Action: auth.Authenticated,
			Summary: "Runner: post a job's result", Handler: s.completeRunnerJob},
	}
}

func (s *Server) createRunnerKey(c echo.Context) error {
	var req identity.RunnerKeyRequest
	if err := bindIfBody(c, &req); err != nil {
		return err
	}
	k, err := s.identityService().CreateRunnerKey(c.Request().Context(), principal(c), req)
	if err != nil {
		return identityError(err)
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
