package api

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"svc/auth"
	"svc/internal/service/identity"
)

// Teams (spec §5.8). Handlers read the request and call package identity,
// which hides a private team from those outside it.

func (s *Server) teamRoutes() []Route {
	return []Route{
		{Method: http.MethodPost, Path: "/teams", Action: auth.TeamsWrite,
			Summary: "Create a team", Handler: s.createTeam},
		{Method: http.MethodGet, Path: "/teams", Action: auth.TeamsRead,
			Summary: "List the workspace's teams the caller may see", Handler: s.listTeams},
		{Method: http.MethodGet, Path: "/teams/:id", Action: auth.TeamsRead,
			Summary: "Get a team", Handler: s.getTeam},
		{Method: http.MethodPatch, Path: "/teams/:id", Action: auth.TeamsWrite,
			Summary: "Rename a team or change whether it is private", Handler: s.patchTeam},
		{Method: http.MethodDelete, Path: "/teams/:id", Action: auth.TeamsWrite,
			Summary: "Delete a team and its memberships", Handler: s.deleteTeam},
		{Method: http.MethodGet, Path: "/teams/:id/members", Action: auth.TeamsRead,
			Summary: "List a team's members", Handler: s.listTeamMembers},
		{Method: http.MethodPut, Path: "/teams/:id/members/:subject", Action: auth.TeamsWrite,
			Summary: "Add a workspace member to a team", Handler: s.putTeamMember},
		{Method: http.MethodDelete, Path: "/teams/:id/members/:subject", Action: auth.TeamsWrite,
			Summary: "Remove a member from a team", Handler: s.deleteTeamMember},
	}
}

func (s *Server) createTeam(c echo.Context) error {
	var req identity.CreateTeamRequest
	if err := Bind(c, &req); err != nil {
		return err
	}
	t, err := s.identityService().CreateTeam(c.Request().Context(), principal(c), req)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusCreated, t)
}

func (s *Server) listTeams(c echo.Context) error {
	teams, err := s.identityService().ListTeams(c.Request().Context(), principal(c))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, teams)
}

func (s *Server) getTeam(c echo.Context) error {
	id, err := pathParam(c, "id")
	if err != nil {
		return err
	}
	t, err := s.identityService().GetTeam(c.Request().Context(), principal(c), id)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, t)
}

func (s *Server) patchTeam(c echo.Context) error {
	id, err := pathParam(c, "id")
	if err != nil {
		return err
	}
	var req identity.PatchTeamRequest
	if err := Bind(c, &req); err != nil {
		return err
	}
	t, err := s.identityService().UpdateTeam(c.Request().Context(), principal(c), id, req)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, t)
}

func (s *Server) deleteTeam(c echo.Context) error {
	id, err := pathParam(c, "id")
	if err != nil {
		return err
	}
	if err := s.identityService().DeleteTeam(c.Request().Context(), principal(c), id); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

func (s *Server) listTeamMembers(c echo.Context) error {
	id, err := pathParam(c, "id")
	if err != nil {
		return err
	}
	ms, err := s.identityService().ListTeamMembers(c.Request().Context(), principal(c), id)
	if err != nil {
		return err
	}
	return listJSON(c, ms)
}

func (s *Server) putTeamMember(c echo.Context) error {
	id, subject, err := teamMemberParams(c)
	if err != nil {
		return err
	}
	if err := s.identityService().AddTeamMember(c.Request().Context(), principal(c), id, subject); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

// deleteTeamMember answers 204 whether or not the subject was in the team.
func (s *Server) deleteTeamMember(c echo.Context) error {
	id, subject, err := teamMemberParams(c)
	if err != nil {
		return err
	}
	if err := s.identityService().RemoveTeamMember(c.Request().Context(), principal(c), id, subject); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

// teamMemberParams reads the :id and :subject of a team membership route.
func teamMemberParams(c echo.Context) (id, subject string, err error) {
	if id, err = pathParam(c, "id"); err != nil {
		return "", "", err
	}
	if subject, err = pathParam(c, "subject"); err != nil {
		return "", "", err
	}
	return id, subject, nil
}
