package e2e

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// agentResult is what api/testdata/mcp-client/agent.mjs prints.
type agentResult struct {
	SessionID string `json:"sessionId"`
	Calls     []struct {
		Name    string          `json:"name"`
		IsError bool            `json:"isError"`
		Result  json.RawMessage `json:"result"`
	} `json:"calls"`
}

// runAgent runs the official TypeScript MCP SDK's client as an agent
// against url's /mcp: clientInfo, extra headers and the tool calls, in
// order. Skipped without node and the SDK (api/testdata/mcp-client/install.sh),
// except under CI=true.
func runAgent(t *testing.T, url string, client, headers map[string]string, calls [][2]any) agentResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	cmd := agentCommand(t, ctx, url, client, headers, calls)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node agent.mjs: %v\nstderr:\n%s\nstdout:\n%s", err, stderr.String(), out)
	}
	var res agentResult
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatalf("decoding the agent's output: %v\n%s", err, out)
	}
	for _, c := range res.Calls {
		if c.IsError {
			t.Fatalf("tool %s failed: %s", c.Name, c.Result)
		}
	}
	return res
}

// agentCommand is the command that runs the official TypeScript MCP SDK's
// client (api/testdata/mcp-client/agent.mjs) as an agent against url's
// /mcp with ctx: clientInfo, extra headers and the tool calls, in order.
// It skips t without node and the SDK (install.sh), except under CI=true.
func agentCommand(t *testing.T, ctx context.Context, url string, client, headers map[string]string, calls [][2]any) *exec.Cmd {
	t.Helper()
	cache := os.Getenv("SVC_NPM_CACHE")
	if cache == "" {
		cache = filepath.Join(os.TempDir(), "svc-mcp-client")
	}
	node, err := exec.LookPath("node")
	if err == nil {
		_, err = os.Stat(filepath.Join(cache, "node_modules", "@modelcontextprotocol", "sdk", "package.json"))
	}
	if err != nil {
		const how = "install Node.js 18 or later and run api/testdata/mcp-client/install.sh"
		if os.Getenv("CI") == "true" {
			t.Fatalf("the TypeScript MCP SDK client cannot run (%v): %s", err, how)
		}
		t.Skipf("the TypeScript MCP SDK client cannot run (%v): %s", err, how)
	}
	dir := t.TempDir()
	if err := os.Symlink(filepath.Join(cache, "node_modules"), filepath.Join(dir, "node_modules")); err != nil {
		t.Fatal(err)
	}
	script, err := os.ReadFile(filepath.Join("..", "api", "testdata", "mcp-client", "agent.mjs"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "agent.mjs"), script, 0o644); err != nil {
		t.Fatal(err)
	}
	enc := func(v any) string {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	cmd := exec.CommandContext(ctx, node, filepath.Join(dir, "agent.mjs"))
	cmd.Env = append(os.Environ(), "SVC_MCP_URL="+url+"/mcp", "SVC_MCP_CLIENT="+enc(client),
		"SVC_MCP_HEADERS="+enc(headers), "SVC_MCP_CALLS="+enc(calls))
	return cmd
}

// eventView is an entry of GET /events.
type eventView struct {
	Seq      int64  `json:"seq"`
	ID       string `json:"id"`
	Type     string `json:"type"`
	Subject  string `json:"subject"`
	Actor    string `json:"actor"`
	CausedBy string `json:"causedBy"`
}

// listEvents reads one page of GET /events with query q.
func listEvents(t *testing.T, url, q string, headers ...string) ([]eventView, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), "GET", url+"/events"+q, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("GET /events%s = %d", q, resp.StatusCode)
	}
	var es []eventView
	if err := json.NewDecoder(resp.Body).Decode(&es); err != nil {
		t.Fatal(err)
	}
	return es, resp.Header.Get("X-Svc-Next-Cursor")
}

