package store

import (
	"context"
	"time"
)

// APIKey is a stored API key: metadata plus the SHA-256 of the plaintext,
// which is never stored or returned.
type APIKey struct {
	ID        string    `json:"id"`
	Workspace string    `json:"workspace"`
	Subject   string    `json:"subject"` // the key's owner: its principal's subject
	Label     string    `json:"label,omitempty"`
	Prefix    string    `json:"prefix"` // display prefix of the plaintext, e.g. ak_3f9c
	Kind      string    `json:"kind"`   // api-key or runner
	Roles     []string  `json:"roles"`
	Scopes    []string  `json:"scopes,omitempty"`
	Hash      []byte    `json:"-"`
	CreatedBy string    `json:"createdBy,omitempty"`
	CreatedAt time.Time `json:"createdAt"`
}

// KeySubjectPrefix starts the subject of a key that acts as itself: a key
// minted by the operator route has the subject "key:<its id>", and keys
// minted with it inherit that subject. No person can hold such a subject
// (auth refuses it in tokens).
const KeySubjectPrefix = "key:"

// APIKeyGrant is an API key together with what its owner holds now in the
// key's workspace, read in one query when the key authenticates, so that a
// key never outlives or outranks its owner.
type APIKeyGrant struct {
	Key APIKey
	// MemberRole is the current role of the key's subject in the key's
	// workspace; "" when the subject is not a member.
	MemberRole string
	// OwnerKeyFound reports whether the subject has the form
	// KeySubjectPrefix+id and a key with that id exists in the same
	// workspace; OwnerKeyRoles are then that key's roles.
	OwnerKeyFound bool
	OwnerKeyRoles []string
}

// MemberRemoval is the tombstone DELETE /members leaves: the subject stays
// out of the workspace (lazy promotion of a token's workspace claim skips
// it) until they accept an invite.
type MemberRemoval struct {
	Workspace string    `json:"-"`
	Subject   string    `json:"subject"`
	RemovedBy string    `json:"removedBy,omitempty"`
	RemovedAt time.Time `json:"removedAt"`
}

// Member is a subject's membership of a workspace.
type Member struct {
	Workspace string    `json:"-"`
	Subject   string    `json:"subject"`
	Role      string    `json:"role"`
	Email     string    `json:"email,omitempty"`
	AddedAt   time.Time `json:"addedAt"`
}

// Invite is a reusable invite link to a workspace; only the token's SHA-256 is stored.
type Invite struct {
	ID            string     `json:"id"`
	Workspace     string     `json:"-"`
	Role          string     `json:"role"`
	Hash          []byte     `json:"-"`
	ExpiresAt     time.Time  `json:"expiresAt"`
	AcceptedCount int        `json:"acceptedCount"`
	RevokedAt     *time.Time `json:"revokedAt,omitempty"`
	CreatedBy     string     `json:"createdBy,omitempty"`
	CreatedAt     time.Time  `json:"createdAt"`
}

// Team is a group of members inside a workspace that may own assets (spec §5.8).
type Team struct {
	ID        string    `json:"id"`
	Workspace string    `json:"-"`
	Name      string    `json:"name"`
	Private   bool      `json:"private"`
	CreatedBy string    `json:"createdBy,omitempty"`
	CreatedAt time.Time `json:"createdAt"`
}

// TeamMember is a subject's membership of a team.
type TeamMember struct {
	Workspace string    `json:"-"`
	TeamID    string    `json:"teamId"`
	Subject   string    `json:"subject"`
	AddedAt   time.Time `json:"addedAt"`
}

