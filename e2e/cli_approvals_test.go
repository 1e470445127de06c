package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"svc/internal/testing/testwait"
)

// TestCLIApprovalsNotificationsEvents drives svc approvals, svc
// notifications and svc events through the real binary against svc dev
// (issue 33 item 6; docs/approvals.md, docs/notifications.md and
// docs/agents.md, "Command line"): a Slack channel added with the CLI gets
// the approval's notification; svc events lists a registration by glob;
// svc approvals ls is empty, then shows the agent's parked call (an HTTP
// call declaring an agent with X-Svc-Agent-Id, parked by a policy that svc
// approvals policies set wrote); svc approvals approve runs it once; a
// second decision is the service's 409 message and exit 2.
func TestCLIApprovalsNotificationsEvents(t *testing.T) {
	svc := start(t, devEnv(t.TempDir(), "SVC_WEBHOOK_ALLOW=127.0.0.1"), true, "dev")
	slack := newCapture(t, 200)

	out, errOut, code := runCLI(t, svc.URL, "notifications", "channels", "add", "--type", "slack", "--to", slack.srv.URL, "--kinds", "agent_approval_requested")
	channel := strings.TrimSpace(out)
	if code != 0 || !strings.HasPrefix(channel, "nch_") || strings.Contains(out, "secret") || errOut != "" {
		t.Fatalf("svc notifications channels add slack: exit %d stdout %q stderr %q, want the channel's id and no secret", code, out, errOut)
	}
	out, _, code = runCLI(t, svc.URL, "notifications", "channels", "ls")
	if code != 0 || !strings.Contains(out, channel) || !strings.Contains(out, "agent_approval_requested") {
		t.Errorf("svc notifications channels ls: exit %d stdout %q", code, out)
	}

	rulesRegister(t, svc.URL, "/datasets", map[string]any{"id": "cli-ds", "version": "1.0.0", "cases": rulesCases("c", 1)})
	out, errOut, code = runCLI(t, svc.URL, "events", "--type", "*.registered")
	if code != 0 || !strings.Contains(out, "dataset.registered") || !strings.Contains(out, "cli-ds") {
		t.Errorf("svc events --type '*.registered': exit %d stdout %q stderr %q, want the registration", code, out, errOut)
	}

	out, errOut, code = runCLI(t, svc.URL, "approvals", "ls")
	if code != 0 || out != "" || !strings.Contains(errOut, "no approvals") {
		t.Errorf("svc approvals ls before any park: exit %d stdout %q stderr %q", code, out, errOut)
	}

	policies := filepath.Join(t.TempDir(), "policies.json")
	if err := os.WriteFile(policies, []byte(`{"policies": [{"name": "datasets", "tools": ["create_dataset"]}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	out, errOut, code = runCLI(t, svc.URL, "approvals", "policies", "set", policies)
	if code != 0 || !strings.Contains(out, "create_dataset") {
		t.Fatalf("svc approvals policies set: exit %d stdout %q stderr %q", code, out, errOut)
	}

	// The agent's registration parks (the caller does not wait).
	var eb errorView
	code = call(t, "POST", svc.URL+"/datasets", map[string]any{"id": "agent-ds", "version": "1.0.0", "cases": rulesCases("a", 1)}, &eb,
		append([]string{"Prefer", "wait=0"}, agentHeaders...)...)
	id, _ := eb.Error.Details["approval"].(string)
	if code != 202 || eb.Error.Code != "APPROVAL_PENDING" || id == "" {
		t.Fatalf("the agent's POST /datasets = %d %+v, want 202 APPROVAL_PENDING", code, eb.Error)
	}

	out, errOut, code = runCLI(t, svc.URL, "approvals", "ls", "--status", "pending")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if code != 0 || len(lines) != 2 || !strings.HasPrefix(lines[1], id) || !strings.Contains(lines[1], "create_dataset") || !strings.Contains(lines[1], "HTTP Bot (http-bot) in conv-1") {
		t.Errorf("svc approvals ls --status pending: exit %d stderr %q stdout:\n%s\nwant one row of %s", code, errOut, out, id)
	}
	out, _, code = runCLI(t, svc.URL, "approvals", "show", id)
	if code != 0 || !strings.Contains(out, "agent-ds") || !strings.Contains(out, "POST /datasets") {
		t.Errorf("svc approvals show: exit %d stdout %q, want the call and its body", code, out)
	}

	testwait.Until(t, time.Minute, "the Slack channel to get the approval's notification", func() bool { return len(slack.all()) >= 1 })
	var msg map[string]string
	if s := slack.all(); json.Unmarshal([]byte(s[0].Body), &msg) != nil || msg["text"] == "" {
		t.Errorf("the Slack channel got %+v, want {\"text\"}", s)
	}

	out, errOut, code = runCLI(t, svc.URL, "approvals", "approve", id, "--reason", "looks right")
	if code != 0 || !strings.HasPrefix(out, id+" approved") {
		t.Fatalf("svc approvals approve: exit %d stdout %q stderr %q", code, out, errOut)
	}
	testwait.Until(t, 2*time.Minute, "the approved registration to run", func() bool {
		out, _, _ := runCLI(t, svc.URL, "approvals", "show", id, "--json")
		var a approvalView
		return json.Unmarshal([]byte(out), &a) == nil && a.Result != nil
	})
	if code := call(t, "GET", svc.URL+"/datasets/agent-ds/versions/1.0.0", nil, nil); code != 200 {
		t.Errorf("GET the approved dataset = %d, want 200", code)
	}
	out, errOut, code = runCLI(t, svc.URL, "approvals", "deny", id)
	if code != 2 || out != "" || !strings.HasPrefix(errOut, "svc approvals: ") || !strings.Contains(errOut, id) {
		t.Errorf("a second decision: exit %d stdout %q stderr %q, want the service's 409 message and exit 2", code, out, errOut)
	}

	out, _, code = runCLI(t, svc.URL, "events", "--type", "approval.*", "--all", "--format", "csv")
	if code != 0 || !strings.Contains(out, "approval.requested") || !strings.Contains(out, "approval.approved") || !strings.Contains(out, "agent:http-bot:conv-1") {
		t.Errorf("svc events --type 'approval.*': exit %d stdout %q", code, out)
	}
}
