package cli

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"svc/internal/client"
)

// TestNotificationsList: --unread becomes ?unread=1; the table shows the
// kind, title, read state and the web view link; --json the body whole;
// an empty feed is a note on stderr.
func TestNotificationsList(t *testing.T) {
	var q queries
	api := newFakeAPI(t, map[string]http.HandlerFunc{
		"GET /notifications": q.wrap(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Query().Get("unread") == "1" {
				writeJSONBody(w, 200, []any{})
				return
			}
			writeJSONBody(w, 200, []any{
				map[string]any{"id": "run_failed:r_1", "kind": "run_failed", "title": "Run r_1 failed", "body": "exit 1",
					"link": map[string]any{"runId": "r_1"}, "href": "/ui/#/runs/r_1", "createdAt": "2030-01-02T03:00:00Z", "extra": 1},
				map[string]any{"id": "scorecard_completed:sc_1", "kind": "scorecard_completed", "title": "Scorecard sc_1 completed",
					"createdAt": "2030-01-02T02:00:00Z", "readAt": "2030-01-02T02:30:00Z"},
			})
		}),
	})
	env := invocation{env: map[string]string{client.EnvURL: api.srv.URL}}
	out, errOut, code := env.run(t, "notifications", RunNotifications, "ls")
	want := "ID KIND TITLE CREATED READ LINK\n" +
		"run_failed:r_1 run_failed Run r_1 failed 2030-01-02 03:00 no /ui/#/runs/r_1\n" +
		"scorecard_completed:sc_1 scorecard_completed Scorecard sc_1 completed 2030-01-02 02:00 yes -\n"
	if code != 0 || errOut != "" || collapse(out) != want {
		t.Errorf("ls: exit %d stderr %q stdout:\n%s\nwant (spaces collapsed):\n%s", code, errOut, out, want)
	}
	out, _, code = env.run(t, "notifications", RunNotifications, "ls", "--json")
	var got []map[string]any
	if code != 0 || json.Unmarshal([]byte(out), &got) != nil || len(got) != 2 || got[0]["extra"] != float64(1) {
		t.Errorf("ls --json: exit %d stdout %q", code, out)
	}
	out, errOut, code = env.run(t, "notifications", RunNotifications, "ls", "--unread")
	if code != 0 || out != "" || errOut != "no unread notifications\n" {
		t.Errorf("ls --unread: exit %d stdout %q stderr %q", code, out, errOut)
	}
	out, _, _ = env.run(t, "notifications", RunNotifications, "ls", "--format", "jsonl")
	if !strings.HasPrefix(out, `{"id":"run_failed:r_1","kind":"run_failed","title":"Run r_1 failed","createdAt":"2030-01-02T03:00:00Z","read":false,"href":"/ui/#/runs/r_1"}`) {
		t.Errorf("ls --format jsonl: %q", out)
	}
	if diff := cmp.Diff([]string{"", "", "unread=1", ""}, q.all()); diff != "" {
		t.Errorf("queries (-want +got):\n%s", diff)
	}
}

// TestNotificationsRead: ids or --all become the body of POST
// /notifications/read; neither, or both, is a usage error that sends
// nothing.
func TestNotificationsRead(t *testing.T) {
	api := newFakeAPI(t, map[string]http.HandlerFunc{"POST /notifications/read": answer(200, map[string]int{"marked": 2})})
	env := invocation{env: map[string]string{client.EnvURL: api.srv.URL}}
	out, errOut, code := env.run(t, "notifications", RunNotifications, "read", "n1", "n2")
	if code != 0 || errOut != "" || out != "marked 2 read\n" {
		t.Errorf("read ids: exit %d stdout %q stderr %q", code, out, errOut)
	}
	if diff := cmp.Diff(map[string]any{"ids": []any{"n1", "n2"}}, jsonBody(t, api.last("POST", "/notifications/read"))); diff != "" {
		t.Errorf("read ids body (-want +got):\n%s", diff)
	}
	out, _, code = env.run(t, "notifications", RunNotifications, "read", "--all", "--json")
	if code != 0 || out != "{\"marked\":2}\n" {
		t.Errorf("read --all --json: exit %d stdout %q", code, out)
	}
	if diff := cmp.Diff(map[string]any{"all": true}, jsonBody(t, api.last("POST", "/notifications/read"))); diff != "" {
		t.Errorf("read --all body (-want +got):\n%s", diff)
	}
	n := len(api.requests())
	for _, args := range [][]string{{"read"}, {"read", "--all", "n1"}} {
		_, errOut, code := env.run(t, "notifications", RunNotifications, args...)
		if code != exitProblem || !strings.Contains(errOut, "usage") {
			t.Errorf("%q: exit %d stderr %q", args, code, errOut)
		}
	}
	if len(api.requests()) != n {
		t.Errorf("refused command lines sent requests")
	}
}

