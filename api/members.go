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

// listMembers lists the active workspace's members, ordered by subject.
func (s *Server) listMembers(c echo.Context) error {
	ms, err := s.store.ListMembers(c.Request().Context(), principal(c).Workspace)
	if err != nil {
		return err
	}
	return listJSON(c, ms)
}

// memberNotFound is the 404 for a subject that is not a member of the
// active workspace; members of other workspaces get the same answer.
func memberNotFound(subject string) error {
	return publicError(derrors.ErrNotFound, map[string]any{"subject": subject},
		"%q is not a member of this workspace; GET /members lists them", clip(subject))
}

// getMember returns one membership of the active workspace.
func (s *Server) getMember(c echo.Context) error {
	subject, err := pathParam(c, "subject")
	if err != nil {
		return err
	}
	m, err := s.store.GetMember(c.Request().Context(), principal(c).Workspace, subject)
	if errors.Is(err, derrors.ErrNotFound) {
		return memberNotFound(subject)
	}
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, m)
}

// patchMemberRequest is the body of PATCH /members/:subject.
type patchMemberRequest struct {
	Role string `json:"role"`
}

// Validate implements Validator.
func (r *patchMemberRequest) Validate() error {
	_, err := parseRole(r.Role)
	return err
}

// lastAdmin is the 409 for a change that would leave a workspace without
// an admin, and with it nobody able to manage members or keys.
func lastAdmin(subject string) error {
	return publicError(derrors.ErrConflict, map[string]any{"subject": subject},
		"%q is the workspace's last admin; make another member admin first", clip(subject))
}

// checkNotLastAdmin refuses to take the admin role away from m when no
// other admin would remain. It runs inside the transaction that makes the
// change, so two concurrent demotions cannot both see a second admin.
func checkNotLastAdmin(ctx context.Context, tx store.Tx, m store.Member) error {
	if m.Role != string(auth.RoleAdmin) {
		return nil
	}
	n, err := tx.CountAdmins(ctx, m.Workspace)
	if err != nil {
		return err
	}
	if n <= 1 {
		return lastAdmin(m.Subject)
	}
	return nil
}

// patchMember changes a member's role: 404 when the subject is not a member
// of the active workspace, 409 when it would demote the last admin.
func (s *Server) patchMember(c echo.Context) error {
	subject, err := pathParam(c, "subject")
	if err != nil {
		return err
	}
	var req patchMemberRequest
	if err := Bind(c, &req); err != nil {
		return err
	}
	ctx := c.Request().Context()
	ws := principal(c).Workspace
	err = s.store.Transact(ctx, func(tx store.Tx) error {
		m, err := tx.GetMember(ctx, ws, subject)
		if errors.Is(err, derrors.ErrNotFound) {
			return memberNotFound(subject)
		}
		if err != nil {
			return err
		}
		if m.Role == req.Role {
			return nil
		}
		if req.Role != string(auth.RoleAdmin) {
			if err := checkNotLastAdmin(ctx, tx, m); err != nil {
				return err
			}
		}
		m.Role = req.Role
		_, err = tx.PutMember(ctx, m)
		return err
	})
	if err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

// deleteMember removes a member. It is idempotent (204 for a subject that
// is not a member, including another workspace's member) and refuses to
// remove the last admin (409). Removal leaves a tombstone, so a person
// whose token names the workspace is not made a member again by their next
// request (lazy promotion skips them) until they accept an invite; their
// API keys stop working at once (a key is capped by its owner's membership).
func (s *Server) deleteMember(c echo.Context) error {
	subject, err := pathParam(c, "subject")
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	p := principal(c)
	ws := p.Workspace
	err = s.store.Transact(ctx, func(tx store.Tx) error {
		m, err := tx.GetMember(ctx, ws, subject)
		if errors.Is(err, derrors.ErrNotFound) {
			// Not a member now; the tombstone still keeps a token's claim
			// from promoting them later, which is what removal means.
			return tx.PutMemberRemoval(ctx, store.MemberRemoval{Workspace: ws, Subject: subject, RemovedBy: p.Subject, RemovedAt: s.now()})
		}
		if err != nil {
			return err
		}
		if err := checkNotLastAdmin(ctx, tx, m); err != nil {
			return err
		}
		if err := tx.DeleteMember(ctx, ws, subject); err != nil {
			return err
		}
		return tx.PutMemberRemoval(ctx, store.MemberRemoval{Workspace: ws, Subject: subject, RemovedBy: p.Subject, RemovedAt: s.now()})
	})
	if err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}
