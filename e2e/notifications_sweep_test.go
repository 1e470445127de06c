package e2e

import (
	"database/sql"
	"path/filepath"
	"testing"
	"time"

	"svc/internal/domain/eval"
	"svc/internal/testing/testwait"
)

// TestApprovalNotificationSweep (spec §3): an agent_approval_requested
// notification is deleted on a decision, an expiry or a sweep. An
// approval settled by a path that skipped the delete (here an operator's
// write straight into the store) leaves its notification behind; the
// worker's sweep (SVC_APPROVAL_NOTICE_SWEEP) deletes it, gone from the
// feed rather than marked read, and leaves the notification of an
// approval still pending alone.
func TestApprovalNotificationSweep(t *testing.T) {
	dataDir := t.TempDir()
	svc := start(t, devEnv(dataDir, "SVC_INTERNAL_TOKEN=op-token", "SVC_APPROVAL_NOTICE_SWEEP=300ms"), true, "dev")
	park := func(session string) string {
		t.Helper()
		body := map[string]any{"workspace": "default", "runId": "arun_" + session, "member": "dev", "kind": "awaiting_approval",
			"agent": map[string]string{"id": "helper", "name": "Helper", "conversation": "conv_" + session},
			"lane":  "chat", "sessionId": session,
			"payload": map[string]any{"actionId": "a1", "tool": "delete_dataset", "arguments": map[string]string{"id": "qa"}, "summary": "delete dataset qa"}}
		var r struct {
			Approval struct {
				ID string `json:"id"`
			} `json:"approval"`
			NotificationID string `json:"notificationId"`
		}
		if code := call(t, "POST", svc.URL+"/internal/agent-run-events", body, &r, "x-internal-token", "op-token"); code != 201 || r.Approval.ID == "" {
			t.Fatalf("POST /internal/agent-run-events %s = %d %+v, want 201 with the approval", session, code, r)
		}
		return r.Approval.ID
	}
	settledID, pendingID := park("sess_settled"), park("sess_pending")
	settledNote, pendingNote := eval.ApprovalNoticeID(eval.LaneChat, "sess_settled"), eval.ApprovalNoticeID(eval.LaneChat, "sess_pending")
	inFeed := func() map[string]bool {
		in := map[string]bool{}
		for _, n := range feed(t, svc.URL) { // read and unread alike
			if n.Kind == eval.NotifyAgentApprovalRequested {
				in[n.ID] = true
			}
		}
		return in
	}
	if in := inFeed(); !in[settledNote] || !in[pendingNote] {
		t.Fatalf("approval notifications after parking: %v, want %s and %s", in, settledNote, pendingNote)
	}
	// Read it first: the sweep deletes a read notification too.
	if code := call(t, "POST", svc.URL+"/notifications/read", map[string]any{"ids": []string{settledNote}}, nil); code != 200 {
		t.Fatalf("POST /notifications/read = %d", code)
	}

	// Settle one approval behind the service's back: the store row says
	// denied, and nothing deleted its notification.
	db, err := sql.Open("sqlite", "file:"+filepath.Join(dataDir, "svc.db")+"?_pragma=busy_timeout(10000)")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	res, err := db.ExecContext(t.Context(), `UPDATE approvals SET status = 'denied', rev = rev + 1,
		doc = json_set(doc, '$.status', 'denied', '$.decidedBy', 'operator') WHERE workspace = 'default' AND id = ?`, settledID)
	if err != nil {
		t.Fatalf("settling %s in the store: %v", settledID, err)
	}
	if n, _ := res.RowsAffected(); n != 1 {
		t.Fatalf("settling %s in the store changed %d rows, want 1", settledID, n)
	}
	var a struct {
		Status string `json:"status"`
	}
	if code := call(t, "GET", svc.URL+"/approvals/"+settledID, nil, &a); code != 200 || a.Status != "denied" {
		t.Fatalf("GET /approvals/%s = %d %+v, want it denied", settledID, code, a)
	}

	testwait.Until(t, 30*time.Second, "the sweep to delete the settled approval's notification", func() bool {
		return !inFeed()[settledNote]
	})
	if in := inFeed(); !in[pendingNote] {
		t.Errorf("after the sweep the feed has %v: the pending approval %s's notification %s is gone", in, pendingID, pendingNote)
	}
	var unread []feedItem
	if code := call(t, "GET", svc.URL+"/notifications?unread=1", nil, &unread); code != 200 {
		t.Fatalf("GET /notifications?unread=1 = %d", code)
	}
	for _, n := range unread {
		if n.ID == settledNote {
			t.Errorf("the swept notification %s is still listed as unread", settledNote)
		}
	}
	// The next ask in the settled session pings again.
	if code := call(t, "POST", svc.URL+"/internal/agent-run-events", map[string]any{"workspace": "default", "runId": "arun_sess_settled",
		"member": "dev", "kind": "awaiting_approval", "agent": map[string]string{"id": "helper", "conversation": "conv_sess_settled"},
		"lane": "chat", "sessionId": "sess_settled", "payload": map[string]any{"actionId": "a2", "tool": "delete_dataset"}}, nil,
		"x-internal-token", "op-token"); code != 201 {
		t.Fatalf("the next ask = %d, want 201", code)
	}
	if !inFeed()[settledNote] {
		t.Errorf("the next ask in session sess_settled left no notification, want it to ping again")
	}
}
