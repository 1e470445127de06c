package derrors_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"svc/internal/platform/derrors"
)

// wrapped returns err as a store method's deferred Wrap leaves it.
func wrapped(err error, format string, args ...any) error {
	derrors.Wrap(&err, format, args...)
	return err
}

// custom words its own text without its cause's, as registry and service
// errors do.
type custom struct{ cause error }

func (c *custom) Error() string { return "dataset d@1 is registered with other content" }
func (c *custom) Unwrap() error { return c.cause }

func TestMessage(t *testing.T) {
	notFound := wrapped(derrors.NotFoundf("dataset %q", "d@1"), `Store.ListDatasetCases(ctx, "default", "d"@"1")`)
	tests := []struct {
		name string
		err  error
		want string
	}{
		{"nil", nil, ""},
		{"sentinel", derrors.ErrNotFound, "not found"},
		{"op", notFound, `not found: dataset "d@1"`},
		{"op of a bare sentinel", wrapped(derrors.ErrNotFound, "Store.GetRun(ctx, %q)", "r-1"), "not found"},
		{"ops nested", wrapped(wrapped(derrors.Invalidf("name is empty"), "inner(ctx)"), "outer(ctx)"), "invalid argument: name is empty"},
		{"fmt around an op", fmt.Errorf("reading the batch's cases: %w", notFound), `reading the batch's cases: not found: dataset "d@1"`},
		{"op around fmt around an op", wrapped(fmt.Errorf("case c1: %w", notFound), "Activities.RunCases(ctx)"), `case c1: not found: dataset "d@1"`},
		{"text before and after the wrapped error", fmt.Errorf("pulling %q (%w), try again", "t1", notFound), `pulling "t1" (not found: dataset "d@1"), try again`},
		{"two %w", fmt.Errorf("%w: %w", derrors.ErrUnavailable, wrapped(errors.New("dial tcp: refused"), "Store.Ping(ctx)")), "unavailable: dial tcp: refused"},
		{"join", errors.Join(wrapped(derrors.ErrInvalid, "a(ctx)"), wrapped(derrors.ErrConflict, "b(ctx)")), "invalid argument\nconflict"},
		{"public keeps its text", fmt.Errorf("ctx: %w", derrors.Unavailablef("no orchestrator is configured; run svc dev")), "ctx: no orchestrator is configured; run svc dev"},
		{"public inside an op", wrapped(derrors.Refusef(derrors.ErrNotFound, nil, "no member %q", "ann"), "Service.Member(ctx)"), `no member "ann"`},
		{"a type with its own words", &custom{cause: wrapped(derrors.ErrConflict, "Store.Put(ctx)")}, "dataset d@1 is registered with other content"},
		{"rate limited", derrors.RateLimitedf(time.Second, "queue is full"), "rate limited: queue is full"},
		{"no op at all", errors.New("plain"), "plain"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := derrors.Message(tt.err); got != tt.want {
				t.Errorf("Message = %q, want %q", got, tt.want)
			}
			if tt.err != nil && strings.Contains(derrors.Message(tt.err), "(ctx") {
				t.Errorf("Message %q keeps an operation", derrors.Message(tt.err))
			}
		})
	}
}

func TestWrapKeepsTheChainForTheLog(t *testing.T) {
	err := wrapped(derrors.NotFoundf("run %q", "r-1"), "Store.GetRun(ctx, %q)", "r-1")
	if want := `Store.GetRun(ctx, "r-1"): not found: run "r-1"`; err.Error() != want {
		t.Errorf("Error() = %q, want %q", err.Error(), want)
	}
	if !errors.Is(err, derrors.ErrNotFound) {
		t.Error("errors.Is(err, ErrNotFound) = false through Wrap")
	}
	var nilErr error
	derrors.Wrap(&nilErr, "x")
	if nilErr != nil {
		t.Errorf("Wrap of nil = %v, want nil", nilErr)
	}
}

func TestPermanent(t *testing.T) {
	tests := []struct {
		err  error
		want bool
	}{
		{nil, false},
		{errors.New("dial tcp: refused"), false},
		{wrapped(derrors.NotFoundf("dataset d"), "Store.ListDatasetCases(ctx)"), true},
		{derrors.Invalidf("bad"), true},
		{derrors.Forbiddenf("no"), true},
		{derrors.Conflictf("scorecard s is at version 3, not 2"), false},
		{fmt.Errorf("%w: %w", derrors.ErrUnavailable, derrors.ErrInvalid), false},
		{derrors.RateLimitedf(time.Second, "slow down"), false},
	}
	for _, tt := range tests {
		if got := derrors.Permanent(tt.err); got != tt.want {
			t.Errorf("Permanent(%v) = %v, want %v", tt.err, got, tt.want)
		}
	}
}

func TestKindName(t *testing.T) {
	if got := derrors.KindName(wrapped(derrors.ErrNotFound, "x")); got != "NotFound" {
		t.Errorf("KindName = %q, want NotFound", got)
	}
	if got := derrors.KindName(errors.New("x")); got != "Internal" {
		t.Errorf("KindName = %q, want Internal", got)
	}
}

// throttled carries a delay and details as domain errors do.
type throttled struct{}

func (throttled) Error() string                { return "slow down" }
func (throttled) RetryDelay() time.Duration    { return 90 * time.Second }
func (throttled) ErrorDetails() map[string]any { return map[string]any{"quota": 10} }
func (throttled) Unwrap() error                { return derrors.ErrRateLimited }

func TestDetailsAndRetryAfter(t *testing.T) {
	err := fmt.Errorf("export: %w", wrapped(throttled{}, "Door.Export(ctx)"))
	if d := derrors.Details(err); d["quota"] != 10 {
		t.Errorf("Details = %v, want quota 10", d)
	}
	if after, ok := derrors.RetryAfter(err); !ok || after != 90*time.Second {
		t.Errorf("RetryAfter = %v, %v; want 90s, true", after, ok)
	}
	pub := errors.Join(derrors.Refusef(derrors.ErrNotFound, map[string]any{"id": "t1"}, "no team t1"), errors.New("other"))
	if d := derrors.Details(pub); d["id"] != "t1" {
		t.Errorf("Details of a joined Public = %v, want id t1", d)
	}
	if d := derrors.Details(derrors.ErrInvalid); d != nil {
		t.Errorf("Details of a sentinel = %v, want nil", d)
	}
}

// A refusal with details that also says when to come back (the sandbox
// caps' 429): WithRetryAfter keeps its kind, message and details.
func TestWithRetryAfterKeepsTheRefusal(t *testing.T) {
	err := derrors.WithRetryAfter(derrors.Refusef(derrors.ErrRateLimited, map[string]any{"freesAt": "t"}, "the cap is reached"), 42*time.Second)
	if !errors.Is(err, derrors.ErrRateLimited) {
		t.Errorf("%v is not ErrRateLimited", err)
	}
	if got := derrors.Message(err); got != "the cap is reached" {
		t.Errorf("Message = %q, want the refusal's", got)
	}
	if d := derrors.Details(err); d["freesAt"] != "t" {
		t.Errorf("Details = %v, want the refusal's", d)
	}
	if after, ok := derrors.RetryAfter(err); !ok || after != 42*time.Second {
		t.Errorf("RetryAfter = %v, %v; want 42s, true", after, ok)
	}
}
