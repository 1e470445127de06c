package api

import (
	"math"
	"net/http"

	"github.com/labstack/echo/v4"

	"svc/auth"
	"svc/internal/service/sandboxes"
)

// Playground tasks of a sandbox session (spec §3, §4.8): a prompt for the
// session's booted harness, and its trace polled with since.

func (s *Server) sandboxTaskRoutes() []Route {
	return []Route{
		{Method: http.MethodPost, Path: "/sandboxes/:id/tasks", Action: auth.RunsSubmit, Summary: "Run a playground task in a sandbox session", Handler: s.sandboxTask},
		{Method: http.MethodGet, Path: "/sandboxes/:id/tasks/:taskId/trace", Action: auth.RunsRead, Summary: "Poll a playground task's trace", Handler: s.sandboxTaskTrace},
	}
}

func (s *Server) sandboxTask(c echo.Context) error {
	var req sandboxes.TaskRequest
	if err := Bind(c, &req); err != nil {
		return err
	}
	run, err := s.sandboxes.SubmitTask(c.Request().Context(), principal(c), c.Param("id"), req, originSource(c))
	if err != nil {
		return err
	}
	c.Response().Header().Set(echo.HeaderLocation, "/sandboxes/"+c.Param("id")+"/tasks/"+run.ID+"/trace")
	return c.JSON(http.StatusAccepted, run)
}

func (s *Server) sandboxTaskTrace(c echo.Context) error {
	since, err := intQuery(c, "since", 0, math.MaxInt32)
	if err != nil {
		return err
	}
	out, err := s.sandboxes.TaskTraceSince(c.Request().Context(), principal(c), c.Param("id"), c.Param("taskId"), int64(since))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, out)
}
