package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"svc/internal/testing/testwait"
)

// Approvals through the real binary (spec §4.9, §3; issue 33's "tests
// that must exist"; docs/approvals.md): an agent's call a policy names
// parks, a person decides it once, the waiting call gets the route's
// answer or a refusal, and a call whose caller is gone runs once, by the
// ApprovalWorkflow, even across a SIGKILL of svc dev and on the
// production roles (svc serve + svc worker on PostgreSQL).

// approvalView is what GET /approvals/:id answers.
type approvalView struct {
	ID        string `json:"id"`
	Status    string `json:"status"`
	Member    string `json:"member"`
	Tool      string `json:"tool"`
	Method    string `json:"method"`
	Path      string `json:"path"`
	Principal any    `json:"principal"`
	Origin    struct {
		Actor          string `json:"actor"`
		Source         string `json:"source"`
		AgentID        string `json:"agentId"`
		AgentName      string `json:"agentName"`
		ConversationID string `json:"conversationId"`
	} `json:"origin"`
	Body      json.RawMessage `json:"body"`
	DecidedBy string          `json:"decidedBy"`
	DecidedAt *time.Time      `json:"decidedAt"`
	Reason    string          `json:"reason"`
	Delivered bool            `json:"delivered"`
	Resumed   bool            `json:"resumed"`
	Executor  string          `json:"executor"`
	// ExecutedAt is when the call's answer was stored.
	ExecutedAt *time.Time `json:"executedAt"`
	Result     *struct {
		Status int             `json:"status"`
		Body   json.RawMessage `json:"body"`
	} `json:"result"`
}

// errorView is the one error shape.
type errorView struct {
	Error struct {
		Code    string         `json:"code"`
		Message string         `json:"message"`
		Details map[string]any `json:"details"`
	} `json:"error"`
}

// agentHeaders declare an agent on a plain HTTP call.
var agentHeaders = []string{"X-Svc-Agent-Id", "http-bot", "X-Svc-Agent-Name", "HTTP Bot", "X-Svc-Conversation-Id", "conv-1"}

// putPolicies replaces the default workspace's approval policies (as dev,
// an admin).
func putPolicies(t *testing.T, url string, body string) {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(body), &v); err != nil {
		t.Fatal(err)
	}
	if code := call(t, "PUT", url+"/approval-policies", v, nil); code != 200 {
		t.Fatalf("PUT /approval-policies = %d", code)
	}
}

// getApproval reads one approval as key's member.
func getApproval(t *testing.T, url, key, id string) approvalView {
	t.Helper()
	var a approvalView
	if code := call(t, "GET", url+"/approvals/"+id, nil, &a, "Authorization", "Bearer "+key); code != 200 {
		t.Fatalf("GET /approvals/%s = %d", id, code)
	}
	if a.Principal != nil {
		t.Errorf("GET /approvals/%s shows the stored principal: %v", id, a.Principal)
	}
	return a
}

// pendingApproval waits until exactly one approval is pending and returns it.
func pendingApproval(t *testing.T, url, key string) approvalView {
	t.Helper()
	return testwait.UntilValue(t, 30*time.Second, "the agent's call to park", func() (approvalView, bool) {
		var list []approvalView
		if code := call(t, "GET", url+"/approvals?status=pending", nil, &list, "Authorization", "Bearer "+key); code != 200 {
			t.Fatalf("GET /approvals?status=pending = %d", code)
		}
		if len(list) != 1 {
			return approvalView{}, false
		}
		return list[0], true
	})
}

// decide settles approval id as key's member and returns the status.
func decide(t *testing.T, url, key, id, decision string, out any) int {
	t.Helper()
	return call(t, "POST", url+"/approvals/"+id+"/decide", map[string]string{"decision": decision, "reason": "checked by a person"}, out,
		"Authorization", "Bearer "+key)
}

// agentCallResult is one tool call of agent.mjs, errors included.
type agentCallResult struct {
	Name    string          `json:"name"`
	IsError bool            `json:"isError"`
	Result  json.RawMessage `json:"result"`
}

// startAgent runs the official TypeScript MCP SDK's client as an agent
// (api/testdata/mcp-client/agent.mjs) in the background: its tool calls'
// results, errors included, arrive on the channel once it ends (an error
// string when the client itself failed).
func startAgent(t *testing.T, url string, client, headers map[string]string, calls [][2]any) <-chan any {
	ch, _ := startAgentCancel(t, url, client, headers, calls)
	return ch
}

