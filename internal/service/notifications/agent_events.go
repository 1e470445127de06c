package notifications

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strings"
	"time"

	"svc/internal/domain/eval"
	"svc/internal/platform/derrors"
	"svc/internal/service/approvals"
	"svc/store"
)

// AgentRunEventKinds are the kinds POST /internal/agent-run-events takes.
// awaiting_approval is the spec's (§4.9); others are refused by name so a
// runtime learns what is supported.
var AgentRunEventKinds = []string{"awaiting_approval"}

// AgentRunEvent is the body of POST /internal/agent-run-events: one event
// of an agent run in an external agent runtime (spec §4.9). The operator
// token authenticates the runtime; the workspace and member say whose run
// it is (the member is the run's creator, the notification's recipient).
type AgentRunEvent struct {
	Workspace string     `json:"workspace"`
	RunID     string     `json:"runId"`
	Member    string     `json:"member"`
	Agent     eval.Agent `json:"agent"`
	Kind      string     `json:"kind"`
	// Lane is chat (a conversation with the agent; SessionID keys its
	// notification) or discussion (a comment thread on a resource;
	// CommentID keys it, ResourceType and ResourceID link it).
	Lane         string `json:"lane,omitempty"`
	SessionID    string `json:"sessionId,omitempty"`
	CommentID    string `json:"commentId,omitempty"`
	ResourceType string `json:"resourceType,omitempty"`
	ResourceID   string `json:"resourceId,omitempty"`
	// Payload is the kind's detail; for awaiting_approval, the action.
	Payload AwaitingApproval `json:"payload"`
}

// AwaitingApproval is the payload of kind awaiting_approval: the action the
// agent wants to take, as the agent sent it.
type AwaitingApproval struct {
	// ActionID is the runtime's id of the parked action: a repeated report
	// of it parks once. Empty derives one from the tool and arguments.
	ActionID  string          `json:"actionId,omitempty"`
	Tool      string          `json:"tool"`
	Arguments json.RawMessage `json:"arguments,omitempty"`
	Summary   string          `json:"summary,omitempty"` // what the agent wants to do, in words
	// ExpiresInSeconds is how long the approval waits (the approvals'
	// default when 0); OnExpiry is deny (default) or halt.
	ExpiresInSeconds int    `json:"expiresInSeconds,omitempty"`
	OnExpiry         string `json:"onExpiry,omitempty"`
}

// maxExpiry bounds how long a reported approval may wait.
const maxExpiry = 7 * 24 * time.Hour

// Validate checks the body.
func (e *AgentRunEvent) Validate() error {
	switch {
	case e.Workspace == "":
		return derrors.Invalidf("workspace is required")
	case e.RunID == "":
		return derrors.Invalidf("runId is required (the agent run the event is about)")
	case e.Member == "":
		return derrors.Invalidf("member is required (the run's creator, who is notified)")
	case e.Kind != "awaiting_approval":
		return derrors.Invalidf("kind %q: the kinds taken are %v", e.Kind, AgentRunEventKinds)
	}
	for name, v := range map[string]string{"workspace": e.Workspace, "runId": e.RunID, "member": e.Member, "agent.id": e.Agent.ID,
		"sessionId": e.SessionID, "commentId": e.CommentID, "resourceId": e.ResourceID, "payload.actionId": e.Payload.ActionID} {
		if len(v) > 200 {
			return derrors.Invalidf("%s is %d bytes; at most 200", name, len(v))
		}
	}
	switch e.Lane {
	case "", eval.LaneChat:
		if e.SessionID == "" && e.Agent.Conversation == "" {
			return derrors.Invalidf("the chat lane needs sessionId (or agent.conversation): the notification is one per session")
		}
	case eval.LaneDiscussion:
		if e.CommentID == "" || e.ResourceType == "" || e.ResourceID == "" {
			return derrors.Invalidf("the discussion lane needs commentId, resourceType and resourceId: the notification is one per comment, linked to the resource")
		}
	default:
		return derrors.Invalidf("lane %q: want chat or discussion", e.Lane)
	}
	p := e.Payload
	if p.Tool == "" {
		return derrors.Invalidf("payload.tool is required (what the agent wants to call)")
	}
	if len(p.Arguments) > 0 && !json.Valid(p.Arguments) {
		return derrors.Invalidf("payload.arguments is not JSON")
	}
	if p.ExpiresInSeconds < 0 || time.Duration(p.ExpiresInSeconds)*time.Second > maxExpiry {
		return derrors.Invalidf("payload.expiresInSeconds must be between 0 and %d", int(maxExpiry/time.Second))
	}
	if p.OnExpiry != "" && p.OnExpiry != store.ExpiryDeny && p.OnExpiry != store.ExpiryHalt {
		return derrors.Invalidf("payload.onExpiry %q: want deny or halt", p.OnExpiry)
	}
	return nil
}

// AgentRunEventResult is the answer: the approval the event parked and
// whether this report created it (false for a repeated report).
type AgentRunEventResult struct {
	Approval     store.Approval `json:"approval"`
	Created      bool           `json:"created"`
	Notification string         `json:"notificationId"`
}

