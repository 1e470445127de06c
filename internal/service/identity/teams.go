package identity

import (
	"context"
	"errors"

	"svc/auth"
	"svc/internal/platform/derrors"
	"svc/store"
)

// Teams group members inside a workspace so that assets can belong to a
// team (spec §5.8). Managing them is an admin's job (teams:write); reading
// them is open to viewers, except that a private team is invisible (404) to
// those outside it, like its assets.

// CreateTeamRequest is the body of POST /teams.
type CreateTeamRequest struct {
	ID      string `json:"id"`
	Name    string `json:"name,omitempty"`
	Private bool   `json:"private,omitempty"`
}

// Validate checks the request.
func (r *CreateTeamRequest) Validate() error {
	if r.ID == "" {
		return derrors.Invalidf("id is required: the team's id, such as \"platform\"")
	}
	if err := CheckTeamID(r.ID); err != nil {
		return err
	}
	return checkLabel("name", r.Name)
}

// CreateTeam creates a team in p's active workspace; its id must be new
// there. The name defaults to the id.
func (s *Service) CreateTeam(ctx context.Context, p auth.Principal, req CreateTeamRequest) (store.Team, error) {
	if err := req.Validate(); err != nil {
		return store.Team{}, err
	}
	name := req.Name
	if name == "" {
		name = req.ID
	}
	t, err := s.o.Store.CreateTeam(ctx, store.Team{
		ID: req.ID, Workspace: p.Workspace, Name: name, Private: req.Private, CreatedBy: p.Subject, CreatedAt: s.o.Now(),
	})
	if errors.Is(err, derrors.ErrConflict) {
		return store.Team{}, refusal(derrors.ErrConflict, map[string]any{"id": req.ID},
			"team %q already exists in this workspace; choose another id or PATCH /teams/%s", req.ID, req.ID)
	}
	if err != nil {
		return store.Team{}, err
	}
	return t, nil
}

// teamNotFound is the 404 for a team that is absent, in another workspace,
// or private to others: the three look alike so existence does not leak.
func teamNotFound(id string) error {
	return refusal(derrors.ErrNotFound, map[string]any{"id": id},
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

// visibleTeam returns a team of p's active workspace that p may see.
func (s *Service) visibleTeam(ctx context.Context, p auth.Principal, id string) (store.Team, error) {
	t, err := s.o.Store.GetTeam(ctx, p.Workspace, id)
	if errors.Is(err, derrors.ErrNotFound) {
		return store.Team{}, teamNotFound(id)
	}
	if err != nil {
		return store.Team{}, err
	}
	if t.Private {
		mine, err := s.o.Store.TeamsOf(ctx, p.Workspace, p.Subject)
		if err != nil {
			return store.Team{}, err
		}
		if auth.CanReadTeamAsset(p, t.ID, true, mine) != nil {
			return store.Team{}, teamNotFound(id)
		}
	}
	return t, nil
}

// ListTeams lists the teams of p's active workspace, leaving out private
// teams p is not in (admins and API keys see them all).
func (s *Service) ListTeams(ctx context.Context, p auth.Principal) ([]store.Team, error) {
	teams, err := s.o.Store.ListTeams(ctx, p.Workspace)
	if err != nil {
		return nil, err
	}
	mine, err := s.o.Store.TeamsOf(ctx, p.Workspace, p.Subject)
	if err != nil {
		return nil, err
	}
	out := make([]store.Team, 0, len(teams))
	for _, t := range teams {
		if auth.CanReadTeamAsset(p, t.ID, t.Private, mine) == nil {
			out = append(out, t)
		}
	}
	return out, nil
}

// GetTeam returns one team p may see.
func (s *Service) GetTeam(ctx context.Context, p auth.Principal, id string) (store.Team, error) {
	return s.visibleTeam(ctx, p, id)
}

// PatchTeamRequest is the body of PATCH /teams/:id; absent fields stay.
type PatchTeamRequest struct {
	Name    *string `json:"name,omitempty"`
	Private *bool   `json:"private,omitempty"`
}

// Validate checks the request.
func (r *PatchTeamRequest) Validate() error {
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

// UpdateTeam renames a team of p's active workspace or flips its private
// flag, and returns it as stored.
func (s *Service) UpdateTeam(ctx context.Context, p auth.Principal, id string, req PatchTeamRequest) (store.Team, error) {
	if err := req.Validate(); err != nil {
		return store.Team{}, err
	}
	var out store.Team
	err := s.o.Store.Transact(ctx, func(tx store.Tx) error {
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
		return store.Team{}, err
	}
	return out, nil
}

// DeleteTeam deletes a team of p's active workspace and its memberships;
// an unknown or foreign id is 404.
func (s *Service) DeleteTeam(ctx context.Context, p auth.Principal, id string) error {
	return s.o.Store.Transact(ctx, func(tx store.Tx) error {
		if err := teamExists(ctx, tx, p.Workspace, id); err != nil {
			return err
		}
		return tx.DeleteTeam(ctx, p.Workspace, id)
	})
}

// ListTeamMembers lists the members of a team p may see.
func (s *Service) ListTeamMembers(ctx context.Context, p auth.Principal, id string) ([]store.TeamMember, error) {
	t, err := s.visibleTeam(ctx, p, id)
	if err != nil {
		return nil, err
	}
	return s.o.Store.ListTeamMembers(ctx, p.Workspace, t.ID)
}

// AddTeamMember adds a member of p's active workspace to a team
// (idempotent). The subject must already be a workspace member: a team is
// a subset of the workspace, never a way into it.
func (s *Service) AddTeamMember(ctx context.Context, p auth.Principal, id, subject string) error {
	return s.o.Store.Transact(ctx, func(tx store.Tx) error {
		if err := teamExists(ctx, tx, p.Workspace, id); err != nil {
			return err
		}
		if _, err := tx.GetMember(ctx, p.Workspace, subject); errors.Is(err, derrors.ErrNotFound) {
			return refusal(derrors.ErrNotFound, map[string]any{"subject": subject},
				"%q is not a member of this workspace; invite them first (POST /invites)", clip(subject))
		} else if err != nil {
			return err
		}
		_, err := tx.AddTeamMember(ctx, store.TeamMember{Workspace: p.Workspace, TeamID: id, Subject: subject, AddedAt: s.o.Now()})
		return err
	})
}

// RemoveTeamMember removes a subject from a team of p's active workspace:
// 404 for an unknown or foreign team, nil whether or not the subject was
// in it.
func (s *Service) RemoveTeamMember(ctx context.Context, p auth.Principal, id, subject string) error {
	return s.o.Store.Transact(ctx, func(tx store.Tx) error {
		if err := teamExists(ctx, tx, p.Workspace, id); err != nil {
			return err
		}
		return tx.RemoveTeamMember(ctx, p.Workspace, id, subject)
	})
}
