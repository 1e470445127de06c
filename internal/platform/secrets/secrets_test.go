package secrets_test

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"strings"
	"testing"

	"svc/internal/platform/derrors"
	"svc/internal/platform/secrets"
)

// newKey returns a fresh key in the given base64 spelling.
func newKey(t testing.TB, enc *base64.Encoding) string {
	t.Helper()
	raw := make([]byte, 32)
	if _, err := rand.Read(raw); err != nil {
		t.Fatal(err)
	}
	return enc.EncodeToString(raw)
}

func newSealer(t testing.TB) *secrets.Sealer {
	t.Helper()
	s, err := secrets.NewSealer(newKey(t, base64.StdEncoding))
	if err != nil {
		t.Fatalf("NewSealer: %v", err)
	}
	return s
}

func TestRoundTrip(t *testing.T) {
	s := newSealer(t)
	for _, tc := range []struct {
		name, workspace, secret string
		value                   []byte
	}{
		{"token", "ws1", "nomad-token", []byte("s3cr3t-token")},
		{"empty value", "ws1", "empty", []byte{}},
		{"binary value", "ws-2", "kube.config_1", []byte{0, 1, 2, 255, 254}},
		{"large value", "w", "big", bytes.Repeat([]byte("x"), 1<<16)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sealed, err := s.Seal(tc.workspace, tc.secret, tc.value)
			if err != nil {
				t.Fatalf("Seal: %v", err)
			}
			if len(tc.value) > 4 && bytes.Contains(sealed, tc.value) {
				t.Error("sealed value contains the plaintext")
			}
			got, err := s.Open(tc.workspace, tc.secret, sealed)
			if err != nil {
				t.Fatalf("Open: %v", err)
			}
			if !bytes.Equal(got, tc.value) {
				t.Errorf("Open = %q, want %q", got, tc.value)
			}
		})
	}
}

func TestSealIsRandomized(t *testing.T) {
	s := newSealer(t)
	a, err := s.Seal("ws", "n", []byte("same"))
	if err != nil {
		t.Fatal(err)
	}
	b, err := s.Seal("ws", "n", []byte("same"))
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Equal(a, b) {
		t.Error("two seals of the same value are identical; the nonce is not random")
	}
}

func TestKeySpellings(t *testing.T) {
	raw := make([]byte, 32)
	if _, err := rand.Read(raw); err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.URLEncoding, base64.RawStdEncoding, base64.RawURLEncoding} {
		key := enc.EncodeToString(raw)
		s, err := secrets.NewSealer(" " + key + "\n") // as read from a file
		if err != nil {
			t.Fatalf("NewSealer(%q): %v", key, err)
		}
		ids = append(ids, s.KeyID())
	}
	for _, id := range ids[1:] {
		if id != ids[0] {
			t.Errorf("key ids differ across spellings of one key: %v", ids)
		}
	}
	if len(ids[0]) != 16 {
		t.Errorf("KeyID = %q, want 16 hex digits", ids[0])
	}
}

func TestBindingToWorkspaceAndName(t *testing.T) {
	s := newSealer(t)
	sealed, err := s.Seal("ws1", "token", []byte("value"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ workspace, name string }{
		{"ws2", "token"},     // moved to another workspace
		{"ws1", "token2"},    // renamed
		{"ws1t", "oken"},     // same concatenation, different split
		{"ws", "1token"},     // same concatenation, different split
		{"WS1", "token"},     // case matters
		{"ws1", "Token"},     // case matters
		{"ws1", "token\x00"}, // trailing bytes
	} {
		got, err := s.Open(tc.workspace, tc.name, sealed)
		if !errors.Is(err, derrors.ErrUnsealable) {
			t.Errorf("Open(%q, %q) = %q, %v; want ErrUnsealable", tc.workspace, tc.name, got, err)
		}
	}
}

func TestTamper(t *testing.T) {
	s := newSealer(t)
	sealed, err := s.Seal("ws", "name", []byte("a secret value"))
	if err != nil {
		t.Fatal(err)
	}
	// Flipping any single bit anywhere (version, key id, nonce, body, tag) must fail.
	for i := range sealed {
		for bit := range 8 {
			c := bytes.Clone(sealed)
			c[i] ^= 1 << bit
			if got, err := s.Open("ws", "name", c); !errors.Is(err, derrors.ErrUnsealable) {
				t.Fatalf("byte %d bit %d flipped: Open = %q, %v; want ErrUnsealable", i, bit, got, err)
			}
		}
	}
	for _, n := range []int{0, 1, 9, 21, 36, len(sealed) - 1} {
		if got, err := s.Open("ws", "name", sealed[:n]); !errors.Is(err, derrors.ErrUnsealable) {
			t.Errorf("truncated to %d bytes: Open = %q, %v; want ErrUnsealable", n, got, err)
		}
	}
	if got, err := s.Open("ws", "name", append(bytes.Clone(sealed), 0)); !errors.Is(err, derrors.ErrUnsealable) {
		t.Errorf("extended by a byte: Open = %q, %v; want ErrUnsealable", got, err)
	}
}

func TestWrongKey(t *testing.T) {
	a, b := newSealer(t), newSealer(t)
	sealed, err := a.Seal("ws", "name", []byte("hunter2-value"))
	if err != nil {
		t.Fatal(err)
	}
	_, err = b.Open("ws", "name", sealed)
	if !errors.Is(err, derrors.ErrUnsealable) {
		t.Fatalf("Open with another key: %v; want ErrUnsealable", err)
	}
	// The message names both key ids so an operator can find the right key.
	for _, id := range []string{a.KeyID(), b.KeyID()} {
		if !strings.Contains(err.Error(), id) {
			t.Errorf("error %q does not name key id %s", err, id)
		}
	}
	if strings.Contains(err.Error(), "hunter2") {
		t.Errorf("error %q contains the secret value", err)
	}

	// A forged header claiming the right key id still fails authentication.
	forged := bytes.Clone(sealed)
	other, err := b.Seal("ws", "name", []byte("x"))
	if err != nil {
		t.Fatal(err)
	}
	copy(forged[1:9], other[1:9])
	if _, err := b.Open("ws", "name", forged); !errors.Is(err, derrors.ErrUnsealable) {
		t.Errorf("forged key id: %v; want ErrUnsealable", err)
	}
}

func TestBadKeys(t *testing.T) {
	short := make([]byte, 31)
	long := make([]byte, 33)
	for _, tc := range []struct {
		name, key string
	}{
		{"unset", ""},
		{"blank", "   \n"},
		{"not base64", "this is not base64 at all!!"},
		{"31 bytes", base64.StdEncoding.EncodeToString(short)},
		{"33 bytes", base64.StdEncoding.EncodeToString(long)},
		{"hex instead of base64", strings.Repeat("ab", 32)},
		{"raw 32 characters", "0123456789abcdef0123456789abcdeX"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := secrets.NewSealer(tc.key)
			if !errors.Is(err, derrors.ErrInvalid) {
				t.Fatalf("NewSealer = %v, %v; want ErrInvalid", s, err)
			}
			msg := err.Error()
			for _, want := range []string{"SVC_SECRET_KEY", "openssl rand -base64 32"} {
				if !strings.Contains(msg, want) {
					t.Errorf("error %q does not mention %q", msg, want)
				}
			}
			if k := strings.TrimSpace(tc.key); k != "" && strings.Contains(msg, k) {
				t.Errorf("error %q echoes the key", msg)
			}
		})
	}
}