// startAgentCancel is startAgent with a function that kills the client
// (the agent goes away mid-call).
func startAgentCancel(t *testing.T, url string, client, headers map[string]string, calls [][2]any) (<-chan any, func()) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	t.Cleanup(cancel)
	cmd := agentCommand(t, ctx, url, client, headers, calls)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out := make(chan any, 1)
	go func() {
		defer cancel()
		b, err := cmd.Output()
		if err != nil {
			out <- fmt.Sprintf("node agent.mjs: %v\nstderr:\n%s\nstdout:\n%s", err, stderr.String(), b)
			return
		}
		var res struct {
			SessionID string            `json:"sessionId"`
			Calls     []agentCallResult `json:"calls"`
		}
		if err := json.Unmarshal(b, &res); err != nil {
			out <- fmt.Sprintf("decoding the agent's output: %v\n%s", err, b)
			return
		}
		out <- res.Calls
	}()
	return out, cancel
}

// agentCalls waits for startAgent's results.
func agentCalls(t *testing.T, ch <-chan any) []agentCallResult {
	t.Helper()
	select {
	case v := <-ch:
		if s, ok := v.(string); ok {
			t.Fatal(s)
		}
		return v.([]agentCallResult)
	case <-time.After(3 * time.Minute):
		t.Fatal("the MCP agent did not finish within 3 minutes")
	}
	return nil
}

func approvalDataset(id string) map[string]any {
	return map[string]any{"id": id, "version": "1.0.0",
		"cases": []any{map[string]any{"id": "a", "task": "do a", "graders": []any{map[string]any{"id": "g", "kind": "exit_code"}}}}}
}

// countEvents counts the events of one type (as dev, an admin).
func countEvents(t *testing.T, url, typ string) int {
	t.Helper()
	es, _ := listEvents(t, url, "?limit=200&type="+typ)
	return len(es)
}

