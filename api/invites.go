package api

import (
	"errors"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"svc/auth"
	"svc/derrors"
	"svc/store"
)

// Invite lifetimes, in hours: a week by default, a year at most, so a link
// pasted somewhere and forgotten stops working on its own.
const (
	defaultInviteHours = 168
	maxInviteHours     = 8760
)

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

// inviteView is an invite as the API shows it (spec §2.10); Token is set
// only in the answer to its creation.
type inviteView struct {
	ID            string    `json:"id"`
	Role          string    `json:"role"`
	ExpiresAt     time.Time `json:"expiresAt"`
	AcceptedCount int       `json:"acceptedCount"`
	Token         string    `json:"token,omitempty"`
}

func viewOf(inv store.Invite) inviteView {
	return inviteView{ID: inv.ID, Role: inv.Role, ExpiresAt: inv.ExpiresAt, AcceptedCount: inv.AcceptedCount}
}

// createInviteRequest is the body of POST /invites.
type createInviteRequest struct {
	Role           string `json:"role"`
	ExpiresInHours *int   `json:"expiresInHours,omitempty"`
}

// Validate implements Validator.
func (r *createInviteRequest) Validate() error {
	if _, err := parseRole(r.Role); err != nil {
		return err
	}
	if h := r.ExpiresInHours; h != nil && (*h < 1 || *h > maxInviteHours) {
		return derrors.Invalidf("expiresInHours is %d; use 1 to %d (default %d, one week)", *h, maxInviteHours, defaultInviteHours)
	}
	return nil
}

// createInvite mints a reusable invite to the active workspace. Only the
// token's hash is stored; the plaintext is in this answer and nowhere else.
func (s *Server) createInvite(c echo.Context) error {
	var req createInviteRequest
	if err := Bind(c, &req); err != nil {
		return err
	}
	hours := defaultInviteHours
	if req.ExpiresInHours != nil {
		hours = *req.ExpiresInHours
	}
	p := principal(c)
	token, hash := auth.NewInviteToken()
	now := s.now()
	inv, err := s.store.CreateInvite(c.Request().Context(), store.Invite{
		ID:        newID("invite_"),
		Workspace: p.Workspace,
		Role:      req.Role,
		Hash:      hash,
		ExpiresAt: now.Add(time.Duration(hours) * time.Hour),
		CreatedBy: p.Subject,
		CreatedAt: now,
	})
	if err != nil {
		return err
	}
	v := viewOf(inv)
	v.Token = token
	return c.JSON(http.StatusCreated, v)
}

// listInvites lists the invites of the active workspace that can still be
// accepted.
func (s *Server) listInvites(c echo.Context) error {
	invs, err := s.store.ListInvites(c.Request().Context(), principal(c).Workspace, s.now())
	if err != nil {
		return err
	}
	out := make([]inviteView, 0, len(invs))
	for _, inv := range invs {
		out = append(out, viewOf(inv))
	}
	return c.JSON(http.StatusOK, out)
}

// revokeInvite revokes an invite of the active workspace; another
// workspace's invite, or an unknown id, is 404.
func (s *Server) revokeInvite(c echo.Context) error {
	id, err := pathParam(c, "id")
	if err != nil {
		return err
	}
	err = s.store.RevokeInvite(c.Request().Context(), principal(c).Workspace, id, s.now())
	if errors.Is(err, derrors.ErrNotFound) {
		return publicError(derrors.ErrNotFound, map[string]any{"id": id},
			"no invite %q in this workspace; GET /invites lists the active ones", clip(id))
	}
	if err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

// acceptInviteRequest is the body of POST /invites/accept.
type acceptInviteRequest struct {
	Token string `json:"token"`
}

// Validate implements Validator.
func (r *acceptInviteRequest) Validate() error {
	if r.Token == "" {
		return derrors.Invalidf("token is required: the inv_... token of the invite link")
	}
	return nil
}

// acceptedInvite is the answer to POST /invites/accept.
type acceptedInvite struct {
	Workspace string `json:"workspace"`
	Role      string `json:"role"`
}

// inviteGone is the 404 for a token that cannot be accepted. Holding the
// token proves the caller was sent the link, so saying why it no longer
// works reveals nothing a guesser could use (a token has 256 bits).
func inviteGone(why string) error {
	return publicError(derrors.ErrNotFound, nil, "%s; ask a workspace admin for a new invite link", why)
}

// acceptInvite makes the caller a member of the invite's workspace with the
// invite's role. It is for people only, and not gated by the caller's active
// workspace: the point is to join a new one. An existing member keeps a
// higher role (accepting never downgrades) and is raised to the invite's
// role when it is higher. acceptedCount counts the acceptances that added
// or raised a membership, so re-accepting the same link does not inflate it.
func (s *Server) acceptInvite(c echo.Context) error {
	p := principal(c)
	if err := auth.RequireHuman(p); err != nil {
		return err
	}
	var req acceptInviteRequest
	if err := Bind(c, &req); err != nil {
		return err
	}
	hash, err := auth.InviteTokenHash(req.Token)
	if err != nil {
		return publicError(derrors.ErrInvalid, map[string]any{"field": "token"},
			"token is not an invite token; paste the whole inv_... token of the link")
	}
	ctx := c.Request().Context()
	now := s.now()
	var out acceptedInvite
	err = s.store.Transact(ctx, func(tx store.Tx) error {
		inv, err := tx.InviteByHash(ctx, hash)
		if errors.Is(err, derrors.ErrNotFound) {
			return inviteGone("no invite has this token")
		}
		if err != nil {
			return err
		}
		switch {
		case inv.RevokedAt != nil:
			return inviteGone("this invite was revoked")
		case !now.Before(inv.ExpiresAt):
			return inviteGone("this invite expired at " + inv.ExpiresAt.UTC().Format(time.RFC3339))
		}
		out = acceptedInvite{Workspace: inv.Workspace, Role: inv.Role}
		m, err := tx.GetMember(ctx, inv.Workspace, p.Subject)
		switch {
		case err == nil && roleRank(m.Role) >= roleRank(inv.Role):
			out.Role = m.Role
			return nil
		case err == nil:
			m.Role = inv.Role
		case errors.Is(err, derrors.ErrNotFound):
			m = store.Member{Workspace: inv.Workspace, Subject: p.Subject, Role: inv.Role, Email: p.Email, AddedAt: now}
		default:
			return err
		}
		if err := ensureWorkspace(ctx, tx, inv.Workspace, inv.CreatedBy, now); err != nil {
			return err
		}
		if _, err := tx.PutMember(ctx, m); err != nil {
			return err
		}
		// Re-admitted: a removal no longer keeps the token's workspace
		// claim from applying.
		if err := tx.DeleteMemberRemoval(ctx, inv.Workspace, p.Subject); err != nil {
			return err
		}
		return tx.CountInviteAcceptance(ctx, inv.ID)
	})
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, out)
}

// roleRank orders stored role names; an unknown one ranks below viewer.
func roleRank(r string) int {
	switch auth.Role(r) {
	case auth.RoleViewer:
		return 1
	case auth.RoleMember:
		return 2
	case auth.RoleAdmin:
		return 3
	}
	return 0
}
