package api

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"svc/auth"
	"svc/internal/service/identity"
)

// API keys (spec §2.10, §5.4). Handlers read the request and call package
// identity.

func (s *Server) keyRoutes() []Route {
	return []Route{
		{Method: http.MethodPost, Path: "/keys", Action: auth.KeysWrite,
			Summary: "Create an API key; its plaintext is shown once", Handler: s.createKey},
		{Method: http.MethodGet, Path: "/keys", Action: auth.KeysRead,
			Summary: "List the workspace's API keys (metadata only)", Handler: s.listKeys},
		{Method: http.MethodDelete, Path: "/keys/:id", Action: auth.KeysWrite,
			Summary: "Revoke an API key", Handler: s.deleteKey},
		{Method: http.MethodPost, Path: "/internal/tenant-keys", Action: auth.Internal,
			Summary: "Operator: create a workspace if absent and mint its first admin API key", Handler: s.createTenantKey},
	}
}

func (s *Server) createKey(c echo.Context) error {
	var req identity.CreateKeyRequest
	if err := Bind(c, &req); err != nil {
		return err
	}
	k, err := s.identityService().CreateKey(c.Request().Context(), principal(c), req)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusCreated, k)
}

func (s *Server) listKeys(c echo.Context) error {
	keys, err := s.identityService().ListKeys(c.Request().Context(), principal(c))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, keys)
}

// deleteKey answers 204 for an unknown or foreign id too (spec §4.10).
func (s *Server) deleteKey(c echo.Context) error {
	id, err := pathParam(c, "id")
	if err != nil {
		return err
	}
	if err := s.identityService().RevokeKey(c.Request().Context(), principal(c), id); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

func (s *Server) createTenantKey(c echo.Context) error {
	var req identity.TenantKeyRequest
	if err := Bind(c, &req); err != nil {
		return err
	}
	k, err := s.identityService().CreateTenantKey(c.Request().Context(), req)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusCreated, k)
}
