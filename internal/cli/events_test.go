package cli

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"svc/internal/client"
)

// eventPages is a fake GET /events of two pages: the first names the
// second's cursor in X-Svc-Next-Cursor.
func eventPages(q *queries) http.HandlerFunc {
	return q.wrap(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("type") == "bad type" {
			writeError(w, 400, "BAD_REQUEST", `type="bad type": an event type (dataset.registered) or a glob with *`)
			return
		}
		if r.URL.Query().Get("cursor") == "c2" {
			writeJSONBody(w, 200, []any{
				map[string]any{"seq": 1, "id": "ev_1", "type": "harness.registered", "subject": "harness:h@1", "actor": "user:alice", "createdAt": "2030-01-02T01:00:00Z"},
			})
			return
		}
		w.Header().Set("X-Svc-Next-Cursor", "c2")
		writeJSONBody(w, 200, []any{
			map[string]any{"seq": 3, "id": "ev_3", "type": "dataset.registered", "subject": "dataset:qa@2", "actor": "user:alice",
				"causedBy": "agent:helper:conv_1", "data": map[string]any{"version": "2"}, "createdAt": "2030-01-02T03:00:00Z"},
			map[string]any{"seq": 2, "id": "ev_2", "type": "dataset.registered", "subject": "dataset:qa@1", "actor": "user:alice", "createdAt": "2030-01-02T02:00:00Z"},
		})
	})
}

// TestEvents: --type, --since and --limit go to the query; one page is
// printed with a note naming the next cursor; --all follows it to the last
// page (a progress line on stderr on a terminal only); --json is one array
// of the events as sent; the service's refusal is its message, exit 2; a
// --since that is neither an instant nor a duration sends nothing.
func TestEvents(t *testing.T) {
	var q queries
	api := newFakeAPI(t, map[string]http.HandlerFunc{"GET /events": eventPages(&q)})
	env := invocation{env: map[string]string{client.EnvURL: api.srv.URL}}

	out, errOut, code := env.run(t, "events", RunEvents, "--type", "*.registered", "--since", "2030-01-01T00:00:00Z", "--limit", "2")
	want := "SEQ TYPE SUBJECT ACTOR CAUSED BY AT\n" +
		"3 dataset.registered dataset:qa@2 user:alice agent:helper:conv_1 2030-01-02 03:00\n" +
		"2 dataset.registered dataset:qa@1 user:alice - 2030-01-02 02:00\n"
	if code != 0 || collapse(out) != want || errOut != "more events: --cursor c2 reads the next page, --all reads them all\n" {
		t.Errorf("one page: exit %d stderr %q stdout:\n%s", code, errOut, out)
	}

	out, errOut, code = env.run(t, "events", RunEvents, "--all", "--type", "*.registered")
	if code != 0 || errOut != "" || strings.Count(out, "\n") != 4 || !strings.Contains(out, "harness.registered") {
		t.Errorf("--all: exit %d stderr %q stdout:\n%s", code, errOut, out)
	}
	tty := invocation{env: env.env, tty: true}
	out, errOut, code = tty.run(t, "events", RunEvents, "--all", "--json")
	var got []map[string]any
	if code != 0 || json.Unmarshal([]byte(out), &got) != nil || len(got) != 3 || got[0]["causedBy"] != "agent:helper:conv_1" || got[2]["id"] != "ev_1" {
		t.Errorf("--all --json: exit %d stdout %q", code, out)
	}
	if !strings.Contains(errOut, "\rsvc events: 2 events read (page 1)\x1b[K") || !strings.HasSuffix(errOut, "\rsvc events: 3 events read (page 2)\x1b[K\n") {
		t.Errorf("--all on a terminal: stderr %q, want a progress line rewritten, ended with a newline", errOut)
	}

	_, errOut, code = env.run(t, "events", RunEvents, "--type", "bad type")
	if code != exitProblem || errOut != "svc events: type=\"bad type\": an event type (dataset.registered) or a glob with * (request req-42)\n" {
		t.Errorf("refused type: exit %d stderr %q", code, errOut)
	}
	n := len(api.requests())
	_, errOut, code = env.run(t, "events", RunEvents, "--since", "yesterday")
	if code != exitProblem || !strings.Contains(errOut, "--since \"yesterday\": want an RFC 3339 instant") || len(api.requests()) != n {
		t.Errorf("bad --since: exit %d stderr %q", code, errOut)
	}

	wantQ := []string{
		"limit=2&since=2030-01-01T00%3A00%3A00Z&type=%2A.registered",
		"type=%2A.registered", "cursor=c2&type=%2A.registered",
		"", "cursor=c2",
		"type=bad+type",
	}
	if diff := cmp.Diff(wantQ, q.all()); diff != "" {
		t.Errorf("queries (-want +got):\n%s", diff)
	}
}

// TestSinceInstant: an instant passes as written; a duration counts back
// from now.
func TestSinceInstant(t *testing.T) {
	now := time.Date(2030, 1, 2, 3, 0, 0, 0, time.UTC)
	for in, want := range map[string]string{"2030-01-01T00:00:00Z": "2030-01-01T00:00:00Z", "2h": "2030-01-02T01:00:00Z", "90m": "2030-01-02T01:30:00Z"} {
		if got, err := sinceInstant(in, now); err != nil || got != want {
			t.Errorf("sinceInstant(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, in := range []string{"-1h", "0s", "soon"} {
		if _, err := sinceInstant(in, now); err == nil {
			t.Errorf("sinceInstant(%q) accepted", in)
		}
	}
}
