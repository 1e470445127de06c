package api

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"svc/auth"
	"svc/internal/service/identity"
)

// Workspaces (spec §2.10). Handlers read the request and call package
// identity.

func (s *Server) workspaceRoutes() []Route {
	return []Route{
		{Method: http.MethodGet, Path: "/workspaces", Action: auth.Authenticated,
			Summary: "List the workspaces the caller belongs to", Handler: s.listWorkspaces},
		{Method: http.MethodPost, Path: "/workspaces", Action: auth.Authenticated,
			Summary: "Create a workspace; the caller becomes its admin", Handler: s.createWorkspace},
	}
}

func (s *Server) listWorkspaces(c echo.Context) error {
	ws, err := s.identityService().ListWorkspaces(c.Request().Context(), principal(c))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, ws)
}

// createWorkspace refuses an API key before reading the body, as
// acceptInvite does.
func (s *Server) createWorkspace(c echo.Context) error {
	p := principal(c)
	if err := auth.RequireHuman(p); err != nil {
		return err
	}
	var req identity.CreateWorkspaceRequest
	if err := Bind(c, &req); err != nil {
		return err
	}
	w, err := s.identityService().CreateWorkspace(c.Request().Context(), p, req)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusCreated, w)
}
