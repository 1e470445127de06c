package api

import (
	"context"
	"errors"
	"net/http"

	"github.com/labstack/echo/v4"

	"svc/auth"
	"svc/derrors"
	"svc/store"
)

// Teams group members inside a workspace so that assets can belong to a
// team (spec §5.8). Managing them is an admin's job (teams:write); reading
// them is open to viewers, except that a private team is invisible (404) to
// those outside it, like its assets.

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

// createTeamRequest is the body of POST /teams.
type createTeamRequest struct {
	ID      string `json:"id"`
	Name    string `json:"name,omitempty"`
	Private bool   `json:"private,omitempty"`
}

// Validate implements Validator.
func (r *createTeamRequest) Validate() error {
	if r.ID == "" {
		return derrors.Invalidf("id is required: the team's id, such as \"platform\"")
	}
	if err := checkTeamID(r.ID); err != nil {
		return err
	}
	return checkLabel("name", r.Name)
}

// createTeam creates a team in the active workspace; its id must be new there.
func (s *Server) createTeam(c echo.Context) error {
	var req createTeamRequest
	if err := Bind(c, &req); err != nil {
		return err
	}
	p := principal(c)
	name := req.Name
	if name == "" {
		name = req.ID
	}
	t, err := s.store.CreateTeam(c.Request().Context(), store.Team{
		ID: req.ID, Workspace: p.Workspace, Name: name, Private: req.Private, CreatedBy: p.Subject, CreatedAt: s.now(),
	})
	if errors.Is(err, derrors.ErrConflict) {
		return publicError(derrors.ErrConflict, map[string]any{"id": req.ID},
			"team %q already exists in this workspace; choose another id or PATCH /teams/%s", req.ID, req.ID)
	}
	if err != nil {
		return err
	}
	return c.JSON(http.StatusCreated, t)
}

// teamNotFound is the 404 for a team that is absent, in another workspace,
// or private to others: the three look alike so existence does not leak.
func teamNotFound(id string) error {
	return publicError(derrors.ErrNotFound, map[string]any{"id": id},
		"no team %q in this workspace; GET /teams lists the ones you can see", clip(id))
}

// teamExists is nil when the workspace has the team, else teamNotFound.
func teamExists(ctx context.Context, tx store.Tx, workspace, id string) error {
	if _, err := tx.GetTeam(ctx, workspace, id); errors.Is(err, derrors.ErrNotFound) {
		return teamNotFound(id)
	} else if err != nil {
		return err
	}
	return nil
}

// visibleTeam returns a team of the active workspace that p may see.
func (s *Server) visibleTeam(ctx context.Context, p auth.Principal, id string) (store.Team, error) {
	t, err := s.store.GetTeam(ctx, p.Workspace, id)
	if errors.Is(err, derrors.ErrNotFound) {
		return store.Team{}, teamNotFound(id)
	}
	if err != nil {
		return store.Team{}, err
	}
	if t.Private {
		mine, err := s.store.TeamsOf(ctx, p.Workspace, p.Subject)
		if err != nil {
			return store.Team{}, err
		}
		if auth.CanReadTeamAsset(p, t.ID, true, mine) != nil {
			return store.Team{}, teamNotFound(id)
		}
	}
	return t, nil
}

// listTeams lists the active workspace's teams, leaving out private teams
// the caller is not in (admins and API keys see them all).
func (s *Server) listTeams(c echo.Context) error {
	ctx := c.Request().Context()
	p := principal(c)
	teams, err := s.store.ListTeams(ctx, p.Workspace)
	if err != nil {
		return err
	}
	mine, err := s.store.TeamsOf(ctx, p.Workspace, p.Subject)
	if err != nil {
		return err
	}
	out := make([]store.Team, 0, len(teams))
	for _, t := range teams {
		if auth.CanReadTeamAsset(p, t.ID, t.Private, mine) == nil {
			out = append(out, t)
		}
	}
	return c.JSON(http.StatusOK, out)
}

// getTeam returns one team.
func (s *Server) getTeam(c echo.Context) error {
	id, err := pathParam(c, "id")
	if err != nil {
		return err
	}
	t, err := s.visibleTeam(c.Request().Context(), principal(c), id)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, t)
}

