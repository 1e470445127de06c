// Package secrets encrypts workspace secret values at rest.
//
// A Sealer holds the key from SVC_SECRET_KEY and seals each value with
// AES-256-GCM. The workspace and the secret's name are bound into the
// ciphertext as additional authenticated data, so a sealed value copied to
// another workspace or another name (by a bug or by someone with write access
// to the database) fails to open instead of leaking a credential across
// tenants.
//
// Secret values and the key never appear in an error or a String form.
package secrets

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"regexp"
	"strings"

	"svc/internal/platform/derrors"
)

// KeyEnv is the environment variable the key is read from (config.Config.SecretKey).
const KeyEnv = "SVC_SECRET_KEY"

// keyHint tells an operator how to make a valid key; every key error ends with it.
const keyHint = "make one with: openssl rand -base64 32"

const (
	// version1 is the only format so far: version || keyID || nonce || GCM(ciphertext+tag).
	version1  byte = 1
	keySize        = 32 // AES-256
	keyIDSize      = 8
	nonceSize      = 12 // the GCM standard nonce; random nonces are safe far beyond any secret count
	headerLen      = 1 + keyIDSize
	// overhead is what Seal adds to a plaintext: header, nonce and the 16-byte GCM tag.
	overhead = headerLen + nonceSize + 16
)

