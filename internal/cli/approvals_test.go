package cli

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"svc/internal/client"
)

// queries records the query strings a route received, in order.
type queries struct {
	mu   sync.Mutex
	seen []string
}

// wrap answers with h after noting the request's query.
func (q *queries) wrap(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		q.mu.Lock()
		q.seen = append(q.seen, r.URL.RawQuery)
		q.mu.Unlock()
		h(w, r)
	}
}

func (q *queries) all() []string {
	q.mu.Lock()
	defer q.mu.Unlock()
	return append([]string(nil), q.seen...)
}

// approvalRecord is an approval as the service answers it (store.Approval
// less the principal).
func approvalRecord(id, status string) map[string]any {
	rec := map[string]any{
		"workspace": "acme", "id": id, "status": status, "member": "user:alice",
		"agent":  map[string]any{"id": "helper", "name": "Helper", "conversation": "conv_1"},
		"origin": map[string]any{"actor": "user:alice", "source": "api", "agentId": "helper", "agentName": "Helper", "conversationId": "conv_1"},
		"tool":   "delete_dataset", "method": "DELETE", "path": "/datasets/qa", "body": map[string]any{"why": "old"},
		"source": "route", "policy": "default: destructive calls", "onExpiry": "deny",
		"expiresAt": "2030-01-02T04:00:00Z", "createdAt": "2030-01-02T03:00:00Z", "delivered": false, "resumed": false,
		"futureField": "kept",
	}
	if status != "pending" {
		rec["decidedBy"], rec["decidedAt"] = "user:bob", "2030-01-02T03:10:00Z"
	}
	return rec
}

// TestApprovalsList: --status goes to the query; the table has one row
// per approval; an empty list is a note on stderr; --json prints the
// service's body whole; a refused status is the service's message, exit 2.
func TestApprovalsList(t *testing.T) {
	var q queries
	api := newFakeAPI(t, map[string]http.HandlerFunc{
		"GET /approvals": q.wrap(func(w http.ResponseWriter, r *http.Request) {
			switch r.URL.Query().Get("status") {
			case "pending":
				writeJSONBody(w, 200, []any{approvalRecord("ap_1", "pending")})
			case "denied":
				writeJSONBody(w, 200, []any{})
			case "":
				writeJSONBody(w, 200, []any{approvalRecord("ap_2", "approved"), approvalRecord("ap_1", "pending")})
			default:
				writeError(w, 400, "BAD_REQUEST", `status "x": want pending, approved, denied or expired`)
			}
		}),
	})
	env := invocation{env: map[string]string{client.EnvURL: api.srv.URL}}

	out, errOut, code := env.run(t, "approvals", RunApprovals, "ls")
	if code != 0 || errOut != "" {
		t.Fatalf("ls: exit %d stderr %q", code, errOut)
	}
	want := "ID    STATUS    TOOL            AGENT                         MEMBER      CREATED           EXPIRES           DECIDED BY\n" +
		"ap_2  approved  delete_dataset  Helper (helper) in conv_1  user:alice  2030-01-02 03:00  2030-01-02 04:00  user:bob\n" +
		"ap_1  pending   delete_dataset  Helper (helper) in conv_1  user:alice  2030-01-02 03:00  2030-01-02 04:00  -\n"
	if diff := cmp.Diff(collapse(want), collapse(out)); diff != "" {
		t.Errorf("ls table (-want +got):\n%s", diff)
	}

	out, _, code = env.run(t, "approvals", RunApprovals, "ls", "--status", "pending", "--json")
	var got []map[string]any
	if code != 0 || json.Unmarshal([]byte(out), &got) != nil || len(got) != 1 || got[0]["futureField"] != "kept" {
		t.Errorf("ls --json: exit %d stdout %q, want the service's body whole", code, out)
	}

	out, errOut, code = env.run(t, "approvals", RunApprovals, "ls", "--status", "denied")
	if code != 0 || out != "" || !strings.Contains(errOut, "no denied approvals") {
		t.Errorf("empty ls: exit %d stdout %q stderr %q", code, out, errOut)
	}

	out, errOut, code = env.run(t, "approvals", RunApprovals, "ls", "--status", "x")
	if code != exitProblem || out != "" || errOut != "svc approvals: status \"x\": want pending, approved, denied or expired (request req-42)\n" {
		t.Errorf("refused ls: exit %d stdout %q stderr %q", code, out, errOut)
	}
	if diff := cmp.Diff([]string{"", "status=pending", "status=denied", "status=x"}, q.all()); diff != "" {
		t.Errorf("queries sent (-want +got):\n%s", diff)
	}
}

// collapse squeezes runs of spaces, so a table compares without its
// column widths.
func collapse(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = strings.Join(strings.Fields(l), " ")
	}
	return strings.Join(lines, "\n")
}

