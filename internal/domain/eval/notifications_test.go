package eval

import (
	"strings"
	"testing"
)

// TestNotices: every kind of spec §2.10 is declared once and built by one
// constructor whose id is deterministic and whose link resolves; the
// notification rules of spec §6 hold (the creator is the recipient, no
// creator or a child run emits nothing, a scheduled scorecard uses the
// schedule_* kinds, an approval's id is per session or per comment).
func TestNotices(t *testing.T) {
	spec := []string{"run_completed", "run_failed", "scorecard_completed", "scorecard_failed", "schedule_completed",
		"schedule_failed", "comment_mention", "issue_regressed", "tracker_update_posted", "agent_approval_requested"}
	for _, k := range spec {
		if !IsNotificationKind(k) {
			t.Errorf("kind %q of spec §2.10 is not declared", k)
		}
	}
	run := Run{ID: "run_1", Tenant: "acme", CaseID: "c1", CreatedBy: "user:alice", Status: StatusSucceeded}
	failedRun := run
	failedRun.Status, failedRun.Error = StatusFailed, &Error{Code: "HARNESS", Message: "exit 1"}
	child := run
	child.ParentScorecardID = "sc_1"
	anon := run
	anon.CreatedBy = ""
	sc := Scorecard{ID: "sc_1", Tenant: "acme", CreatedBy: "user:alice", Status: ScorecardSucceeded}
	scFailed := sc
	scFailed.Status = ScorecardFailed
	sched := sc
	sched.Origin = &Origin{Source: "schedule"}
	schedFailed := scFailed
	schedFailed.Origin = &Origin{Source: "schedule"}
	cancelled := sc
	cancelled.Status = ScorecardCancelled
	noCreator := sc
	noCreator.CreatedBy = ""

	type want struct{ id, kind, href string }
	for _, tc := range []struct {
		name string
		n    Notice
		ok   bool
		want want
	}{
		{"run completed", must(RunNotice(run)), true, want{"run_completed:run_1", "run_completed", "/ui/#/runs/run_1"}},
		{"run failed", must(RunNotice(failedRun)), true, want{"run_failed:run_1", "run_failed", "/ui/#/runs/run_1"}},
		{"scorecard completed", must(ScorecardNotice(sc)), true, want{"scorecard_completed:sc_1", "scorecard_completed", "/ui/#/scorecards/sc_1"}},
		{"scorecard failed", must(ScorecardNotice(scFailed)), true, want{"scorecard_failed:sc_1", "scorecard_failed", "/ui/#/scorecards/sc_1"}},
		{"schedule completed", must(ScorecardNotice(sched)), true, want{"schedule_completed:sc_1", "schedule_completed", "/ui/#/scorecards/sc_1"}},
		{"schedule failed", must(ScorecardNotice(schedFailed)), true, want{"schedule_failed:sc_1", "schedule_failed", "/ui/#/scorecards/sc_1"}},
		{"comment mention", CommentMentionNotice("user:bob", "alice", ResourceDataset, "qa", "cm_1", "@bob look"), true, want{"comment_mention:cm_1:user:bob", "comment_mention", "/ui/#/datasets/qa"}},
		{"issue regressed", IssueRegressedNotice("user:alice", "ISS-7", "flaky tool call", "sc_9"), true, want{"issue_regressed:ISS-7:sc_9", "issue_regressed", "/ui/#/issues/ISS-7"}},
		{"tracker update", TrackerUpdateNotice("user:alice", ResourceProject, "p1", "up_1", "on track"), true, want{"tracker_update_posted:up_1", "tracker_update_posted", "/ui/#/projects/p1"}},
		{"approval, chat lane", ApprovalNotice(ApprovalRequest{Recipient: "user:alice", Lane: LaneChat, SessionID: "s1", ConversationID: "c1"}), true,
			want{"agent_approval_requested:session:s1", "agent_approval_requested", "/ui/#/?conversation=c1"}},
		{"approval, discussion lane", ApprovalNotice(ApprovalRequest{Recipient: "user:alice", Lane: LaneDiscussion, CommentID: "cm_2", ResourceType: ResourceIssue, ResourceID: "ISS-7", ConversationID: "c1"}), true,
			want{"agent_approval_requested:comment:cm_2", "agent_approval_requested", "/ui/#/issues/ISS-7"}},
		{"channel disabled", ChannelDisabledNotice("user:alice", "nch_1", "500", 5, 1700000000), true, want{"notification_channel_disabled:nch_1:1700000000", "notification_channel_disabled", ""}},
	} {
		if tc.n.ID != tc.want.id || tc.n.Kind != tc.want.kind || tc.n.Link.Href() != tc.want.href {
			t.Errorf("%s: id %q kind %q href %q, want %q %q %q", tc.name, tc.n.ID, tc.n.Kind, tc.n.Link.Href(), tc.want.id, tc.want.kind, tc.want.href)
		}
		if !IsNotificationKind(tc.n.Kind) || tc.n.Recipient == "" || tc.n.Title == "" {
			t.Errorf("%s: %+v lacks a declared kind, a recipient or a title", tc.name, tc.n)
		}
	}
	for name, ok := range map[string]bool{
		"child run": second(RunNotice(child)), "run without creator": second(RunNotice(anon)),
		"cancelled scorecard": second(ScorecardNotice(cancelled)), "scorecard without creator": second(ScorecardNotice(noCreator)),
	} {
		if ok {
			t.Errorf("%s notifies; spec §6 says it emits nothing", name)
		}
	}
	if n := must(RunNotice(failedRun)); !strings.Contains(n.Body, "exit 1") {
		t.Errorf("a failed run's body %q does not say why", n.Body)
	}
}

func must(n Notice, ok bool) Notice {
	if !ok {
		return Notice{}
	}
	return n
}

func second(_ Notice, ok bool) bool { return ok }
