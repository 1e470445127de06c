package eval

import (
	"fmt"
	"slices"
	"strings"
)

// Notification kinds (spec §2.10), declared here only: every producer and
// every reader (the feed, channels' kind filters, the CLI) takes them from
// this list.
const (
	NotifyRunCompleted           = "run_completed"
	NotifyRunFailed              = "run_failed"
	NotifyScorecardCompleted     = "scorecard_completed"
	NotifyScorecardFailed        = "scorecard_failed"
	NotifyScheduleCompleted      = "schedule_completed"
	NotifyScheduleFailed         = "schedule_failed"
	NotifyCommentMention         = "comment_mention"
	NotifyIssueRegressed         = "issue_regressed"
	NotifyTrackerUpdatePosted    = "tracker_update_posted"
	NotifyAgentApprovalRequested = "agent_approval_requested"
	// NotifyChannelDisabled is this service's extension (the spec's list is
	// extensible): a member's delivery channel failed too often in a row and
	// was disabled.
	NotifyChannelDisabled = "notification_channel_disabled"
)

// NotificationKinds lists every kind, the spec's ten then the extensions.
func NotificationKinds() []string {
	return []string{NotifyRunCompleted, NotifyRunFailed, NotifyScorecardCompleted, NotifyScorecardFailed,
		NotifyScheduleCompleted, NotifyScheduleFailed, NotifyCommentMention, NotifyIssueRegressed,
		NotifyTrackerUpdatePosted, NotifyAgentApprovalRequested, NotifyChannelDisabled}
}

// IsNotificationKind reports whether k is a declared kind.
func IsNotificationKind(k string) bool { return slices.Contains(NotificationKinds(), k) }

// Notice is a notification before it is stored: what a producer decides
// (its deterministic id, kind, recipient, title, body and link). The
// constructors below are the one place each kind's id, wording and link
// are decided, so a producer in another issue (schedules, the tracker)
// only supplies the facts.
type Notice struct {
	ID        string
	Kind      string
	Recipient string
	Title     string
	Body      string
	Link      NotificationLink
}

// noticeBodyMax bounds a notice's body; longer text is clipped.
const noticeBodyMax = 500

// ClipNotice shortens s to at most n bytes (valid UTF-8) with an ellipsis.
func ClipNotice(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n], "") + "…"
}

// RunNotice is the notice of a terminal run for its creator, or false when
// none is due: a scorecard's child run never notifies, and work with no
// known creator emits nothing (spec §6).
func RunNotice(r Run) (Notice, bool) {
	if r.ParentScorecardID != "" || r.CreatedBy == "" || !r.Status.Terminal() {
		return Notice{}, false
	}
	kind, verb := NotifyRunCompleted, "completed"
	if r.Status == StatusFailed {
		kind, verb = NotifyRunFailed, "failed"
	}
	body := fmt.Sprintf("Case %s on harness %s %s.", r.CaseID, r.Harness, verb)
	if r.Error != nil {
		body += " " + r.Error.Message
	} else if r.Result != nil && !r.Result.Pass {
		body += " Some scores did not pass."
	}
	return Notice{ID: kind + ":" + r.ID, Kind: kind, Recipient: r.CreatedBy,
		Title: fmt.Sprintf("Run %s %s", r.CaseID, verb), Body: ClipNotice(body, noticeBodyMax),
		Link: LinkTo(ResourceRun, r.ID)}, true
}

// ScorecardNotice is the notice of a finished scorecard for its creator,
// or false when none is due (no creator; cancelled or superseded). A
// scheduled scorecard (origin.source schedule) gets the schedule_* kinds
// instead of the scorecard_* ones, once per run (the id is the
// scorecard's), linked to the scorecard it produced.
func ScorecardNotice(sc Scorecard) (Notice, bool) {
	if sc.CreatedBy == "" || (sc.Status != ScorecardSucceeded && sc.Status != ScorecardFailed) {
		return Notice{}, false
	}
	failed := sc.Status == ScorecardFailed
	kind, verb := NotifyScorecardCompleted, "completed"
	if failed {
		kind, verb = NotifyScorecardFailed, "failed"
	}
	title := fmt.Sprintf("Scorecard %s %s", sc.ID, verb)
	if sc.Origin != nil && sc.Origin.Source == "schedule" {
		kind = NotifyScheduleCompleted
		if failed {
			kind = NotifyScheduleFailed
		}
		title = fmt.Sprintf("Scheduled scorecard %s %s", sc.ID, verb)
	}
	body := fmt.Sprintf("%s of %s on %s %s.", sc.Kind, sc.Harness, sc.Dataset, verb)
	if pr, ok := sc.Summary["casePass"]; ok && pr.PassRate != nil {
		body += fmt.Sprintf(" Pass rate %.1f%% over %d cases.", *pr.PassRate*100, pr.Count)
	}
	if sc.Error != nil && failed {
		body += " " + sc.Error.Message
	}
	return Notice{ID: kind + ":" + sc.ID, Kind: kind, Recipient: sc.CreatedBy, Title: title,
		Body: ClipNotice(body, noticeBodyMax), Link: LinkTo(ResourceScorecard, sc.ID)}, true
}

