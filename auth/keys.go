package auth

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"svc/internal/platform/derrors"
)

// Prefixes of the secrets this package mints (spec §5.1, §2.10).
const (
	APIKeyPrefix      = "ak_"
	RunnerKeyPrefix   = "rnr_"
	InviteTokenPrefix = "inv_"
)

// secretBytes is the entropy of every minted secret: 256 bits.
const secretBytes = 32

// secretBodyLen is the length of the base64url (unpadded) text of secretBytes.
var secretBodyLen = base64.RawURLEncoding.EncodedLen(secretBytes)

// displayBodyLen is how many characters after the kind prefix the display
// prefix shows: enough to tell keys apart in a list (36 bits), far too few to
// matter against the remaining 220.
const displayBodyLen = 6

// KeyKind says whether a stored key belongs to a person's API key or a paired
// runner; it is also the Principal's Via.
type KeyKind string

// The kinds of stored keys.
const (
	KeyKindAPI    KeyKind = ViaAPIKey
	KeyKindRunner KeyKind = ViaRunner
)

// NewAPIKey mints a key: prefix (APIKeyPrefix, or RunnerKeyPrefix for a
// paired runner) followed by 32 random bytes in unpadded base64url. It
// returns the plaintext, shown to the caller once, and its SHA-256, the only
// form that is stored. Any other prefix is a programming error and panics.
func NewAPIKey(prefix string) (plaintext string, hash []byte) {
	if prefix != APIKeyPrefix && prefix != RunnerKeyPrefix {
		panic(fmt.Sprintf("auth.NewAPIKey: unknown prefix %q", prefix))
	}
	return newSecret(prefix)
}

// NewInviteToken mints an invite token ("inv_" + 32 random bytes) and its
// SHA-256; like keys, only the hash is stored (spec §2.10).
func NewInviteToken() (plaintext string, hash []byte) {
	return newSecret(InviteTokenPrefix)
}

func newSecret(prefix string) (string, []byte) {
	b := make([]byte, secretBytes)
	// crypto/rand.Read never returns an error (it aborts the program if the
	// system's randomness fails), so there is no weak fallback to worry about.
	_, _ = rand.Read(b)
	plaintext := prefix + base64.RawURLEncoding.EncodeToString(b)
	return plaintext, HashKey(plaintext)
}

// HashKey is the stored form of a key or invite token: SHA-256 of the whole
// plaintext, prefix included. A plain hash (no salt, no KDF) is right here
// because the secret has 256 bits of entropy: there is nothing to brute-force,
// and a deterministic hash lets the store look the key up by index.
func HashKey(plaintext string) []byte {
	sum := sha256.Sum256([]byte(plaintext))
	return sum[:]
}

// KeyDisplayPrefix is the non-secret start of a key or token kept as
// metadata (spec §2.10 "prefix"), e.g. "ak_Zx81Qa".
func KeyDisplayPrefix(plaintext string) string {
	for _, p := range []string{APIKeyPrefix, RunnerKeyPrefix, InviteTokenPrefix} {
		if strings.HasPrefix(plaintext, p) {
			return plaintext[:min(len(plaintext), len(p)+displayBodyLen)]
		}
	}
	return ""
}

// wellFormedSecret reports whether s is prefix + exactly secretBodyLen
// base64url characters, as this package mints them.
func wellFormedSecret(s, prefix string) bool {
	body, ok := strings.CutPrefix(s, prefix)
	if !ok || len(body) != secretBodyLen {
		return false
	}
	_, err := base64.RawURLEncoding.Strict().DecodeString(body)
	return err == nil
}

// InviteTokenHash checks that token looks like an invite token and returns
// the hash to look it up by; a malformed token is ErrInvalid, so junk never
// reaches the store.
func InviteTokenHash(token string) ([]byte, error) {
	if !wellFormedSecret(token, InviteTokenPrefix) {
		return nil, derrors.Invalidf("malformed invite token")
	}
	return HashKey(token), nil
}

// StoredKey is what the store keeps for an API key (never the plaintext).
type StoredKey struct {
	ID        string
	Workspace string
	Subject   string
	// Roles is what the key may do; the key-creation path stores [admin]
	// when the caller asks for nothing (spec §5.4 "default admin").
	// Authentication does not fill in a default: a key without a valid role
	// is refused every role-gated action.
	Roles []Role
	// Scopes narrows the roles; empty means unrestricted.
	Scopes []Scope
	Prefix string
	Kind   KeyKind
	// Hash is the stored SHA-256; the authenticator compares it again in
	// constant time, so a store that returns a wrong row fails closed.
	Hash []byte

	// The owner's standing now, read with the key (spec §5.4: a key never
	// exceeds its role). MemberRole is the subject's membership role in
	// Workspace, "" when it is not a member. For a subject KeySubject(id),
	// OwnerKeyFound reports whether key id still exists in Workspace, and
	// OwnerKeyRoles are its roles.
	MemberRole    Role
	OwnerKeyFound bool
	OwnerKeyRoles []Role
}

