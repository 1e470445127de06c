package identity

import (
	"context"
	"errors"
	"time"

	"svc/auth"
	"svc/internal/platform/derrors"
	"svc/store"
)

// Invite lifetimes, in hours: a week by default, a year at most, so a link
// pasted somewhere and forgotten stops working on its own.
const (
	defaultInviteHours = 168
	maxInviteHours     = 8760
)

// Invite is an invite as the API shows it (spec §2.10); Token is set only
// in the answer to its creation.
type Invite struct {
	ID            string    `json:"id"`
	Role          string    `json:"role"`
	ExpiresAt     time.Time `json:"expiresAt"`
	AcceptedCount int       `json:"acceptedCount"`
	Token         string    `json:"token,omitempty"`
}

func viewOf(inv store.Invite) Invite {
	return Invite{ID: inv.ID, Role: inv.Role, ExpiresAt: inv.ExpiresAt, AcceptedCount: inv.AcceptedCount}
}

// CreateInviteRequest is the body of POST /invites.
type CreateInviteRequest struct {
	Role           string `json:"role"`
	ExpiresInHours *int   `json:"expiresInHours,omitempty"`
}

// Validate checks the request.
func (r *CreateInviteRequest) Validate() error {
	if _, err := parseRole(r.Role); err != nil {
		return err
	}
	if h := r.ExpiresInHours; h != nil && (*h < 1 || *h > maxInviteHours) {
		return derrors.Invalidf("expiresInHours is %d; use 1 to %d (default %d, one week)", *h, maxInviteHours, defaultInviteHours)
	}
	return nil
}

// CreateInvite mints a reusable invite to p's active workspace. Only the
// token's hash is stored; the plaintext is in the answer and nowhere else.
func (s *Service) CreateInvite(ctx context.Context, p auth.Principal, req CreateInviteRequest) (Invite, error) {
	if err := req.Validate(); err != nil {
		return Invite{}, err
	}
	hours := defaultInviteHours
	if req.ExpiresInHours != nil {
		hours = *req.ExpiresInHours
	}
	token, hash := auth.NewInviteToken()
	now := s.o.Now()
	inv, err := s.o.Store.CreateInvite(ctx, store.Invite{
		ID:        newID("invite_"),
		Workspace: p.Workspace,
		Role:      req.Role,
		Hash:      hash,
		ExpiresAt: now.Add(time.Duration(hours) * time.Hour),
		CreatedBy: p.Subject,
		CreatedAt: now,
	})
	if err != nil {
		return Invite{}, err
	}
	v := viewOf(inv)
	v.Token = token
	return v, nil
}

// ListInvites lists the invites of p's active workspace that can still be
// accepted.
func (s *Service) ListInvites(ctx context.Context, p auth.Principal) ([]Invite, error) {
	invs, err := s.o.Store.ListInvites(ctx, p.Workspace, s.o.Now())
	if err != nil {
		return nil, err
	}
	out := make([]Invite, 0, len(invs))
	for _, inv := range invs {
		out = append(out, viewOf(inv))
	}
	return out, nil
}

// RevokeInvite revokes an invite of p's active workspace; another
// workspace's invite, or an unknown id, is 404.
func (s *Service) RevokeInvite(ctx context.Context, p auth.Principal, id string) error {
	err := s.o.Store.RevokeInvite(ctx, p.Workspace, id, s.o.Now())
	if errors.Is(err, derrors.ErrNotFound) {
		return refusal(derrors.ErrNotFound, map[string]any{"id": id},
			"no invite %q in this workspace; GET /invites lists the active ones", clip(id))
	}
	return err
}

// AcceptInviteRequest is the body of POST /invites/accept.
type AcceptInviteRequest struct {
	Token string `json:"token"`
}

// Validate checks the request.
func (r *AcceptInviteRequest) Validate() error {
	if r.Token == "" {
		return derrors.Invalidf("token is required: the inv_... token of the invite link")
	}
	return nil
}

// AcceptedInvite is the answer to POST /invites/accept: the workspace
// joined and the caller's role in it now.
type AcceptedInvite struct {
	Workspace string `json:"workspace"`
	Role      string `json:"role"`
}

// inviteGone is the 404 for a token that cannot be accepted. Holding the
// token proves the caller was sent the link, so saying why it no longer
// works reveals nothing a guesser could use (a token has 256 bits).
func inviteGone(why string) error {
	return refusal(derrors.ErrNotFound, nil, "%s; ask a workspace admin for a new invite link", why)
}

// AcceptInvite makes p a member of the invite's workspace with the
// invite's role. It is for people only, and not gated by p's active
// workspace: the point is to join a new one. An existing member keeps a
// higher role (accepting never downgrades) and is raised to the invite's
// role when it is higher. acceptedCount counts the acceptances that added
// or raised a membership, so re-accepting the same link does not inflate
// it. Adding or raising a membership lifts a removal (RemoveMember).
func (s *Service) AcceptInvite(ctx context.Context, p auth.Principal, req AcceptInviteRequest) (AcceptedInvite, error) {
	if err := auth.RequireHuman(p); err != nil {
		return AcceptedInvite{}, err
	}
	if err := req.Validate(); err != nil {
		return AcceptedInvite{}, err
	}
	hash, err := auth.InviteTokenHash(req.Token)
	if err != nil {
		return AcceptedInvite{}, refusal(derrors.ErrInvalid, map[string]any{"field": "token"},
			"token is not an invite token; paste the whole inv_... token of the link")
	}
	now := s.o.Now()
	var out AcceptedInvite
	err = s.o.Store.Transact(ctx, func(tx store.Tx) error {
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
		out = AcceptedInvite{Workspace: inv.Workspace, Role: inv.Role}
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
		return AcceptedInvite{}, err
	}
	return out, nil
}