// versionOrigin is the origin a registration answers.
type versionOrigin struct {
	Via            string `json:"via"`
	AgentID        string `json:"agentId"`
	AgentName      string `json:"agentName"`
	ConversationID string `json:"conversationId"`
}

// runOrigin is a run's origin.
type runOrigin struct {
	Actor  string `json:"actor"`
	Source string `json:"source"`
	Agent  *struct {
		ID, Name, Conversation string
	} `json:"agent"`
}

// TestAgentsAsPrincipals (issue 33 item 1): an agent is declared by the MCP
// client's info (the official TypeScript SDK) or by X-Svc-Agent-* headers,
// and is stamped where the spec says: a version's CapabilityOrigin
// (agentId, agentName, conversationId, via mcp), a run's origin (actor its
// member, source mcp) and the event's causedBy agent:<id>:<conversation>.
// An agent-conversation run is its member's alone; a bad header is 400.
func TestAgentsAsPrincipals(t *testing.T) {
	svc := start(t, devEnv(t.TempDir(), "SVC_INTERNAL_TOKEN="+sandboxOperatorToken), true, "dev")
	url := svc.URL

	harness := map[string]any{"id": "agent-h", "version": "1.0.0", "kind": "process", "command": []string{"true"}}
	runBody := map[string]any{"harness": map[string]string{"id": "agent-h", "version": "1.0.0"},
		"case": map[string]any{"id": "c", "task": "t", "timeoutSec": 60}}
	dataset := func(id string) map[string]any {
		return map[string]any{"id": id, "version": "1.0.0",
			"cases": []any{map[string]any{"id": "a", "task": "do a", "graders": []any{map[string]any{"id": "g", "kind": "exit_code"}}}}}
	}

	t.Run("mcp client info", func(t *testing.T) {
		res := runAgent(t, url, map[string]string{"name": "e2e-agent", "title": "E2E Agent"}, nil, [][2]any{
			{"create_dataset", map[string]any{"body": dataset("agent-ds")}},
			{"create_harness", map[string]any{"body": harness}},
			{"submit_run", map[string]any{"body": runBody}},
		})
		conv := res.SessionID
		if conv == "" {
			t.Fatal("the MCP client has no session id")
		}
		var v struct {
			Origin versionOrigin `json:"origin"`
		}
		if err := json.Unmarshal(res.Calls[0].Result, &v); err != nil {
			t.Fatal(err)
		}
		if want := (versionOrigin{Via: "mcp", AgentID: "e2e-agent", AgentName: "E2E Agent", ConversationID: conv}); v.Origin != want {
			t.Errorf("create_dataset origin = %+v, want %+v", v.Origin, want)
		}
		var run struct {
			ID     string    `json:"id"`
			Origin runOrigin `json:"origin"`
		}
		if err := json.Unmarshal(res.Calls[2].Result, &run); err != nil {
			t.Fatal(err)
		}
		if o := run.Origin; o.Actor != "dev" || o.Source != "mcp" || o.Agent == nil || o.Agent.ID != "e2e-agent" || o.Agent.Conversation != conv {
			t.Errorf("submit_run origin = %s, want actor dev, source mcp, agent e2e-agent in %s", res.Calls[2].Result, conv)
		}
		es, _ := listEvents(t, url, "?type=dataset.registered")
		if len(es) != 1 || es[0].Subject != "dataset:agent-ds@1.0.0" || es[0].CausedBy != "agent:e2e-agent:"+conv || es[0].Actor != "dev" {
			t.Errorf("dataset.registered events = %+v, want one caused by agent:e2e-agent:%s, actor dev", es, conv)
		}
	})

	t.Run("mcp with agent headers", func(t *testing.T) {
		hs := map[string]string{"X-Svc-Agent-Id": "hdr-agent", "X-Svc-Agent-Name": "Header Agent", "X-Svc-Conversation-Id": "conv-7"}
		res := runAgent(t, url, map[string]string{"name": "ignored-client"}, hs, [][2]any{
			{"create_dataset", map[string]any{"body": dataset("agent-ds-hdr")}},
		})
		var v struct {
			Origin versionOrigin `json:"origin"`
		}
		if err := json.Unmarshal(res.Calls[0].Result, &v); err != nil {
			t.Fatal(err)
		}
		if want := (versionOrigin{Via: "mcp", AgentID: "hdr-agent", AgentName: "Header Agent", ConversationID: "conv-7"}); v.Origin != want {
			t.Errorf("create_dataset origin = %+v, want %+v (the headers win over the client info)", v.Origin, want)
		}
	})

	t.Run("plain http headers", func(t *testing.T) {
		hs := []string{"X-Svc-Agent-Id", "http-bot", "X-Svc-Agent-Name", "HTTP Bot", "X-Svc-Conversation-Id", "c-42"}
		var v struct {
			Origin versionOrigin `json:"origin"`
		}
		if code := call(t, "POST", url+"/judges", map[string]any{"id": "agent-j", "version": "1.0.0", "kind": "code", "language": "python", "code": "print(1)"}, &v, hs...); code != 201 {
			t.Fatalf("POST /judges = %d", code)
		}
		if want := (versionOrigin{Via: "ci", AgentID: "http-bot", AgentName: "HTTP Bot", ConversationID: "c-42"}); v.Origin != want {
			t.Errorf("origin = %+v, want %+v", v.Origin, want)
		}
		es, _ := listEvents(t, url, "?type=judge.registered")
		if len(es) != 1 || es[0].CausedBy != "agent:http-bot:c-42" {
			t.Errorf("judge.registered = %+v, want causedBy agent:http-bot:c-42", es)
		}

		// An agent-conversation run is personal: its member reads it, another
		// member of the workspace (an admin, no bypass) gets 404.
		body := map[string]any{"kind": "agent-conversation", "harness": runBody["harness"], "case": runBody["case"]}
		var run struct {
			ID     string    `json:"id"`
			Kind   string    `json:"kind"`
			Origin runOrigin `json:"origin"`
		}
		if code := call(t, "POST", url+"/runs", body, &run, hs...); code != 202 && code != 201 {
			t.Fatalf("POST /runs agent-conversation = %d", code)
		}
		if run.Kind != "agent-conversation" || run.Origin.Actor != "dev" || run.Origin.Source != "api" || run.Origin.Agent == nil || run.Origin.Agent.ID != "http-bot" {
			t.Errorf("run = %+v, want kind agent-conversation, origin actor dev, source api, agent http-bot", run)
		}
		if code := call(t, "GET", url+"/runs/"+run.ID, nil, nil); code != 200 {
			t.Errorf("GET /runs/%s as its member = %d, want 200", run.ID, code)
		}
		other := otherMember(t, url)
		if code := call(t, "GET", url+"/runs/"+run.ID, nil, nil, "Authorization", "Bearer "+other); code != 404 {
			t.Errorf("GET /runs/%s as another member = %d, want 404", run.ID, code)
		}

		// A bad header is 400 naming it.
		var eb struct {
			Error struct{ Code, Message string } `json:"error"`
		}
		for _, bad := range [][]string{
			{"X-Svc-Agent-Id", "has:colon"},
			{"X-Svc-Agent-Name", "no id"},
			{"X-Svc-Agent-Id", "ok", "X-Svc-Conversation-Id", strings.Repeat("c", 201)},
		} {
			if code := call(t, "GET", url+"/me", nil, &eb, bad...); code != 400 || eb.Error.Code != "BAD_REQUEST" || !strings.Contains(eb.Error.Message, "X-Svc-") {
				t.Errorf("GET /me with %q = %d %+v, want 400 naming the header", bad, code, eb.Error)
			}
		}
	})
}

