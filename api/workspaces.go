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

func (s *Server) workspaceRoutes() []Route {
	return []Route{
		{Method: http.MethodGet, Path: "/workspaces", Action: auth.Authenticated,
			Summary: "List the workspaces the caller belongs to", Handler: s.listWorkspaces},
		{Method: http.MethodPost, Path: "/workspaces", Action: auth.Authenticated,
			Summary: "Create a workspace; the caller becomes its admin", Handler: s.createWorkspace},
	}
}

// workspaceEntry is one row of GET /workspaces: a workspace and the
// caller's role in it.
type workspaceEntry struct {
	ID        string    `json:"id"`
	Name      string    `json:"name"`
	Role      auth.Role `json:"role"`
	Active    bool      `json:"active"` // the principal's active workspace
	CreatedAt time.Time `json:"createdAt"`
}

// listWorkspaces lists the caller's memberships. An API key is bound to
// its own workspace, so it sees only that one: listing its owner's other
// workspaces would reveal them to anyone holding the key.
func (s *Server) listWorkspaces(c echo.Context) error {
	ctx := c.Request().Context()
	p := principal(c)
	roles := map[string]auth.Role{}
	var ids []string
	if p.IsMachine() {
		if p.Workspace != "" {
			ids = append(ids, p.Workspace)
			roles[p.Workspace] = p.HighestRole()
		}
	} else {
		ms, err := s.store.ListMemberships(ctx, p.Subject)
		if err != nil {
			return err
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
	out := []workspaceEntry{}
	if len(ids) == 0 {
		return c.JSON(http.StatusOK, out)
	}
	ws, err := s.store.ListWorkspaces(ctx, ids)
	if err != nil {
		return err
	}
	for _, w := range ws {
		out = append(out, workspaceEntry{ID: w.ID, Name: w.Name, Role: roles[w.ID], Active: w.ID == p.Workspace, CreatedAt: w.CreatedAt})
	}
	return c.JSON(http.StatusOK, out)
}

// createWorkspaceRequest is the body of POST /workspaces.
type createWorkspaceRequest struct {
	ID   string `json:"id"`
	Name string `json:"name,omitempty"`
}

// Validate implements Validator.
func (r *createWorkspaceRequest) Validate() error {
	if r.ID == "" {
		return derrors.Invalidf("id is required: the new workspace's id, such as \"acme\"")
	}
	if err := checkWorkspaceID(r.ID); err != nil {
		return err
	}
	return checkLabel("name", r.Name)
}

// createWorkspace creates a workspace and makes the caller its admin. Only
// a person may: an API key is bound to one workspace and has no business
// founding others (operators mint a tenant's first key through
// /internal/tenant-keys).
func (s *Server) createWorkspace(c echo.Context) error {
	p := principal(c)
	if err := auth.RequireHuman(p); err != nil {
		return err
	}
	var req createWorkspaceRequest
	if err := Bind(c, &req); err != nil {
		return err
	}
	name := req.Name
	if name == "" {
		name = req.ID
	}
	ctx := c.Request().Context()
	now := s.now()
	var created store.Workspace
	err := s.store.Transact(ctx, func(tx store.Tx) error {
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
		return publicError(derrors.ErrConflict, map[string]any{"id": req.ID},
			"workspace %q already exists; choose another id (ask its admin for an invite to join it)", req.ID)
	}
	if err != nil {
		return err
	}
	return c.JSON(http.StatusCreated, workspaceEntry{ID: created.ID, Name: created.Name, Role: auth.RoleAdmin, Active: created.ID == p.Workspace, CreatedAt: created.CreatedAt})
}
