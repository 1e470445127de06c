package e2e

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"svc/internal/domain/eval"
	"svc/internal/testing/testwait"
)

// capture is a loopback receiver that keeps every request it gets and
// answers status.
type capture struct {
	mu     sync.Mutex
	status int
	got    []captured
	srv    *httptest.Server
}

type captured struct {
	Header http.Header
	Body   string
}

func newCapture(t *testing.T, status int) *capture {
	c := &capture{status: status}
	c.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		c.mu.Lock()
		c.got = append(c.got, captured{Header: r.Header.Clone(), Body: string(b)})
		c.mu.Unlock()
		w.WriteHeader(c.status)
	}))
	t.Cleanup(c.srv.Close)
	return c
}

func (c *capture) all() []captured {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]captured(nil), c.got...)
}

// verifyStandardWebhook verifies one captured delivery with the npm
// `standardwebhooks` library (e2e/testdata/standardwebhooks/install.sh) and
// returns the payload it verified. Skipped without node and the library,
// except under CI=true.
func verifyStandardWebhook(t *testing.T, secret string, d captured) map[string]any {
	t.Helper()
	cache := os.Getenv("SVC_WEBHOOKS_CACHE")
	if cache == "" {
		cache = filepath.Join(os.TempDir(), "svc-standardwebhooks")
	}
	node, err := exec.LookPath("node")
	if err == nil {
		_, err = os.Stat(filepath.Join(cache, "node_modules", "standardwebhooks", "package.json"))
	}
	if err != nil {
		const how = "install Node.js 18 or later and run e2e/testdata/standardwebhooks/install.sh"
		if os.Getenv("CI") == "true" {
			t.Fatalf("the standardwebhooks verifier cannot run (%v): %s", err, how)
		}
		t.Skipf("the standardwebhooks verifier cannot run (%v): %s", err, how)
	}
	dir := t.TempDir()
	if err := os.Symlink(filepath.Join(cache, "node_modules"), filepath.Join(dir, "node_modules")); err != nil {
		t.Fatal(err)
	}
	script, err := os.ReadFile(filepath.Join("testdata", "standardwebhooks", "verify.mjs"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "verify.mjs"), script, 0o644); err != nil {
		t.Fatal(err)
	}
	headers := map[string]string{}
	for k := range d.Header {
		headers[strings.ToLower(k)] = d.Header.Get(k)
	}
	hb, _ := json.Marshal(headers)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, filepath.Join(dir, "verify.mjs"))
	cmd.Env = append(os.Environ(), "SVC_WH_SECRET="+secret, "SVC_WH_HEADERS="+string(hb), "SVC_WH_BODY="+d.Body)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("standardwebhooks refused the delivery: %v\n%s\nheaders %s\nbody %s", err, stderr.String(), hb, d.Body)
	}
	var payload map[string]any
	if err := json.Unmarshal(out, &payload); err != nil {
		t.Fatalf("decoding the verified payload: %v\n%s", err, out)
	}
	return payload
}

type channelView struct {
	ID       string   `json:"id"`
	Type     string   `json:"type"`
	Kinds    []string `json:"kinds"`
	Enabled  bool     `json:"enabled"`
	Failures int      `json:"failures"`
	Secret   string   `json:"secret"`
}

type feedItem struct {
	ID     string                `json:"id"`
	Kind   string                `json:"kind"`
	Body   string                `json:"body"`
	Link   eval.NotificationLink `json:"link"`
	Href   string                `json:"href"`
	ReadAt *time.Time            `json:"readAt"`
}

func feed(t *testing.T, base string) []feedItem {
	t.Helper()
	var items []feedItem
	if code := call(t, "GET", base+"/notifications?limit=200", nil, &items); code != 200 {
		t.Fatalf("GET /notifications = %d", code)
	}
	return items
}

