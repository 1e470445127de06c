package api

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"svc/auth"
	"svc/internal/service/identity"
)

// Workspace members (spec §2.10). Handlers read the request and call
// package identity, which keeps the last admin from being removed.

func (s *Server) memberRoutes() []Route {
	return []Route{
		{Method: http.MethodGet, Path: "/members", Action: auth.MembersRead,
			Summary: "List the workspace's members", Handler: s.listMembers},
		{Method: http.MethodGet, Path: "/members/:subject", Action: auth.MembersRead,
			Summary: "Get one member of the workspace", Handler: s.getMember},
		{Method: http.MethodPatch, Path: "/members/:subject", Action: auth.MembersWrite,
			Summary: "Change a member's role", Handler: s.patchMember},
		{Method: http.MethodDelete, Path: "/members/:subject", Action: auth.MembersWrite,
			Summary: "Remove a member from the workspace", Handler: s.deleteMember},
	}
}

func (s *Server) listMembers(c echo.Context) error {
	ms, err := s.identityService().ListMembers(c.Request().Context(), principal(c))
	if err != nil {
		return err
	}
	return listJSON(c, ms)
}

func (s *Server) getMember(c echo.Context) error {
	subject, err := pathParam(c, "subject")
	if err != nil {
		return err
	}
	m, err := s.identityService().GetMember(c.Request().Context(), principal(c), subject)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, m)
}

func (s *Server) patchMember(c echo.Context) error {
	subject, err := pathParam(c, "subject")
	if err != nil {
		return err
	}
	var req identity.PatchMemberRequest
	if err := Bind(c, &req); err != nil {
		return err
	}
	if err := s.identityService().ChangeMemberRole(c.Request().Context(), principal(c), subject, req); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

// deleteMember answers 204 for a subject that is not a member too.
func (s *Server) deleteMember(c echo.Context) error {
	subject, err := pathParam(c, "subject")
	if err != nil {
		return err
	}
	if err := s.identityService().RemoveMember(c.Request().Context(), principal(c), subject); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}
