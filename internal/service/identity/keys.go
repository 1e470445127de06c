package identity

import (
	"context"
	"time"

	"svc/auth"
	"svc/internal/platform/derrors"
	"svc/store"
)

// KeyMetadata is what the API shows of a key (spec §2.10): never the
// plaintext, never the hash. Owner is the subject the key acts as: the
// person who created it (whose current role caps the key's), or
// "key:<id>" for a tenant key and the keys minted with it. CreatedBy says
// who minted it ("operator" for the /internal route).
type KeyMetadata struct {
	ID        string    `json:"id"`
	Prefix    string    `json:"prefix"`
	Label     string    `json:"label,omitempty"`
	Scopes    []string  `json:"scopes,omitempty"`
	Owner     string    `json:"owner"`
	CreatedBy string    `json:"createdBy,omitempty"`
	CreatedAt time.Time `json:"createdAt"`
}

func metadataOf(k store.APIKey) KeyMetadata {
	return KeyMetadata{ID: k.ID, Prefix: k.Prefix, Label: k.Label, Scopes: k.Scopes, Owner: k.Subject, CreatedBy: k.CreatedBy, CreatedAt: k.CreatedAt}
}

// CreatedKey is the answer to POST /keys: the metadata plus the plaintext,
// which is never shown again.
type CreatedKey struct {
	APIKey string `json:"apiKey"`
	KeyMetadata
}

// CreateKeyRequest is the body of POST /keys.
type CreateKeyRequest struct {
	Label  string   `json:"label,omitempty"`
	Scopes []string `json:"scopes,omitempty"`
}

// Validate checks the request; it also normalises Scopes.
func (r *CreateKeyRequest) Validate() error {
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

// CreateKey mints a key for p in p's active workspace with roles [admin]
// (spec §5.4: the default) and the scopes asked for; no scopes means Full
// Access. Only a full-access admin may call it (keys:write needs role admin
// and scope admin), so a key can never mint a wider one. The key acts as
// p's subject, so it is capped by p's role at each use and dies when p
// leaves the workspace; a key minted with a tenant key acts as that tenant
// key.
func (s *Service) CreateKey(ctx context.Context, p auth.Principal, req CreateKeyRequest) (CreatedKey, error) {
	if err := req.Validate(); err != nil {
		return CreatedKey{}, err
	}
	plaintext, k, err := s.mintKey(ctx, store.APIKey{
		Workspace: p.Workspace,
		Subject:   p.Subject,
		Label:     req.Label,
		Scopes:    req.Scopes,
		CreatedBy: p.Subject,
	})
	if err != nil {
		return CreatedKey{}, err
	}
	return CreatedKey{APIKey: plaintext, KeyMetadata: metadataOf(k)}, nil
}

// mintKey fills in a key's secret, id, kind and roles and stores it. A key
// without a Subject acts as itself: its subject is auth.KeySubject(its id).
func (s *Service) mintKey(ctx context.Context, k store.APIKey) (string, store.APIKey, error) {
	plaintext, hash := auth.NewAPIKey(auth.APIKeyPrefix)
	k.ID = newID("key_")
	if k.Subject == "" {
		k.Subject = auth.KeySubject(k.ID)
	}
	k.Hash = hash
	k.Prefix = auth.KeyDisplayPrefix(plaintext)
	k.Kind = string(auth.KeyKindAPI)
	k.Roles = []string{string(auth.RoleAdmin)}
	k.CreatedAt = s.o.Now()
	stored, err := s.o.Store.CreateAPIKey(ctx, k)
	if err != nil {
		return "", store.APIKey{}, err
	}
	return plaintext, stored, nil
}

// ListKeys lists the keys of p's active workspace, oldest first.
func (s *Service) ListKeys(ctx context.Context, p auth.Principal) ([]KeyMetadata, error) {
	keys, err := s.o.Store.ListAPIKeys(ctx, p.Workspace)
	if err != nil {
		return nil, err
	}
	out := make([]KeyMetadata, 0, len(keys))
	for _, k := range keys {
		out = append(out, metadataOf(k))
	}
	return out, nil
}

// RevokeKey deletes a key of p's active workspace. Spec §4.10: an unknown
// or foreign id is a no-op, so the answer says nothing about which ids
// exist elsewhere.
func (s *Service) RevokeKey(ctx context.Context, p auth.Principal, id string) error {
	return s.o.Store.DeleteAPIKey(ctx, p.Workspace, id)
}

// TenantKeyRequest is the body of POST /internal/tenant-keys.
type TenantKeyRequest struct {
	Workspace string `json:"workspace"`
	Label     string `json:"label,omitempty"`
}

// Validate checks the request.
func (r *TenantKeyRequest) Validate() error {
	if r.Workspace == "" {
		return derrors.Invalidf("workspace is required: the id of the tenant to mint a key for")
	}
	if err := checkWorkspaceID(r.Workspace); err != nil {
		return err
	}
	return checkLabel("label", r.Label)
}

// TenantKey is the answer to POST /internal/tenant-keys.
type TenantKey struct {
	APIKey    string `json:"apiKey"`
	Workspace string `json:"workspace"`
	ID        string `json:"id"`
}

// operatorCreator is the createdBy of what the operator route makes (the
// workspace record, tenant keys): a label, never a principal's subject (auth
// refuses it in tokens).
const operatorCreator = auth.LegacyOperatorSubject

// CreateTenantKey bootstraps a tenant for the operator: its workspace
// record (when absent) and a full-access admin key, whose plaintext is
// returned once. The key belongs to the tenant, not to a person: it acts as
// its own subject key:<id>, a machine credential bound to the workspace
// with role admin, which lives until it is deleted. The operator is not
// made a member; the key's holder invites the people.
func (s *Service) CreateTenantKey(ctx context.Context, req TenantKeyRequest) (TenantKey, error) {
	if err := req.Validate(); err != nil {
		return TenantKey{}, err
	}
	if err := s.o.Store.Transact(ctx, func(tx store.Tx) error {
		return ensureWorkspace(ctx, tx, req.Workspace, operatorCreator, s.o.Now())
	}); err != nil {
		return TenantKey{}, err
	}
	label := req.Label
	if label == "" {
		label = "tenant key"
	}
	plaintext, k, err := s.mintKey(ctx, store.APIKey{
		Workspace: req.Workspace,
		Label:     label,
		CreatedBy: operatorCreator,
	})
	if err != nil {
		return TenantKey{}, err
	}
	return TenantKey{APIKey: plaintext, Workspace: k.Workspace, ID: k.ID}, nil
}