// TestApprovalsMCPAgentWaitsForAPerson (issue 33 "tests that must exist",
// spec §4.9 and §3's approval rows): the official TypeScript MCP client,
// acting as an agent, calls create_dataset, which a PUT /approval-policies
// glob names; the call waits; another member approves over HTTP; the MCP
// call returns the registration's own answer, whose origin names the
// agent; the approval shows delivered (not resumed) and who decided; a
// second decision is 409. Under the default policy (no policy set) the
// agent's delete_dataset_version parks too, and a denial answers the MCP call
// with a refusal naming the person, and nothing is deleted.
func TestApprovalsMCPAgentWaitsForAPerson(t *testing.T) {
	svc := start(t, devEnv(t.TempDir(), "SVC_INTERNAL_TOKEN="+sandboxOperatorToken), true, "dev")
	url := svc.URL
	person := otherMember(t, url)
	var me struct {
		Subject string `json:"subject"`
	}
	if code := call(t, "GET", url+"/me", nil, &me, "Authorization", "Bearer "+person); code != 200 || me.Subject == "" || me.Subject == "dev" {
		t.Fatalf("GET /me as the other member = %d %+v, want a member other than dev", code, me)
	}

	putPolicies(t, url, `{"policies":[{"name":"registrations","tools":["create_dataset"],"expiry":"10m"}]}`)
	agent := startAgent(t, url, map[string]string{"name": "e2e-agent", "title": "E2E Agent"}, nil,
		[][2]any{{"create_dataset", map[string]any{"body": approvalDataset("parked-ds")}}})
	ap := pendingApproval(t, url, person)
	if ap.Tool != "create_dataset" || ap.Method != "POST" || ap.Path != "/datasets" || ap.Member != "dev" ||
		ap.Origin.Actor != "dev" || ap.Origin.Source != "mcp" || ap.Origin.AgentID != "e2e-agent" || ap.Origin.AgentName != "E2E Agent" ||
		ap.Origin.ConversationID == "" || !strings.Contains(string(ap.Body), `"parked-ds"`) {
		t.Errorf("the parked approval = %+v; want create_dataset as the agent sent it, dev's, origin the MCP agent", ap)
	}
	if code := call(t, "GET", url+"/datasets/parked-ds/versions/1.0.0", nil, nil); code != 404 {
		t.Errorf("the parked registration is readable (%d) before anybody decided", code)
	}
	// The agent cannot approve its own call.
	if code := call(t, "POST", url+"/approvals/"+ap.ID+"/decide", map[string]string{"decision": "approve"}, nil, agentHeaders...); code != 403 {
		t.Errorf("an agent's decide = %d, want 403", code)
	}
	if code := decide(t, url, person, ap.ID, "approve", nil); code != 200 {
		t.Fatalf("approve = %d", code)
	}
	calls := agentCalls(t, agent)
	if len(calls) != 1 || calls[0].IsError {
		t.Fatalf("the agent's call answered %+v; want the registration's answer", calls)
	}
	var v struct {
		ID     string        `json:"id"`
		Origin versionOrigin `json:"origin"`
	}
	if err := json.Unmarshal(calls[0].Result, &v); err != nil {
		t.Fatalf("the agent's result %s: %v", calls[0].Result, err)
	}
	if v.ID != "parked-ds" || v.Origin.Via != "mcp" || v.Origin.AgentID != "e2e-agent" || v.Origin.ConversationID != ap.Origin.ConversationID {
		t.Errorf("the agent's result = %s; want the registered dataset, its origin the agent in conversation %s", calls[0].Result, ap.Origin.ConversationID)
	}
	got := getApproval(t, url, person, ap.ID)
	if got.Status != "approved" || !got.Delivered || got.Resumed || got.DecidedBy != me.Subject || got.DecidedAt == nil ||
		got.Result == nil || got.Result.Status != 201 {
		t.Errorf("after the run: %+v; want approved by %s, delivered, not resumed, the 201 stored", got, me.Subject)
	}
	var eb errorView
	if code := decide(t, url, person, ap.ID, "deny", &eb); code != 409 || !strings.Contains(eb.Error.Message, "already approved") {
		t.Errorf("a second decision = %d %+v, want 409 saying how it settled", code, eb.Error)
	}
	if n := countEvents(t, url, "dataset.registered"); n != 1 {
		t.Errorf("dataset.registered %d times, want once", n)
	}
	for _, typ := range []string{"approval.requested", "agent.run.awaiting_approval", "approval.approved", "approval.executed"} {
		if n := countEvents(t, url, typ); n != 1 {
			t.Errorf("%s %d times, want once", typ, n)
		}
	}

	// The default policy: with none set, an agent's delete parks.
	putPolicies(t, url, `{"policies":[]}`)
	agent = startAgent(t, url, map[string]string{"name": "e2e-agent"}, nil,
		[][2]any{{"delete_dataset_version", map[string]any{"id": "parked-ds", "version": "1.0.0"}}})
	del := pendingApproval(t, url, person)
	if del.Tool != "delete_dataset_version" || !strings.HasPrefix(del.Path, "/datasets/parked-ds") {
		t.Errorf("the parked delete = %+v", del)
	}
	if code := decide(t, url, person, del.ID, "deny", nil); code != 200 {
		t.Fatalf("deny = %d", code)
	}
	calls = agentCalls(t, agent)
	if len(calls) != 1 || !calls[0].IsError || !strings.Contains(string(calls[0].Result), "denied by "+me.Subject) ||
		!strings.Contains(string(calls[0].Result), "checked by a person") {
		t.Errorf("the denied delete answered %+v; want a refusal naming who denied it and why", calls)
	}
	if code := call(t, "GET", url+"/datasets/parked-ds/versions/1.0.0", nil, nil); code != 200 {
		t.Errorf("after the denied delete the dataset answers %d, want 200 (nothing ran)", code)
	}
}

