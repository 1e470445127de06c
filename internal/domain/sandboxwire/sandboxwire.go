// Package sandboxwire is the sandbox routes' wire format (spec §2.9,
// §4.8): the bodies the API (the sandboxes service,
// internal/service/sandboxes, which aliases them) reads and answers on
// /sandboxes, /worlds and /images, and the bounds it keeps. It is pure, so
// the API client (internal/client) and the CLI speak it without linking a
// service or the store.
package sandboxwire

import (
	"encoding/json"
	"time"

	"svc/internal/domain/eval"
	"svc/internal/domain/flows"
	"svc/internal/domain/registry"
)

// CreateRequest is the body of POST /sandboxes.
type CreateRequest struct {
	// Image is what the session runs: a reference into the workspace's
	// image store (repo:tag, repo@sha256:...), or the absolute path of an
	// OCI image layout under SVC_SANDBOX_IMAGE_DIRS.
	Image string `json:"image,omitempty"`
	// Capability is an adopted environment capability: a world (spec
	// §2.9: a world is an environment capability) whose version the
	// session starts from without being bound to it: it neither
	// hibernates into the world nor snapshots it. Version "" or "latest"
	// is the latest, else "3" or "v3".
	Capability *registry.Ref `json:"capability,omitempty"`
	// Harness boots a registered process harness: the session runs its
	// image (unless Image names another) and takes playground tasks for
	// it (POST /sandboxes/:id/tasks). Version "" is latest.
	Harness *registry.Ref `json:"harness,omitempty"`
	// Runtime names a registered runtime with a session mode (kind local).
	Runtime string `json:"runtime,omitempty"`
	// World starts the session from the world's latest version (or
	// World.Version) and makes it hibernate into the world.
	World     *eval.SessionWorld `json:"world,omitempty"`
	Hibernate *bool              `json:"hibernate,omitempty"`
	Repo      *eval.SessionRepo  `json:"repo,omitempty"`
	// TTL is the session's lifetime in seconds from now (0: the default).
	TTL int64 `json:"ttl,omitempty"`
	// Agent is the agent driving the session, when one declares itself.
	Agent *eval.Agent `json:"agent,omitempty"`
}

// View is a session as GET /sandboxes and /sandboxes/:id answer it: the
// run record plus its live meta.
type View struct {
	eval.Run
	Live Live
}

// Live is a session's live meta (spec §4.8).
type Live struct {
	ExpiresAt time.Time `json:"expiresAt"`
	Busy      bool      `json:"busy"`
	// Open is false once the session has ended.
	Open bool `json:"open"`
	// SecondsLeft until the hard expiry (0 once ended).
	SecondsLeft int64 `json:"secondsLeft"`
	// Harness is the booted harness ({id, version}); Tasks the playground
	// tasks' summaries (eval.SessionTask), oldest first.
	Harness any   `json:"harness,omitempty"`
	Tasks   []any `json:"tasks"`
}

// MarshalJSON writes the run's fields with "live" beside them.
func (v View) MarshalJSON() ([]byte, error) {
	run, err := json.Marshal(v.Run)
	if err != nil {
		return nil, err
	}
	live, err := json.Marshal(v.Live)
	if err != nil {
		return nil, err
	}
	out := append(run[:len(run)-1:len(run)-1], `,"live":`...)
	out = append(out, live...)
	return append(out, '}'), nil
}

// ExecRequest is the body of POST /sandboxes/:id/exec.
type ExecRequest struct {
	// Command is one shell command (/bin/sh -c in the container).
	Command string `json:"command"`
	// TimeoutSec bounds it (0: 10 minutes; at most 3600).
	TimeoutSec int `json:"timeoutSec,omitempty"`
}

// MaxCommand bounds an exec's command.
const MaxCommand = 64 << 10

// ExecResult is the answer of an exec: what the command did (the
// workflow contract's result, as the API passes it on).
type ExecResult = flows.SandboxExecResult

// TouchRequest is the body of POST /sandboxes/:id/touch.
type TouchRequest struct {
	// TTL in seconds from now (0: the session's own ttl).
	TTL int64 `json:"ttl,omitempty"`
}

// CloseRequest is the body of POST /sandboxes/:id/close.
type CloseRequest struct {
	// Snapshot false skips a world session's hibernation.
	Snapshot *bool `json:"snapshot,omitempty"`
}

// SnapshotRequest is the body of POST /sandboxes/:id/snapshot (none is
// needed).
type SnapshotRequest struct{}

// SnapshotResult is the answer of a snapshot: the version published (or
// why none was) and what retention pruned.
type SnapshotResult = flows.SnapshotResult

// TaskRequest is the body of POST /sandboxes/:id/tasks: an ad-hoc prompt.
type TaskRequest struct {
	// Prompt is the case's task, handed to the harness in SVC_CASE_FILE.
	Prompt string `json:"prompt"`
	// Expected, when given, is the reference answer the answer grader
	// compares the harness's final answer (its stdout) to.
	Expected any `json:"expected,omitempty"`
	// TimeoutSec bounds the task (0: the harness's, else an hour).
	TimeoutSec int `json:"timeoutSec,omitempty"`
}

// MaxPrompt bounds a task's prompt.
const MaxPrompt = 64 << 10

// TaskTrace is what GET /sandboxes/:id/tasks/:taskId/trace answers: the
// task's TraceEvents from index Since, the index to ask from next, and
// Done once the task has settled (its trace sealed: nothing more comes).
type TaskTrace struct {
	TaskID string            `json:"taskId"`
	Status eval.Status       `json:"status"`
	Since  int64             `json:"since"`
	Next   int64             `json:"next"`
	Events []json.RawMessage `json:"events"`
	Done   bool              `json:"done"`
}

// World is one world of a workspace with its versions, oldest first (GET
// /worlds lists only the latest).
type World struct {
	ID       string         `json:"id"`
	Latest   *WorldVersion  `json:"latest,omitempty"`
	Versions []WorldVersion `json:"versions"`
}

// WorldVersion is one version as the API shows it: the world-relative
// pinned reference (world:v<n>@sha256:...), without the store's address.
type WorldVersion struct {
	Version     int       `json:"version"`
	Tag         string    `json:"tag"`
	Digest      string    `json:"digest"`
	Ref         string    `json:"ref"`
	PublishedBy string    `json:"publishedBy,omitempty"`
	Created     time.Time `json:"created,omitzero"`
}

// Imported is an image POST /images pushed: Ref is what a session names
// as its image (repo:tag@sha256:..., relative to the workspace's
// namespace of the store).
type Imported struct {
	Ref    string `json:"ref"`
	Digest string `json:"digest"`
	As     string `json:"as"`
}
