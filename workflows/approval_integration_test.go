package workflows_test

import (
	"encoding/json"
	"testing"
	"time"

	"svc/internal/domain/flows"
	"svc/store"
)

// TestRecordApprovalHistories parks an agent's calls through the real API
// on Temporal's real server and records the ApprovalWorkflow of each
// ending: approved after the caller left (the workflow runs the call once,
// resumed) and expired (nothing runs). They are the committed
// approval_resumed.json and approval_expired.json that replay_test.go
// replays (-update-histories rewrites them).
func TestRecordApprovalHistories(t *testing.T) {
	s := newStack(t, "sqlite")
	agent := []string{"X-Svc-Agent-Id", "bot", "X-Svc-Conversation-Id", "c1", "Prefer", "wait=0"}
	s.call(t, "PUT", "/approval-policies", `{"policies":[{"tools":["create_judge"]},{"tools":["create_dataset"],"expiry":"2s"}]}`, 200, nil)

	park := func(path, body string) string {
		t.Helper()
		var eb struct {
			Error struct {
				Details struct{ Approval string } `json:"details"`
			} `json:"error"`
		}
		s.call(t, "POST", path, body, 202, &eb, agent...)
		if eb.Error.Details.Approval == "" {
			t.Fatalf("POST %s parked without an approval id", path)
		}
		return eb.Error.Details.Approval
	}
	outcome := func(id string) flows.ApprovalOutcome {
		t.Helper()
		var out flows.ApprovalOutcome
		run := s.tc.GetWorkflow(t.Context(), flows.ApprovalWorkflowID(s.ws, id), "")
		if err := run.Get(t.Context(), &out); err != nil {
			t.Fatalf("approval %s's workflow: %v", id, err)
		}
		return out
	}

	approved := park("/judges", `{"id":"rec-j","version":"1.0.0","kind":"code","language":"python","code":"print(1)"}`)
	s.call(t, "POST", "/approvals/"+approved+"/decide", `{"decision":"approve"}`, 200, nil)
	if out := outcome(approved); out.Status != flows.ApprovalApproved || out.Executed == nil || out.Executed.Status != 201 || !out.Executed.Resumed {
		t.Fatalf("the approved call's outcome = %+v, want run once by the workflow (201, resumed)", out)
	}
	var a store.Approval
	s.call(t, "GET", "/approvals/"+approved, "", 200, &a)
	if !a.Resumed || a.Result == nil || a.Result.Status != 201 {
		t.Errorf("approval %s = %+v, want resumed with the 201 stored", approved, a)
	}
	saveHistory(t, s.tc, flows.ApprovalWorkflowID(s.ws, approved), "approval_resumed")

	expired := park("/datasets", `{"id":"rec-d","version":"1.0.0","cases":[{"id":"a","task":"do a","graders":[{"id":"g","kind":"exit_code"}]}]}`)
	start := time.Now()
	if out := outcome(expired); out.Status != flows.ApprovalExpired || out.Executed != nil {
		t.Fatalf("the unanswered call's outcome = %+v, want expired, nothing run", out)
	}
	if d := time.Since(start); d > time.Minute {
		t.Errorf("a 2 s expiry settled after %s", d)
	}
	a = store.Approval{}
	s.call(t, "GET", "/approvals/"+expired, "", 200, &a)
	if a.Status != store.ApprovalExpired || a.DecidedBy != "" || a.Result != nil {
		b, _ := json.Marshal(a)
		t.Errorf("approval %s = %s, want expired by nobody, nothing run", expired, b)
	}
	saveHistory(t, s.tc, flows.ApprovalWorkflowID(s.ws, expired), "approval_expired")
}