// TestApprovalsResumeOnceAcrossKill (issue 33: "the same with the caller
// gone"; spec §3: a dead park resumes, resumed:true): an agent's POST
// /runs with Prefer: wait=0 answers 202 APPROVAL_PENDING naming the
// approval; a person approves; the ApprovalWorkflow runs the call once
// (resumed, the run exists once). Then the same with svc dev SIGKILLed
// right after the decision answers and started again on its data dir: the
// call still runs, exactly once.
func TestApprovalsResumeOnceAcrossKill(t *testing.T) {
	dir := t.TempDir()
	env := devEnv(dir, "SVC_INTERNAL_TOKEN="+sandboxOperatorToken)
	svc := start(t, env, true, "dev")
	url := svc.URL
	person := otherMember(t, url)
	h := map[string]any{"id": "ap-h", "version": "1.0.0", "kind": "process", "command": []string{"true"}}
	if code := call(t, "POST", url+"/harnesses", h, nil); code != 201 {
		t.Fatalf("POST /harnesses = %d", code)
	}
	putPolicies(t, url, `{"policies":[{"name":"runs","tools":["submit_run"]}]}`)

	park := func(url, caseID string) string {
		t.Helper()
		body := map[string]any{"harness": map[string]string{"id": "ap-h", "version": "1.0.0"},
			"case": map[string]any{"id": caseID, "task": "t", "timeoutSec": 60}}
		var eb errorView
		code := call(t, "POST", url+"/runs", body, &eb, append([]string{"Prefer", "wait=0"}, agentHeaders...)...)
		id, _ := eb.Error.Details["approval"].(string)
		if code != 202 || eb.Error.Code != "APPROVAL_PENDING" || id == "" {
			t.Fatalf("the agent's parked POST /runs = %d %+v, want 202 APPROVAL_PENDING with the approval", code, eb.Error)
		}
		return id
	}
	runsOf := func(url, caseID string) int {
		t.Helper()
		var list []struct {
			ID     string `json:"id"`
			CaseID string `json:"caseId"`
		}
		if code := call(t, "GET", url+"/runs?limit=200", nil, &list); code != 200 {
			t.Fatalf("GET /runs = %d", code)
		}
		n := 0
		for _, r := range list {
			if r.CaseID == caseID {
				n++
			}
		}
		return n
	}
	resumed := func(url, id string) approvalView {
		t.Helper()
		return testwait.UntilValue(t, 2*time.Minute, "the workflow to run the approved call", func() (approvalView, bool) {
			a := getApproval(t, url, person, id)
			return a, a.Result != nil
		})
	}

	first := park(url, "gone-1")
	if n := runsOf(url, "gone-1"); n != 0 {
		t.Fatalf("%d runs before the decision, want none", n)
	}
	if code := decide(t, url, person, first, "approve", nil); code != 200 {
		t.Fatalf("approve = %d", code)
	}
	a := resumed(url, first)
	if !a.Resumed || a.Delivered || a.Executor != "workflow" || a.Result.Status != 202 {
		t.Errorf("the approved call = %+v; want resumed by the workflow, the route's 202 stored", a)
	}
	if n := runsOf(url, "gone-1"); n != 1 {
		t.Errorf("%d runs of the approved call, want exactly 1", n)
	}

	// SIGKILL right after the decision answers; start again on the data dir.
	second := park(url, "gone-2")
	if code := decide(t, url, person, second, "approve", nil); code != 200 {
		t.Fatalf("approve = %d", code)
	}
	svc.signal(syscall.SIGKILL)
	killed := time.Now()
	svc.wait(time.Minute)
	again := start(t, env, true, "dev")
	url = again.URL
	a = resumed(url, second)
	if !a.Resumed || a.Result.Status != 202 || a.ExecutedAt == nil {
		t.Errorf("after the restart the approved call = %+v; want resumed, the route's 202 stored", a)
	} else if a.ExecutedAt.After(killed) {
		t.Logf("the kill landed between the decision and the execution: the restarted svc ran it at %s", a.ExecutedAt)
	} else {
		t.Logf("the execution (%s) beat the kill (%s): this pass checked only that the restart did not run it again", a.ExecutedAt, killed)
	}
	// The run exists once, and stays once: a later read finds no second.
	if n := runsOf(url, "gone-2"); n != 1 {
		t.Errorf("%d runs of the call approved before the kill, want exactly 1", n)
	}
	if n := countEvents(t, url, "approval.executed"); n != 2 {
		t.Errorf("approval.executed %d times, want 2 (once per approval)", n)
	}
	if n := runsOf(url, "gone-1"); n != 1 {
		t.Errorf("%d runs of the first call after the restart, want still 1", n)
	}
}

