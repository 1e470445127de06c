package api

import (
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"svc/auth"
	"svc/derrors"
	"svc/store"
)

func (s *Server) keyRoutes() []Route {
	return []Route{
		{Method: http.MethodPost, Path: "/keys", Action: auth.KeysWrite,
			Summary: "Create an API key; its plaintext is shown once", Handler: s.createKey},
		{Method: http.MethodGet, Path: "/keys", Action: auth.KeysRead,
			Summary: "List the workspace's API keys (metadata only)", Handler: s.listKeys},
		{Method: http.MethodDelete, Path: "/keys/:id", Action: auth.KeysWrite,
			Summary: "Revoke an API key", Handler: s.deleteKey},
		{Method: http.MethodPost, Path: "/internal/tenant-keys", Action: auth.Internal,
			Summary: "Operator: create a workspace if absent and mint its first admin API key", Handler: s.createTenantKey},
	}
}

// keyMetadata is what the API shows of a key (spec §2.10): never the
// plaintext, never the hash. Owner is the subject the key acts as: the
// person who created it (whose current role caps the key's), or
// "key:<id>" for a tenant key and the keys minted with it. CreatedBy says
// who minted it ("operator" for the /internal route).
type keyMetadata struct {
	ID        string    `json:"id"`
	Prefix    string    `json:"prefix"`
	Label     string    `json:"label,omitempty"`
	Scopes    []string  `json:"scopes,omitempty"`
	Owner     string    `json:"owner"`
	CreatedBy string    `json:"createdBy,omitempty"`
	CreatedAt time.Time `json:"createdAt"`
}

func metadataOf(k store.APIKey) keyMetadata {
	return keyMetadata{ID: k.ID, Prefix: k.Prefix, Label: k.Label, Scopes: k.Scopes, Owner: k.Subject, CreatedBy: k.CreatedBy, CreatedAt: k.CreatedAt}
}

// createdKey is the answer to POST /keys: the metadata plus the plaintext,
// which is never shown again.
type createdKey struct {
	APIKey string `json:"apiKey"`
	keyMetadata
}

// createKeyRequest is the body of POST /keys.
type createKeyRequest struct {
	Label  string   `json:"label,omitempty"`
	Scopes []string `json:"scopes,omitempty"`
}

// Validate implements Validator; it also normalises Scopes.
func (r *createKeyRequest) Validate() error {
	if err := checkLabel("label", r.Label); err != nil {
		return err
	}
	scopes, err := parseScopes(r.Scopes)
	if err != nil {
		return err
	}
	r.Scopes = scopes
	return nil
}

// createKey mints a key for the caller in the active workspace with roles
// [admin] (spec §5.4: the default) and the scopes asked for; no scopes
// means Full Access. Only a full-access admin reaches this route (keys:write
// needs role admin and scope admin), so a key can never mint a wider one.
// The key acts as the caller's subject, so it is capped by the caller's
// role at each use and dies when the caller leaves the workspace; a key
// minted with a tenant key acts as that tenant key.
func (s *Server) createKey(c echo.Context) error {
	p := principal(c)
	var req createKeyRequest
	if err := Bind(c, &req); err != nil {
		return err
	}
	plaintext, k, err := s.mintKey(c, store.APIKey{
		Workspace: p.Workspace,
		Subject:   p.Subject,
		Label:     req.Label,
		Scopes:    req.Scopes,
		CreatedBy: p.Subject,
	})
	if err != nil {
		return err
	}
	return c.JSON(http.StatusCreated, createdKey{APIKey: plaintext, keyMetadata: metadataOf(k)})
}

// mintKey fills in a key's secret, id, kind and roles and stores it. A key
// without a Subject acts as itself: its subject is auth.KeySubject(its id).
func (s *Server) mintKey(c echo.Context, k store.APIKey) (string, store.APIKey, error) {
	plaintext, hash := auth.NewAPIKey(auth.APIKeyPrefix)
	k.ID = newID("key_")
	if k.Subject == "" {
		k.Subject = auth.KeySubject(k.ID)
	}
	k.Hash = hash
	k.Prefix = auth.KeyDisplayPrefix(plaintext)
	k.Kind = string(auth.KeyKindAPI)
	k.Roles = []string{string(auth.RoleAdmin)}
	k.CreatedAt = s.now()
	stored, err := s.store.CreateAPIKey(c.Request().Context(), k)
	if err != nil {
		return "", store.APIKey{}, err
	}
	return plaintext, stored, nil
}

// listKeys lists the active workspace's keys, oldest first.
func (s *Server) listKeys(c echo.Context) error {
	keys, err := s.store.ListAPIKeys(c.Request().Context(), principal(c).Workspace)
	if err != nil {
		return err
	}
	out := make([]keyMetadata, 0, len(keys))
	for _, k := range keys {
		out = append(out, metadataOf(k))
	}
	return c.JSON(http.StatusOK, out)
}

// deleteKey revokes a key of the active workspace. Spec §4.10: an unknown
// or foreign id is a no-op (204), so the answer says nothing about which
// ids exist elsewhere.
func (s *Server) deleteKey(c echo.Context) error {
	id, err := pathParam(c, "id")
	if err != nil {
		return err
	}
	if err := s.store.DeleteAPIKey(c.Request().Context(), principal(c).Workspace, id); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

// tenantKeyRequest is the body of POST /internal/tenant-keys.
type tenantKeyRequest struct {
	Workspace string `json:"workspace"`
	Label     string `json:"label,omitempty"`
}

// Validate implements Validator.
func (r *tenantKeyRequest) Validate() error {
	if r.Workspace == "" {
		return derrors.Invalidf("workspace is required: the id of the tenant to mint a key for")
	}
	if err := checkWorkspaceID(r.Workspace); err != nil {
		return err
	}
	return checkLabel("label", r.Label)
}

// tenantKey is the answer to POST /internal/tenant-keys.
type tenantKey struct {
	APIKey    string `json:"apiKey"`
	Workspace string `json:"workspace"`
	ID        string `json:"id"`
}

// operatorCreator is the createdBy of what the operator route makes (the
// workspace record, tenant keys): a label, never a principal's subject (auth
// refuses it in tokens).
const operatorCreator = auth.LegacyOperatorSubject

// createTenantKey bootstraps a tenant: its workspace record (when absent)
// and a full-access admin key, whose plaintext is returned once. The key
// belongs to the tenant, not to a person: it acts as its own subject
// key:<id>, a machine credential bound to the workspace with role admin,
// which lives until it is deleted. The operator is not made a member; the
// key's holder invites the people.
func (s *Server) createTenantKey(c echo.Context) error {
	var req tenantKeyRequest
	if err := Bind(c, &req); err != nil {
		return err
	}
	ctx := c.Request().Context()
	if err := s.store.Transact(ctx, func(tx store.Tx) error {
		return ensureWorkspace(ctx, tx, req.Workspace, operatorCreator, s.now())
	}); err != nil {
		return err
	}
	label := req.Label
	if label == "" {
		label = "tenant key"
	}
	plaintext, k, err := s.mintKey(c, store.APIKey{
		Workspace: req.Workspace,
		Label:     label,
		CreatedBy: operatorCreator,
	})
	if err != nil {
		return err
	}
	return c.JSON(http.StatusCreated, tenantKey{APIKey: plaintext, Workspace: k.Workspace, ID: k.ID})
}
