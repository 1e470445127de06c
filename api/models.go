package api

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"svc/auth"
	"svc/internal/service/models"
)

// Workspace model bindings (issue 17): the models a workspace's judges may
// call. A binding names a provider, a base URL (checked by the address
// guard, SVC_WEBHOOK_ALLOW admitting private hosts), a model and the
// workspace secret holding the key; the key itself is never part of it.
// Declaring one is a workspace setting, an admin's call (settings:write);
// reading them is judges:read, since judge authors need the names.

func (s *Server) modelRoutes() []Route {
	return []Route{
		{Method: http.MethodPut, Path: "/workspace/models/:name", Action: auth.SettingsWrite,
			Summary: "Declare a model the workspace's judges may use", Handler: s.putModel},
		{Method: http.MethodGet, Path: "/workspace/models", Action: auth.JudgesRead,
			Summary: "List the workspace's model bindings", Handler: s.listModels},
		{Method: http.MethodGet, Path: "/workspace/models/:name", Action: auth.JudgesRead,
			Summary: "Read one model binding", Handler: s.getModel},
		{Method: http.MethodDelete, Path: "/workspace/models/:name", Action: auth.SettingsWrite,
			Summary: "Delete a model binding", Handler: s.deleteModel},
	}
}

func (s *Server) putModel(c echo.Context) error {
	name, err := pathParam(c, "name")
	if err != nil {
		return err
	}
	var req models.PutRequest
	if err := Bind(c, &req); err != nil {
		return err
	}
	if _, err := s.models.Put(c.Request().Context(), principal(c), name, req); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

func (s *Server) listModels(c echo.Context) error {
	bs, err := s.models.List(c.Request().Context(), principal(c))
	if err != nil {
		return err
	}
	return listJSON(c, bs)
}

func (s *Server) getModel(c echo.Context) error {
	name, err := pathParam(c, "name")
	if err != nil {
		return err
	}
	b, err := s.models.Get(c.Request().Context(), principal(c).Workspace, name)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, b)
}

func (s *Server) deleteModel(c echo.Context) error {
	name, err := pathParam(c, "name")
	if err != nil {
		return err
	}
	if err := s.models.Delete(c.Request().Context(), principal(c), name); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}