// TestNotificationChannels (issue 33): a member's webhook channel gets
// the run and scorecard notifications (completed and failed) signed the
// Standard Webhooks way, verified by the npm standardwebhooks library,
// with links that resolve (spec §6); a Slack channel gets {"text": ...};
// a channel whose receiver answers 500 is disabled after 5 failures in a
// row with a notice in the feed saying how to re-enable it, and re-enables;
// another member sees none of them (404).
func TestNotificationChannels(t *testing.T) {
	svc := start(t, devEnv(t.TempDir(), "SVC_WEBHOOK_ALLOW=127.0.0.1", "SVC_INTERNAL_TOKEN=op-token"), true, "dev")
	hook, slack, broken := newCapture(t, 204), newCapture(t, 200), newCapture(t, 500)

	var wh, sl, br channelView
	if code := call(t, "POST", svc.URL+"/notification-channels", map[string]any{"type": "webhook", "url": hook.srv.URL + "/in",
		"kinds": []string{"run_completed", "run_failed", "scorecard_completed", "scorecard_failed"}}, &wh); code != 201 || !strings.HasPrefix(wh.Secret, "whsec_") {
		t.Fatalf("POST /notification-channels webhook = %d %+v, want 201 with its secret", code, wh)
	}
	if code := call(t, "POST", svc.URL+"/notification-channels", map[string]any{"type": "slack", "url": slack.srv.URL, "kinds": []string{"run_failed"}}, &sl); code != 201 || sl.Secret != "" {
		t.Fatalf("POST /notification-channels slack = %d %+v, want 201 without a secret", code, sl)
	}
	if code := call(t, "POST", svc.URL+"/notification-channels", map[string]any{"type": "slack", "url": broken.srv.URL, "kinds": []string{"run_completed"}}, &br); code != 201 {
		t.Fatalf("POST /notification-channels broken = %d", code)
	}
	for _, bad := range []map[string]any{
		{"type": "webhook", "url": hook.srv.URL, "kinds": []string{"nope"}},
		{"type": "email", "url": hook.srv.URL},
		{"type": "slack", "url": "http://10.1.2.3/hook"},
	} {
		if code := call(t, "POST", svc.URL+"/notification-channels", bad, nil); code != 400 {
			t.Errorf("POST /notification-channels %v = %d, want 400", bad, code)
		}
	}
	// Another member (an operator-minted key's subject) sees none of them.
	var key struct {
		APIKey string `json:"apiKey"`
	}
	if code := call(t, "POST", svc.URL+"/internal/tenant-keys", map[string]string{"workspace": "default"}, &key, "x-internal-token", "op-token"); code != 201 {
		t.Fatalf("POST /internal/tenant-keys = %d", code)
	}
	var theirs []channelView
	if code := call(t, "GET", svc.URL+"/notification-channels", nil, &theirs, "Authorization", "Bearer "+key.APIKey); code != 200 || len(theirs) != 0 {
		t.Errorf("another member lists %d %+v, want 200 and none", code, theirs)
	}
	if code := call(t, "DELETE", svc.URL+"/notification-channels/"+wh.ID, nil, nil, "Authorization", "Bearer "+key.APIKey); code != 404 {
		t.Errorf("another member deleting my channel = %d, want 404", code)
	}

	rulesRegister(t, svc.URL, "/harnesses", map[string]any{"id": "echo", "version": "1.0.0", "kind": "process", "command": []string{"/bin/echo", "ok"}})
	rulesRegister(t, svc.URL, "/harnesses", map[string]any{"id": "broken", "version": "1.0.0", "kind": "process", "command": []string{"/nonexistent/harness"}})
	rulesRegister(t, svc.URL, "/datasets", map[string]any{"id": "qa", "version": "1.0.0", "cases": rulesCases("c", 1)})
	runs := map[string]string{}
	for _, h := range []string{"echo", "broken"} {
		var run eval.Run
		if code := call(t, "POST", svc.URL+"/runs", map[string]any{"harness": map[string]string{"id": h, "version": "1.0.0"},
			"case": map[string]any{"id": "single", "task": "say ok"}}, &run); code != 202 {
			t.Fatalf("POST /runs %s = %d", h, code)
		}
		runs[h] = run.ID
	}
	batch := rulesSubmit(t, svc.URL, "qa", "echo", nil)
	rulesScorecard(t, svc.URL, batch, 2*time.Minute)

	want := map[string]string{
		eval.NotifyRunCompleted:       "/ui/#/runs/" + runs["echo"],
		eval.NotifyRunFailed:          "/ui/#/runs/" + runs["broken"],
		eval.NotifyScorecardCompleted: "/ui/#/scorecards/" + batch,
	}
	testwait.Until(t, 2*time.Minute, "the webhook channel to get the run and scorecard notifications", func() bool {
		return len(hook.all()) >= len(want)
	})
	seen := map[string]bool{}
	for _, d := range hook.all() {
		payload := verifyStandardWebhook(t, wh.Secret, d)
		data, _ := payload["data"].(map[string]any)
		kind, _ := data["kind"].(string)
		href, _ := data["href"].(string)
		if payload["type"] != "notification.created" || want[kind] == "" || href != want[kind] || data["recipient"] != "dev" {
			t.Errorf("verified payload %v: want a notification.created of %v with its href", payload, want)
		}
		seen[kind] = true
	}
	if len(seen) != len(want) {
		t.Errorf("webhook channel got kinds %v, want %v", seen, want)
	}
	testwait.Until(t, time.Minute, "the slack channel", func() bool { return len(slack.all()) >= 1 })
	var msg map[string]string
	if s := slack.all(); len(s) != 1 || json.Unmarshal([]byte(s[0].Body), &msg) != nil || !strings.Contains(msg["text"], "failed") || !strings.Contains(msg["text"], "/ui/#/runs/"+runs["broken"]) {
		t.Errorf("slack channel got %+v, want one {\"text\"} about the failed run with its link", s)
	}

	// The failing channel: retried, disabled after 5 failures in a row.
	testwait.Until(t, time.Minute, "the failing channel to be disabled", func() bool {
		var list []channelView
		call(t, "GET", svc.URL+"/notification-channels", nil, &list)
		for _, c := range list {
			if c.ID == br.ID {
				return !c.Enabled
			}
		}
		return false
	})
	if n := len(broken.all()); n != 5 {
		t.Errorf("the failing channel was tried %d times, want 5", n)
	}
	var notices []feedItem
	for _, n := range feed(t, svc.URL) {
		if n.Kind == eval.NotifyChannelDisabled {
			notices = append(notices, n)
		}
	}
	if len(notices) != 1 || !strings.Contains(notices[0].Body, "/notification-channels/"+br.ID+"/enable") {
		t.Errorf("feed notices %+v, want one saying how to re-enable %s", notices, br.ID)
	}
	var enabled channelView
	if code := call(t, "POST", svc.URL+"/notification-channels/"+br.ID+"/enable", nil, &enabled); code != 200 || !enabled.Enabled || enabled.Failures != 0 {
		t.Errorf("re-enable = %d %+v", code, enabled)
	}
	if code := call(t, "DELETE", svc.URL+"/notification-channels/"+br.ID, nil, nil); code != 204 {
		t.Errorf("DELETE my channel = %d, want 204", code)
	}
}

