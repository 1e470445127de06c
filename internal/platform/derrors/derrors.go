// Package derrors is the service's one error family (modelled on pkgsite's
// internal/derrors):
//
//   - the kinds: a handful of sentinels (ErrNotFound, ErrInvalid, ...) that
//     store and domain code wrap with %w and context. The API maps them to
//     statuses with errors.Is in one table (api/errors.go), never by text,
//     and a worker maps them to retryable or not (Permanent).
//   - *Op, what Wrap adds: the call that failed ("Store.GetRun(ctx, ...)"),
//     kept in Error() for the log and dropped by Message, so no client, record
//     or step ever reads an internal call chain.
//   - *Public, a refusal whose text and details are written for the client;
//     domain errors that carry details or a retry delay say so through the
//     ErrorDetails and RetryDelay methods, read by Details and RetryAfter.
package derrors

import (
	"errors"
	"fmt"
	"strings"
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

// Wrap adds the failed operation to *errp when it is non-nil, keeping the
// chain for errors.Is:
//
//	defer derrors.Wrap(&err, "Store.GetWorkspace(ctx, %q)", id)
//
// The operation is for the log: Message leaves it out.
func Wrap(errp *error, format string, args ...any) {
	if *errp != nil {
		*errp = &Op{Op: fmt.Sprintf(format, args...), Err: *errp}
	}
}

// Op is an error with the internal operation it happened in, as Wrap makes
// it. Error() reads "op: err" for the log; Message(op) is Message(op.Err).
type Op struct {
	Op  string // the call that failed: "Store.GetRun(ctx, \"ws\", \"r-1\")"
	Err error
}

func (e *Op) Error() string { return e.Op + ": " + e.Err.Error() }

// Unwrap returns the error the operation met.
func (e *Op) Unwrap() error { return e.Err }

// Message is the text of err for a person: err.Error() with every
// operation that Wrap added removed, at any depth, and a Public's text as
// written. The API's 4xx bodies, and every record and step error that
// workflows and activities write, read it; the log keeps err.Error().
//
// An error wrapping one error (fmt.Errorf with one %w) reads as its own
// text with the inner error's text replaced by the inner's Message; one
// wrapping several (errors.Join, several %w) likewise for each; any other
// error reads as its Error().
func Message(err error) string {
	if err == nil {
		return ""
	}
	switch e := err.(type) {
	case *Op:
		return Message(e.Err)
	case *Public:
		return e.Msg
	case interface{ Unwrap() error }:
		inner := e.Unwrap()
		if inner == nil {
			return err.Error()
		}
		return replaceInner(err.Error(), []error{inner}, true)
	case interface{ Unwrap() []error }:
		return replaceInner(err.Error(), e.Unwrap(), false)
	}
	return err.Error()
}

// replaceInner rewrites text, the Error() of an error wrapping inners, with
// each inner's text replaced by its Message: the last occurrence for a
// single wrapped error (fmt puts %w last), else in order. A type that words
// its own text without its cause's is left as it is.
func replaceInner(text string, inners []error, last bool) string {
	var b strings.Builder
	pos := 0
	for _, inner := range inners {
		if inner == nil {
			continue
		}
		it := inner.Error()
		i := strings.Index(text[pos:], it)
		if last {
			i = strings.LastIndex(text[pos:], it)
		}
		if i < 0 {
			continue
		}
		msg := Message(inner)
		if msg == it {
			continue
		}
		b.WriteString(text[pos : pos+i])
		b.WriteString(msg)
		pos += i + len(it)
	}
	if pos == 0 {
		return text
	}
	b.WriteString(text[pos:])
	return b.String()
}

// Permanent reports whether err is a refusal that trying again cannot
// change: not found, invalid, forbidden, unauthenticated or too large, and
// not also unavailable or rate limited (which a later attempt may pass).
// A worker does not retry an activity that failed with one. A conflict is
// not permanent: the store answers ErrConflict when another writer got
// there first (a scorecard's version moved, a run inserted concurrently),
// and the next attempt reads what it wrote.
func Permanent(err error) bool {
	if err == nil || errors.Is(err, ErrUnavailable) || errors.Is(err, ErrRateLimited) {
		return false
	}
	for _, k := range []error{ErrNotFound, ErrInvalid, ErrForbidden, ErrUnauthenticated, ErrTooLarge} {
		if errors.Is(err, k) {
			return true
		}
	}
	return false
}

// kindNames name the kinds where an error leaves the process without its
// Go values: the type of a Temporal application error.
var kindNames = []struct {
	kind error
	name string
}{
	{ErrInvalid, "Invalid"},
	{ErrUnauthenticated, "Unauthenticated"},
	{ErrBudgetExceeded, "BudgetExceeded"},
	{ErrForbidden, "Forbidden"},
	{ErrNotFound, "NotFound"},
	{ErrConflict, "Conflict"},
	{ErrTooLarge, "TooLarge"},
	{ErrRateLimited, "RateLimited"},
	{ErrUnavailable, "Unavailable"},
}

// KindName names the first kind err wraps ("NotFound", "Invalid", ...),
// or "Internal" when it wraps none.
func KindName(err error) string {
	for _, k := range kindNames {
		if errors.Is(err, k.kind) {
			return k.name
		}
	}
	return "Internal"
}

// Details returns the structured facts for the error body of the first
// error in err's chain that carries any (an ErrorDetails method returning
// a non-empty map), or nil.
func Details(err error) map[string]any {
	var found map[string]any
	walk(err, func(e error) bool {
		if d, ok := e.(interface{ ErrorDetails() map[string]any }); ok {
			if m := d.ErrorDetails(); len(m) > 0 {
				found = m
				return true
			}
		}
		return false
	})
	return found
}

// walk calls fn on err and every error it wraps, depth first, until fn
// returns true.
func walk(err error, fn func(error) bool) bool {
	if err == nil {
		return false
	}
	if fn(err) {
		return true
	}
	switch e := err.(type) {
	case interface{ Unwrap() error }:
		return walk(e.Unwrap(), fn)
	case interface{ Unwrap() []error }:
		for _, inner := range e.Unwrap() {
			if walk(inner, fn) {
				return true
			}
		}
	}
	return false
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
// the operator what to do, and leaks nothing. Details, when set, are the
// structured facts of the error body; both must be safe to show the caller.
type Public struct {
	Kind    error // the sentinel that decides the status
	Msg     string
	Details map[string]any
}

func (e *Public) Error() string { return e.Msg }

// Unwrap returns the sentinel.
func (e *Public) Unwrap() error { return e.Kind }

// ErrorDetails returns the details of the error body.
func (e *Public) ErrorDetails() map[string]any { return e.Details }

// Refusef returns a Public of kind with details and a formatted message:
// a refusal written for the client.
func Refusef(kind error, details map[string]any, format string, args ...any) *Public {
	return &Public{Kind: kind, Msg: fmt.Sprintf(format, args...), Details: details}
}

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

// WithRetryAfter returns err saying to try again after after (the API's
// Retry-After), its message, kind and details unchanged: for a refusal
// with details (a Refusef) that also knows when to come back.
func WithRetryAfter(err error, after time.Duration) error {
	return &retryAfter{err: err, after: after}
}

// RetryAfter returns when a rate-limited err says to try again, if it
// says: the first error in its chain with a RetryDelay method.
func RetryAfter(err error) (time.Duration, bool) {
	var after time.Duration
	ok := walk(err, func(e error) bool {
		if r, ok := e.(interface{ RetryDelay() time.Duration }); ok {
			after = r.RetryDelay()
			return true
		}
		return false
	})
	return after, ok
}

// retryAfter is an error that says when to try again.
type retryAfter struct {
	err   error
	after time.Duration
}

func (e *retryAfter) Error() string             { return e.err.Error() }
func (e *retryAfter) Unwrap() error             { return e.err }
func (e *retryAfter) RetryDelay() time.Duration { return e.after }
