package identity

import (
	"context"
	"errors"
	"time"

	"svc/auth"
	"svc/internal/platform/derrors"
	"svc/store"
)

// WorkspaceEntry is one row of GET /workspaces: a workspace and the
// caller's role in it.
type WorkspaceEntry struct {
	ID        string    `json:"id"`
	Name      string    `json:"name"`
	Role      auth.Role `json:"role"`
	Active    bool      `json:"active"` // the principal's active workspace
	CreatedAt time.Time `json:"createdAt"`
}

// ListWorkspaces lists p's memberships, ordered by workspace id. An API
// key is bound to its own workspace, so it sees only that one: listing its
// owner's other workspaces would reveal them to anyone holding the key.
func (s *Service) ListWorkspaces(ctx context.Context, p auth.Principal) ([]WorkspaceEntry, error) {
	roles := map[string]auth.Role{}
	var ids []string
	if p.IsMachine() {
		if p.Workspace != "" {
			ids = append(ids, p.Workspace)
			roles[p.Workspace] = p.HighestRole()
		}
	} else {
		ms, err := s.o.Store.ListMemberships(ctx, p.Subject)
		if err != nil {
			return nil, err
		}
		for _, m := range ms {
			ids = append(ids, m.Workspace)
			roles[m.Workspace] = auth.Role(m.Role)
		}
		if p.Workspace != "" && roles[p.Workspace] == "" {
			// The active workspace is where the caller acts even when its
			// membership row is gone (removed while this request resolved):
			// list it with the role in force rather than hide it.
			ids = append(ids, p.Workspace)
			roles[p.Workspace] = p.HighestRole()
		}
	}
	out := []WorkspaceEntry{}
	if len(ids) == 0 {
		return out, nil
	}
	ws, err := s.o.Store.ListWorkspaces(ctx, ids)
	if err != nil {
		return nil, err
	}
	for _, w := range ws {
		out = append(out, WorkspaceEntry{ID: w.ID, Name: w.Name, Role: roles[w.ID], Active: w.ID == p.Workspace, CreatedAt: w.CreatedAt})
	}
	return out, nil
}

// CreateWorkspaceRequest is the body of POST /workspaces.
type CreateWorkspaceRequest struct {
	ID   string `json:"id"`
	Name string `json:"name,omitempty"`
}

// Validate checks the request.
func (r *CreateWorkspaceRequest) Validate() error {
	if r.ID == "" {
		return derrors.Invalidf("id is required: the new workspace's id, such as \"acme\"")
	}
	if err := checkWorkspaceID(r.ID); err != nil {
		return err
	}
	return checkLabel("name", r.Name)
}

// CreateWorkspace creates a workspace and makes p its admin. Only a person
// may: an API key is bound to one workspace and has no business founding
// others (operators mint a tenant's first key with CreateTenantKey). The
// name defaults to the id.
func (s *Service) CreateWorkspace(ctx context.Context, p auth.Principal, req CreateWorkspaceRequest) (WorkspaceEntry, error) {
	if err := auth.RequireHuman(p); err != nil {
		return WorkspaceEntry{}, err
	}
	if err := req.Validate(); err != nil {
		return WorkspaceEntry{}, err
	}
	name := req.Name
	if name == "" {
		name = req.ID
	}
	now := s.o.Now()
	var created store.Workspace
	err := s.o.Store.Transact(ctx, func(tx store.Tx) error {
		w, err := tx.CreateWorkspace(ctx, store.Workspace{ID: req.ID, Name: name, CreatedBy: p.Subject, CreatedAt: now})
		if err != nil {
			return err
		}
		if _, err := tx.PutMember(ctx, store.Member{Workspace: w.ID, Subject: p.Subject, Role: string(auth.RoleAdmin), Email: p.Email, AddedAt: now}); err != nil {
			return err
		}
		created = w
		return nil
	})
	if errors.Is(err, derrors.ErrConflict) {
		return WorkspaceEntry{}, refusal(derrors.ErrConflict, map[string]any{"id": req.ID},
			"workspace %q already exists; choose another id (ask its admin for an invite to join it)", req.ID)
	}
	if err != nil {
		return WorkspaceEntry{}, err
	}
	return WorkspaceEntry{ID: created.ID, Name: created.Name, Role: auth.RoleAdmin, Active: created.ID == p.Workspace, CreatedAt: created.CreatedAt}, nil
}