// TestApprovalsShow: the approval's fields and the parked call's body as
// the agent sent it; --json the record whole; an unknown id the service's
// 404 message and exit 2; no id a usage error that sends nothing.
func TestApprovalsShow(t *testing.T) {
	api := newFakeAPI(t, map[string]http.HandlerFunc{
		"GET /approvals/ap_1": answer(200, approvalRecord("ap_1", "pending")),
		"GET /approvals/ap_9": func(w http.ResponseWriter, _ *http.Request) {
			writeError(w, 404, "NOT_FOUND", "approval ap_9 not found")
		},
	})
	env := invocation{env: map[string]string{client.EnvURL: api.srv.URL}}
	out, errOut, code := env.run(t, "approvals", RunApprovals, "show", "ap_1")
	if code != 0 || errOut != "" {
		t.Fatalf("show: exit %d stderr %q", code, errOut)
	}
	for _, want := range []string{"id ap_1\n", "status pending\n", "tool delete_dataset\n", "call DELETE /datasets/qa\n",
		"agent Helper (helper) in conv_1\n", "member user:alice\n", "source api\n", "expires 2030-01-02 04:00\n",
		"body:\n{\n  \"why\": \"old\"\n}\n"} {
		if !strings.Contains(collapseKeepIndent(out), want) {
			t.Errorf("show stdout %q lacks %q", out, want)
		}
	}
	out, _, code = env.run(t, "approvals", RunApprovals, "show", "--json", "ap_1")
	var rec map[string]any
	if code != 0 || json.Unmarshal([]byte(out), &rec) != nil || rec["futureField"] != "kept" {
		t.Errorf("show --json: exit %d stdout %q", code, out)
	}
	out, errOut, code = env.run(t, "approvals", RunApprovals, "show", "ap_9")
	if code != exitProblem || out != "" || errOut != "svc approvals: approval ap_9 not found (request req-42)\n" {
		t.Errorf("show unknown: exit %d stdout %q stderr %q", code, out, errOut)
	}
	n := len(api.requests())
	_, errOut, code = env.run(t, "approvals", RunApprovals, "show")
	if code != exitProblem || !strings.Contains(errOut, "want exactly one approval id") || len(api.requests()) != n {
		t.Errorf("show without id: exit %d stderr %q, requests %d -> %d", code, errOut, n, len(api.requests()))
	}
}

// collapseKeepIndent squeezes runs of spaces inside a line but keeps its
// leading indentation (the body's JSON).
func collapseKeepIndent(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		trimmed := strings.TrimLeft(l, " ")
		lines[i] = l[:len(l)-len(trimmed)] + strings.Join(strings.Fields(trimmed), " ")
	}
	return strings.Join(lines, "\n")
}

// TestApprovalsDecide: approve and deny send {decision, reason} to POST
// /approvals/:id/decide and print how it settled; a second decision is the
// service's 409 message, exit 2.
func TestApprovalsDecide(t *testing.T) {
	decided := false
	var mu sync.Mutex
	api := newFakeAPI(t, map[string]http.HandlerFunc{
		"POST /approvals/ap_1/decide": func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			defer mu.Unlock()
			if decided {
				writeError(w, 409, "CONFLICT", "approval ap_1 was already approved by user:bob at 2030-01-02T03:10:00Z")
				return
			}
			decided = true
			var body map[string]string
			json.NewDecoder(r.Body).Decode(&body)
			st := map[string]string{"approve": "approved", "deny": "denied"}[body["decision"]]
			rec := approvalRecord("ap_1", st)
			rec["reason"] = body["reason"]
			writeJSONBody(w, 200, rec)
		},
	})
	env := invocation{env: map[string]string{client.EnvURL: api.srv.URL}}
	out, errOut, code := env.run(t, "approvals", RunApprovals, "approve", "ap_1", "--reason", "fine")
	if code != 0 || errOut != "" || out != "ap_1 approved: delete_dataset runs once, as user:alice\n" {
		t.Errorf("approve: exit %d stdout %q stderr %q", code, out, errOut)
	}
	if diff := cmp.Diff(map[string]any{"decision": "approve", "reason": "fine"}, jsonBody(t, api.last("POST", "/approvals/ap_1/decide"))); diff != "" {
		t.Errorf("approve body (-want +got):\n%s", diff)
	}
	out, errOut, code = env.run(t, "approvals", RunApprovals, "deny", "ap_1")
	if code != exitProblem || out != "" || errOut != "svc approvals: approval ap_1 was already approved by user:bob at 2030-01-02T03:10:00Z (request req-42)\n" {
		t.Errorf("second decision: exit %d stdout %q stderr %q", code, out, errOut)
	}
	if diff := cmp.Diff(map[string]any{"decision": "deny"}, jsonBody(t, api.last("POST", "/approvals/ap_1/decide"))); diff != "" {
		t.Errorf("deny body (-want +got):\n%s", diff)
	}
	mu.Lock()
	decided = false
	mu.Unlock()
	out, _, code = env.run(t, "approvals", RunApprovals, "deny", "--json", "ap_1", "--reason", "no")
	var rec map[string]any
	if code != 0 || json.Unmarshal([]byte(out), &rec) != nil || rec["status"] != "denied" || rec["reason"] != "no" {
		t.Errorf("deny --json: exit %d stdout %q", code, out)
	}
}

