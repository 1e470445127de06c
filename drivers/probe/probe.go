// Package probe holds what the runtime drivers' reachability probes share
// (POST /runtimes/probe): the result shape, the 10 s cap and its options,
// and the scrubbing that keeps a remote server's answer short and free of
// credentials.
package probe

import (
	"context"
	"errors"
	"strings"
	"time"
)

// Timeout is the cap on one probe (spec §8: runtime probe 10 s).
const Timeout = 10 * time.Second

// Result is the answer of POST /runtimes/probe.
type Result struct {
	Kind      string `json:"kind"`
	Reachable bool   `json:"reachable"`
	Detail    string `json:"detail"`
}

// Option adjusts a probe.
type Option func(*options)

type options struct {
	timeout time.Duration
}

// WithTimeout replaces the Timeout cap (tests use a short one).
func WithTimeout(d time.Duration) Option {
	return func(o *options) {
		if d > 0 {
			o.timeout = d
		}
	}
}

// Limit applies opts and returns the cap and a context bounded by it, plus
// the effective limit (the earlier of ctx's deadline and the cap) for
// telling the user how long the probe waited.
func Limit(ctx context.Context, opts ...Option) (context.Context, context.CancelFunc, time.Duration) {
	o := options{timeout: Timeout}
	for _, opt := range opts {
		opt(&o)
	}
	limit := o.timeout
	if dl, ok := ctx.Deadline(); ok {
		if d := time.Until(dl); d < limit {
			limit = d.Round(time.Millisecond)
		}
	}
	ctx, cancel := context.WithTimeout(ctx, o.timeout)
	return ctx, cancel, limit
}

// GaveUp says why a request ended when it was the probe's context, not the
// server, that ended it: the cap running out or the caller giving up.
func GaveUp(ctx context.Context, limit time.Duration) (string, bool) {
	switch {
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		return "no answer within " + limit.String(), true
	case errors.Is(ctx.Err(), context.Canceled):
		return "probe canceled", true
	}
	return "", false
}

// maxDetail bounds what a remote server can make us echo back.
const maxDetail = 512

// Clean keeps a Detail a short single line and scrubs the credentials, in
// case a server or proxy reflects one in an error body.
func Clean(s string, creds ...string) string {
	for _, v := range creds {
		if v != "" {
			s = strings.ReplaceAll(s, v, "[redacted]")
		}
	}
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > maxDetail {
		s = strings.ToValidUTF8(s[:maxDetail], "") + "..."
	}
	return s
}
