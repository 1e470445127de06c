package auth_test

import (
	"context"
	"encoding/hex"
	"fmt"
	"sync"

	"svc/auth"
	"svc/derrors"
)

// fakeKeys is an in-memory auth.KeyLookup that records the hashes it was
// asked for, so tests can check only hashes ever reach the store.
type fakeKeys struct {
	mu      sync.Mutex
	byHash  map[string]auth.StoredKey
	asked   [][]byte
	err     error // returned by every lookup when set
	mangled bool  // return a row whose Hash differs from the one asked for
}

func newFakeKeys() *fakeKeys { return &fakeKeys{byHash: map[string]auth.StoredKey{}} }

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
	if f.mangled {
		k.Hash = append([]byte(nil), k.Hash...)
		k.Hash[0] ^= 1
	}
	return k, nil
}

func (f *fakeKeys) lookups() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.asked)
}

// fakeMemberships is an in-memory auth.Memberships.
type fakeMemberships struct {
	mu      sync.Mutex
	roles   map[string]auth.Role // workspace + "\x00" + subject
	ensured []string             // "ws/subject/role" for each EnsureMembership call
	err     error
}

func newFakeMemberships() *fakeMemberships {
	return &fakeMemberships{roles: map[string]auth.Role{}}
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

func (f *fakeMemberships) EnsureMembership(_ context.Context, ws, sub string, r auth.Role) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.err != nil {
		return f.err
	}
	f.ensured = append(f.ensured, fmt.Sprintf("%s/%s/%s", ws, sub, r))
	if _, ok := f.roles[ws+"\x00"+sub]; !ok {
		f.roles[ws+"\x00"+sub] = r
	}
	return nil
}

func (f *fakeMemberships) ensureCalls() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.ensured...)
}