func TestNilSealer(t *testing.T) {
	var s *secrets.Sealer
	if _, err := s.Seal("ws", "n", []byte("v")); !errors.Is(err, derrors.ErrUnavailable) {
		t.Errorf("nil Seal: %v; want ErrUnavailable", err)
	}
	if _, err := s.Open("ws", "n", []byte("v")); !errors.Is(err, derrors.ErrUnavailable) {
		t.Errorf("nil Open: %v; want ErrUnavailable", err)
	}
}

func TestSealRefusesBadInput(t *testing.T) {
	s := newSealer(t)
	for _, tc := range []struct{ workspace, name string }{
		{"", "name"},
		{"ws", ""},
		{"ws", "-leading-dash"},
		{"ws", "has space"},
	} {
		if _, err := s.Seal(tc.workspace, tc.name, []byte("v")); !errors.Is(err, derrors.ErrInvalid) {
			t.Errorf("Seal(%q, %q): %v; want ErrInvalid", tc.workspace, tc.name, err)
		}
	}
}

func TestStringHidesKey(t *testing.T) {
	key := newKey(t, base64.StdEncoding)
	s, err := secrets.NewSealer(key)
	if err != nil {
		t.Fatal(err)
	}
	for _, got := range []string{s.String(), s.GoString()} {
		if strings.Contains(got, key) || !strings.Contains(got, s.KeyID()) {
			t.Errorf("String form %q: want the key id and not the key", got)
		}
	}
}

func TestValidName(t *testing.T) {
	for _, tc := range []struct {
		name string
		ok   bool
	}{
		{"a", true},
		{"Z", true},
		{"0", true},
		{"nomad-token", true},
		{"kube.config_prod-1", true},
		{"a" + strings.Repeat("b", 127), true},
		{"a" + strings.Repeat("b", 128), false},
		{strings.Repeat("x", 4096), false},
		{"", false},
		{"-a", false},
		{".a", false},
		{"_a", false},
		{"a b", false},
		{"a/b", false},
		{"a:b", false},
		{"é", false},
		{"a\n", false},
	} {
		err := secrets.ValidName(tc.name)
		if got := err == nil; got != tc.ok {
			t.Errorf("ValidName(%.20q) = %v; want ok=%v", tc.name, err, tc.ok)
		}
		if err != nil && !errors.Is(err, derrors.ErrInvalid) {
			t.Errorf("ValidName(%.20q) = %v; want ErrInvalid", tc.name, err)
		}
	}
}

// FuzzOpen feeds arbitrary bytes, workspaces and names to Open: it must never
// panic and never accept a value it did not seal.
func FuzzOpen(f *testing.F) {
	s := newSealer(f)
	valid, err := s.Seal("ws", "name", []byte("value"))
	if err != nil {
		f.Fatal(err)
	}
	f.Add("ws", "name", valid)
	f.Add("ws", "name", valid[:len(valid)-1])
	f.Add("ws", "name", valid[:9])
	f.Add("", "", []byte{})
	f.Add("ws", "name", []byte{1})
	f.Add("ws", "name", append([]byte{2}, valid[1:]...))
	f.Fuzz(func(t *testing.T, workspace, name string, data []byte) {
		got, err := s.Open(workspace, name, data)
		if err == nil && !(workspace == "ws" && name == "name" && bytes.Equal(data, valid)) {
			t.Fatalf("Open accepted bytes it did not seal: %q", got)
		}
		if err != nil && !errors.Is(err, derrors.ErrUnsealable) {
			t.Fatalf("Open error %v is not ErrUnsealable", err)
		}
	})
}
