// Package webhooks delivers outbound webhooks signed per Standard Webhooks
// (https://www.standardwebhooks.com) and guards their targets against SSRF:
// a tenant-supplied webhookUrl must not let a caller reach the service's own
// network (loopback, private ranges, cloud metadata) unless an operator
// allowed it with SVC_WEBHOOK_ALLOW.
package webhooks

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"svc/internal/platform/derrors"
)

// Standard Webhooks header names.
const (
	// HeaderID carries the message id; receivers deduplicate retries on it.
	HeaderID = "webhook-id"
	// HeaderTimestamp carries the signing time in unix seconds.
	HeaderTimestamp = "webhook-timestamp"
	// HeaderSignature carries space-separated "v1,<base64>" signatures.
	HeaderSignature = "webhook-signature"
)

// SecretPrefix marks a Standard Webhooks signing secret.
const SecretPrefix = "whsec_"

// DefaultTolerance is how far a timestamp may be from now when Verify is
// given no tolerance; it bounds the replay window of a captured request.
const DefaultTolerance = 5 * time.Minute

// The spec asks for secrets of 24 to 64 bytes; shorter keys are guessable and
// longer ones gain nothing with SHA-256.
const (
	minKeyLen = 24
	maxKeyLen = 64
)

// NewSecret returns a fresh signing secret: "whsec_" + base64 of 32 random bytes.
func NewSecret() (string, error) {
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		return "", fmt.Errorf("webhooks.NewSecret: %w", err)
	}
	return SecretPrefix + base64.StdEncoding.EncodeToString(key), nil
}

// Sign returns the Standard Webhooks signature "v1,<base64>" of body for the
// message id and timestamp; it fails when the secret is malformed.
func Sign(secret, msgID string, ts time.Time, body []byte) (string, error) {
	key, err := decodeSecret(secret)
	if err != nil {
		return "", err
	}
	if msgID == "" {
		return "", derrors.Invalidf("webhook message id is empty")
	}
	return "v1," + base64.StdEncoding.EncodeToString(mac(key, msgID, strconv.FormatInt(ts.Unix(), 10), body)), nil
}

// Verify checks the Standard Webhooks headers in h against body. It accepts
// the message when any listed v1 signature matches (senders list several while
// rotating secrets) and refuses timestamps further than tolerance from now
// (DefaultTolerance when tolerance <= 0). Verification failures wrap
// derrors.ErrUnauthenticated; a malformed secret wraps derrors.ErrInvalid.
func Verify(secret string, h http.Header, body []byte, now time.Time, tolerance time.Duration) error {
	key, err := decodeSecret(secret)
	if err != nil {
		return err
	}
	if tolerance <= 0 {
		tolerance = DefaultTolerance
	}
	id, tsText, sigs := h.Get(HeaderID), h.Get(HeaderTimestamp), h.Get(HeaderSignature)
	for _, hv := range [...]struct{ name, v string }{{HeaderID, id}, {HeaderTimestamp, tsText}, {HeaderSignature, sigs}} {
		if hv.v == "" {
			return fmt.Errorf("%w: webhook: missing %s header", derrors.ErrUnauthenticated, hv.name)
		}
	}
	sec, err := strconv.ParseInt(tsText, 10, 64)
	if err != nil {
		return fmt.Errorf("%w: webhook: %s %q is not unix seconds", derrors.ErrUnauthenticated, HeaderTimestamp, tsText)
	}
	ts := time.Unix(sec, 0)
	if d := now.Sub(ts); d > tolerance || d < -tolerance {
		return fmt.Errorf("%w: webhook: timestamp %s is more than %s from now (%s)",
			derrors.ErrUnauthenticated, ts.UTC().Format(time.RFC3339), tolerance, now.UTC().Format(time.RFC3339))
	}
	want := mac(key, id, tsText, body)
	for _, s := range strings.Fields(sigs) {
		version, b64, ok := strings.Cut(s, ",")
		if !ok || version != "v1" {
			continue // other schemes (v1a = ed25519) are not ours to check
		}
		got, err := base64.StdEncoding.DecodeString(b64)
		if err != nil {
			continue
		}
		if hmac.Equal(got, want) {
			return nil
		}
	}
	return fmt.Errorf("%w: webhook: no v1 signature matches", derrors.ErrUnauthenticated)
}

// mac is HMAC-SHA256(key, id "." timestamp "." body), the signed content the
// spec defines; tsText is signed exactly as sent so Verify needs no reformatting.
func mac(key []byte, id, tsText string, body []byte) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(id))
	m.Write([]byte{'.'})
	m.Write([]byte(tsText))
	m.Write([]byte{'.'})
	m.Write(body)
	return m.Sum(nil)
}

// decodeSecret returns the HMAC key of a "whsec_<base64>" secret. The prefix
// is optional, as in the reference libraries, so a secret pasted without it
// still works; padding is optional for the same reason.
func decodeSecret(secret string) ([]byte, error) {
	b64 := strings.TrimPrefix(secret, SecretPrefix)
	key, err := base64.StdEncoding.DecodeString(b64)
	if err != nil {
		key, err = base64.RawStdEncoding.DecodeString(b64)
	}
	if err != nil {
		return nil, derrors.Invalidf("webhook secret is not %q followed by base64", SecretPrefix)
	}
	if len(key) < minKeyLen || len(key) > maxKeyLen {
		return nil, derrors.Invalidf("webhook secret key is %d bytes; Standard Webhooks needs %d to %d", len(key), minKeyLen, maxKeyLen)
	}
	return key, nil
}