// CommentMentionNotice is the notice of a member mentioned in a comment on
// a resource (typ, id): one per comment and mentioned member. The
// recipient is the mentioned member (a mention is addressed, not owned).
func CommentMentionNotice(recipient, author, typ, resourceID, commentID, excerpt string) Notice {
	return Notice{ID: NotifyCommentMention + ":" + commentID + ":" + recipient, Kind: NotifyCommentMention,
		Recipient: recipient, Title: fmt.Sprintf("%s mentioned you on %s %s", author, typ, resourceID),
		Body: ClipNotice(excerpt, noticeBodyMax), Link: LinkTo(typ, resourceID)}
}

// IssueRegressedNotice is the notice of an issue that regressed, for the
// issue's creator, once per regression (regressionID, for example the
// scorecard that showed it).
func IssueRegressedNotice(recipient, issueID, title, regressionID string) Notice {
	return Notice{ID: NotifyIssueRegressed + ":" + issueID + ":" + regressionID, Kind: NotifyIssueRegressed,
		Recipient: recipient, Title: fmt.Sprintf("Issue %s regressed", issueID), Body: ClipNotice(title, noticeBodyMax),
		Link: LinkTo(ResourceIssue, issueID)}
}

// TrackerUpdateNotice is the notice of a tracker update (a project's or an
// initiative's status post, typ being ResourceProject or
// ResourceInitiative) for the tracked item's creator, once per update.
func TrackerUpdateNotice(recipient, typ, resourceID, updateID, summary string) Notice {
	return Notice{ID: NotifyTrackerUpdatePosted + ":" + updateID, Kind: NotifyTrackerUpdatePosted,
		Recipient: recipient, Title: fmt.Sprintf("Update posted on %s %s", typ, resourceID),
		Body: ClipNotice(summary, noticeBodyMax), Link: LinkTo(typ, resourceID)}
}

// Approval lanes: where an agent asked for the approval.
const (
	// LaneChat is a conversation with the agent: one approval notification
	// per session.
	LaneChat = "chat"
	// LaneDiscussion is a comment thread on a resource: one per comment.
	LaneDiscussion = "discussion"
)

// ApprovalNoticeID is the deterministic id of the agent_approval_requested
// notification: per session in the chat lane, per comment in the
// discussion lane (spec §6), so repeated park reports deduplicate and,
// once the row is deleted (a decision, an expiry, a clear), the next ask
// pings again.
func ApprovalNoticeID(lane, key string) string {
	if lane == LaneDiscussion {
		return NotifyAgentApprovalRequested + ":comment:" + key
	}
	return NotifyAgentApprovalRequested + ":session:" + key
}

// ApprovalRequest is what an agent_approval_requested notice is built from.
type ApprovalRequest struct {
	Recipient      string // the run's creator
	Lane           string // LaneChat or LaneDiscussion
	SessionID      string // chat lane key
	CommentID      string // discussion lane key
	ConversationID string // chat lane: the link's conversation
	ResourceType   string // discussion lane: what the comment is on
	ResourceID     string
	AgentName      string
	Action         string // what the agent wants to do, for the title
}

// ApprovalNotice is the agent_approval_requested notice of r: linked to
// the conversation (chat lane) or to the resource under discussion.
func ApprovalNotice(r ApprovalRequest) Notice {
	key, link := r.SessionID, NotificationLink{ConversationID: r.ConversationID}
	if r.Lane == LaneDiscussion {
		key, link = r.CommentID, LinkTo(r.ResourceType, r.ResourceID)
		link.ConversationID = r.ConversationID
	}
	agent := r.AgentName
	if agent == "" {
		agent = "An agent"
	}
	title := agent + " is waiting for your approval"
	if r.Action != "" {
		title = ClipNotice(fmt.Sprintf("%s wants to %s: approve or deny", agent, r.Action), 200)
	}
	return Notice{ID: ApprovalNoticeID(r.Lane, key), Kind: NotifyAgentApprovalRequested, Recipient: r.Recipient,
		Title: title, Body: "Decide it under /approvals (svc approvals, or the approvals inbox).", Link: link}
}

// ChannelSecretName is the name a webhook delivery channel's signing
// secret is sealed under (with the workspace as the sealing context): the
// notifications service seals it by this name when the channel is created
// and the worker's drainer opens it by the same name to sign a delivery.
func ChannelSecretName(channelID string) string { return "notification-channel." + channelID }

// ChannelDisabledNotice tells a member that their delivery channel was
// disabled after failures consecutive failures, and how to re-enable it;
// one per disabling (at, unix seconds, tells two apart).
func ChannelDisabledNotice(recipient, channelID, lastError string, failures int, at int64) Notice {
	body := fmt.Sprintf("Channel %s failed %d deliveries in a row and was disabled; nothing more is sent to it. "+
		"Fix the receiver, then re-enable it: POST /notification-channels/%s/enable.",
		channelID, failures, channelID)
	if lastError != "" {
		body += " Last error: " + lastError
	}
	return Notice{ID: fmt.Sprintf("%s:%s:%d", NotifyChannelDisabled, channelID, at), Kind: NotifyChannelDisabled,
		Recipient: recipient, Title: "Notification channel " + channelID + " disabled", Body: ClipNotice(body, 1000)}
}