// TestNotificationChannels: add sends {type, url, kinds} and prints the id
// and a webhook's secret once, with a line saying it will not be shown
// again (a slack channel has none); ls lists them ("all" for no kinds);
// rm and enable call their routes; the service's refusals are its
// messages, exit 2.
func TestNotificationChannels(t *testing.T) {
	api := newFakeAPI(t, map[string]http.HandlerFunc{
		"POST /notification-channels": func(w http.ResponseWriter, r *http.Request) {
			var body map[string]any
			json.NewDecoder(r.Body).Decode(&body)
			if strings.Contains(body["url"].(string), "10.0.0.1") {
				writeError(w, 400, "BAD_REQUEST", "url: 10.0.0.1 is a private address; SVC_WEBHOOK_ALLOW may name it")
				return
			}
			ch := map[string]any{"id": "nch_1", "owner": "user:alice", "type": body["type"], "url": body["url"], "kinds": body["kinds"],
				"enabled": true, "failures": 0, "createdAt": "2030-01-02T03:00:00Z"}
			if body["type"] == "webhook" {
				ch["secret"] = "whsec_c2VjcmV0"
			}
			writeJSONBody(w, 201, ch)
		},
		"GET /notification-channels": answer(200, []any{
			map[string]any{"id": "nch_1", "owner": "user:alice", "type": "webhook", "url": "https://hooks.example/a", "kinds": []string{},
				"enabled": true, "failures": 0, "createdAt": "2030-01-02T03:00:00Z"},
			map[string]any{"id": "nch_2", "owner": "user:alice", "type": "slack", "url": "https://hooks.slack.example/T/B", "kinds": []string{"run_failed", "agent_approval_requested"},
				"enabled": false, "failures": 5, "lastError": "HTTP 500", "disabledAt": "2030-01-02T04:00:00Z", "createdAt": "2030-01-02T03:00:00Z"},
		}),
		"DELETE /notification-channels/nch_1": func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(204) },
		"DELETE /notification-channels/nch_9": func(w http.ResponseWriter, _ *http.Request) {
			writeError(w, 404, "NOT_FOUND", "notification channel nch_9 not found")
		},
		"POST /notification-channels/nch_2/enable": answer(200, map[string]any{"id": "nch_2", "type": "slack", "enabled": true, "failures": 0}),
	})
	env := invocation{env: map[string]string{client.EnvURL: api.srv.URL}}

	out, errOut, code := env.run(t, "notifications", RunNotifications, "channels", "add", "--type", "webhook", "--to", "https://hooks.example/a")
	if code != 0 || out != "nch_1\nsecret whsec_c2VjcmV0\n" || errOut != "keep the secret now: it verifies the webhook's signatures and will not be shown again\n" {
		t.Errorf("add webhook: exit %d stdout %q stderr %q", code, out, errOut)
	}
	if diff := cmp.Diff(map[string]any{"type": "webhook", "url": "https://hooks.example/a"}, jsonBody(t, api.last("POST", "/notification-channels"))); diff != "" {
		t.Errorf("add webhook body (-want +got):\n%s", diff)
	}
	out, errOut, code = env.run(t, "notifications", RunNotifications, "channels", "add", "--type", "slack", "--to", "https://hooks.slack.example/T/B", "--kinds", "run_failed, agent_approval_requested")
	if code != 0 || out != "nch_1\n" || errOut != "" {
		t.Errorf("add slack: exit %d stdout %q stderr %q", code, out, errOut)
	}
	if diff := cmp.Diff(map[string]any{"type": "slack", "url": "https://hooks.slack.example/T/B", "kinds": []any{"run_failed", "agent_approval_requested"}},
		jsonBody(t, api.last("POST", "/notification-channels"))); diff != "" {
		t.Errorf("add slack body (-want +got):\n%s", diff)
	}
	_, errOut, code = env.run(t, "notifications", RunNotifications, "channels", "add", "--type", "slack", "--to", "http://10.0.0.1/x")
	if code != exitProblem || errOut != "svc notifications: url: 10.0.0.1 is a private address; SVC_WEBHOOK_ALLOW may name it (request req-42)\n" {
		t.Errorf("refused add: exit %d stderr %q", code, errOut)
	}
	n := len(api.requests())
	_, errOut, code = env.run(t, "notifications", RunNotifications, "channels", "add", "--type", "slack")
	if code != exitProblem || !strings.Contains(errOut, "--type webhook|slack --to URL") || len(api.requests()) != n {
		t.Errorf("add without url: exit %d stderr %q", code, errOut)
	}

	out, errOut, code = env.run(t, "notifications", RunNotifications, "channels", "ls")
	want := "ID TYPE URL KINDS ENABLED FAILURES LAST ERROR\n" +
		"nch_1 webhook https://hooks.example/a all yes 0 -\n" +
		"nch_2 slack https://hooks.slack.example/T/B run_failed,agent_approval_requested no 5 HTTP 500\n"
	if code != 0 || errOut != "" || collapse(out) != want {
		t.Errorf("channels ls: exit %d stderr %q stdout:\n%s", code, errOut, out)
	}
	out, _, code = env.run(t, "notifications", RunNotifications, "channels", "ls", "--format", "csv")
	if code != 0 || !strings.Contains(out, "nch_1,webhook,https://hooks.example/a,,yes,0,\n") {
		t.Errorf("channels ls csv: exit %d stdout %q", code, out)
	}

	out, errOut, code = env.run(t, "notifications", RunNotifications, "channels", "rm", "nch_1")
	if code != 0 || out != "nch_1 deleted\n" || errOut != "" {
		t.Errorf("rm: exit %d stdout %q stderr %q", code, out, errOut)
	}
	api.last("DELETE", "/notification-channels/nch_1")
	_, errOut, code = env.run(t, "notifications", RunNotifications, "channels", "rm", "nch_9")
	if code != exitProblem || errOut != "svc notifications: notification channel nch_9 not found (request req-42)\n" {
		t.Errorf("rm unknown: exit %d stderr %q", code, errOut)
	}
	out, errOut, code = env.run(t, "notifications", RunNotifications, "channels", "enable", "nch_2")
	if code != 0 || out != "nch_2 enabled\n" || errOut != "" {
		t.Errorf("enable: exit %d stdout %q stderr %q", code, out, errOut)
	}
	_, errOut, code = env.run(t, "notifications", RunNotifications, "channels", "frob")
	if code != exitProblem || !strings.Contains(errOut, `unknown subcommand "frob"`) {
		t.Errorf("unknown subcommand: exit %d stderr %q", code, errOut)
	}
}
