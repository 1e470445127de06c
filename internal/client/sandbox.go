package client

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"time"

	"svc/internal/domain/eval"
	"svc/internal/domain/sandboxwire"
)

// Sandbox sessions (spec §4.8; docs/cli-sandboxes.md). The bodies are the
// service's own (internal/domain/sandboxwire); Sandbox reads the fields of
// a session's record (sandboxwire.View) the CLI shows, and the body as
// sent still reaches a --json caller whole.

// A session route's answer can take longer than RequestLimit: a create
// waits for its container (up to 5 minutes on the service), a close for
// the session to settle and hibernate (2 minutes), a snapshot for its
// capture and push, an exec for its command (up to its timeout).
const (
	sandboxCreateLimit   = 6 * time.Minute
	sandboxCloseLimit    = 10 * time.Minute
	sandboxSnapshotLimit = 30 * time.Minute
	// ExecDefaultTimeout is the service's bound on an exec that names none.
	ExecDefaultTimeout = 10 * time.Minute
	// execSlack is the time an exec's answer may take beyond its command.
	execSlack = time.Minute
)

// Sandbox is a session as the service answers it: the run record with
// its session fields, and (on reads) its live meta.
type Sandbox struct {
	ID        string             `json:"id"`
	Status    string             `json:"status"`
	Kind      string             `json:"kind"`
	CreatedAt time.Time          `json:"createdAt"`
	CreatedBy string             `json:"createdBy,omitempty"`
	Runtime   string             `json:"runtime,omitempty"`
	Error     *eval.Error        `json:"error,omitempty"`
	Session   *eval.Session      `json:"session,omitempty"`
	Placement *eval.RunPlacement `json:"placement,omitempty"`
	Live      *sandboxwire.Live  `json:"live,omitempty"`
}

// ExpiresAt is the session's hard expiry: the live meta's, else the row's.
func (s Sandbox) ExpiresAt() time.Time {
	if s.Live != nil && !s.Live.ExpiresAt.IsZero() {
		return s.Live.ExpiresAt
	}
	if s.Session != nil {
		return s.Session.ExpiresAt
	}
	return time.Time{}
}

// Busy reports whether a playground task runs in the session.
func (s Sandbox) Busy() bool {
	if s.Live != nil {
		return s.Live.Busy
	}
	return s.Session != nil && s.Session.Busy
}

// sandboxPath is a session's path, or one of its routes (op not empty).
func sandboxPath(id, op string) string {
	p := "/sandboxes/" + url.PathEscape(id)
	if op != "" {
		p += "/" + op
	}
	return p
}

// within returns a copy of c whose requests last at most d (0: no bound
// but the context's).
func (c *Client) within(d time.Duration) *Client {
	cp := *c
	hc := http.Client{}
	if c.HTTP != nil {
		hc = *c.HTTP
	}
	hc.Timeout = d
	cp.HTTP = &hc
	return &cp
}

// CreateSandbox is POST /sandboxes: it answers once the session's
// container runs (201).
func (c *Client) CreateSandbox(ctx context.Context, req sandboxwire.CreateRequest) (Sandbox, json.RawMessage, error) {
	return call[Sandbox](ctx, c.within(sandboxCreateLimit), http.MethodPost, "/sandboxes", req)
}

// ListSandboxes is GET /sandboxes: the caller's live sessions.
func (c *Client) ListSandboxes(ctx context.Context) ([]Sandbox, json.RawMessage, error) {
	return call[[]Sandbox](ctx, c, http.MethodGet, "/sandboxes", nil)
}

// Sandbox is GET /sandboxes/:id: the record plus its live meta.
func (c *Client) Sandbox(ctx context.Context, id string) (Sandbox, json.RawMessage, error) {
	return call[Sandbox](ctx, c, http.MethodGet, sandboxPath(id, ""), nil)
}

// ExecSandbox is POST /sandboxes/:id/exec: the answer comes when the
// command has ended, so the request lasts as long as the command may.
func (c *Client) ExecSandbox(ctx context.Context, id string, req sandboxwire.ExecRequest) (sandboxwire.ExecResult, json.RawMessage, error) {
	limit := ExecDefaultTimeout
	if req.TimeoutSec > 0 {
		limit = time.Duration(req.TimeoutSec) * time.Second
	}
	return call[sandboxwire.ExecResult](ctx, c.within(limit+execSlack), http.MethodPost, sandboxPath(id, "exec"), req)
}

// TouchSandbox is POST /sandboxes/:id/touch: the deadline becomes
// max(current, now + ttl) (ttl 0: the session's own).
func (c *Client) TouchSandbox(ctx context.Context, id string, ttlSeconds int64) (Sandbox, json.RawMessage, error) {
	var body any
	if ttlSeconds > 0 {
		body = sandboxwire.TouchRequest{TTL: ttlSeconds}
	}
	return call[Sandbox](ctx, c, http.MethodPost, sandboxPath(id, "touch"), body)
}

// CloseSandbox is POST /sandboxes/:id/close (idempotent); snapshot false
// skips a world session's hibernation, nil leaves the session's choice.
func (c *Client) CloseSandbox(ctx context.Context, id string, snapshot *bool) (Sandbox, json.RawMessage, error) {
	var body any
	if snapshot != nil {
		body = sandboxwire.CloseRequest{Snapshot: snapshot}
	}
	return call[Sandbox](ctx, c.within(sandboxCloseLimit), http.MethodPost, sandboxPath(id, "close"), body)
}

// SnapshotSandbox is POST /sandboxes/:id/snapshot: the session's changes
// published as the next version of its world.
func (c *Client) SnapshotSandbox(ctx context.Context, id string) (sandboxwire.SnapshotResult, json.RawMessage, error) {
	return call[sandboxwire.SnapshotResult](ctx, c.within(sandboxSnapshotLimit), http.MethodPost, sandboxPath(id, "snapshot"), nil)
}
