package auth_test

import (
	"context"
	"encoding/hex"
	"fmt"
	"strings"
	"sync"

	"svc/auth"
	"svc/internal/platform/derrors"
)

// fakeKeys is an in-memory auth.KeyLookup that records the hashes it was
// asked for, so tests can check only hashes ever reach the store. Like the
// store, it reads each key with its owner's standing: the subject's role
// in members, or the owning key for a subject key:<id>.
type fakeKeys struct {
	mu      sync.Mutex
	byHash  map[string]auth.StoredKey
	members map[string]auth.Role // workspace + "\x00" + subject
	asked   [][]byte
	err     error // returned by every lookup when set
	mangled bool  // return a row whose Hash differs from the one asked for
}

func newFakeKeys() *fakeKeys {
	return &fakeKeys{byHash: map[string]auth.StoredKey{}, members: map[string]auth.Role{}}
}

// member sets (or with role "", removes) the subject's membership.
func (f *fakeKeys) member(ws, sub string, r auth.Role) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if r == "" {
		delete(f.members, ws+"\x00"+sub)
		return
	}
	f.members[ws+"\x00"+sub] = r
}

// addMember adds a key and makes its subject a member of its workspace with
// the key's highest role, as a person who minted the key would be.
func (f *fakeKeys) addMember(prefix string, k auth.StoredKey) string {
	f.member(k.Workspace, k.Subject, auth.Principal{Roles: k.Roles}.HighestRole())
	return f.add(prefix, k)
}

// remove deletes the key with id.
func (f *fakeKeys) remove(id string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for h, k := range f.byHash {
		if k.ID == id {
			delete(f.byHash, h)
		}
	}
}

// add mints a key of prefix and stores k under its hash; it returns the plaintext.
func (f *fakeKeys) add(prefix string, k auth.StoredKey) string {
	plain, hash := auth.NewAPIKey(prefix)
	k.Hash = hash
	k.Prefix = auth.KeyDisplayPrefix(plain)
	f.mu.Lock()
	defer f.mu.Unlock()
	f.byHash[hex.EncodeToString(hash)] = k
	return plain
}

func (f *fakeKeys) KeyByHash(_ context.Context, hash []byte) (auth.StoredKey, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.asked = append(f.asked, append([]byte(nil), hash...))
	if f.err != nil {
		return auth.StoredKey{}, f.err
	}
	k, ok := f.byHash[hex.EncodeToString(hash)]
	if !ok {
		return auth.StoredKey{}, derrors.NotFoundf("key")
	}
	k.MemberRole = f.members[k.Workspace+"\x00"+k.Subject]
	if id, ok := strings.CutPrefix(k.Subject, auth.KeySubjectPrefix); ok {
		for _, o := range f.byHash {
			if o.ID == id && o.Workspace == k.Workspace {
				k.OwnerKeyFound, k.OwnerKeyRoles = true, o.Roles
			}
		}
	}
	if f.mangled {
		k.Hash = append([]byte(nil), k.Hash...)
		k.Hash[0] ^= 1
	}
	return k, nil
}

// fakeMemberships is an in-memory auth.Memberships.
type fakeMemberships struct {
	mu      sync.Mutex
	roles   map[string]auth.Role // workspace + "\x00" + subject
	removed map[string]bool      // tombstones: workspace + "\x00" + subject
	ensured []string             // "ws/subject/role" for each EnsureMembership call
	err     error
}

func newFakeMemberships() *fakeMemberships {
	return &fakeMemberships{roles: map[string]auth.Role{}, removed: map[string]bool{}}
}

// remove deletes the membership and leaves a tombstone, as DELETE /members does.
func (f *fakeMemberships) remove(ws, sub string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.roles, ws+"\x00"+sub)
	f.removed[ws+"\x00"+sub] = true
}

func (f *fakeMemberships) set(ws, sub string, r auth.Role) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.roles[ws+"\x00"+sub] = r
}

func (f *fakeMemberships) Membership(_ context.Context, ws, sub string) (auth.Role, bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.err != nil {
		return "", false, f.err
	}
	r, ok := f.roles[ws+"\x00"+sub]
	return r, ok, nil
}

func (f *fakeMemberships) EnsureMembership(_ context.Context, ws, sub string, r auth.Role) (bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.err != nil {
		return false, f.err
	}
	f.ensured = append(f.ensured, fmt.Sprintf("%s/%s/%s", ws, sub, r))
	if _, ok := f.roles[ws+"\x00"+sub]; ok {
		return true, nil
	}
	if f.removed[ws+"\x00"+sub] {
		return false, nil
	}
	f.roles[ws+"\x00"+sub] = r
	return true, nil
}

func (f *fakeMemberships) ensureCalls() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.ensured...)
}
