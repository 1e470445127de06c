// Package approvalwire is the approval routes' wire format (docs/approvals.md;
// issue 33): the bodies the API reads on POST /approvals/:id/decide and
// PUT /approval-policies, and the fields of the answers of /approvals and
// /approval-policies that the API client (internal/client) and the CLI
// read. The approvals service (internal/service/approvals) aliases the
// decide body; the records it answers are the store's (store.Approval,
// store.ApprovalPolicies), whose JSON these views read. It is pure, so the
// client and the CLI speak it without linking a service or the store; a
// --json caller gets the service's body whole.
package approvalwire

import (
	"encoding/json"
	"time"
)

// Decisions a person makes (POST /approvals/:id/decide).
const (
	DecisionApprove = "approve"
	DecisionDeny    = "deny"
)

// The states of an approval (GET /approvals?status=).
const (
	StatusPending  = "pending"
	StatusApproved = "approved"
	StatusDenied   = "denied"
	StatusExpired  = "expired"
)

// Statuses lists the states, in the order a usage line names them.
var Statuses = []string{StatusPending, StatusApproved, StatusDenied, StatusExpired}

// DecideRequest is the body of POST /approvals/:id/decide.
type DecideRequest struct {
	Decision string `json:"decision"`
	Reason   string `json:"reason,omitempty"`
}

// Agent is the agent whose call parked.
type Agent struct {
	ID           string `json:"id"`
	Name         string `json:"name,omitempty"`
	Conversation string `json:"conversation,omitempty"`
}

// Origin is who asked: the member (actor), the door (mcp or api), the agent.
type Origin struct {
	Actor          string `json:"actor"`
	Source         string `json:"source"`
	AgentID        string `json:"agentId,omitempty"`
	AgentName      string `json:"agentName,omitempty"`
	ConversationID string `json:"conversationId,omitempty"`
}

// Result is the parked call's answer once it ran.
type Result struct {
	Status      int             `json:"status"`
	ContentType string          `json:"contentType,omitempty"`
	Body        json.RawMessage `json:"body,omitempty"`
}

// Approval is an approval as GET /approvals and GET /approvals/:id answer
// it (store.Approval's JSON, less what the routes never show).
type Approval struct {
	ID        string          `json:"id"`
	Status    string          `json:"status"`
	Member    string          `json:"member"`
	Team      string          `json:"team,omitempty"`
	Agent     Agent           `json:"agent"`
	Origin    Origin          `json:"origin"`
	Tool      string          `json:"tool,omitempty"`
	Method    string          `json:"method,omitempty"`
	Path      string          `json:"path,omitempty"`
	Body      json.RawMessage `json:"body,omitempty"`
	Source    string          `json:"source"`
	RunID     string          `json:"runId,omitempty"`
	Policy    string          `json:"policy,omitempty"`
	OnExpiry  string          `json:"onExpiry,omitempty"`
	Reason    string          `json:"reason,omitempty"`
	DecidedBy string          `json:"decidedBy,omitempty"`
	DecidedAt *time.Time      `json:"decidedAt,omitempty"`
	ExpiresAt time.Time       `json:"expiresAt"`
	CreatedAt time.Time       `json:"createdAt"`
	Delivered bool            `json:"delivered"`
	Resumed   bool            `json:"resumed"`
	Result    *Result         `json:"result,omitempty"`
	Halted    bool            `json:"halted,omitempty"`
}

// Policy is one rule of a workspace's approval policies.
type Policy struct {
	Name     string   `json:"name,omitempty"`
	Tools    []string `json:"tools"`
	Team     string   `json:"team,omitempty"`
	Expiry   string   `json:"expiry,omitempty"`
	OnExpiry string   `json:"onExpiry,omitempty"`
}

// Policies is the answer of GET and PUT /approval-policies.
type Policies struct {
	Policies     []Policy  `json:"policies"`
	DefaultOff   bool      `json:"defaultOff"`
	DefaultTools []string  `json:"defaultTools"`
	UpdatedBy    string    `json:"updatedBy,omitempty"`
	UpdatedAt    time.Time `json:"updatedAt"`
}
