package auth_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"svc/auth"
	"svc/internal/platform/derrors"
)

func TestNewAPIKey(t *testing.T) {
	for _, prefix := range []string{auth.APIKeyPrefix, auth.RunnerKeyPrefix} {
		plain, hash := auth.NewAPIKey(prefix)
		if !regexp.MustCompile(`^` + prefix + `[A-Za-z0-9_-]{43}$`).MatchString(plain) {
			t.Errorf("NewAPIKey(%q) = %q; want prefix + 43 base64url chars", prefix, plain)
		}
		sum := sha256.Sum256([]byte(plain))
		if !bytes.Equal(hash, sum[:]) || !bytes.Equal(auth.HashKey(plain), sum[:]) {
			t.Errorf("hash of %q is not SHA-256 of the whole key", prefix)
		}
		if _, ok := auth.ParseBearer("Bearer " + plain); !ok {
			t.Errorf("key %q is not a valid bearer token", plain)
		}
		if got := auth.KeyDisplayPrefix(plain); got != plain[:len(prefix)+6] {
			t.Errorf("KeyDisplayPrefix = %q; want %q", got, plain[:len(prefix)+6])
		}
	}
	seen := map[string]bool{}
	for range 100 {
		plain, _ := auth.NewAPIKey(auth.APIKeyPrefix)
		if seen[plain] {
			t.Fatalf("NewAPIKey repeated %q", plain)
		}
		seen[plain] = true
	}
}

func TestNewAPIKeyRefusesOtherPrefixes(t *testing.T) {
	for _, prefix := range []string{"", "inv_", "sk_", "ak"} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("NewAPIKey(%q) did not panic", prefix)
				}
			}()
			auth.NewAPIKey(prefix)
		}()
	}
}

func TestInviteToken(t *testing.T) {
	plain, hash := auth.NewInviteToken()
	if !strings.HasPrefix(plain, "inv_") || len(plain) != 4+43 {
		t.Fatalf("NewInviteToken = %q", plain)
	}
	got, err := auth.InviteTokenHash(plain)
	if err != nil || !bytes.Equal(got, hash) {
		t.Errorf("InviteTokenHash(fresh token) = %x, %v; want %x", got, err, hash)
	}
	key, _ := auth.NewAPIKey(auth.APIKeyPrefix)
	for _, bad := range []string{"", "inv_", "inv_short", plain + "x", key, strings.Replace(plain, "inv_", "INV_", 1), plain[:len(plain)-1] + "!"} {
		if _, err := auth.InviteTokenHash(bad); !errors.Is(err, derrors.ErrInvalid) {
			t.Errorf("InviteTokenHash(%q) = %v; want ErrInvalid", bad, err)
		}
	}
}