// TestEventsLog (issue 33 item 5): GET /events answers the workspace's
// events newest first, cursor-paged, filtered by a type glob and since;
// another workspace's events are never visible; a retried registration
// emits its event once.
func TestEventsLog(t *testing.T) {
	svc := start(t, devEnv(t.TempDir(), "SVC_INTERNAL_TOKEN="+sandboxOperatorToken), true, "dev")
	url := svc.URL
	before := time.Now().UTC().Add(-time.Second)
	for _, id := range []string{"ev-a", "ev-b", "ev-c"} {
		ds := map[string]any{"id": id, "version": "1.0.0",
			"cases": []any{map[string]any{"id": "a", "task": "do a", "graders": []any{map[string]any{"id": "g", "kind": "exit_code"}}}}}
		for range 2 { // the retry answers 200 and appends nothing
			if code := call(t, "POST", url+"/datasets", ds, nil); code != 201 && code != 200 {
				t.Fatalf("POST /datasets %s = %d", id, code)
			}
		}
	}
	if code := call(t, "POST", url+"/judges", map[string]any{"id": "ev-j", "version": "1.0.0", "kind": "code", "language": "python", "code": "print(1)"}, nil); code != 201 {
		t.Fatalf("POST /judges = %d", code)
	}

	all, _ := listEvents(t, url, "?type=*.registered")
	var subjects []string
	for _, e := range all {
		subjects = append(subjects, e.Subject)
	}
	if got, want := strings.Join(subjects, " "), "judge:ev-j@1.0.0 dataset:ev-c@1.0.0 dataset:ev-b@1.0.0 dataset:ev-a@1.0.0"; got != want {
		t.Errorf("*.registered newest first = %s, want %s (each once, the retries appended nothing)", got, want)
	}

	// Pages of two: the cursor walks the rest, with no repeat.
	p1, next := listEvents(t, url, "?type=dataset.*&limit=2")
	if len(p1) != 2 || next == "" {
		t.Fatalf("first page = %+v next %q, want 2 and a cursor", p1, next)
	}
	p2, next2 := listEvents(t, url, "?type=dataset.*&limit=2&cursor="+next)
	if len(p2) != 1 || next2 != "" || p2[0].Subject != "dataset:ev-a@1.0.0" {
		t.Errorf("second page = %+v next %q, want only dataset:ev-a and no cursor", p2, next2)
	}
	if es, _ := listEvents(t, url, "?since="+time.Now().UTC().Add(time.Hour).Format(time.RFC3339)); len(es) != 0 {
		t.Errorf("since an hour ahead = %+v, want none", es)
	}
	if es, _ := listEvents(t, url, "?type=judge.registered&since="+before.Format(time.RFC3339Nano)); len(es) != 1 {
		t.Errorf("since the start = %+v, want the judge's event", es)
	}
	var eb struct {
		Error struct{ Code, Message string } `json:"error"`
	}
	if code := call(t, "GET", url+"/events?cursor=nope", nil, &eb); code != 400 || !strings.Contains(eb.Error.Message, "cursor") {
		t.Errorf("a bad cursor = %d %+v, want 400 naming cursor", code, eb.Error)
	}

	// Another workspace sees none of these events, even asking for this one
	// (a non-member selection falls back to the caller's own workspace). The
	// member's 403 is api.TestEventsRefusals.
	var k struct {
		APIKey string `json:"apiKey"`
	}
	if code := call(t, "POST", url+"/internal/tenant-keys", map[string]string{"workspace": "elsewhere"}, &k, "x-internal-token", sandboxOperatorToken); code != 201 {
		t.Fatalf("POST /internal/tenant-keys = %d", code)
	}
	foreign, _ := listEvents(t, url, "?limit=200", "Authorization", "Bearer "+k.APIKey, "x-svc-workspace", "default")
	for _, e := range foreign {
		if strings.Contains(e.Subject, "ev-") {
			t.Errorf("another workspace's admin reads default's event %+v", e)
		}
	}
}