// TestApprovalPolicies: get prints the policies (or the default's tools
// when none is set); set FILE sends the file's JSON unchanged to PUT
// /approval-policies; a file that is not JSON, or a missing one, is a
// usage error that sends nothing; the service's refusal is its message.
func TestApprovalPolicies(t *testing.T) {
	var mu sync.Mutex
	current := map[string]any{"policies": []any{}, "defaultOff": false, "defaultTools": []string{"delete_*", "move_*"}, "updatedAt": "0001-01-01T00:00:00Z"}
	api := newFakeAPI(t, map[string]http.HandlerFunc{
		"GET /approval-policies": func(w http.ResponseWriter, _ *http.Request) {
			mu.Lock()
			defer mu.Unlock()
			writeJSONBody(w, 200, current)
		},
		"PUT /approval-policies": func(w http.ResponseWriter, r *http.Request) {
			var body map[string]any
			json.NewDecoder(r.Body).Decode(&body)
			if ps, _ := body["policies"].([]any); len(ps) > 0 {
				if p := ps[0].(map[string]any); p["onExpiry"] == "explode" {
					writeError(w, 400, "BAD_REQUEST", `policies[0].onExpiry "explode": want deny or halt`)
					return
				}
			}
			mu.Lock()
			defer mu.Unlock()
			current = map[string]any{"policies": body["policies"], "defaultOff": body["defaultOff"] == true,
				"defaultTools": []string{"delete_*", "move_*"}, "updatedBy": "user:admin", "updatedAt": "2030-01-02T03:00:00Z"}
			writeJSONBody(w, 200, current)
		},
	})
	env := invocation{env: map[string]string{client.EnvURL: api.srv.URL}}
	out, errOut, code := env.run(t, "approvals", RunApprovals, "policies")
	if code != 0 || errOut != "" || out != "no policy set: the default parks agents' destructive calls: delete_*, move_*\n" {
		t.Errorf("policies: exit %d stdout %q stderr %q", code, out, errOut)
	}
	dir := t.TempDir()
	good := filepath.Join(dir, "p.json")
	const doc = `{"policies": [{"name": "deletes", "tools": ["delete_*", "move_*"], "team": "ml", "expiry": "30m", "onExpiry": "halt"}]}`
	os.WriteFile(good, []byte(doc), 0o644)
	out, errOut, code = env.run(t, "approvals", RunApprovals, "policies", "set", good)
	if code != 0 || errOut != "" {
		t.Fatalf("policies set: exit %d stderr %q", code, errOut)
	}
	wantOut := "NAME TOOLS TEAM EXPIRY ON EXPIRY\ndeletes delete_*,move_* ml 30m halt\nset by user:admin at 2030-01-02T03:00:00Z\n"
	if diff := cmp.Diff(wantOut, collapse(out)); diff != "" {
		t.Errorf("policies set stdout (-want +got):\n%s", diff)
	}
	var want any
	json.Unmarshal([]byte(doc), &want)
	if diff := cmp.Diff(want, jsonBody(t, api.last("PUT", "/approval-policies"))); diff != "" {
		t.Errorf("PUT body (-want +got):\n%s", diff)
	}
	out, _, code = env.run(t, "approvals", RunApprovals, "policies", "get", "--json")
	var got map[string]any
	if code != 0 || json.Unmarshal([]byte(out), &got) != nil || got["updatedBy"] != "user:admin" {
		t.Errorf("policies get --json: exit %d stdout %q", code, out)
	}

	bad := filepath.Join(dir, "bad.json")
	os.WriteFile(bad, []byte("policies: [x"), 0o644)
	n := len(api.requests())
	for _, args := range [][]string{{"policies", "set", bad}, {"policies", "set", filepath.Join(dir, "absent.json")}, {"policies", "set"}, {"policies", "frob"}} {
		_, errOut, code = env.run(t, "approvals", RunApprovals, args...)
		if code != exitProblem || !strings.Contains(errOut, "usage") {
			t.Errorf("%q: exit %d stderr %q, want a usage error", args, code, errOut)
		}
	}
	if len(api.requests()) != n {
		t.Errorf("refused command lines sent %d requests", len(api.requests())-n)
	}
	refused := filepath.Join(dir, "refused.json")
	os.WriteFile(refused, []byte(`{"policies": [{"tools": ["x"], "onExpiry": "explode"}]}`), 0o644)
	_, errOut, code = env.run(t, "approvals", RunApprovals, "policies", "set", refused)
	if code != exitProblem || errOut != "svc approvals: policies[0].onExpiry \"explode\": want deny or halt (request req-42)\n" {
		t.Errorf("refused set: exit %d stderr %q", code, errOut)
	}
}
