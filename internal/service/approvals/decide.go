package approvals

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"svc/auth"
	"svc/internal/domain/approvalwire"
	"svc/internal/domain/flows"
	"svc/internal/platform/derrors"
	"svc/store"
)

// Decisions a person makes (POST /approvals/:id/decide).
const (
	DecisionApprove = approvalwire.DecisionApprove
	DecisionDeny    = approvalwire.DecisionDeny
)

// DecideRequest is the body of POST /approvals/:id/decide
// (approvalwire.DecideRequest, the wire format the client shares).
type DecideRequest = approvalwire.DecideRequest

// maxReason bounds a decision's reason.
const maxReason = 2000

// List returns the workspace's approvals, newest first, of one status
// when status is set.
func (s *Service) List(ctx context.Context, p auth.Principal, status string) ([]store.Approval, error) {
	switch status {
	case "", store.ApprovalPending, store.ApprovalApproved, store.ApprovalDenied, store.ApprovalExpired:
	default:
		return nil, derrors.Invalidf("status %q: want pending, approved, denied or expired", status)
	}
	list, err := s.o.Store.ListApprovals(ctx, store.ApprovalFilter{Workspace: p.Workspace, Status: status})
	if err != nil {
		return nil, err
	}
	for i := range list {
		list[i] = s.lazyExpire(ctx, list[i])
	}
	if status != "" {
		out := list[:0]
		for _, a := range list {
			if a.Status == status {
				out = append(out, a)
			}
		}
		list = out
	}
	return list, nil
}

// Get returns one approval of the caller's workspace.
func (s *Service) Get(ctx context.Context, p auth.Principal, id string) (store.Approval, error) {
	return s.get(ctx, p.Workspace, id)
}

func (s *Service) get(ctx context.Context, workspace, id string) (store.Approval, error) {
	a, err := s.o.Store.GetApproval(ctx, workspace, id)
	if err != nil {
		return store.Approval{}, err
	}
	return s.lazyExpire(ctx, a), nil
}

// lazyExpire settles a pending approval past its expiry when it is read:
// the workflow's timer normally does it first.
func (s *Service) lazyExpire(ctx context.Context, a store.Approval) store.Approval {
	if a.Status != store.ApprovalPending || s.o.Now().Before(a.ExpiresAt) {
		return a
	}
	if b, err := s.Expire(ctx, a.Workspace, a.ID); err == nil {
		return b
	}
	return a
}

// Decide settles a pending approval with a person's decision, exactly
// once: a second decision (or one after expiry) is 409 saying how it
// settled. An agent cannot decide. The notification is deleted, the
// event appended and the workflow signalled.
func (s *Service) Decide(ctx context.Context, p auth.Principal, id string, r DecideRequest) (store.Approval, error) {
	if p.Agent != nil {
		return store.Approval{}, derrors.Refusef(derrors.ErrForbidden, nil,
			"an agent cannot decide an approval (this call declares agent %q): a person decides, without the agent headers", p.Agent.ID)
	}
	var status, typ string
	switch r.Decision {
	case DecisionApprove:
		status, typ = store.ApprovalApproved, EventApproved
	case DecisionDeny:
		status, typ = store.ApprovalDenied, EventDenied
	default:
		return store.Approval{}, derrors.Invalidf("decision %q: want approve or deny", r.Decision)
	}
	if len(r.Reason) > maxReason {
		return store.Approval{}, derrors.Invalidf("reason is %d bytes; at most %d", len(r.Reason), maxReason)
	}
	if _, err := s.get(ctx, p.Workspace, id); err != nil { // expiry first, so a late decision is 409
		return store.Approval{}, err
	}
	now := s.o.Now().UTC()
	var a store.Approval
	err := s.o.Store.Transact(ctx, func(tx store.Tx) error {
		var err error
		a, err = tx.UpdateApproval(ctx, p.Workspace, id, func(a *store.Approval) error {
			if a.Status != store.ApprovalPending {
				return errNotPending(*a)
			}
			a.Status, a.DecidedBy, a.DecidedAt, a.Reason = status, p.Subject, &now, r.Reason
			return nil
		})
		if err != nil {
			return err
		}
		return s.settled(ctx, tx, a, typ, p.Subject, now)
	})
	if err != nil {
		return a, err
	}
	if s.o.Orchestrator != nil {
		if err := s.o.Orchestrator.SignalApproval(ctx, a.Workspace, a.ID,
			flows.ApprovalDecision{Status: flows.ApprovalStatus(status), DecidedBy: p.Subject}); err != nil {
			// Recorded: the workflow reads it at its expiry timer at the latest.
			s.o.Logger.WarnContext(ctx, "signalling the approval's workflow", "workspace", a.Workspace, "approval", a.ID, "err", err)
		}
	}
	return a, nil
}