// TestApprovalsMCPClientGone (issue 33: "the same with the caller
// gone", the MCP client disconnecting): the official MCP client's parked
// call is killed mid-wait; a person approves; the workflow runs the call
// once (resumed, not delivered) and the dataset is registered once.
func TestApprovalsMCPClientGone(t *testing.T) {
	// This test found that the MCP SDK (go-sdk) gives a stateful session's
	// tool handler a context the client's disconnect does not cancel
	// (StreamableHTTPOptions.PropagateRequestCancellation covers only the
	// 2026-07-28 protocol); api/mcp.go ties each tool call to the POST that
	// carried it, so the parked call's caller is seen gone.

	svc := start(t, devEnv(t.TempDir(), "SVC_INTERNAL_TOKEN="+sandboxOperatorToken), true, "dev")
	url := svc.URL
	person := otherMember(t, url)
	putPolicies(t, url, `{"policies":[{"name":"registrations","tools":["create_dataset"]}]}`)
	agent, kill := startAgentCancel(t, url, map[string]string{"name": "e2e-agent"}, nil,
		[][2]any{{"create_dataset", map[string]any{"body": approvalDataset("gone-ds")}}})
	ap := pendingApproval(t, url, person)
	kill()
	<-agent
	// The server notices the client went away: the live wait is released
	// (liveUntil moves from the 55 s bound to the moment it left).
	testwait.Until(t, 30*time.Second, "the parked call's live wait to end", func() bool {
		var raw map[string]any
		call(t, "GET", url+"/approvals/"+ap.ID, nil, &raw, "Authorization", "Bearer "+person)
		lu, _ := raw["liveUntil"].(string)
		at, err := time.Parse(time.RFC3339Nano, lu)
		return err == nil && at.Before(time.Now())
	})
	if code := decide(t, url, person, ap.ID, "approve", nil); code != 200 {
		t.Fatalf("approve = %d", code)
	}
	a := testwait.UntilValue(t, 2*time.Minute, "the workflow to run the approved call", func() (approvalView, bool) {
		a := getApproval(t, url, person, ap.ID)
		return a, a.Result != nil
	})
	if !a.Resumed || a.Delivered || a.Executor != "workflow" || a.Result.Status != 201 {
		t.Errorf("the approved call of the gone client = %+v; want resumed by the workflow, the 201 stored", a)
	}
	if n := countEvents(t, url, "dataset.registered"); n != 1 {
		t.Errorf("dataset.registered %d times, want once", n)
	}
}

// TestApprovalsExpiryDenies (issue 33: "expiry with a deny policy"): a
// policy with a 3 s expiry; nobody decides; the approval settles
// expired, with no decidedBy (never a person's denial); the agent's
// waiting MCP call answers a refusal naming the expiry; nothing ran; a
// decision after it is 409. With onExpiry halt, the agent conversation's
// later calls are refused.
func TestApprovalsExpiryDenies(t *testing.T) {
	svc := start(t, devEnv(t.TempDir(), "SVC_INTERNAL_TOKEN="+sandboxOperatorToken), true, "dev")
	url := svc.URL
	person := otherMember(t, url)
	putPolicies(t, url, `{"policies":[{"name":"short","tools":["create_dataset"],"expiry":"3s","onExpiry":"deny"}]}`)
	agent := startAgent(t, url, map[string]string{"name": "e2e-agent"}, nil,
		[][2]any{{"create_dataset", map[string]any{"body": approvalDataset("expiring-ds")}}})
	ap := pendingApproval(t, url, person)
	calls := agentCalls(t, agent)
	if len(calls) != 1 || !calls[0].IsError || !strings.Contains(string(calls[0].Result), "expired") ||
		!strings.Contains(string(calls[0].Result), "nobody deciding") || !strings.Contains(string(calls[0].Result), ap.ID) {
		t.Errorf("the expired call answered %+v; want a refusal naming the approval's expiry", calls)
	}
	got := getApproval(t, url, person, ap.ID)
	if got.Status != "expired" || got.DecidedBy != "" || got.DecidedAt != nil || got.Result != nil || got.Executor != "" {
		t.Errorf("the expired approval = %+v; want expired, decided by nobody, nothing run", got)
	}
	if code := call(t, "GET", url+"/datasets/expiring-ds/versions/1.0.0", nil, nil); code != 404 {
		t.Errorf("the expired registration answers %d, want 404 (nothing ran)", code)
	}
	var eb errorView
	if code := decide(t, url, person, ap.ID, "approve", &eb); code != 409 || !strings.Contains(eb.Error.Message, "expired") {
		t.Errorf("approving after expiry = %d %+v, want 409 saying it expired", code, eb.Error)
	}
	if n, d := countEvents(t, url, "approval.expired"), countEvents(t, url, "approval.denied"); n != 1 || d != 0 {
		t.Errorf("approval.expired %d, approval.denied %d; want 1 and 0", n, d)
	}

	// onExpiry halt: the waiting call is refused saying the run is halted,
	// and every later mutating call of that agent conversation is refused
	// too, parked route or not; another conversation is not halted.
	putPolicies(t, url, `{"policies":[{"name":"halting","tools":["create_judge"],"expiry":"2s","onExpiry":"halt"}]}`)
	judge := map[string]any{"id": "halt-j", "version": "1.0.0", "kind": "code", "language": "python", "code": "print(1)"}
	var hb errorView
	if code := call(t, "POST", url+"/judges", judge, &hb, agentHeaders...); code != 403 || hb.Error.Details["halted"] != true ||
		!strings.Contains(hb.Error.Message, "halts this agent's run") {
		t.Errorf("the halting expiry answered %d %+v, want 403 saying the run is halted", code, hb.Error)
	}
	if code := call(t, "POST", url+"/datasets", approvalDataset("after-halt"), &hb, agentHeaders...); code != 403 || hb.Error.Details["halted"] != true {
		t.Errorf("the halted conversation's next call = %d %+v, want 403 halted", code, hb.Error)
	}
	other := []string{"X-Svc-Agent-Id", "http-bot", "X-Svc-Conversation-Id", "conv-2"}
	if code := call(t, "POST", url+"/datasets", approvalDataset("other-conv"), nil, other...); code != 201 {
		t.Errorf("another conversation's call = %d, want 201 (only the halted conversation stops)", code)
	}
	if n := countEvents(t, url, "agent.run.halted"); n != 1 {
		t.Errorf("agent.run.halted %d times, want once", n)
	}
}

