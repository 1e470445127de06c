package api

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"svc/auth"
	"svc/internal/service/sandboxes"
)

// sandboxWorldRoutes are the world routes of a session (the route table
// lists them beside sandboxRoutes).
func (s *Server) sandboxWorldRoutes() []Route {
	return []Route{
		{Method: http.MethodPost, Path: "/sandboxes/:id/snapshot", Action: auth.ImagesPush,
			Summary: "Snapshot a sandbox session as the next world version", Handler: s.postSandboxSnapshot},
	}
}

// postSandboxSnapshot is POST /sandboxes/:id/snapshot (spec §4.8, gate
// images:push): the session's changes as the next version of its world;
// the answer reports prunedVersions (docs/sandboxes.md, Worlds).
func (s *Server) postSandboxSnapshot(c echo.Context) error {
	id, err := pathParam(c, "id")
	if err != nil {
		return err
	}
	var req sandboxes.SnapshotRequest
	if c.Request().ContentLength != 0 {
		if err := Bind(c, &req); err != nil {
			return err
		}
	}
	res, err := s.sandboxes.Snapshot(c.Request().Context(), principal(c), id, req)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusCreated, res)
}