// Identity stores API keys, workspace members, invites and teams. Every
// method that takes a workspace is scoped to it: another workspace's record
// is ErrNotFound.
type Identity interface {
	// CreateAPIKey inserts k (ID and Hash set by the caller); a duplicate ID or hash is ErrConflict.
	CreateAPIKey(ctx context.Context, k APIKey) (APIKey, error)
	// APIKeyByHash returns the key whose plaintext hashes to hash, or ErrNotFound.
	APIKeyByHash(ctx context.Context, hash []byte) (APIKey, error)
	// APIKeyGrantByHash returns the key whose plaintext hashes to hash with
	// its owner's current standing in the key's workspace, or ErrNotFound.
	APIKeyGrantByHash(ctx context.Context, hash []byte) (APIKeyGrant, error)
	// ListAPIKeys returns a workspace's keys, oldest first.
	ListAPIKeys(ctx context.Context, workspace string) ([]APIKey, error)
	// DeleteAPIKey deletes a key of the workspace; an unknown or foreign id is a no-op.
	DeleteAPIKey(ctx context.Context, workspace, id string) error

	// PutMember inserts or updates a membership (role and email); an update
	// keeps the first AddedAt.
	PutMember(ctx context.Context, m Member) (Member, error)
	// EnsureMember inserts m unless the subject is already a member, and
	// returns the stored membership either way.
	EnsureMember(ctx context.Context, m Member) (Member, error)
	// GetMember returns one membership or ErrNotFound.
	GetMember(ctx context.Context, workspace, subject string) (Member, error)
	// ListMembers returns a workspace's members ordered by subject.
	ListMembers(ctx context.Context, workspace string) ([]Member, error)
	// ListMemberships returns a subject's memberships in every workspace, ordered by workspace.
	ListMemberships(ctx context.Context, subject string) ([]Member, error)
	// DeleteMember removes a membership (and the subject's team memberships in
	// that workspace); absent is a no-op.
	DeleteMember(ctx context.Context, workspace, subject string) error
	// CountAdmins returns how many members of the workspace are admins.
	CountAdmins(ctx context.Context, workspace string) (int, error)
	// PutMemberRemoval records that the subject was removed from the
	// workspace (a later removal replaces the record).
	PutMemberRemoval(ctx context.Context, r MemberRemoval) error
	// GetMemberRemoval returns the removal record of the subject in the
	// workspace, or ErrNotFound when there is none.
	GetMemberRemoval(ctx context.Context, workspace, subject string) (MemberRemoval, error)
	// DeleteMemberRemoval forgets the removal (the subject was re-admitted);
	// absent is a no-op.
	DeleteMemberRemoval(ctx context.Context, workspace, subject string) error

	// CreateInvite inserts an invite; a duplicate ID or hash is ErrConflict.
	CreateInvite(ctx context.Context, inv Invite) (Invite, error)
	// InviteByHash returns the invite whose token hashes to hash (any workspace), or ErrNotFound.
	InviteByHash(ctx context.Context, hash []byte) (Invite, error)
	// ListInvites returns a workspace's invites that are neither revoked nor
	// expired at now (ExpiresAt after now), oldest first.
	ListInvites(ctx context.Context, workspace string, now time.Time) ([]Invite, error)
	// RevokeInvite marks an invite revoked; unknown or foreign ids are ErrNotFound.
	RevokeInvite(ctx context.Context, workspace, id string, at time.Time) error
	// CountInviteAcceptance increments an invite's acceptedCount; an unknown id is ErrNotFound.
	CountInviteAcceptance(ctx context.Context, id string) error

	// CreateTeam inserts a team; an existing id in the workspace is ErrConflict.
	CreateTeam(ctx context.Context, t Team) (Team, error)
	// GetTeam returns one team or ErrNotFound.
	GetTeam(ctx context.Context, workspace, id string) (Team, error)
	// ListTeams returns a workspace's teams ordered by id.
	ListTeams(ctx context.Context, workspace string) ([]Team, error)
	// UpdateTeam replaces a team's name and private flag; ErrNotFound when absent.
	UpdateTeam(ctx context.Context, t Team) (Team, error)
	// DeleteTeam deletes a team and its memberships; absent is a no-op.
	DeleteTeam(ctx context.Context, workspace, id string) error
	// AddTeamMember adds a subject to a team (idempotent: a member already
	// there is returned as stored); an unknown or foreign team is ErrNotFound.
	AddTeamMember(ctx context.Context, m TeamMember) (TeamMember, error)
	// RemoveTeamMember removes a subject from a team; absent is a no-op.
	RemoveTeamMember(ctx context.Context, workspace, teamID, subject string) error
	// ListTeamMembers returns a team's members ordered by subject; an unknown
	// or foreign team is ErrNotFound.
	ListTeamMembers(ctx context.Context, workspace, teamID string) ([]TeamMember, error)
	// TeamsOf returns the ids of the teams a subject belongs to in a workspace, ordered by id.
	TeamsOf(ctx context.Context, workspace, subject string) ([]string, error)
}