// patchTeamRequest is the body of PATCH /teams/:id; absent fields stay.
type patchTeamRequest struct {
	Name    *string `json:"name,omitempty"`
	Private *bool   `json:"private,omitempty"`
}

// Validate implements Validator.
func (r *patchTeamRequest) Validate() error {
	if r.Name == nil && r.Private == nil {
		return derrors.Invalidf("nothing to change: send name, private or both")
	}
	if r.Name != nil {
		if *r.Name == "" {
			return derrors.Invalidf("name must not be empty")
		}
		return checkLabel("name", *r.Name)
	}
	return nil
}

// patchTeam renames a team or flips its private flag.
func (s *Server) patchTeam(c echo.Context) error {
	id, err := pathParam(c, "id")
	if err != nil {
		return err
	}
	var req patchTeamRequest
	if err := Bind(c, &req); err != nil {
		return err
	}
	ctx := c.Request().Context()
	p := principal(c)
	var out store.Team
	err = s.store.Transact(ctx, func(tx store.Tx) error {
		t, err := tx.GetTeam(ctx, p.Workspace, id)
		if errors.Is(err, derrors.ErrNotFound) {
			return teamNotFound(id)
		}
		if err != nil {
			return err
		}
		if req.Name != nil {
			t.Name = *req.Name
		}
		if req.Private != nil {
			t.Private = *req.Private
		}
		out, err = tx.UpdateTeam(ctx, t)
		return err
	})
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, out)
}

// deleteTeam deletes a team of the active workspace and its memberships;
// an unknown or foreign id is 404.
func (s *Server) deleteTeam(c echo.Context) error {
	id, err := pathParam(c, "id")
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	p := principal(c)
	err = s.store.Transact(ctx, func(tx store.Tx) error {
		if err := teamExists(ctx, tx, p.Workspace, id); err != nil {
			return err
		}
		return tx.DeleteTeam(ctx, p.Workspace, id)
	})
	if err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

// listTeamMembers lists a visible team's members.
func (s *Server) listTeamMembers(c echo.Context) error {
	ctx := c.Request().Context()
	p := principal(c)
	id, err := pathParam(c, "id")
	if err != nil {
		return err
	}
	t, err := s.visibleTeam(ctx, p, id)
	if err != nil {
		return err
	}
	ms, err := s.store.ListTeamMembers(ctx, p.Workspace, t.ID)
	if err != nil {
		return err
	}
	return listJSON(c, ms)
}

// putTeamMember adds a member of the workspace to a team (idempotent). The
// subject must already be a workspace member: a team is a subset of the
// workspace, never a way into it.
func (s *Server) putTeamMember(c echo.Context) error {
	id, subject, err := teamMemberParams(c)
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	p := principal(c)
	err = s.store.Transact(ctx, func(tx store.Tx) error {
		if err := teamExists(ctx, tx, p.Workspace, id); err != nil {
			return err
		}
		if _, err := tx.GetMember(ctx, p.Workspace, subject); errors.Is(err, derrors.ErrNotFound) {
			return publicError(derrors.ErrNotFound, map[string]any{"subject": subject},
				"%q is not a member of this workspace; invite them first (POST /invites)", clip(subject))
		} else if err != nil {
			return err
		}
		_, err := tx.AddTeamMember(ctx, store.TeamMember{Workspace: p.Workspace, TeamID: id, Subject: subject, AddedAt: s.now()})
		return err
	})
	if err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

// deleteTeamMember removes a subject from a team: 404 for an unknown or
// foreign team, 204 whether or not the subject was in it.
func (s *Server) deleteTeamMember(c echo.Context) error {
	id, subject, err := teamMemberParams(c)
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	p := principal(c)
	err = s.store.Transact(ctx, func(tx store.Tx) error {
		if err := teamExists(ctx, tx, p.Workspace, id); err != nil {
			return err
		}
		return tx.RemoveTeamMember(ctx, p.Workspace, id, subject)
	})
	if err != nil {
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