// settled writes what every settling writes: the event and the deletion
// (not the marking read) of the notification.
func (s *Service) settled(ctx context.Context, tx store.Tx, a store.Approval, typ, actor string, at time.Time) error {
	if _, err := tx.AppendEvent(ctx, store.Event{ID: typ + ":" + a.ID, Workspace: a.Workspace, Type: typ,
		Subject: "approval:" + a.ID, Actor: actor, CausedBy: causedBy(a), Data: eventData(a), CreatedAt: at}); err != nil {
		return err
	}
	if a.Notification != "" {
		return tx.DeleteNotification(ctx, a.Workspace, a.Notification)
	}
	return nil
}

// Expire settles a pending approval as expired (the workflow's timer):
// never a person's denial. With OnExpiry halt it is marked halted, which
// refuses the agent conversation's later calls. An approval already
// settled is returned as it is.
func (s *Service) Expire(ctx context.Context, workspace, id string) (store.Approval, error) {
	now := s.o.Now().UTC()
	var a store.Approval
	err := s.o.Store.Transact(ctx, func(tx store.Tx) error {
		var err error
		a, err = tx.UpdateApproval(ctx, workspace, id, func(a *store.Approval) error {
			if a.Status != store.ApprovalPending {
				return errSettled
			}
			a.Status = store.ApprovalExpired
			a.Halted = a.OnExpiry == store.ExpiryHalt
			return nil
		})
		if err != nil {
			return err
		}
		if err := s.settled(ctx, tx, a, EventExpired, "", now); err != nil {
			return err
		}
		if a.Halted {
			_, err = tx.AppendEvent(ctx, store.Event{ID: EventHalted + ":" + a.ID, Workspace: a.Workspace, Type: EventHalted,
				Subject: "approval:" + a.ID, CausedBy: causedBy(a), Data: eventData(a), CreatedAt: now})
		}
		return err
	})
	if errors.Is(err, errSettled) {
		return a, nil
	}
	return a, err
}

// errSettled aborts an expiry of an approval that is no longer pending.
var errSettled = errors.New("approval already settled")

// Halted returns the halted approval of the agent's conversation, if any:
// an expiry whose policy halts the run refuses the conversation's later
// calls.
func (s *Service) Halted(ctx context.Context, workspace string, agent store.ApprovalAgent) (store.Approval, bool, error) {
	list, err := s.o.Store.ListApprovals(ctx, store.ApprovalFilter{Workspace: workspace, AgentID: agent.ID,
		Conversation: agent.Conversation, Halted: true, Limit: 1})
	if err != nil || len(list) == 0 {
		return store.Approval{}, false, err
	}
	return list[0], true, nil
}

// Release ends the caller's live wait: an approved call is the
// workflow's to run from now on.
func (s *Service) Release(ctx context.Context, workspace, id string) (store.Approval, error) {
	now := s.o.Now().UTC()
	return s.o.Store.UpdateApproval(ctx, workspace, id, func(a *store.Approval) error {
		a.LiveUntil = &now
		return nil
	})
}

// claimStale is how long a claim of a run that never stored its result
// holds before another executor may take over (its process died).
const claimStale = 2 * time.Minute

