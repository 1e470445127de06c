package auth

import (
	"context"
	"regexp"
	"slices"
	"strings"

	"svc/internal/domain/eval"
	"svc/internal/platform/derrors"
)

// Role is a workspace role. Roles are cumulative: member includes viewer and
// admin includes member (spec §5.7).
type Role string

// The three roles, lowest first.
const (
	RoleViewer Role = "viewer"
	RoleMember Role = "member"
	RoleAdmin  Role = "admin"
)

// rank orders roles; 0 is "no valid role", below viewer.
func (r Role) rank() int {
	switch r {
	case RoleViewer:
		return 1
	case RoleMember:
		return 2
	case RoleAdmin:
		return 3
	}
	return 0
}

// Valid reports whether r is one of viewer, member, admin.
func (r Role) Valid() bool { return r.rank() > 0 }

// ParseRole returns the role named s, or an ErrInvalid naming the choices.
func ParseRole(s string) (Role, error) {
	if r := Role(s); r.Valid() {
		return r, nil
	}
	return "", derrors.Invalidf("role %q: want viewer, member or admin", s)
}

// Scope limits what an API key may do, whatever its role. Scopes are
// cumulative: write includes read, admin includes write and is Full Access
// (spec §5.4).
type Scope string

// The three scopes, narrowest first.
const (
	ScopeRead  Scope = "read"
	ScopeWrite Scope = "write"
	ScopeAdmin Scope = "admin"
)

func (s Scope) rank() int {
	switch s {
	case ScopeRead:
		return 1
	case ScopeWrite:
		return 2
	case ScopeAdmin:
		return 3
	}
	return 0
}

// Valid reports whether s is one of read, write, admin.
func (s Scope) Valid() bool { return s.rank() > 0 }

// ParseScope returns the scope named s, or an ErrInvalid naming the choices.
func ParseScope(s string) (Scope, error) {
	if sc := Scope(s); sc.Valid() {
		return sc, nil
	}
	return "", derrors.Invalidf("scope %q: want read, write or admin", s)
}

// highestScope is the widest valid scope in ss; "" when none is valid, which
// refuses every action (an unreadable scope list must not widen a key).
func highestScope(ss []Scope) Scope {
	var best Scope
	for _, s := range ss {
		if s.rank() > best.rank() {
			best = s
		}
	}
	return best
}

// Ways a principal authenticated (the Principal's Via).
const (
	ViaOIDC   = "oidc"
	ViaAPIKey = "api-key"
	ViaRunner = "runner"
	ViaDev    = "dev"
)

// Principal is the authenticated caller, as GET /me returns it (spec §2.1).
type Principal struct {
	Subject   string `json:"subject"`
	Workspace string `json:"workspace"`
	Roles     []Role `json:"roles"`
	Via       string `json:"via"`
	// Email and Name come from OIDC tokens only and are for display.
	Email string `json:"email,omitempty"`
	Name  string `json:"name,omitempty"`
	// Scopes is set for API keys only; empty means unrestricted (role only).
	Scopes []Scope `json:"scopes,omitempty"`
	// KeyID is the id of the API key used, for audit; not part of §2.1.
	KeyID string `json:"-"`
	// Agent is the agent acting with this member's credential, when the
	// client declared one (DeclaredAgent: X-Svc-Agent-* headers, or an MCP
	// client's info). It is bound to the member: Subject stays the
	// member's, and declaring is never a privilege (docs/agents.md).
	Agent *eval.Agent `json:"agent,omitempty"`
}

// KeySubjectPrefix starts the subject of a machine key that acts as itself:
// a key minted by the operator route (/internal/tenant-keys) has the subject
// KeySubject(its id), and the keys it mints inherit that subject. It must
// equal store.KeySubjectPrefix (a test in api checks it).
const KeySubjectPrefix = "key:"

// LegacyOperatorSubject is the subject every operator-minted key shared
// before keys got their own (migration 0008 rewrites stored ones). Records
// created by those keys still name it as their creator.
const LegacyOperatorSubject = "operator"

// KeySubject is the subject of the key with id that acts as itself.
func KeySubject(id string) string { return KeySubjectPrefix + id }

// IsKeySubject reports whether subject names a key rather than a person.
func IsKeySubject(subject string) bool { return strings.HasPrefix(subject, KeySubjectPrefix) }

// ReservedSubject reports whether subject belongs to machine credentials, so
// that no person (an OIDC token's sub) may act as it: otherwise they would
// inherit the creator rights, notifications and memberships of what those
// keys made.
func ReservedSubject(subject string) bool {
	return IsKeySubject(subject) || subject == LegacyOperatorSubject
}

// HighestRole is p's effective role: the highest valid one of its roles, or
// "" when it has none (which no role-gated action accepts).
func (p Principal) HighestRole() Role {
	var best Role
	for _, r := range p.Roles {
		if r.rank() > best.rank() {
			best = r
		}
	}
	return best
}

// IsAdmin reports whether p is an admin of its active workspace.
func (p Principal) IsAdmin() bool { return p.HighestRole() == RoleAdmin }

// IsMachine reports whether p is a machine credential (an API key or a
// paired runner) rather than a person.
func (p Principal) IsMachine() bool { return p.Via == ViaAPIKey || p.Via == ViaRunner }

// RequireHuman refuses machine credentials, for routes the spec reserves to
// people (POST /invites/accept).
func RequireHuman(p Principal) error {
	if p.Subject == "" {
		return derrors.ErrUnauthenticated
	}
	if p.IsMachine() {
		return derrors.Forbiddenf("this route needs a person's credential, not an API key")
	}
	return nil
}

// CheckCreatorOrAdmin allows the record's creator or a workspace admin, for
// the routes the spec gates "creator-or-admin" (session exec, close, touch,
// git push; dataset delete).
func CheckCreatorOrAdmin(p Principal, creator string) error {
	if p.IsAdmin() || (p.Subject != "" && p.Subject == creator) {
		return nil
	}
	return derrors.Forbiddenf("only the creator or an admin may do this")
}

// lowerRole is the lower of two roles; "" (no valid role) when either is
// not a valid role.
func lowerRole(a, b Role) Role {
	if !a.Valid() || !b.Valid() {
		return ""
	}
	if a.rank() < b.rank() {
		return a
	}
	return b
}

// sortRoles orders roles lowest first and drops duplicates and invalid ones.
func sortRoles(rs []Role) []Role {
	out := make([]Role, 0, len(rs))
	for _, r := range rs {
		if r.Valid() && !slices.Contains(out, r) {
			out = append(out, r)
		}
	}
	slices.SortFunc(out, func(a, b Role) int { return a.rank() - b.rank() })
	return out
}

// SharedOwner is the reserved owner whose entities every workspace reads
// (spec §1). It is never an active workspace chosen by a header or a token.
const SharedOwner = "_shared"

var workspaceIDPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$`)

// ValidWorkspaceID reports whether s may name a workspace chosen by a caller
// (a header or a token claim): 1 to 128 of letters, digits, '.', '_', '-',
// starting with a letter or digit. The leading-character rule keeps reserved
// names such as _shared out of reach.
func ValidWorkspaceID(s string) bool { return workspaceIDPattern.MatchString(s) }

type principalKey struct{}

// WithPrincipal returns a context carrying p, for code below the handler
// that needs the caller (audit, events).
func WithPrincipal(ctx context.Context, p Principal) context.Context {
	return context.WithValue(ctx, principalKey{}, p)
}

// FromContext returns the principal stored by WithPrincipal.
func FromContext(ctx context.Context) (Principal, bool) {
	p, ok := ctx.Value(principalKey{}).(Principal)
	return p, ok
}