// AgentRunEvent takes one event of an external agent run. Kind
// awaiting_approval parks the action as an approval: approval.requested
// and agent.run.awaiting_approval are emitted, and the run's creator gets
// the agent_approval_requested notification, all in one transaction and
// once per action (the approval id derives from the report); the
// notification's id is per session (chat) or per comment (discussion), so
// a second action in a session still waiting pings nobody again.
func (s *Service) AgentRunEvent(ctx context.Context, e AgentRunEvent) (AgentRunEventResult, error) {
	if err := e.Validate(); err != nil {
		return AgentRunEventResult{}, err
	}
	if s.o.Approvals == nil {
		return AgentRunEventResult{}, derrors.Refusef(derrors.ErrUnavailable, nil, "approvals are not wired in this server")
	}
	lane, session := eval.LaneChat, e.SessionID
	if session == "" {
		session = e.Agent.Conversation
	}
	if e.Lane == eval.LaneDiscussion {
		lane, session = eval.LaneDiscussion, e.CommentID
	}
	action := e.Payload.ActionID
	if action == "" {
		h := sha256.New()
		h.Write([]byte(e.Payload.Tool))
		h.Write([]byte{0})
		h.Write(e.Payload.Arguments)
		action = hex.EncodeToString(h.Sum(nil))[:24]
	}
	id := approvalID(e.Workspace, e.RunID, action)
	summary := e.Payload.Summary
	if summary == "" {
		summary = "call " + e.Payload.Tool
	}
	a, created, err := s.o.Approvals.Park(ctx, approvals.ParkRequest{
		ID: id, Workspace: e.Workspace, Member: e.Member,
		Agent:  store.ApprovalAgent{ID: e.Agent.ID, Name: e.Agent.Name, Conversation: e.Agent.Conversation},
		Origin: store.ApprovalOrigin{Actor: e.Member, Source: "agent-runtime"},
		Source: approvals.SourceEvents, Tool: e.Payload.Tool, Body: e.Payload.Arguments,
		Lane: lane, Session: session, ResourceType: e.ResourceType, ResourceID: e.ResourceID, RunID: e.RunID,
		Expiry: time.Duration(e.Payload.ExpiresInSeconds) * time.Second, OnExpiry: e.Payload.OnExpiry, Action: summary,
	})
	if err != nil {
		return AgentRunEventResult{}, err
	}
	return AgentRunEventResult{Approval: a, Created: created, Notification: a.Notification}, nil
}

// approvalID derives an external park's approval id from its report, so a
// repeated report parks once.
func approvalID(workspace, runID, action string) string {
	h := sha256.Sum256([]byte(workspace + "\x00" + runID + "\x00" + action))
	return "ap_x" + hex.EncodeToString(h[:12])
}

// ApprovalClearRequest is the body of POST
// /internal/notifications/approval-clear: the notification named by its
// id, or by its lane key (sessionId for chat, commentId for discussion).
type ApprovalClearRequest struct {
	Workspace      string `json:"workspace"`
	NotificationID string `json:"notificationId,omitempty"`
	Lane           string `json:"lane,omitempty"`
	SessionID      string `json:"sessionId,omitempty"`
	CommentID      string `json:"commentId,omitempty"`
}

// ApprovalClear deletes (never marks read) an agent_approval_requested
// notification; an absent one is not an error (the call is idempotent). It
// answers the id it cleared.
func (s *Service) ApprovalClear(ctx context.Context, r ApprovalClearRequest) (string, error) {
	if r.Workspace == "" {
		return "", derrors.Invalidf("workspace is required")
	}
	id := r.NotificationID
	switch {
	case id != "":
		if r.SessionID != "" || r.CommentID != "" {
			return "", derrors.Invalidf("send notificationId, or the lane's sessionId or commentId, not both")
		}
		if !strings.HasPrefix(id, eval.NotifyAgentApprovalRequested+":") {
			return "", derrors.Invalidf("notification %q is not an agent_approval_requested notification; only those are cleared here", id)
		}
	case r.Lane == eval.LaneDiscussion || (r.Lane == "" && r.CommentID != ""):
		if r.CommentID == "" {
			return "", derrors.Invalidf("the discussion lane needs commentId")
		}
		id = eval.ApprovalNoticeID(eval.LaneDiscussion, r.CommentID)
	case r.Lane == "" || r.Lane == eval.LaneChat:
		if r.SessionID == "" {
			return "", derrors.Invalidf("send notificationId, sessionId (chat lane) or commentId (discussion lane)")
		}
		id = eval.ApprovalNoticeID(eval.LaneChat, r.SessionID)
	default:
		return "", derrors.Invalidf("lane %q: want chat or discussion", r.Lane)
	}
	err := s.o.Store.Transact(ctx, func(tx store.Tx) error {
		return ClearApprovalNotification(ctx, tx, r.Workspace, id)
	})
	return id, err
}
