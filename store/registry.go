package store

import (
	"context"
	"encoding/json"
	"time"
)

// Entity is a versioned registry entity (dataset, harness, harness template,
// judge, rubric, runtime) owned by a workspace or by the reserved owner
// "_shared". Ownership metadata (team, creator) is entity-level and lives
// outside the immutable specs of its versions.
type Entity struct {
	Kind      string    `json:"kind"`
	Owner     string    `json:"owner"`
	ID        string    `json:"id"`
	TeamID    string    `json:"teamId,omitempty"`
	CreatedBy string    `json:"createdBy,omitempty"`
	CreatedAt time.Time `json:"createdAt"`
	// Versions are the live (not tombstoned) versions in registration order,
	// without their specs.
	Versions []EntityVersion `json:"versions,omitempty"`
}

// EntityVersion is one immutable version of an entity: its spec and digest,
// plus metadata kept outside the spec (tags, registration date, origin).
type EntityVersion struct {
	Kind    string `json:"kind"`
	Owner   string `json:"owner"`
	ID      string `json:"id"`
	Version string `json:"version"`
	// Digest is "sha256:<64 hex>" of the canonical JSON of Spec; equal
	// digests mean identical content.
	Digest string `json:"digest"`
	// Spec is the canonical spec. For datasets the cases are stored apart
	// (DatasetCase rows) and Spec holds the rest; nil in list reads.
	Spec json.RawMessage `json:"spec,omitempty"`
	// Seq orders versions by registration (for `latest` of non-semver ids).
	Seq       int64           `json:"seq"`
	CaseCount int             `json:"caseCount,omitempty"` // datasets only
	Tags      []string        `json:"tags,omitempty"`
	Origin    json.RawMessage `json:"origin,omitempty"` // CapabilityOrigin, stamped once
	CreatedBy string          `json:"createdBy,omitempty"`
	CreatedAt time.Time       `json:"createdAt"`
	DeletedAt *time.Time      `json:"deletedAt,omitempty"` // tombstone (datasets)
}

// VersionName returns Version; with RegistrationSeq and Tombstoned it lets
// the registry resolve `latest` over store rows (registry.Version) without
// importing the store.
func (v EntityVersion) VersionName() string { return v.Version }

// RegistrationSeq returns Seq, the version's place in registration order.
func (v EntityVersion) RegistrationSeq() int64 { return v.Seq }

// Tombstoned reports whether the version is deleted (DeletedAt is set).
func (v EntityVersion) Tombstoned() bool { return v.DeletedAt != nil }

// DatasetCase is one case of a dataset version, stored as its own row so that
// large datasets are read a page or a selection at a time.
type DatasetCase struct {
	CaseID string          `json:"caseId"`
	Ord    int             `json:"ord"`    // position in the dataset, from 0
	Digest string          `json:"digest"` // sha256 of the case's canonical JSON
	Tags   []string        `json:"tags,omitempty"`
	Doc    json.RawMessage `json:"doc"` // the EvalCase
}

// CaseFilter selects cases of a dataset version. Empty IDs and Tags select
// every case; IDs and Tags together select cases matching either.
type CaseFilter struct {
	IDs  []string
	Tags []string // any match
	// FromOrd selects only cases with Ord >= FromOrd; the zero value
	// selects from the first case. To page, pass the last Ord seen + 1.
	FromOrd int
	Limit   int // 0: no limit
}

// Registry stores versioned entities. Lookups name an exact owner; the
// owner-first, `_shared`-fallback rule and `latest` resolution belong to the
// caller (package registry), so the store stays a plain keyed store.
type Registry interface {
	// RegisterVersion stores v (and, for datasets, its cases). When the
	// version exists with the same digest it is returned with created=false
	// (a tombstoned one is revived); with another digest it is ErrConflict.
	// The entity row is created on first registration, with TeamID team and
	// CreatedBy v.CreatedBy. Cases come in dataset order: the store sets
	// their Ord (0, 1, ...) and v.CaseCount, and takes them only for kind
	// "dataset".
	RegisterVersion(ctx context.Context, v EntityVersion, team string, cases []DatasetCase) (stored EntityVersion, created bool, err error)
	// GetVersion returns a live version with its spec, or ErrNotFound.
	GetVersion(ctx context.Context, kind, owner, id, version string) (EntityVersion, error)
	// GetEntity returns an entity with its live versions (no specs), or
	// ErrNotFound when it has none.
	GetEntity(ctx context.Context, kind, owner, id string) (Entity, error)
	// ListEntities returns the entities of kind owned by any of owners that
	// have at least one live version, ordered by owner then id.
	ListEntities(ctx context.Context, kind string, owners []string) ([]Entity, error)
	// SetVersionTags replaces a live version's tags; ErrNotFound otherwise.
	SetVersionTags(ctx context.Context, kind, owner, id, version string, tags []string) error
	// StampVersionOrigin sets a live version's origin unless one is already
	// set, and returns the stored origin either way (the first answer wins);
	// ErrNotFound when the version is not live.
	StampVersionOrigin(ctx context.Context, kind, owner, id, version string, origin json.RawMessage) (json.RawMessage, error)
	// TombstoneVersion soft-deletes a live version; ErrNotFound otherwise.
	TombstoneVersion(ctx context.Context, kind, owner, id, version string, at time.Time) error
	// EntityTeam returns the owning team of an entity ("" when workspace-owned)
	// even when every version is tombstoned, or ErrNotFound when the entity
	// was never registered. Write checks use it so that an entity whose
	// versions are all deleted still belongs to its team.
	EntityTeam(ctx context.Context, kind, owner, id string) (string, error)
	// MoveEntity sets the owning team of an entity (all versions, tombstones
	// included); ErrNotFound for an unknown entity.
	MoveEntity(ctx context.Context, kind, owner, id, team string) error
	// ListDatasetCases returns the selected cases of a live dataset version
	// in Ord order; ErrNotFound when the version is not live.
	ListDatasetCases(ctx context.Context, owner, id, version string, f CaseFilter) ([]DatasetCase, error)
}

// Secret is a workspace secret: its value is encrypted by the caller and
// stored only as ciphertext; it is never returned by the API.
type Secret struct {
	Workspace  string `json:"-"`
	Name       string `json:"name"`
	Ciphertext []byte `json:"-"`
	// AllowedHosts are the hosts an admin bound the secret to, in
	// netguard's syntax and stored form: a probe or driver sends it to no
	// other host. None (nil) means it may be sent nowhere.
	AllowedHosts []string  `json:"allowedHosts"`
	CreatedBy    string    `json:"createdBy,omitempty"`
	UpdatedAt    time.Time `json:"updatedAt"`
}

// Secrets is the workspace secret store.
type Secrets interface {
	// PutSecret inserts or replaces a secret, its allowed hosts included.
	PutSecret(ctx context.Context, s Secret) (Secret, error)
	// GetSecret returns one secret with its ciphertext, or ErrNotFound.
	GetSecret(ctx context.Context, workspace, name string) (Secret, error)
	// ListSecrets returns a workspace's secrets ordered by name, without ciphertext.
	ListSecrets(ctx context.Context, workspace string) ([]Secret, error)
	// DeleteSecret deletes a secret; absent is a no-op.
	DeleteSecret(ctx context.Context, workspace, name string) error
}
