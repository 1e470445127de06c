// Package approvals is the use case behind /approvals and the parking of
// agents' calls (spec §4.9, §3; issue 33): a workspace's policies say which
// tools an agent's call parks on; a parked call is an approval that a
// person settles exactly once (approve or deny), or that expires (never
// recorded as a person's denial); an approved call runs once, by the
// waiting caller (delivered) or by the ApprovalWorkflow when the caller is
// gone (resumed). The running itself is the API's (it dispatches the
// stored request through its route table); this package keeps the record,
// the claims that make the run happen once, the events and the
// notification.
package approvals

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"time"

	"svc/internal/domain/eval"
	"svc/internal/domain/flows"
	"svc/internal/platform/derrors"
	"svc/store"
)

// Store is what the service uses of the store.
type Store interface {
	store.Approvals
	store.Events
	store.Notifications
	Transact(ctx context.Context, fn func(tx store.Tx) error) error
}

// Orchestrator starts and signals approval workflows; nil means no
// orchestrator: expiry is then applied when the approval is read.
type Orchestrator interface {
	// StartApproval starts ApprovalWorkflow (id flows.ApprovalWorkflowID);
	// an already started one is not an error.
	StartApproval(ctx context.Context, in flows.ApprovalInput) error
	// SignalApproval sends the decide signal; a workflow that has ended
	// is not an error.
	SignalApproval(ctx context.Context, workspace, id string, d flows.ApprovalDecision) error
}

// Options build a Service.
type Options struct {
	Store        Store
	Orchestrator Orchestrator
	Now          func() time.Time
	Logger       *slog.Logger
	// Default turns on the built-in rule (DefaultTools) for workspaces
	// that set no policy; the binary's wiring turns it on.
	Default bool
}

// Service is the approvals use case.
type Service struct {
	o Options
}

// New returns a Service over o.
func New(o Options) *Service {
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	return &Service{o: o}
}

// DefaultExpiry is how long an approval waits for a person when its
// policy names no expiry.
const DefaultExpiry = time.Hour

// Sources of a park (store.Approval.Source).
const (
	SourceRoute  = "route"            // an agent's call held by the parking middleware
	SourceEvents = "agent-run-events" // an external runtime's awaiting_approval report
)

// Events the approvals emit (spec §6's approval.* and agent.run.*).
const (
	EventRequested        = "approval.requested"
	EventApproved         = "approval.approved"
	EventDenied           = "approval.denied"
	EventExpired          = "approval.expired"
	EventExecuted         = "approval.executed"
	EventAwaitingApproval = "agent.run.awaiting_approval"
	EventHalted           = "agent.run.halted"
)

// ParkRequest is an action to park: who asks (member, agent), what (the
// route's tool, method, path and body as sent, or an external runtime's
// action), and how long it may wait.
type ParkRequest struct {
	// ID is the approval's id; empty mints one. An external park derives
	// it from its report so a repeated report parks once.
	ID        string
	Workspace string
	Member    string // the member whose credential the agent used; the notification's recipient
	Agent     store.ApprovalAgent
	Origin    store.ApprovalOrigin
	Team      string
	Source    string // SourceRoute or SourceEvents
	Tool      string
	Method    string
	Path      string
	Header    map[string]string
	Body      json.RawMessage
	Principal json.RawMessage // the caller, to run the call as once approved
	// Lane and Session decide the notification's id (eval.ApprovalNoticeID):
	// the chat lane's session or the discussion lane's comment; empty
	// Session means one notification per approval.
	Lane    string
	Session string
	// Link fields for the discussion lane.
	ResourceType, ResourceID string
	RunID                    string
	Policy                   string // the rule that parked it
	Expiry                   time.Duration
	OnExpiry                 string // store.ExpiryDeny (default) or store.ExpiryHalt
	// LiveFor is how long the caller waits for the decision (0: not at all).
	LiveFor time.Duration
	Action  string // what the agent wants to do, for the notification's title
}

