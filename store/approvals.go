package store

import (
	"context"
	"encoding/json"
	"time"
)

// The states of an approval (spec §3: parked, then settled once).
const (
	ApprovalPending  = "pending"  // parked, waiting for a person
	ApprovalApproved = "approved" // a person approved it
	ApprovalDenied   = "denied"   // a person denied it
	ApprovalExpired  = "expired"  // nobody decided before ExpiresAt; never a person's denial
)

// The two meanings of an approval's expiry (ApprovalPolicy.OnExpiry).
const (
	ExpiryDeny = "deny" // the parked call is refused, nothing runs
	ExpiryHalt = "halt" // the same, and the agent's run (its conversation) is halted
)

// Who ran an approved call (Approval.Executor).
const (
	ExecutorLive     = "live"     // the waiting caller's own request (delivered)
	ExecutorWorkflow = "workflow" // the ApprovalWorkflow, the caller gone (resumed)
)

// ApprovalAgent is the agent whose call parked: its declared id, name and
// conversation.
type ApprovalAgent struct {
	ID           string `json:"id"`
	Name         string `json:"name,omitempty"`
	Conversation string `json:"conversation,omitempty"`
}

// ApprovalOrigin is who asked, in the words of a record's origin (spec §2):
// the member (actor), the door (source: mcp or api) and the agent.
type ApprovalOrigin struct {
	Actor          string `json:"actor"`
	Source         string `json:"source"`
	AgentID        string `json:"agentId,omitempty"`
	AgentName      string `json:"agentName,omitempty"`
	ConversationID string `json:"conversationId,omitempty"`
}

// ApprovalResult is the answer of the parked call once it ran: the route's
// status, content type and body, as the caller gets them.
type ApprovalResult struct {
	Status      int             `json:"status"`
	ContentType string          `json:"contentType,omitempty"`
	Body        json.RawMessage `json:"body,omitempty"`
}

// Approval is one parked agent action (spec §4.9): the call as the agent
// sent it, who asked, the policy that parked it, and how it settled.
type Approval struct {
	Workspace string         `json:"workspace"`
	ID        string         `json:"id"`
	Status    string         `json:"status"`
	Member    string         `json:"member"` // the member whose credential the agent used
	Team      string         `json:"team,omitempty"`
	Agent     ApprovalAgent  `json:"agent"`
	Origin    ApprovalOrigin `json:"origin"`
	// Tool is the MCP tool name of the route (the route table's name),
	// Method and Path (with its query) the request as sent; Body is the
	// body exactly as the agent sent it.
	Tool   string            `json:"tool,omitempty"`
	Method string            `json:"method,omitempty"`
	Path   string            `json:"path,omitempty"`
	Header map[string]string `json:"header,omitempty"`
	Body   json.RawMessage   `json:"body,omitempty"`
	// Principal is the caller as the API resolved it, re-used when the
	// call runs after the caller is gone; never shown.
	Principal json.RawMessage `json:"principal,omitempty"`
	// Source is what parked it: "route" (a call held by the parking
	// middleware) or "agent-run-events" (an external runtime's report).
	Source string `json:"source"`
	// Session is the lane key of an external park (chat session or
	// comment); the notification id derives from it.
	Session  string `json:"session,omitempty"`
	RunID    string `json:"runId,omitempty"`
	Policy   string `json:"policy,omitempty"`   // the rule that parked it, as written
	OnExpiry string `json:"onExpiry,omitempty"` // deny or halt
	// Notification is the id of the agent_approval_requested row.
	Notification string     `json:"notification,omitempty"`
	Reason       string     `json:"reason,omitempty"`
	DecidedBy    string     `json:"decidedBy,omitempty"`
	DecidedAt    *time.Time `json:"decidedAt,omitempty"`
	ExpiresAt    time.Time  `json:"expiresAt"`
	CreatedAt    time.Time  `json:"createdAt"`
	// LiveUntil is when the caller's request stops waiting for the
	// decision; until then an approved call is the waiting request's to
	// run, not the workflow's.
	LiveUntil *time.Time `json:"liveUntil,omitempty"`
	// Delivered: the waiting caller got the decision; Resumed: the caller
	// was gone and the workflow ran the call.
	Delivered bool `json:"delivered"`
	Resumed   bool `json:"resumed"`
	// Executor claimed the run of an approved call at ClaimedAt; the run's
	// answer is Result, stored with ExecutedAt in the same write.
	Executor   string          `json:"executor,omitempty"`
	ClaimedAt  *time.Time      `json:"claimedAt,omitempty"`
	ExecutedAt *time.Time      `json:"executedAt,omitempty"`
	Result     *ApprovalResult `json:"result,omitempty"`
	// Halted is set on an expired approval whose policy halts the run.
	Halted bool `json:"halted,omitempty"`
}

// ApprovalFilter selects approvals of one workspace.
type ApprovalFilter struct {
	Workspace    string
	Status       string // empty means any
	AgentID      string // empty means any
	Conversation string // with AgentID: that conversation only
	Halted       bool   // only halted ones
	Limit        int    // 0 means 100
}

// ApprovalPolicy is one rule of a workspace's approval policies: an agent's
// call whose tool name matches one of Tools (globs, path.Match syntax)
// parks, for Team's assets only when Team is set.
type ApprovalPolicy struct {
	Name     string   `json:"name,omitempty"`
	Tools    []string `json:"tools"`
	Team     string   `json:"team,omitempty"`
	Expiry   string   `json:"expiry,omitempty"`   // a Go duration; empty means the default (1h)
	OnExpiry string   `json:"onExpiry,omitempty"` // deny (default) or halt
}

// ApprovalPolicies is a workspace's setting. DefaultOff turns off the
// built-in rule that parks destructive calls when Policies is empty.
type ApprovalPolicies struct {
	Workspace  string           `json:"-"`
	Policies   []ApprovalPolicy `json:"policies"`
	DefaultOff bool             `json:"defaultOff,omitempty"`
	UpdatedBy  string           `json:"updatedBy,omitempty"`
	UpdatedAt  time.Time        `json:"updatedAt"`
}

// Approvals stores parked agent actions and the policies that park them.
type Approvals interface {
	// CreateApproval inserts a once per id: when the id exists it returns
	// the stored approval and false. CreatedAt is set when zero.
	CreateApproval(ctx context.Context, a Approval) (stored Approval, created bool, err error)
	// GetApproval returns one approval of workspace, or ErrNotFound.
	GetApproval(ctx context.Context, workspace, id string) (Approval, error)
	// ListApprovals returns the approvals f selects, newest first.
	ListApprovals(ctx context.Context, f ApprovalFilter) ([]Approval, error)
	// UpdateApproval reads the approval, calls change on it and writes
	// what change left, atomically: a concurrent update in between fails
	// the write (ErrConflict) rather than being lost. An error from change
	// aborts with nothing written, and is returned with the approval as it
	// was read.
	UpdateApproval(ctx context.Context, workspace, id string, change func(*Approval) error) (Approval, error)
	// GetApprovalPolicies returns a workspace's policies, or ErrNotFound
	// when none were ever set.
	GetApprovalPolicies(ctx context.Context, workspace string) (ApprovalPolicies, error)
	// PutApprovalPolicies replaces a workspace's policies.
	PutApprovalPolicies(ctx context.Context, p ApprovalPolicies) (ApprovalPolicies, error)
}
