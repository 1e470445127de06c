package eval

import (
	"errors"
	"time"
)

// Lifetimes of a run.
const LifetimeSession = "session"

// Why a session ended (Session.ClosedReason).
const (
	ClosedByRequest = "closed"   // POST /sandboxes/:id/close
	ClosedExpired   = "expired"  // its hard expiry passed
	ClosedOrphaned  = "orphaned" // a restart found its container gone
)

// Where a session runs (RunPlacement.Where): the deployment's own local
// runtime, or a workspace runtime named by the run's Runtime.
const (
	WhereLocal   = "local"
	WhereRuntime = "runtime"
)

// Session is a sandbox session's row fields (spec §2.9), under a run of
// kind sandbox and lifetime session.
type Session struct {
	// ExpiresAt is the hard expiry: the session's workflow closes it then
	// (a durable timer, so no restart loses it). Touch moves it later,
	// never earlier.
	ExpiresAt time.Time `json:"expiresAt"`
	// TTLSeconds is the ttl the session was created with: what a touch
	// without a ttl extends by.
	TTLSeconds int64 `json:"ttlSeconds"`
	// Busy is true while a playground task runs in it; Task is that task's
	// run id, and Tasks the summaries of its playground tasks, oldest
	// first (the last MaxSessionTasks).
	Busy  bool          `json:"busy"`
	Task  string        `json:"task,omitempty"`
	Tasks []SessionTask `json:"tasks,omitempty"`
	// ClosedReason says why it ended: closed, expired or orphaned; empty
	// while it runs.
	ClosedReason string     `json:"closedReason,omitempty"`
	ClosedAt     *time.Time `json:"closedAt,omitempty"`
	// World is the world it started from and hibernates into.
	World *SessionWorld `json:"world,omitempty"`
	// Capability is the adopted environment capability (a world version,
	// read only) the session started from, when it named one.
	Capability *SessionWorld `json:"capability,omitempty"`
	// Hibernate: close and expiry snapshot a world session first.
	Hibernate bool `json:"hibernate"`
	// Snapshots are the world versions it published, oldest first.
	Snapshots []SessionSnapshot `json:"snapshots"`
	// Repo is the repository cloned into it at create.
	Repo *SessionRepo `json:"repo,omitempty"`
	// Agent is the agent driving it, when one declared itself.
	Agent *Agent `json:"agent,omitempty"`
	// ComputeID names its container on its host.
	ComputeID string `json:"computeId,omitempty"`
	// Image is the image as asked (a store reference or an OCI layout
	// path); ImageDigest the manifest digest it started from.
	Image       string `json:"image"`
	ImageDigest string `json:"imageDigest,omitempty"`
	// Host is the worker host holding the container, and HostQueue the
	// task queue of that host's sandbox activities.
	Host      string `json:"host,omitempty"`
	HostQueue string `json:"hostQueue,omitempty"`
}

// SessionTask summarises one playground task of a session (its child run).
type SessionTask struct {
	ID         string     `json:"id"`
	Status     Status     `json:"status"`
	Pass       *bool      `json:"pass,omitempty"`
	CreatedAt  time.Time  `json:"createdAt"`
	FinishedAt *time.Time `json:"finishedAt,omitempty"`
}

// MaxSessionTasks bounds Session.Tasks: the oldest summaries are dropped.
const MaxSessionTasks = 50

// ClassInteractive is the class of a playground task's run.
const ClassInteractive = "interactive"

// SessionWorld names a world: its id (a repository of the image store)
// and, for a rollback, the version to start from (0: the latest).
type SessionWorld struct {
	ID      string `json:"id"`
	Version int    `json:"version,omitempty"`
}

// SessionSnapshot is one world version a session published.
type SessionSnapshot struct {
	Version int       `json:"version"`
	Ref     string    `json:"ref"`
	At      time.Time `json:"at"`
	Reason  string    `json:"reason,omitempty"`
}

// SessionRepo is a repository cloned into a session.
type SessionRepo struct {
	Git string `json:"git"`
	Ref string `json:"ref,omitempty"`
	Dir string `json:"dir,omitempty"`
}

// Agent is an agent that declared itself: its id, display name and
// conversation (docs/agents.md). It is not a privilege: what an agent does
// with a member's credential still belongs to that member.
type Agent struct {
	ID           string `json:"id"`
	Name         string `json:"name,omitempty"`
	Conversation string `json:"conversation,omitempty"`
}

// CausedBy is the agent's causedBy key (spec §6): agent:<id>:<conversation>.
func (a *Agent) CausedBy() string {
	if a == nil || a.ID == "" {
		return ""
	}
	return "agent:" + a.ID + ":" + a.Conversation
}

// RunPlacement says where a run's compute is (placement.where).
type RunPlacement struct {
	Where string `json:"where"`
}

// IsSession reports whether r is a sandbox session.
func (r *Run) IsSession() bool {
	return r.Kind == KindSandbox && r.Lifetime == LifetimeSession && r.Session != nil
}

// SessionEventKinds are the kinds of the events a session's trajectory
// holds besides tool calls.
const (
	// EventSessionExec is the name of the tool_call event of one exec.
	EventSessionExec = "exec"
	// EventSnapshotFailed is a hibernation that failed at teardown.
	EventSnapshotFailed = "session.snapshot_failed"
	// EventSessionClosed ends the trajectory.
	EventSessionClosed = "session.closed"
)

// SessionEventStream is the run-log stream a live session's trajectory
// events are appended to (one TraceEvent as JSON per chunk); teardown
// seals them as the session's trajectory.
const SessionEventStream = "event"

// ErrSessionLost is an exec or a teardown that found the session's
// container gone: the session is settled orphaned.
var ErrSessionLost = errors.New("the session's container is gone (its host restarted or lost it); the session is being settled orphaned")
