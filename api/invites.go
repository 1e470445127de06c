package api

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"svc/auth"
	"svc/internal/service/identity"
)

// Invite links (spec §2.10). Handlers read the request and call package
// identity.

func (s *Server) inviteRoutes() []Route {
	return []Route{
		{Method: http.MethodPost, Path: "/invites", Action: auth.MembersWrite,
			Summary: "Create a reusable invite link; its token is shown once", Handler: s.createInvite},
		{Method: http.MethodGet, Path: "/invites", Action: auth.MembersWrite,
			Summary: "List the workspace's active invites (without tokens)", Handler: s.listInvites},
		{Method: http.MethodDelete, Path: "/invites/:id", Action: auth.MembersWrite,
			Summary: "Revoke an invite", Handler: s.revokeInvite},
		{Method: http.MethodPost, Path: "/invites/accept", Action: auth.Authenticated,
			Summary: "Accept an invite: join its workspace with its role", Handler: s.acceptInvite},
	}
}

func (s *Server) createInvite(c echo.Context) error {
	var req identity.CreateInviteRequest
	if err := Bind(c, &req); err != nil {
		return err
	}
	inv, err := s.identityService().CreateInvite(c.Request().Context(), principal(c), req)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusCreated, inv)
}

func (s *Server) listInvites(c echo.Context) error {
	invs, err := s.identityService().ListInvites(c.Request().Context(), principal(c))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, invs)
}

func (s *Server) revokeInvite(c echo.Context) error {
	id, err := pathParam(c, "id")
	if err != nil {
		return err
	}
	if err := s.identityService().RevokeInvite(c.Request().Context(), principal(c), id); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

// acceptInvite refuses an API key before reading the body, so a key learns
// nothing from how its body would have been judged; the service applies
// the same rule for every other caller.
func (s *Server) acceptInvite(c echo.Context) error {
	p := principal(c)
	if err := auth.RequireHuman(p); err != nil {
		return err
	}
	var req identity.AcceptInviteRequest
	if err := Bind(c, &req); err != nil {
		return err
	}
	out, err := s.identityService().AcceptInvite(c.Request().Context(), p, req)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, out)
}
