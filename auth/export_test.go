package auth

import "time"

// Test hooks, visible only to this package's tests, so window and retry
// tests move a fake clock instead of sleeping.

// SetNow replaces the limiter's clock.
func (l *FailureLimiter) SetNow(f func() time.Time) { l.now = f }

// SetNow replaces the clock of both of the guard's tables.
func (g *FailureGuard) SetNow(f func() time.Time) { g.addrs.now, g.prefixes.now = f, f }

// SetNow replaces the authenticator's clock (discovery retry and token expiry).
func (a *OIDCAuthenticator) SetNow(f func() time.Time) { a.now = f }

// ErrMissingCredential exposes the missing-credential marker.
var ErrMissingCredential = errMissingCredential

// AddrKey exposes address normalisation.
var AddrKey = addrKey