// TestApprovalsResumeOnPostgres (issue 33; docs/approvals.md "Once, even
// across a crash"): on the production roles (svc serve and svc worker on
// PostgreSQL, the worker in another process than the API) an approved
// call whose caller is gone is run by the worker's ApprovalWorkflow
// through POST /internal/approvals/:id/execute, once.
func TestApprovalsResumeOnPostgres(t *testing.T) {
	url := pgStack(t, "SVC_INTERNAL_TOKEN="+sandboxOperatorToken)
	person := otherMember(t, url)
	putPolicies(t, url, `{"policies":[{"name":"registrations","tools":["create_judge"]}]}`)
	judge := map[string]any{"id": "pg-j", "version": "1.0.0", "kind": "code", "language": "python", "code": "print(1)"}
	var eb errorView
	code := call(t, "POST", url+"/judges", judge, &eb, append([]string{"Prefer", "wait=0"}, agentHeaders...)...)
	id, _ := eb.Error.Details["approval"].(string)
	if code != 202 || id == "" {
		t.Fatalf("the agent's parked POST /judges = %d %+v, want 202 with the approval", code, eb.Error)
	}
	if code := decide(t, url, person, id, "approve", nil); code != 200 {
		t.Fatalf("approve = %d", code)
	}
	a := testwait.UntilValue(t, 2*time.Minute, "the worker to run the approved call", func() (approvalView, bool) {
		a := getApproval(t, url, person, id)
		return a, a.Result != nil
	})
	if !a.Resumed || a.Executor != "workflow" || a.Result.Status != 201 {
		t.Errorf("the approved call = %+v; want resumed by the workflow, the 201 stored", a)
	}
	// The answer is the member's whose call it was (the agent acted with
	// dev's credential); another member sees its status only.
	if len(a.Result.Body) != 0 {
		t.Errorf("another member reads the stored answer %s, want its status only", a.Result.Body)
	}
	var mine approvalView
	if code := call(t, "GET", url+"/approvals/"+id, nil, &mine); code != 200 || mine.Result == nil {
		t.Fatalf("GET /approvals/%s as its member = %d %+v", id, code, mine.Result)
	}
	var v struct {
		Origin versionOrigin `json:"origin"`
	}
	if err := json.Unmarshal(mine.Result.Body, &v); err != nil || v.Origin.AgentID != "http-bot" || v.Origin.ConversationID != "conv-1" {
		t.Errorf("the stored answer %s (%v), want the registration with the agent in its origin", mine.Result.Body, err)
	}
	if code := call(t, "GET", url+"/judges/pg-j/versions/1.0.0", nil, nil); code != 200 {
		t.Errorf("GET the judge the approved call registered = %d, want 200", code)
	}
	if n := countEvents(t, url, "judge.registered"); n != 1 {
		t.Errorf("judge.registered %d times, want once", n)
	}
	if n := countEvents(t, url, "approval.executed"); n != 1 {
		t.Errorf("approval.executed %d times, want once", n)
	}
	// A second execute (a retried activity) answers the stored result.
	var ex map[string]any
	if code := call(t, "POST", url+"/internal/approvals/"+id+"/execute", map[string]string{"workspace": "default"}, &ex,
		"x-internal-token", sandboxOperatorToken); code != 200 || ex["resumed"] != true {
		t.Errorf("a second execute = %d %v, want 200 resumed", code, ex)
	}
	if n := countEvents(t, url, "judge.registered"); n != 1 {
		t.Errorf("judge.registered %d times after a second execute, want once", n)
	}
}