// namePattern is the secret name grammar from the interface spec.
var namePattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$`)

// ValidName reports whether name is an acceptable secret name, as an
// ErrInvalid that says what is allowed.
func ValidName(name string) error {
	if len(name) > 128 {
		// Too long to be a name; do not echo what may be a pasted value.
		return derrors.Invalidf("secret name is %d bytes, want at most 128", len(name))
	}
	if !namePattern.MatchString(name) {
		return derrors.Invalidf("secret name %q: want 1-128 characters of letters, digits, '.', '_' or '-', starting with a letter or digit", name)
	}
	return nil
}

// Sealer seals and opens secret values with one key. It is safe for
// concurrent use. A nil *Sealer stands for "no key configured": its methods
// return ErrUnavailable rather than panicking, so the API can hold one
// unconditionally.
type Sealer struct {
	aead  cipher.AEAD
	keyID [keyIDSize]byte
}

// NewSealer builds a Sealer from key, the base64 (standard or URL alphabet,
// padded or not) of exactly 32 random bytes. A bad key is an ErrInvalid that
// names SVC_SECRET_KEY and says how to make one; the key itself is never
// quoted back.
func NewSealer(key string) (*Sealer, error) {
	raw, err := decodeKey(key)
	if err != nil {
		return nil, err
	}
	block, err := aes.NewCipher(raw)
	if err != nil {
		// Unreachable with a 32-byte key; kept so a future change cannot panic.
		return nil, fmt.Errorf("secrets: %s: %w", KeyEnv, err)
	}
	aead, err := cipher.NewGCMWithNonceSize(block, nonceSize)
	if err != nil {
		return nil, fmt.Errorf("secrets: %s: %w", KeyEnv, err)
	}
	s := &Sealer{aead: aead}
	sum := sha256.Sum256(raw)
	copy(s.keyID[:], sum[:keyIDSize])
	return s, nil
}

// decodeKey accepts every common base64 spelling so an operator can paste
// the output of openssl or of a URL-safe generator without thinking about it.
func decodeKey(key string) ([]byte, error) {
	key = strings.TrimSpace(key)
	if key == "" {
		return nil, derrors.Invalidf("%s is unset; %s", KeyEnv, keyHint)
	}
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.URLEncoding, base64.RawStdEncoding, base64.RawURLEncoding} {
		raw, err := enc.DecodeString(key)
		if err != nil {
			continue
		}
		if len(raw) != keySize {
			return nil, derrors.Invalidf("%s decodes to %d bytes, want exactly %d; %s", KeyEnv, len(raw), keySize, keyHint)
		}
		return raw, nil
	}
	return nil, derrors.Invalidf("%s is not valid base64; %s", KeyEnv, keyHint)
}

// KeyID is the hex form of the key id (the first 8 bytes of sha256(key))
// stamped on every sealed value. It is safe to log, and lets an operator tell
// which key sealed what during a future rotation.
func (s *Sealer) KeyID() string {
	if s == nil {
		return ""
	}
	return hex.EncodeToString(s.keyID[:])
}

// String keeps the key material out of logs and %v output.
func (s *Sealer) String() string {
	if s == nil {
		return "secrets.Sealer(no key)"
	}
	return "secrets.Sealer(key id " + s.KeyID() + ")"
}

// GoString keeps the key material out of %#v output.
func (s *Sealer) GoString() string { return s.String() }

// errNoKey is what a nil Sealer answers: the feature is off, not the
// request wrong (derrors.ErrNoSecretKey, a 503 that says what to set).
func errNoKey() error {
	return fmt.Errorf("secrets: %w", derrors.ErrNoSecretKey)
}

// Seal encrypts plaintext for the secret name in workspace. The result is
// version || keyID || nonce || ciphertext+tag and is bound to workspace and
// name. An empty workspace or an invalid name is ErrInvalid.
func (s *Sealer) Seal(workspace, name string, plaintext []byte) ([]byte, error) {
	if s == nil {
		return nil, errNoKey()
	}
	if workspace == "" {
		return nil, derrors.Invalidf("secret %q: workspace is empty", name)
	}
	if err := ValidName(name); err != nil {
		return nil, err
	}
	out := make([]byte, headerLen+nonceSize, overhead+len(plaintext))
	out[0] = version1
	copy(out[1:headerLen], s.keyID[:])
	nonce := out[headerLen : headerLen+nonceSize]
	if _, err := rand.Read(nonce); err != nil {
		return nil, fmt.Errorf("secrets: seal %q in workspace %q: reading a nonce: %w", name, workspace, err)
	}
	return s.aead.Seal(out, nonce, plaintext, aad(out[:headerLen], workspace, name)), nil
}

// Open decrypts a value made by Seal for the same workspace and name. A value
// sealed with another key, for another workspace or name, truncated or
// altered is a derrors.ErrUnsealable; Open never panics on any input.
func (s *Sealer) Open(workspace, name string, sealed []byte) ([]byte, error) {
	if s == nil {
		return nil, errNoKey()
	}
	fail := func(why string) error {
		return fmt.Errorf("secrets: open %q in workspace %q: %w: %s", name, workspace, derrors.ErrUnsealable, why)
	}
	if len(sealed) < overhead {
		return nil, fail(fmt.Sprintf("%d bytes is shorter than any sealed value", len(sealed)))
	}
	if sealed[0] != version1 {
		return nil, fail(fmt.Sprintf("unknown format version %d", sealed[0]))
	}
	if id := sealed[1:headerLen]; string(id) != string(s.keyID[:]) {
		// Both ids are hash prefixes, safe to show, and they are what an
		// operator needs to find the right key after a rotation.
		return nil, fail(fmt.Sprintf("sealed with key id %x, the configured %s has key id %x", id, KeyEnv, s.keyID))
	}
	nonce := sealed[headerLen : headerLen+nonceSize]
	plain, err := s.aead.Open(nil, nonce, sealed[headerLen+nonceSize:], aad(sealed[:headerLen], workspace, name))
	if err != nil {
		// GCM's error says only "message authentication failed"; say what that means here.
		return nil, fail("authentication failed (altered, or sealed for another workspace or name)")
	}
	return plain, nil
}

// aad binds the header and the secret's identity into the tag. Each part is
// length-prefixed so ("ab","c") and ("a","bc") cannot collide.
func aad(header []byte, workspace, name string) []byte {
	const label = "svc/internal/platform/secrets/v1"
	b := make([]byte, 0, len(label)+len(header)+8+len(workspace)+len(name))
	b = append(b, label...)
	b = append(b, header...)
	b = binary.BigEndian.AppendUint32(b, uint32(len(workspace)))
	b = append(b, workspace...)
	b = binary.BigEndian.AppendUint32(b, uint32(len(name)))
	b = append(b, name...)
	return b
}