// Park records r as a pending approval once per id, with its events
// (approval.requested, agent.run.awaiting_approval, causedBy the agent)
// and the member's agent_approval_requested notification, all in one
// transaction, then starts its workflow. created is false when the id was
// parked before (nothing is emitted again).
func (s *Service) Park(ctx context.Context, r ParkRequest) (a store.Approval, created bool, err error) {
	if r.Workspace == "" || r.Member == "" {
		return store.Approval{}, false, derrors.Invalidf("an approval needs a workspace and a member")
	}
	now := s.o.Now().UTC()
	if r.ID == "" {
		r.ID = eval.NewID("ap")
	}
	if r.Expiry <= 0 {
		r.Expiry = DefaultExpiry
	}
	if r.OnExpiry == "" {
		r.OnExpiry = store.ExpiryDeny
	}
	if r.Lane == "" {
		r.Lane = eval.LaneChat
	}
	session := r.Session
	if session == "" {
		session = r.ID
	}
	notice := eval.ApprovalNotice(eval.ApprovalRequest{Recipient: r.Member, Lane: r.Lane, SessionID: session, CommentID: session,
		ConversationID: r.Agent.Conversation, ResourceType: r.ResourceType, ResourceID: r.ResourceID,
		AgentName: agentName(r.Agent), Action: r.Action})
	a = store.Approval{Workspace: r.Workspace, ID: r.ID, Status: store.ApprovalPending, Member: r.Member, Team: r.Team,
		Agent: r.Agent, Origin: r.Origin, Tool: r.Tool, Method: r.Method, Path: r.Path, Header: r.Header, Body: r.Body,
		Principal: r.Principal, Source: r.Source, Session: r.Session, RunID: r.RunID, Policy: r.Policy, OnExpiry: r.OnExpiry,
		Notification: notice.ID, CreatedAt: now, ExpiresAt: now.Add(r.Expiry)}
	if r.LiveFor > 0 {
		until := now.Add(r.LiveFor)
		a.LiveUntil = &until
	}
	err = s.o.Store.Transact(ctx, func(tx store.Tx) error {
		var err error
		a, created, err = tx.CreateApproval(ctx, a)
		if err != nil || !created {
			return err
		}
		data := eventData(a)
		for _, typ := range []string{EventRequested, EventAwaitingApproval} {
			if _, err := tx.AppendEvent(ctx, store.Event{ID: typ + ":" + a.ID, Workspace: a.Workspace, Type: typ,
				Subject: "approval:" + a.ID, Actor: a.Member, CausedBy: causedBy(a), Data: data, CreatedAt: now}); err != nil {
				return err
			}
		}
		row := store.Notification{ID: notice.ID, Workspace: a.Workspace, Recipient: notice.Recipient, Kind: notice.Kind,
			Title: notice.Title, Body: notice.Body, CreatedAt: now}
		if notice.Link != (eval.NotificationLink{}) {
			row.Link = notice.Link.JSON()
		}
		_, _, err = tx.AddNotification(ctx, row)
		return err
	})
	if err != nil {
		return store.Approval{}, false, err
	}
	if s.o.Orchestrator != nil {
		if err := s.o.Orchestrator.StartApproval(ctx, flows.ApprovalInput{Workspace: a.Workspace, ID: a.ID, ExpiresAt: a.ExpiresAt}); err != nil {
			// The record stands; its expiry is applied when it is read.
			s.o.Logger.WarnContext(ctx, "starting the approval's workflow", "workspace", a.Workspace, "approval", a.ID, "err", err)
		}
	}
	return a, created, nil
}

func agentName(a store.ApprovalAgent) string {
	if a.Name != "" {
		return a.Name
	}
	return a.ID
}

// causedBy is the events' causedBy key of an approval's agent (spec §6).
func causedBy(a store.Approval) string {
	if a.Agent.ID == "" {
		return ""
	}
	return "agent:" + a.Agent.ID + ":" + a.Agent.Conversation
}

// eventData is what the approval events carry: the approval without the
// body and the principal.
func eventData(a store.Approval) json.RawMessage {
	b, _ := json.Marshal(map[string]any{"approvalId": a.ID, "status": a.Status, "tool": a.Tool, "method": a.Method,
		"path": a.Path, "agent": a.Agent, "member": a.Member, "decidedBy": a.DecidedBy, "runId": a.RunID})
	return b
}

// errNotPending is the refusal of a second decision.
func errNotPending(a store.Approval) error {
	msg := fmt.Sprintf("approval %s is already %s", a.ID, a.Status)
	if a.DecidedBy != "" && a.DecidedAt != nil {
		msg += fmt.Sprintf(" (by %s at %s)", a.DecidedBy, a.DecidedAt.UTC().Format(time.RFC3339))
	} else if a.Status == store.ApprovalExpired {
		msg += fmt.Sprintf(" (at %s, nobody decided)", a.ExpiresAt.UTC().Format(time.RFC3339))
	}
	return derrors.Refusef(derrors.ErrConflict, map[string]any{"approval": a.ID, "status": a.Status}, "%s", msg)
}
