package auth

import (
	"crypto/sha256"
	"crypto/subtle"
	"fmt"

	"svc/internal/platform/derrors"
)

// InternalTokenHeader carries the operator token of /internal routes.
const InternalTokenHeader = "x-internal-token"

// CheckInternalToken admits an /internal call when presented equals the
// configured operator token (SVC_INTERNAL_TOKEN). It fails closed: with no
// token configured every call is refused. Both values are hashed first so the
// constant-time comparison does not leak the configured token's length.
// Every refusal wraps derrors.ErrUnauthenticated (401).
func CheckInternalToken(configured, presented string) error {
	if configured == "" {
		return fmt.Errorf("%w: internal routes are disabled (no operator token configured)", derrors.ErrUnauthenticated)
	}
	want := sha256.Sum256([]byte(configured))
	got := sha256.Sum256([]byte(presented))
	if subtle.ConstantTimeCompare(want[:], got[:]) != 1 {
		return fmt.Errorf("%w: invalid %s", derrors.ErrUnauthenticated, InternalTokenHeader)
	}
	return nil
}
