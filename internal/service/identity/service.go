// Package identity is the service behind the identity routes (spec §2.10,
// §5.4, §5.8): API keys, workspace members, invites, teams and workspaces.
// One method per use case: it validates the request, applies the domain
// rules (never remove the last admin, accepting never downgrades, a private
// team is invisible to outsiders, only a person founds a workspace or
// accepts an invite), and runs the transaction. The API calls it with the
// principal the middleware resolved; the route's action (keys:write, ...)
// is checked there, before the call.
package identity

import (
	"context"
	"crypto/rand"
	"errors"
	"strings"
	"time"

	"svc/internal/platform/derrors"
	"svc/store"
)

// Store is what the identity service uses of the store: workspaces and
// the identity records (members, keys, invites, teams), written in
// transactions.
type Store interface {
	store.Workspaces
	store.Identity
	Transact(ctx context.Context, fn func(tx store.Tx) error) error
}

// Options are the dependencies of a Service.
type Options struct {
	Store Store
	// Now is the clock of timestamps and invite expiry; time.Now when nil.
	Now func() time.Time
}

// Service implements the identity routes.
type Service struct {
	o Options
}

// New returns a Service.
func New(o Options) *Service {
	if o.Now == nil {
		o.Now = time.Now
	}
	return &Service{o: o}
}

// refusal is a refusal written for the client, in the one error family: a
// *derrors.Public whose Kind (a derrors sentinel) decides the status and
// whose message and details the API shows as they are, so both must be
// safe to show the caller.
func refusal(kind error, details map[string]any, format string, args ...any) *derrors.Public {
	return derrors.Refusef(kind, details, format, args...)
}

// clip keeps client-supplied text short enough for a message (as the API
// clips what it echoes).
func clip(s string) string {
	const max = 200
	if len(s) <= max {
		return s
	}
	return s[:max] + "..."
}

// newID returns a fresh random id with a kind prefix ("key_", "invite_"),
// 130 bits from crypto/rand: unguessable, so an id never leaks existence.
func newID(prefix string) string {
	return prefix + strings.ToLower(rand.Text())
}

// ensureWorkspace creates the workspace record unless it exists.
func ensureWorkspace(ctx context.Context, tx store.Tx, id, createdBy string, now time.Time) error {
	_, err := tx.GetWorkspace(ctx, id)
	if err == nil {
		return nil
	}
	if !errors.Is(err, derrors.ErrNotFound) {
		return err
	}
	_, err = tx.CreateWorkspace(ctx, store.Workspace{ID: id, Name: id, CreatedBy: createdBy, CreatedAt: now})
	if errors.Is(err, derrors.ErrConflict) {
		return nil // created by a concurrent request outside this transaction's view
	}
	return err
}
