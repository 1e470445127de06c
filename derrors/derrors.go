// Package derrors holds the service's sentinel errors. Store and domain code
// wrap them with %w and context; the API maps them to HTTP statuses with
// errors.Is, never by message text.
package derrors

import (
	"errors"
	"fmt"
	"time"
)

var (
	// ErrInvalid means the caller sent something malformed or semantically wrong (400).
	ErrInvalid = errors.New("invalid argument")
	// ErrUnauthenticated means no valid credential was presented (401).
	ErrUnauthenticated = errors.New("unauthenticated")
	// ErrBudgetExceeded means the tenant's budget refuses admission (402).
	ErrBudgetExceeded = errors.New("budget exceeded")
	// ErrForbidden means the caller is known but may not do this (403).
	ErrForbidden = errors.New("forbidden")
	// ErrNotFound means the record does not exist or is not visible to the caller (404).
	ErrNotFound = errors.New("not found")
	// ErrConflict means the request conflicts with the current state (409).
	ErrConflict = errors.New("conflict")
	// ErrTooLarge means the request body exceeds the configured limit (413).
	ErrTooLarge = errors.New("request too large")
	// ErrRateLimited means the caller must slow down (429).
	ErrRateLimited = errors.New("rate limited")
	// ErrUnavailable means a dependency (database, Temporal) cannot be reached (503).
	ErrUnavailable = errors.New("unavailable")

	// ErrNoSecretKey means SVC_SECRET_KEY is not set, so secret values
	// (workspace secrets, webhook signing secrets) cannot be sealed or
	// opened: the feature is off, the request is not wrong (503). Its text
	// is written for the client and says what the operator sets.
	ErrNoSecretKey error = &Public{Kind: ErrUnavailable,
		Msg: "SVC_SECRET_KEY is not set on the server, so secret values cannot be stored or opened; an operator sets it to the base64 of 32 random bytes (openssl rand -base64 32)"}
	// ErrUnsealable means a sealed secret value cannot be opened: it was
	// sealed with another key, for another workspace or name, or altered.
	// No status of its own: reaching a client, it is a 500.
	ErrUnsealable = errors.New("secret cannot be opened")
)

// Wrap adds context to *errp when it is non-nil, keeping the chain for errors.Is:
//
//	defer derrors.Wrap(&err, "Store.GetWorkspace(ctx, %q)", id)
func Wrap(errp *error, format string, args ...any) {
	if *errp != nil {
		*errp = fmt.Errorf("%s: %w", fmt.Sprintf(format, args...), *errp)
	}
}

// Invalidf returns an ErrInvalid with a message that tells the caller what to fix.
func Invalidf(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalid, fmt.Sprintf(format, args...))
}

// NotFoundf returns an ErrNotFound naming what was not found.
func NotFoundf(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrNotFound, fmt.Sprintf(format, args...))
}

// Conflictf returns an ErrConflict naming the conflict.
func Conflictf(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrConflict, fmt.Sprintf(format, args...))
}

// Forbiddenf returns an ErrForbidden naming what is not permitted.
func Forbiddenf(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrForbidden, fmt.Sprintf(format, args...))
}

// Public is an error whose message is written for the client, shown even
// when its status is a 5xx (whose text is otherwise replaced by a generic
// one): "no orchestrator is configured; run svc dev" tells the caller and
// the operator what to do, and leaks nothing.
type Public struct {
	Kind error // the sentinel that decides the status
	Msg  string
}

func (e *Public) Error() string { return e.Msg }

// Unwrap returns the sentinel.
func (e *Public) Unwrap() error { return e.Kind }

// Unavailablef returns a Public ErrUnavailable with a formatted message.
// It is the one way to write a 503 whose text the client reads; any other
// 503 says only that a dependency is unavailable.
func Unavailablef(format string, args ...any) error {
	return &Public{Kind: ErrUnavailable, Msg: fmt.Sprintf(format, args...)}
}

// RateLimitedf returns an ErrRateLimited error with the formatted message
// that tells the caller to try again after after (the API's Retry-After).
func RateLimitedf(after time.Duration, format string, args ...any) error {
	return &retryAfter{err: fmt.Errorf("%w: "+format, append([]any{ErrRateLimited}, args...)...), after: after}
}

// RetryAfter returns when a rate-limited err says to try again, if it
// says.
func RetryAfter(err error) (time.Duration, bool) {
	var r *retryAfter
	if errors.As(err, &r) {
		return r.after, true
	}
	return 0, false
}

// retryAfter is an error that says when to try again.
type retryAfter struct {
	err   error
	after time.Duration
}

func (e *retryAfter) Error() string { return e.err.Error() }
func (e *retryAfter) Unwrap() error { return e.err }