// TestAgentRunEventsApprovalNotification (spec §4.9, §3, §6): an external
// runtime's awaiting_approval reported twice parks once and leaves one
// agent_approval_requested notification for the run's creator, linked to
// the conversation; approval-clear deletes it (gone, not read); the next
// ask pings again, and a decision deletes that one too.
func TestAgentRunEventsApprovalNotification(t *testing.T) {
	svc := start(t, devEnv(t.TempDir(), "SVC_INTERNAL_TOKEN=op-token"), true, "dev")
	report := func(action string) map[string]any {
		return map[string]any{"workspace": "default", "runId": "arun_1", "member": "dev", "kind": "awaiting_approval",
			"agent": map[string]string{"id": "helper", "name": "Helper", "conversation": "conv_1"},
			"lane":  "chat", "sessionId": "sess_1",
			"payload": map[string]any{"actionId": action, "tool": "delete_dataset", "arguments": map[string]string{"id": "qa"}, "summary": "delete dataset qa"}}
	}
	type result struct {
		Approval struct {
			ID     string `json:"id"`
			Status string `json:"status"`
		} `json:"approval"`
		Created        bool   `json:"created"`
		NotificationID string `json:"notificationId"`
	}
	post := func(body any, want int) result {
		t.Helper()
		var r result
		if code := call(t, "POST", svc.URL+"/internal/agent-run-events", body, &r, "x-internal-token", "op-token"); code != want {
			t.Fatalf("POST /internal/agent-run-events = %d, want %d", code, want)
		}
		return r
	}
	if code := call(t, "POST", svc.URL+"/internal/agent-run-events", report("a1"), nil); code != 401 {
		t.Errorf("without the operator token = %d, want 401", code)
	}
	first := post(report("a1"), 201)
	again := post(report("a1"), 200)
	if first.Approval.ID == "" || again.Approval.ID != first.Approval.ID || again.Created {
		t.Errorf("a repeated report parked %+v then %+v, want the same approval once", first, again)
	}
	approvalNotes := func() []feedItem {
		var out []feedItem
		for _, n := range feed(t, svc.URL) {
			if n.Kind == eval.NotifyAgentApprovalRequested {
				out = append(out, n)
			}
		}
		return out
	}
	notes := approvalNotes()
	if len(notes) != 1 || notes[0].ID != "agent_approval_requested:session:sess_1" || notes[0].Href != "/ui/#/?conversation=conv_1" {
		t.Fatalf("approval notifications %+v, want one per session linked to the conversation", notes)
	}
	// Events: each emitted once.
	for _, typ := range []string{"approval.requested", "agent.run.awaiting_approval"} {
		var page []map[string]any
		if code := call(t, "GET", svc.URL+"/events?type="+typ, nil, &page); code != 200 {
			t.Errorf("GET /events?type=%s = %d", typ, code)
			continue
		}
		if len(page) != 1 {
			t.Errorf("%s emitted %d times, want once", typ, len(page))
		}
	}
	var cleared map[string]string
	if code := call(t, "POST", svc.URL+"/internal/notifications/approval-clear", map[string]string{"workspace": "default", "sessionId": "sess_1"}, &cleared, "x-internal-token", "op-token"); code != 200 || cleared["cleared"] != notes[0].ID {
		t.Fatalf("approval-clear = %d %v", code, cleared)
	}
	for _, n := range feed(t, svc.URL) {
		if n.ID == notes[0].ID {
			t.Errorf("after approval-clear the notification is still in the feed (read at %v): want it deleted", n.ReadAt)
		}
	}
	// The next ask in the session pings again; a decision deletes it.
	second := post(report("a2"), 201)
	if n := approvalNotes(); len(n) != 1 {
		t.Fatalf("after the next ask: %+v, want one notification again", n)
	}
	if code := call(t, "POST", svc.URL+"/approvals/"+second.Approval.ID+"/decide", map[string]string{"decision": "deny", "reason": "no"}, nil); code != 200 {
		t.Fatalf("POST /approvals/%s/decide = %d, want 200", second.Approval.ID, code)
	}
	if n := approvalNotes(); len(n) != 0 {
		t.Errorf("after the decision: %+v, want the notification deleted", n)
	}
}
