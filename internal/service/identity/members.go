package identity

import (
	"context"
	"errors"

	"svc/auth"
	"svc/internal/platform/derrors"
	"svc/store"
)

// ListMembers lists the members of p's active workspace, ordered by subject.
func (s *Service) ListMembers(ctx context.Context, p auth.Principal) ([]store.Member, error) {
	return s.o.Store.ListMembers(ctx, p.Workspace)
}

// memberNotFound is the 404 for a subject that is not a member of the
// active workspace; members of other workspaces get the same answer.
func memberNotFound(subject string) error {
	return refusal(derrors.ErrNotFound, map[string]any{"subject": subject},
		"%q is not a member of this workspace; GET /members lists them", clip(subject))
}

// GetMember returns one membership of p's active workspace.
func (s *Service) GetMember(ctx context.Context, p auth.Principal, subject string) (store.Member, error) {
	m, err := s.o.Store.GetMember(ctx, p.Workspace, subject)
	if errors.Is(err, derrors.ErrNotFound) {
		return store.Member{}, memberNotFound(subject)
	}
	if err != nil {
		return store.Member{}, err
	}
	return m, nil
}

// PatchMemberRequest is the body of PATCH /members/:subject.
type PatchMemberRequest struct {
	Role string `json:"role"`
}

// Validate checks the request.
func (r *PatchMemberRequest) Validate() error {
	_, err := parseRole(r.Role)
	return err
}

// lastAdmin is the 409 for a change that would leave a workspace without
// an admin, and with it nobody able to manage members or keys.
func lastAdmin(subject string) error {
	return refusal(derrors.ErrConflict, map[string]any{"subject": subject},
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

// ChangeMemberRole sets a member's role: 404 when the subject is not a
// member of p's active workspace, 409 when it would demote the last admin.
func (s *Service) ChangeMemberRole(ctx context.Context, p auth.Principal, subject string, req PatchMemberRequest) error {
	if err := req.Validate(); err != nil {
		return err
	}
	ws := p.Workspace
	return s.o.Store.Transact(ctx, func(tx store.Tx) error {
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
}

// RemoveMember removes a member from p's active workspace. It is
// idempotent (nil for a subject that is not a member, including another
// workspace's member) and refuses to remove the last admin (409). Removal
// leaves a tombstone, so a person whose token names the workspace is not
// made a member again by their next request (EnsureMembership skips them)
// until they accept an invite; their API keys stop working at once (a key
// is capped by its owner's membership).
func (s *Service) RemoveMember(ctx context.Context, p auth.Principal, subject string) error {
	ws := p.Workspace
	return s.o.Store.Transact(ctx, func(tx store.Tx) error {
		m, err := tx.GetMember(ctx, ws, subject)
		if errors.Is(err, derrors.ErrNotFound) {
			// Not a member now; the tombstone still keeps a token's claim
			// from promoting them later, which is what removal means.
			return tx.PutMemberRemoval(ctx, store.MemberRemoval{Workspace: ws, Subject: subject, RemovedBy: p.Subject, RemovedAt: s.o.Now()})
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
		return tx.PutMemberRemoval(ctx, store.MemberRemoval{Workspace: ws, Subject: subject, RemovedBy: p.Subject, RemovedAt: s.o.Now()})
	})
}

// EnsureMembership makes subject a member of workspace with role unless it
// is one already (whose role is then left alone), creating the workspace
// record when absent: the lazy promotion of a token's workspace claim, so
// that every workspace a principal acts in is listed. A subject removed
// from the workspace is not added back (member is false): only an invite
// re-admits them. It implements auth.Memberships for the API's adapter.
func (s *Service) EnsureMembership(ctx context.Context, workspace, subject string, role auth.Role) (member bool, err error) {
	err = s.o.Store.Transact(ctx, func(tx store.Tx) error {
		_, err := tx.GetMemberRemoval(ctx, workspace, subject)
		switch {
		case err == nil:
			member = false
			return nil
		case !errors.Is(err, derrors.ErrNotFound):
			return err
		}
		member = true
		return ensureMember(ctx, tx, store.Member{Workspace: workspace, Subject: subject, Role: string(role), AddedAt: s.o.Now()}, subject)
	})
	return member, err
}

// EnsureMember creates m.Workspace when absent (createdBy names its
// creator) and adds m unless the subject is already a member, whose role is
// then left alone. Unlike EnsureMembership it ignores a removal: it is for
// the dev principal, who is the workspace's admin by definition.
func (s *Service) EnsureMember(ctx context.Context, m store.Member, createdBy string) error {
	return s.o.Store.Transact(ctx, func(tx store.Tx) error { return ensureMember(ctx, tx, m, createdBy) })
}

// ensureMember is EnsureMember inside tx.
func ensureMember(ctx context.Context, tx store.Tx, m store.Member, createdBy string) error {
	if err := ensureWorkspace(ctx, tx, m.Workspace, createdBy, m.AddedAt); err != nil {
		return err
	}
	_, err := tx.EnsureMember(ctx, m)
	return err
}