// Claim decides whether executor runs the approved call now. It answers
// run=false with the approval when the call ran already (Result set),
// when another executor holds a fresh claim, or, for the workflow, while
// the caller still waits live (its request runs it). An approval that is
// not approved is a refusal saying how it settled.
func (s *Service) Claim(ctx context.Context, workspace, id, executor string) (a store.Approval, run bool, err error) {
	now := s.o.Now().UTC()
	a, err = s.o.Store.UpdateApproval(ctx, workspace, id, func(a *store.Approval) error {
		run = false
		switch {
		case a.Status != store.ApprovalApproved:
			return Refusal(*a)
		case a.Result != nil:
			return errNoClaim
		case executor == store.ExecutorWorkflow && a.LiveUntil != nil && now.Before(*a.LiveUntil):
			return errNoClaim
		case a.Executor != "" && a.Executor != executor && a.ClaimedAt != nil && now.Sub(*a.ClaimedAt) < claimStale:
			return errNoClaim
		}
		a.Executor, a.ClaimedAt = executor, &now
		run = true
		return nil
	})
	if errors.Is(err, errNoClaim) {
		return a, false, nil
	}
	return a, run, err
}

var errNoClaim = errors.New("not claimed")

// Finish stores the answer of the run executor claimed, with ExecutedAt,
// in one write, and appends approval.executed. A result already stored
// wins (the run happened once).
func (s *Service) Finish(ctx context.Context, workspace, id, executor string, res store.ApprovalResult) (store.Approval, error) {
	now := s.o.Now().UTC()
	if len(res.Body) > 0 && !json.Valid(res.Body) {
		b, _ := json.Marshal(string(res.Body))
		res.Body = b
	}
	var a store.Approval
	err := s.o.Store.Transact(ctx, func(tx store.Tx) error {
		var err error
		a, err = tx.UpdateApproval(ctx, workspace, id, func(a *store.Approval) error {
			if a.Result != nil {
				return errNoClaim
			}
			a.Result, a.ExecutedAt, a.Executor = &res, &now, executor
			a.Delivered = executor == store.ExecutorLive
			a.Resumed = executor == store.ExecutorWorkflow
			return nil
		})
		if err != nil {
			return err
		}
		_, err = tx.AppendEvent(ctx, store.Event{ID: EventExecuted + ":" + a.ID, Workspace: a.Workspace, Type: EventExecuted,
			Subject: "approval:" + a.ID, Actor: a.Member, CausedBy: causedBy(a), Data: eventData(a), CreatedAt: now})
		return err
	})
	if errors.Is(err, errNoClaim) {
		return a, nil
	}
	return a, err
}

// Refusal is the answer an agent's parked call gets when its approval did
// not approve it: 403 saying denied (by whom, when, why) or expired
// (when, and that nothing ran), with the approval's id in the details.
func Refusal(a store.Approval) error {
	details := map[string]any{"approval": a.ID, "status": a.Status}
	switch a.Status {
	case store.ApprovalDenied:
		details["decidedBy"] = a.DecidedBy
		at := ""
		if a.DecidedAt != nil {
			at = a.DecidedAt.UTC().Format(time.RFC3339)
			details["decidedAt"] = at
		}
		msg := "approval " + a.ID + " was denied by " + a.DecidedBy + " at " + at + "; the call did not run"
		if a.Reason != "" {
			details["reason"] = a.Reason
			msg += ": " + a.Reason
		}
		return derrors.Refusef(derrors.ErrForbidden, details, "%s", msg)
	case store.ApprovalExpired:
		msg := "approval " + a.ID + " expired at " + a.ExpiresAt.UTC().Format(time.RFC3339) + " with nobody deciding; the call did not run"
		if a.Halted {
			msg += ", and the policy halts this agent's run (conversation " + a.Agent.Conversation + ")"
			details["halted"] = true
		}
		return derrors.Refusef(derrors.ErrForbidden, details, "%s", msg)
	case store.ApprovalPending:
		return derrors.Refusef(derrors.ErrConflict, details, "approval %s is still pending", a.ID)
	}
	return derrors.Refusef(derrors.ErrConflict, details, "approval %s is %s", a.ID, a.Status)
}