// ownerRole is the most the key's owner may do in the key's workspace now;
// ok is false when the owner has no standing there (a removed member, a
// deleted owner key), which kills the key. A person's key is capped by
// their membership; a key that acts as itself (or as the tenant key that
// minted it) is bound to its workspace with the roles given at minting and
// lives until that key is deleted.
func (k StoredKey) ownerRole() (role Role, ok bool) {
	if IsKeySubject(k.Subject) {
		if !k.OwnerKeyFound {
			return "", false
		}
		return Principal{Roles: k.OwnerKeyRoles}.HighestRole(), true
	}
	return k.MemberRole, k.MemberRole.Valid()
}

// KeyLookup finds a stored key by the hash of its plaintext. It returns an
// error wrapping derrors.ErrNotFound when no key has that hash (revoked keys
// are deleted, so they are not found).
type KeyLookup interface {
	KeyByHash(ctx context.Context, hash []byte) (StoredKey, error)
}

// APIKeyAuthenticator accepts bearer tokens that start with ak_ or rnr_.
type APIKeyAuthenticator struct {
	keys KeyLookup
}

// NewAPIKeyAuthenticator returns an authenticator that resolves keys through
// keys.
func NewAPIKeyAuthenticator(keys KeyLookup) *APIKeyAuthenticator {
	return &APIKeyAuthenticator{keys: keys}
}

// Authenticate implements Authenticator. It recognises any bearer token with
// a key prefix; such a token that is malformed, unknown or inconsistent with
// its stored row is a 401.
func (a *APIKeyAuthenticator) Authenticate(ctx context.Context, r *http.Request) (Principal, bool, error) {
	token, ok := BearerToken(r)
	if !ok {
		return Principal{}, false, nil
	}
	var kind KeyKind
	var prefix string
	switch {
	case strings.HasPrefix(token, APIKeyPrefix):
		kind, prefix = KeyKindAPI, APIKeyPrefix
	case strings.HasPrefix(token, RunnerKeyPrefix):
		kind, prefix = KeyKindRunner, RunnerKeyPrefix
	default:
		return Principal{}, false, nil
	}
	if !wellFormedSecret(token, prefix) {
		return Principal{}, true, fmt.Errorf("%w: malformed API key", derrors.ErrUnauthenticated)
	}
	hash := HashKey(token)
	k, err := a.keys.KeyByHash(ctx, hash)
	if errors.Is(err, derrors.ErrNotFound) {
		return Principal{}, true, fmt.Errorf("%w: unknown API key", derrors.ErrUnauthenticated)
	}
	if err != nil {
		// Fail closed: the request is refused, with the store's error (5xx)
		// rather than a 401 that would tell a good key it is bad.
		return Principal{}, true, fmt.Errorf("auth: looking up API key %s: %w", KeyDisplayPrefix(token), err)
	}
	if subtle.ConstantTimeCompare(k.Hash, hash) != 1 {
		return Principal{}, true, fmt.Errorf("%w: unknown API key", derrors.ErrUnauthenticated)
	}
	if k.Kind != kind || k.Workspace == "" || k.Subject == "" {
		return Principal{}, true, fmt.Errorf("%w: API key record is inconsistent", derrors.ErrUnauthenticated)
	}
	for _, s := range k.Scopes {
		if !s.Valid() {
			// Dropping the unknown scope could leave an empty list, which
			// means unrestricted: refuse the key instead.
			return Principal{}, true, fmt.Errorf("%w: API key has an unknown scope %q", derrors.ErrUnauthenticated, s)
		}
	}
	owner, ok := k.ownerRole()
	if !ok {
		// The owner left the workspace (or the owning key was deleted): the
		// same answer as an unknown key, so the holder learns nothing more.
		return Principal{}, true, fmt.Errorf("%w: unknown API key", derrors.ErrUnauthenticated)
	}
	var roles []Role
	if r := lowerRole(Principal{Roles: k.Roles}.HighestRole(), owner); r.Valid() {
		roles = []Role{r}
	}
	return Principal{
		Subject:   k.Subject,
		Workspace: k.Workspace,
		Roles:     roles,
		Via:       string(kind),
		Scopes:    k.Scopes,
		KeyID:     k.ID,
	}, true, nil
}