func TestAPIKeyAuthenticator(t *testing.T) {
	ctx := context.Background()
	keys := newFakeKeys()
	person := keys.addMember(auth.APIKeyPrefix, auth.StoredKey{ID: "k1", Workspace: "acme", Subject: "alice", Roles: []auth.Role{auth.RoleAdmin}, Kind: auth.KeyKindAPI})
	scoped := keys.addMember(auth.APIKeyPrefix, auth.StoredKey{ID: "k2", Workspace: "acme", Subject: "ci", Roles: []auth.Role{auth.RoleMember}, Scopes: []auth.Scope{auth.ScopeRead}, Kind: auth.KeyKindAPI})
	runner := keys.addMember(auth.RunnerKeyPrefix, auth.StoredKey{ID: "r1", Workspace: "acme", Subject: "runner-7", Roles: []auth.Role{auth.RoleMember}, Kind: auth.KeyKindRunner})
	wrongKind := keys.addMember(auth.APIKeyPrefix, auth.StoredKey{ID: "k3", Workspace: "acme", Subject: "x", Roles: []auth.Role{auth.RoleAdmin}, Kind: auth.KeyKindRunner})
	badScope := keys.addMember(auth.APIKeyPrefix, auth.StoredKey{ID: "k4", Workspace: "acme", Subject: "x", Roles: []auth.Role{auth.RoleAdmin}, Scopes: []auth.Scope{"superuser"}, Kind: auth.KeyKindAPI})
	noWorkspace := keys.addMember(auth.APIKeyPrefix, auth.StoredKey{ID: "k5", Subject: "x", Roles: []auth.Role{auth.RoleAdmin}, Kind: auth.KeyKindAPI})
	unknown, _ := auth.NewAPIKey(auth.APIKeyPrefix)

	a := auth.NewAPIKeyAuthenticator(keys)
	tests := []struct {
		name       string
		header     string
		recognised bool
		want       auth.Principal
		wantErr    error
	}{
		{"person key", "Bearer " + person, true, auth.Principal{Subject: "alice", Workspace: "acme", Roles: []auth.Role{auth.RoleAdmin}, Via: "api-key", KeyID: "k1"}, nil},
		{"scoped key", "Bearer " + scoped, true, auth.Principal{Subject: "ci", Workspace: "acme", Roles: []auth.Role{auth.RoleMember}, Via: "api-key", Scopes: []auth.Scope{auth.ScopeRead}, KeyID: "k2"}, nil},
		{"runner key", "bearer " + runner, true, auth.Principal{Subject: "runner-7", Workspace: "acme", Roles: []auth.Role{auth.RoleMember}, Via: "runner", KeyID: "r1"}, nil},
		{"unknown key", "Bearer " + unknown, true, auth.Principal{}, derrors.ErrUnauthenticated},
		{"malformed key", "Bearer ak_short", true, auth.Principal{}, derrors.ErrUnauthenticated},
		{"key with extra char", "Bearer " + person + "A", true, auth.Principal{}, derrors.ErrUnauthenticated},
		{"runner prefix on api key", "Bearer rnr_" + strings.TrimPrefix(person, "ak_"), true, auth.Principal{}, derrors.ErrUnauthenticated},
		{"stored kind mismatch", "Bearer " + wrongKind, true, auth.Principal{}, derrors.ErrUnauthenticated},
		{"unknown stored scope fails closed", "Bearer " + badScope, true, auth.Principal{}, derrors.ErrUnauthenticated},
		{"no workspace on record", "Bearer " + noWorkspace, true, auth.Principal{}, derrors.ErrUnauthenticated},
		{"jwt is not ours", "Bearer a.b.c", false, auth.Principal{}, nil},
		{"no header", "", false, auth.Principal{}, nil},
		{"other scheme", "Basic " + person, false, auth.Principal{}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := httptest.NewRequest("GET", "/me", nil)
			if tt.header != "" {
				r.Header.Set("Authorization", tt.header)
			}
			p, recognised, err := a.Authenticate(ctx, r)
			if recognised != tt.recognised {
				t.Errorf("recognised = %v; want %v", recognised, tt.recognised)
			}
			if tt.wantErr == nil && err != nil || tt.wantErr != nil && !errors.Is(err, tt.wantErr) {
				t.Fatalf("err = %v; want %v", err, tt.wantErr)
			}
			if diff := cmp.Diff(tt.want, p); diff != "" {
				t.Errorf("principal (-want +got):\n%s", diff)
			}
		})
	}
}

// TestAPIKeyStoreSeesOnlyHashes: the store is asked by SHA-256, never by the
// plaintext or any part of it beyond what the hash reveals.
func TestAPIKeyStoreSeesOnlyHashes(t *testing.T) {
	keys := newFakeKeys()
	plain := keys.addMember(auth.APIKeyPrefix, auth.StoredKey{ID: "k1", Workspace: "acme", Subject: "alice", Roles: []auth.Role{auth.RoleAdmin}, Kind: auth.KeyKindAPI})
	r := httptest.NewRequest("GET", "/me", nil)
	r.Header.Set("Authorization", "Bearer "+plain)
	if _, _, err := auth.NewAPIKeyAuthenticator(keys).Authenticate(context.Background(), r); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256([]byte(plain))
	if len(keys.asked) != 1 || !bytes.Equal(keys.asked[0], sum[:]) {
		t.Errorf("store was asked %x; want only the SHA-256 %x", keys.asked, sum)
	}
	for _, k := range keys.byHash {
		if strings.Contains(string(k.Hash), plain) || k.Prefix != plain[:9] {
			t.Errorf("stored record holds more than hash and display prefix: %+v", k)
		}
	}
}

func TestAPIKeyFailsClosed(t *testing.T) {
	ctx := context.Background()
	keys := newFakeKeys()
	plain := keys.addMember(auth.APIKeyPrefix, auth.StoredKey{ID: "k1", Workspace: "acme", Subject: "alice", Roles: []auth.Role{auth.RoleAdmin}, Kind: auth.KeyKindAPI})
	r := httptest.NewRequest("GET", "/me", nil)
	r.Header.Set("Authorization", "Bearer "+plain)
	a := auth.NewAPIKeyAuthenticator(keys)

	// A store that hands back a row whose hash does not match is not trusted.
	keys.mangled = true
	if _, _, err := a.Authenticate(ctx, r); !errors.Is(err, derrors.ErrUnauthenticated) {
		t.Errorf("mismatched stored hash: err = %v; want ErrUnauthenticated", err)
	}
	keys.mangled = false

	// A store outage refuses the request without calling the key bad.
	keys.err = derrors.ErrUnavailable
	p, recognised, err := a.Authenticate(ctx, r)
	if !recognised || !errors.Is(err, derrors.ErrUnavailable) || errors.Is(err, derrors.ErrUnauthenticated) || p.Subject != "" {
		t.Errorf("store down: (%+v, %v, %v); want recognised, ErrUnavailable, no principal", p, recognised, err)
	}
}
