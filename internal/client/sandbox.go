package client

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"time"

	"svc/internal/domain/flows"
)

// Sandbox sessions (spec §4.8; docs/cli-sandboxes.md). The request and
// answer types below mirror the service's wire shapes
// (sandboxes.CreateRequest, sandboxes.View, flows.SandboxExecResult) with
// the fields the CLI sends and reads; the body as sent still reaches a
// --json caller whole.

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

// SandboxCreate is the body of POST /sandboxes.
type SandboxCreate struct {
	// Image is a reference into the workspace's image store (what `svc
	// image import` prints), or an OCI layout path the service allows.
	Image   string `json:"image,omitempty"`
	Runtime string `json:"runtime,omitempty"`
	// World starts the session from the world's latest version (or
	// Version) and makes it hibernate into the world.
	World     *SandboxWorld `json:"world,omitempty"`
	Hibernate *bool         `json:"hibernate,omitempty"`
	Repo      *SandboxRepo  `json:"repo,omitempty"`
	// TTL is the session's lifetime in seconds (0: the service's default).
	TTL int64 `json:"ttl,omitempty"`
}

// SandboxWorld names a world and, for a rollback, a version (0: latest).
type SandboxWorld struct {
	ID      string `json:"id"`
	Version int    `json:"version,omitempty"`
}

// SandboxRepo is a repository cloned into a session at create.
type SandboxRepo struct {
	Git string `json:"git"`
	Ref string `json:"ref,omitempty"`
	Dir string `json:"dir,omitempty"`
}

// Sandbox is a session as the service answers it: the run record with
// its session fields, and (on reads) its live meta.
type Sandbox struct {
	ID        string    `json:"id"`
	Status    string    `json:"status"`
	Kind      string    `json:"kind"`
	CreatedAt time.Time `json:"createdAt"`
	CreatedBy string    `json:"createdBy,omitempty"`
	Runtime   string    `json:"runtime,omitempty"`
	Error     *struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error,omitempty"`
	Session   *SandboxSession `json:"session,omitempty"`
	Placement *struct {
		Where string `json:"where"`
	} `json:"placement,omitempty"`
	Live *SandboxLive `json:"live,omitempty"`
}

// SandboxSession is a session's row fields (spec §2.9).
type SandboxSession struct {
	ExpiresAt    time.Time         `json:"expiresAt"`
	TTLSeconds   int64             `json:"ttlSeconds"`
	Busy         bool              `json:"busy"`
	ClosedReason string            `json:"closedReason,omitempty"`
	ClosedAt     *time.Time        `json:"closedAt,omitempty"`
	World        *SandboxWorld     `json:"world,omitempty"`
	Hibernate    bool              `json:"hibernate"`
	Snapshots    []SandboxSnapshot `json:"snapshots"`
	Image        string            `json:"image"`
	ImageDigest  string            `json:"imageDigest,omitempty"`
	Host         string            `json:"host,omitempty"`
}

// SandboxSnapshot is one world version a session published.
type SandboxSnapshot struct {
	Version int       `json:"version"`
	Ref     string    `json:"ref"`
	At      time.Time `json:"at"`
	Reason  string    `json:"reason,omitempty"`
}

// SandboxLive is a session's live meta.
type SandboxLive struct {
	ExpiresAt   time.Time `json:"expiresAt"`
	Busy        bool      `json:"busy"`
	Open        bool      `json:"open"`
	SecondsLeft int64     `json:"secondsLeft"`
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

// SandboxExec is the body of POST /sandboxes/:id/exec.
type SandboxExec struct {
	// Command is one shell command (/bin/sh -c in the container).
	Command string `json:"command"`
	// TimeoutSec bounds it (0: the service's 600).
	TimeoutSec int `json:"timeoutSec,omitempty"`
}

// ExecResult is the answer of an exec: what the command did.
type ExecResult struct {
	ExitCode        int     `json:"exitCode"`
	Stdout          string  `json:"stdout"`
	Stderr          string  `json:"stderr"`
	StdoutTruncated bool    `json:"stdoutTruncated,omitempty"`
	StderrTruncated bool    `json:"stderrTruncated,omitempty"`
	TimedOut        bool    `json:"timedOut,omitempty"`
	DurationMs      float64 `json:"durationMs"`
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
func (c *Client) CreateSandbox(ctx context.Context, req SandboxCreate) (Sandbox, json.RawMessage, error) {
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
func (c *Client) ExecSandbox(ctx context.Context, id string, req SandboxExec) (ExecResult, json.RawMessage, error) {
	limit := ExecDefaultTimeout
	if req.TimeoutSec > 0 {
		limit = time.Duration(req.TimeoutSec) * time.Second
	}
	return call[ExecResult](ctx, c.within(limit+execSlack), http.MethodPost, sandboxPath(id, "exec"), req)
}

// TouchSandbox is POST /sandboxes/:id/touch: the deadline becomes
// max(current, now + ttl) (ttl 0: the session's own).
func (c *Client) TouchSandbox(ctx context.Context, id string, ttlSeconds int64) (Sandbox, json.RawMessage, error) {
	var body any
	if ttlSeconds > 0 {
		body = map[string]int64{"ttl": ttlSeconds}
	}
	return call[Sandbox](ctx, c, http.MethodPost, sandboxPath(id, "touch"), body)
}

// CloseSandbox is POST /sandboxes/:id/close (idempotent); snapshot false
// skips a world session's hibernation, nil leaves the session's choice.
func (c *Client) CloseSandbox(ctx context.Context, id string, snapshot *bool) (Sandbox, json.RawMessage, error) {
	var body any
	if snapshot != nil {
		body = map[string]bool{"snapshot": *snapshot}
	}
	return call[Sandbox](ctx, c.within(sandboxCloseLimit), http.MethodPost, sandboxPath(id, "close"), body)
}

// SnapshotSandbox is POST /sandboxes/:id/snapshot: the session's changes
// published as the next version of its world.
func (c *Client) SnapshotSandbox(ctx context.Context, id string) (flows.SnapshotResult, json.RawMessage, error) {
	return call[flows.SnapshotResult](ctx, c.within(sandboxSnapshotLimit), http.MethodPost, sandboxPath(id, "snapshot"), nil)
}
