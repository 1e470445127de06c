package api_test

import (
	"encoding/json"
	"errors"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"svc/api"
	"svc/api/apitest"
	"svc/auth"
	"svc/internal/domain/eval"
	"svc/store"
)

// The agent tools are the routes: each call is served by its route. Most
// tests here ask a question both ways, through the real MCP client and
// through HTTP, and require the same answer: the same JSON, or the same
// error code and message.

// call invokes a tool. Refusals are tool results (IsError), so a
// protocol-level failure fails the test.
func call(t *testing.T, cs *mcp.ClientSession, name string, args any) *mcp.CallToolResult {
	t.Helper()
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("CallTool %s: %v", name, err)
	}
	return res
}

// resultJSON is a result's structured content as JSON, after checking that
// its text content is the same JSON (clients that read only text see it).
func resultJSON(t *testing.T, name string, res *mcp.CallToolResult) []byte {
	t.Helper()
	b, err := json.Marshal(res.StructuredContent)
	if err != nil {
		t.Fatalf("%s: encoding structured content: %v", name, err)
	}
	if len(res.Content) != 1 {
		t.Fatalf("%s: %d content blocks, want one text block", name, len(res.Content))
	}
	text, ok := res.Content[0].(*mcp.TextContent)
	if !ok {
		t.Fatalf("%s: content is %T, want text", name, res.Content[0])
	}
	sameJSON(t, name+": text vs structured content", []byte(text.Text), b)
	return b
}

// toolOK decodes a successful result into T.
func toolOK[T any](t *testing.T, name string, res *mcp.CallToolResult) T {
	t.Helper()
	b := resultJSON(t, name, res)
	if res.IsError {
		t.Fatalf("%s failed: %s", name, b)
	}
	var v T
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("%s: decoding %s: %v", name, b, err)
	}
	return v
}

// toolErr returns the error body of a refused call.
func toolErr(t *testing.T, name string, res *mcp.CallToolResult) api.ErrorInfo {
	t.Helper()
	b := resultJSON(t, name, res)
	if !res.IsError {
		t.Fatalf("%s succeeded, want a refusal: %s", name, b)
	}
	var body api.ErrorBody
	if err := json.Unmarshal(b, &body); err != nil {
		t.Fatalf("%s: decoding the error body %s: %v", name, b, err)
	}
	if body.Error.RequestID == "" {
		t.Errorf("%s: error body without requestId: %s", name, b)
	}
	return body.Error
}

// sameJSON fails t unless a and b encode the same JSON value.
func sameJSON(t *testing.T, what string, a, b []byte) {
	t.Helper()
	var va, vb any
	if err := json.Unmarshal(a, &va); err != nil {
		t.Fatalf("%s: %v in %s", what, err, a)
	}
	if err := json.Unmarshal(b, &vb); err != nil {
		t.Fatalf("%s: %v in %s", what, err, b)
	}
	if diff := cmp.Diff(va, vb); diff != "" {
		t.Errorf("%s (-first +second):\n%s", what, diff)
	}
}

// sameRefusal fails t unless a tool's refusal carries the code and message
// of the route's.
func sameRefusal(t *testing.T, what string, tool api.ErrorInfo, route *apitest.Response) {
	t.Helper()
	info := route.ErrorInfo(t)
	if tool.Code != info.Code || tool.Message != info.Message {
		t.Errorf("%s: tool answered %s %q; the route %d %s %q", what, tool.Code, tool.Message, route.Status, info.Code, info.Message)
	}
	if diff := cmp.Diff(info.Details, tool.Details); diff != "" {
		t.Errorf("%s: details (-route +tool):\n%s", what, diff)
	}
}

// raw is a JSON text as a tool argument value.
func raw(s string) json.RawMessage { return json.RawMessage(s) }

// TestMCPToolRoleGates: a read-scoped key and a viewer cannot run a
// scorecard or register a judge (403, worded as the route words it), but
// read scorecards as the route does.
func TestMCPToolRoleGates(t *testing.T) {
	e := newEnv(t, withOIDC())
	a := e.tenant(t, "gates")
	sc := e.seedScorecard(t, a.ws)
	readKey := e.createKey(t, a.key, `{"scopes":["read"]}`).APIKey
	zoe := e.join(t, a, "zoe", auth.RoleViewer)
	callers := []struct {
		name string
		tr   bearerTransport
		hs   []header
	}{
		{"read-scoped key", bearerTransport{token: readKey}, []header{bearer(readKey)}},
		{"viewer", bearerTransport{token: zoe, headers: map[string]string{auth.WorkspaceHeader: a.ws}}, []header{bearer(zoe), selectWorkspace(a.ws)}},
	}
	for _, c := range callers {
		t.Run(c.name, func(t *testing.T) {
			cs, err := connectMCP(t, e, c.tr)
			if err != nil {
				t.Fatalf("connect: %v", err)
			}
			refused := []struct {
				tool, route, body string
				args              any
			}{
				{"run_scorecard", "/scorecards", `{"dataset":{"id":"ds","version":"latest"},"harness":{"id":"h","version":"latest"}}`,
					map[string]any{"body": map[string]any{"dataset": map[string]any{"id": "ds", "version": "latest"}, "harness": map[string]any{"id": "h", "version": "latest"}}}},
				{"create_judge", "/judges", judgeSpec("j", "1"), map[string]any{"body": raw(judgeSpec("j", "1"))}},
				{"cancel_scorecard", "/scorecards/" + sc.ID + "/cancel", ``, map[string]any{"id": sc.ID}},
				{"create_key", "/keys", `{"label":"x"}`, map[string]any{"body": map[string]any{"label": "x"}}},
				{"create_dataset", "/datasets", datasetSpec("ds", "1"), map[string]any{"body": raw(datasetSpec("ds", "1"))}},
			}
			for _, r := range refused {
				info := toolErr(t, r.tool, call(t, cs, r.tool, r.args))
				if info.Code != api.CodeForbidden {
					t.Errorf("%s: code %s, want FORBIDDEN", r.tool, info.Code)
				}
				sameRefusal(t, r.tool, info, e.do(t, http.MethodPost, r.route, r.body, c.hs...))
			}

			got := toolOK[struct {
				Items []eval.Scorecard `json:"items"`
			}](t, "list_scorecards", call(t, cs, "list_scorecards", map[string]any{}))
			if len(got.Items) != 1 || got.Items[0].ID != sc.ID {
				t.Errorf("list_scorecards = %+v, want the one batch %s", got.Items, sc.ID)
			}
			res := e.do(t, http.MethodGet, "/scorecards", "", c.hs...)
			want(t, res, http.StatusOK, "GET /scorecards")
			items, _ := json.Marshal(got.Items)
			sameJSON(t, "list_scorecards vs GET /scorecards", items, res.Body)
			if st := e.storedScorecard(t, a.ws, sc.ID).Status; st != eval.ScorecardQueued {
				t.Errorf("the refused cancel left the batch %s, want queued", st)
			}
		})
	}
}

// TestMCPToolOtherWorkspace: another workspace's records are not found,
// with the route's message, and are left alone.
func TestMCPToolOtherWorkspace(t *testing.T) {
	e := newEnv(t)
	a, b := e.tenant(t, "mine"), e.tenant(t, "theirs")
	theirBatch := e.seedScorecard(t, b.ws)
	theirRun := e.seedRun(t, b.ws, e.subjectOf(t, bearer(b.key)))
	e.register(t, b.key, "/datasets", datasetSpec("theirs", "1.0.0"), http.StatusCreated)
	cs, err := connectMCP(t, e, bearerTransport{token: a.key})
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	ids := map[string]bool{}
	for _, tt := range []struct {
		tool, method, path string
		args               map[string]any
	}{
		{"get_scorecard", http.MethodGet, "/scorecards/" + theirBatch.ID, map[string]any{"id": theirBatch.ID}},
		{"cancel_scorecard", http.MethodPost, "/scorecards/" + theirBatch.ID + "/cancel", map[string]any{"id": theirBatch.ID}},
		{"verify_scorecard_manifest", http.MethodPost, "/scorecards/" + theirBatch.ID + "/verify-manifest", map[string]any{"id": theirBatch.ID}},
		{"get_scorecard_analysis", http.MethodGet, "/scorecards/" + theirBatch.ID + "/analysis", map[string]any{"id": theirBatch.ID}},
		{"get_run", http.MethodGet, "/runs/" + theirRun.ID, map[string]any{"id": theirRun.ID}},
		{"get_run_logs", http.MethodGet, "/runs/" + theirRun.ID + "/logs", map[string]any{"id": theirRun.ID}},
		{"get_run_trajectory", http.MethodGet, "/runs/" + theirRun.ID + "/trajectory", map[string]any{"id": theirRun.ID}},
		{"get_dataset", http.MethodGet, "/datasets/theirs/versions/1.0.0", map[string]any{"id": "theirs", "version": "1.0.0"}},
		{"set_dataset_version_tags", http.MethodPut, "/datasets/theirs/versions/1.0.0/tags", map[string]any{"id": "theirs", "version": "1.0.0", "body": []string{"mine"}}},
		{"delete_dataset_version", http.MethodDelete, "/datasets/theirs/versions/1.0.0", map[string]any{"id": "theirs", "version": "1.0.0"}},
	} {
		info := toolErr(t, tt.tool, call(t, cs, tt.tool, tt.args))
		if info.Code != api.CodeNotFound {
			t.Errorf("%s of another workspace's record: code %s, want NOT_FOUND", tt.tool, info.Code)
		}
		body := ""
		if b, ok := tt.args["body"]; ok {
			j, _ := json.Marshal(b)
			body = string(j)
		}
		sameRefusal(t, tt.tool, info, e.do(t, tt.method, tt.path, body, bearer(a.key)))
		if ids[info.RequestID] {
			t.Errorf("%s: requestId %s was quoted before; each call needs its own", tt.tool, info.RequestID)
		}
		ids[info.RequestID] = true
	}
	if st := e.storedScorecard(t, b.ws, theirBatch.ID).Status; st != eval.ScorecardQueued {
		t.Errorf("another workspace's cancel left the batch %s, want queued", st)
	}
	res := e.do(t, http.MethodGet, "/datasets/theirs/versions/1.0.0", "", bearer(b.key))
	want(t, res, http.StatusOK, "their dataset after another workspace's delete")
	if res = e.do(t, http.MethodGet, "/datasets", "", bearer(b.key)); strings.Contains(string(res.Body), `"mine"`) {
		t.Errorf("another workspace's set_dataset_version_tags tagged their dataset: %s", res.Body)
	}
}

// TestMCPToolRunReads: the run tools answer what the run routes answer.
func TestMCPToolRunReads(t *testing.T) {
	e := newEnv(t)
	a := e.tenant(t, "reads")
	run := e.seedRun(t, a.ws, e.subjectOf(t, bearer(a.key)))
	cs, err := connectMCP(t, e, bearerTransport{token: a.key})
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	got := toolOK[eval.Run](t, "get_run", call(t, cs, "get_run", map[string]any{"id": run.ID}))
	if got.ID != run.ID || got.Status != eval.StatusSucceeded || got.Result == nil || !got.Result.Pass {
		t.Errorf("get_run = %+v, want the seeded succeeded run", got)
	}
	for _, tt := range []struct {
		tool string
		args map[string]any
		path string
	}{
		{"get_run", map[string]any{"id": run.ID}, "/runs/" + run.ID},
		{"get_run_logs", map[string]any{"id": run.ID}, "/runs/" + run.ID + "/logs"},
		{"get_run_logs", map[string]any{"id": run.ID, "after": 1, "limit": 10}, "/runs/" + run.ID + "/logs?after=1&limit=10"},
		{"get_run_trajectory", map[string]any{"id": run.ID}, "/runs/" + run.ID + "/trajectory"},
	} {
		res := e.do(t, http.MethodGet, tt.path, "", bearer(a.key))
		want(t, res, http.StatusOK, "GET "+tt.path)
		sameJSON(t, tt.tool+" vs GET "+tt.path, toolOK[json.RawMessage](t, tt.tool, call(t, cs, tt.tool, tt.args)), res.Body)
	}
	page := toolOK[struct {
		Items      []eval.Run `json:"items"`
		NextCursor string     `json:"nextCursor"`
	}](t, "list_runs", call(t, cs, "list_runs", map[string]any{"limit": 5}))
	if len(page.Items) != 1 || page.Items[0].ID != run.ID || page.NextCursor != "" {
		t.Errorf("list_runs = %+v, want the one run and no next page", page)
	}

	for _, tt := range []struct {
		tool, path string
		args       map[string]any
	}{
		{"list_runs", "/runs?scope=mine", map[string]any{"scope": "mine"}},
		{"list_runs", "/runs?limit=501", map[string]any{"limit": 501}},
		{"list_runs", "/runs?cursor=bm9wZQ", map[string]any{"cursor": "bm9wZQ"}},
		{"get_run_logs", "/runs/" + run.ID + "/logs?after=-1", map[string]any{"id": run.ID, "after": -1}},
		{"list_notifications", "/notifications?limit=201", map[string]any{"limit": 201}},
		{"get_run", "/runs/run_nope", map[string]any{"id": "run_nope"}},
	} {
		info := toolErr(t, tt.tool, call(t, cs, tt.tool, tt.args))
		res := e.do(t, http.MethodGet, tt.path, "", bearer(a.key))
		sameRefusal(t, tt.tool, info, res)
	}
	if info := toolErr(t, "get_run", call(t, cs, "get_run", map[string]any{})); info.Code != api.CodeBadRequest || !strings.Contains(info.Message, "id is required") {
		t.Errorf("get_run without id: %s %q, want BAD_REQUEST saying id is required", info.Code, info.Message)
	}
}

// TestMCPToolSubmitRun: submit_run refuses as POST /runs does; a valid
// submit with no orchestrator is the route's 503, which names it.
func TestMCPToolSubmitRun(t *testing.T) {
	e := newEnv(t)
	a := e.tenant(t, "submit")
	e.register(t, a.key, "/harnesses", `{"id":"echo","version":"1.0.0","kind":"process","command":["echo","hi"]}`, http.StatusCreated)
	cs, err := connectMCP(t, e, bearerTransport{token: a.key})
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	for _, tt := range []struct {
		name, body string
		code       string
	}{
		{"no orchestrator", `{"harness":{"id":"echo","version":"latest"},"case":{"id":"c","task":"t"}}`, api.CodeUnavailable},
		{"no harness", `{"case":{"id":"c","task":"t"}}`, api.CodeBadRequest},
		{"no version", `{"harness":{"id":"echo"},"case":{"id":"c","task":"t"}}`, api.CodeBadRequest},
		{"bad grader", `{"harness":{"id":"echo","version":"1.0.0"},"case":{"id":"c","task":"t","graders":[{"id":"g","kind":"regex","pattern":"("}]}}`, api.CodeBadRequest},
		{"unknown harness", `{"harness":{"id":"nope","version":"latest"},"case":{"id":"c","task":"t"}}`, api.CodeNotFound},
	} {
		info := toolErr(t, "submit_run "+tt.name, call(t, cs, "submit_run", map[string]any{"body": raw(tt.body)}))
		if info.Code != tt.code {
			t.Errorf("submit_run %s: code %s, want %s", tt.name, info.Code, tt.code)
		}
		sameRefusal(t, "submit_run "+tt.name, info, e.do(t, http.MethodPost, "/runs", tt.body, bearer(a.key)))
		if tt.code == api.CodeUnavailable && !strings.Contains(info.Message, "orchestrator") {
			t.Errorf("submit_run %s: message %q does not name the orchestrator", tt.name, info.Message)
		}
	}
	// An unknown member of the body is the route's strict decoding's
	// refusal; an unknown argument is refused before the route is called.
	const extra = `{"harness":{"id":"echo","version":"1.0.0"},"case":{"id":"c","task":"t"},"extra":1}`
	info := toolErr(t, "submit_run with an unknown member", call(t, cs, "submit_run", map[string]any{"body": raw(extra)}))
	sameRefusal(t, "submit_run with an unknown member", info, e.do(t, http.MethodPost, "/runs", extra, bearer(a.key)))
	if !strings.Contains(info.Message, "extra") {
		t.Errorf("submit_run with an unknown member: %q, want a refusal naming it", info.Message)
	}
	info = toolErr(t, "submit_run with an unknown argument", call(t, cs, "submit_run", map[string]any{"harness": map[string]any{"id": "echo"}}))
	if info.Code != api.CodeBadRequest || !strings.Contains(info.Message, "unknown argument harness") || !strings.Contains(info.Message, "body") {
		t.Errorf("submit_run with an unknown argument: %s %q, want BAD_REQUEST naming it and the argument body", info.Code, info.Message)
	}
	if n, err := e.store.CountRuns(t.Context(), a.ws, time.Time{}); err != nil || n != 0 {
		t.Errorf("refused submits left %d runs (err %v), want none", n, err)
	}
}

// TestMCPToolScorecards drives the batch tools with an orchestrator: what
// they submit says origin.source mcp, and every answer is the route's.
func TestMCPToolScorecards(t *testing.T) {
	orch := newFakeOrchestrator()
	e := newEnv(t, withOrchestrator(orch))
	a := e.tenant(t, "batches")
	e.registerBatchInputs(t, a)
	cs, err := connectMCP(t, e, bearerTransport{token: a.key})
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	submit := map[string]any{"dataset": map[string]any{"id": "ds", "version": "latest"}, "harness": map[string]any{"id": "h", "version": "1.0.0"},
		"cases": map[string]any{"ids": []string{"b"}}, "graders": []any{map[string]any{"id": "g", "kind": "contains", "value": "x"}}}
	sc := toolOK[eval.Scorecard](t, "run_scorecard", call(t, cs, "run_scorecard", map[string]any{"body": submit}))
	if sc.Origin == nil || sc.Origin.Source != "mcp" || sc.Status != eval.ScorecardQueued || sc.Kind != eval.KindScorecard {
		t.Errorf("run_scorecard = origin %+v, status %s, kind %s; want a queued scorecard from mcp", sc.Origin, sc.Status, sc.Kind)
	}
	if stored := e.storedScorecard(t, a.ws, sc.ID); stored.Origin == nil || stored.Origin.Source != "mcp" {
		t.Errorf("stored origin %+v, want source mcp", stored.Origin)
	}
	if started := orch.startedBatches(); len(started) != 1 || started[0].ScorecardID != sc.ID {
		t.Errorf("started batches %+v, want %s", started, sc.ID)
	}
	ex := toolOK[eval.Scorecard](t, "run_experiment", call(t, cs, "run_experiment",
		map[string]any{"body": map[string]any{"harness": map[string]any{"id": "h", "version": "1.0.0"}, "task": map[string]any{"prompt": "say hi"}, "trials": 2}}))
	if ex.Origin == nil || ex.Origin.Source != "mcp" || ex.Kind != eval.KindExperiment || ex.Trials != 2 {
		t.Errorf("run_experiment = origin %+v, kind %s, trials %d; want an experiment of 2 trials from mcp", ex.Origin, ex.Kind, ex.Trials)
	}

	for _, tt := range []struct {
		tool, method, path, body string
		args                     any
	}{
		{"get_scorecard", http.MethodGet, "/scorecards/" + sc.ID, "", map[string]any{"id": sc.ID}},
		{"get_group", http.MethodGet, "/groups/" + ex.ID, "", map[string]any{"id": ex.ID}},
		{"list_scorecards", http.MethodGet, "/scorecards?kind=experiment", "", map[string]any{"kind": "experiment"}},
		{"query_scorecards", http.MethodPost, "/scorecards/query", `{"groupBy":["harness"]}`, map[string]any{"body": raw(`{"groupBy":["harness"]}`)}},
		{"verify_scorecard_manifest", http.MethodPost, "/scorecards/" + sc.ID + "/verify-manifest", "", map[string]any{"id": sc.ID}},
	} {
		res := e.do(t, tt.method, tt.path, tt.body, bearer(a.key))
		want(t, res, http.StatusOK, tt.method+" "+tt.path)
		got := toolOK[json.RawMessage](t, tt.tool, call(t, cs, tt.tool, tt.args))
		if tt.tool == "list_scorecards" {
			got = toolOK[struct {
				Items json.RawMessage `json:"items"`
			}](t, tt.tool, call(t, cs, tt.tool, tt.args)).Items
		}
		sameJSON(t, tt.tool+" vs "+tt.method+" "+tt.path, got, res.Body)
	}

	// Refusals, each compared with the route's. Order matters: the cancel
	// comes first, then the 409 of cancelling again.
	want(t, e.do(t, http.MethodPost, "/scorecards/"+ex.ID+"/cancel", "", bearer(a.key)), http.StatusOK, "cancel the experiment")
	cancelled := toolOK[eval.Scorecard](t, "cancel_scorecard", call(t, cs, "cancel_scorecard", map[string]any{"id": sc.ID}))
	if cancelled.Status != eval.ScorecardCancelled {
		t.Errorf("cancel_scorecard: status %s, want cancelled", cancelled.Status)
	}
	for _, tt := range []struct {
		tool, method, path, body string
		args                     any
		code                     string
	}{
		{"cancel_scorecard", http.MethodPost, "/scorecards/" + sc.ID + "/cancel", "", map[string]any{"id": sc.ID}, api.CodeConflict},
		{"score_scorecard", http.MethodPost, "/scorecards/" + sc.ID + "/score", `{"judges":[{"id":"j"}]}`, map[string]any{"id": sc.ID, "body": raw(`{"judges":[{"id":"j"}]}`)}, api.CodeConflict},
		{"score_scorecard", http.MethodPost, "/scorecards/" + sc.ID + "/score", `{"judges":[]}`, map[string]any{"id": sc.ID, "body": raw(`{"judges":[]}`)}, api.CodeBadRequest},
		{"score_group", http.MethodPost, "/groups/" + ex.ID + "/score", `{"judges":[{"id":"j"}]}`, map[string]any{"id": ex.ID, "body": raw(`{"judges":[{"id":"j"}]}`)}, api.CodeConflict},
		{"get_scorecard_analysis", http.MethodGet, "/scorecards/" + sc.ID + "/analysis", "", map[string]any{"id": sc.ID}, api.CodeNotFound},
		{"get_scorecard_analysis", http.MethodGet, "/scorecards/" + sc.ID + "/analysis?revision=2", "", map[string]any{"id": sc.ID, "revision": 2}, api.CodeNotFound},
		{"diff_scorecards", http.MethodGet, "/scorecards/diff", "", map[string]any{}, api.CodeBadRequest},
		{"diff_scorecards", http.MethodGet, "/scorecards/diff?baseline=" + sc.ID + "&candidate=sc_nope", "", map[string]any{"baseline": sc.ID, "candidate": "sc_nope"}, api.CodeNotFound},
		{"gate_scorecards", http.MethodPost, "/scorecards/gate", `{"baseline":"x"}`, map[string]any{"body": map[string]any{"baseline": "x"}}, api.CodeBadRequest},
	} {
		what := tt.tool + " " + tt.path
		info := toolErr(t, what, call(t, cs, tt.tool, tt.args))
		if info.Code != tt.code {
			t.Errorf("%s: code %s, want %s", what, info.Code, tt.code)
		}
		sameRefusal(t, what, info, e.do(t, tt.method, tt.path, tt.body, bearer(a.key)))
	}

	// A workflow that cannot start is a 503 whose message is the
	// service's own: the orchestrator's error text stays in the log.
	orch.fail(errors.New("temporal is down at 10.0.0.7"))
	info := toolErr(t, "run_scorecard", call(t, cs, "run_scorecard", map[string]any{"body": submit}))
	if info.Code != api.CodeUnavailable || strings.Contains(info.Message, "10.0.0.7") || !strings.Contains(info.Message, "could not be started") {
		t.Errorf("run_scorecard with a failing orchestrator: %s %q; want UNAVAILABLE, the service's words and no internal text", info.Code, info.Message)
	}
}

// TestMCPToolNotifications: list and mark read round trip, on the
// caller's own feed only.
func TestMCPToolNotifications(t *testing.T) {
	e := newEnv(t, withOIDC())
	a := e.tenant(t, "feed")
	alice := e.join(t, a, "alice", auth.RoleViewer)
	base := e.clock.Now()
	for i, n := range []store.Notification{
		{ID: "n1", Recipient: "alice", Kind: eval.NotifyRunCompleted, Title: "one"},
		{ID: "n2", Recipient: "alice", Kind: eval.NotifyRunFailed, Title: "two"},
		{ID: "n3", Recipient: "alice", Kind: eval.NotifyRunCompleted, Title: "three"},
		{ID: "b1", Recipient: "bob", Kind: eval.NotifyRunCompleted, Title: "bob's"},
	} {
		n.Workspace, n.CreatedAt = a.ws, base.Add(time.Duration(i)*time.Second)
		if _, _, err := e.store.AddNotification(t.Context(), n); err != nil {
			t.Fatal(err)
		}
	}
	cs, err := connectMCP(t, e, bearerTransport{token: alice, headers: map[string]string{auth.WorkspaceHeader: a.ws}})
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	list := func(args map[string]any) []string {
		t.Helper()
		got := toolOK[struct {
			Items []store.Notification `json:"items"`
		}](t, "list_notifications", call(t, cs, "list_notifications", args))
		ids := []string{}
		for _, n := range got.Items {
			ids = append(ids, n.ID)
		}
		return ids
	}
	read := func(args map[string]any) int {
		t.Helper()
		return toolOK[map[string]int](t, "read_notifications", call(t, cs, "read_notifications", map[string]any{"body": args}))["marked"]
	}
	if diff := cmp.Diff([]string{"n3", "n2", "n1"}, list(map[string]any{})); diff != "" {
		t.Errorf("feed (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"n3"}, list(map[string]any{"limit": 1})); diff != "" {
		t.Errorf("feed limit 1 (-want +got):\n%s", diff)
	}
	if n := read(map[string]any{"ids": []string{"n1", "b1", "nope"}}); n != 1 {
		t.Errorf("marking n1 (and bob's b1) read marked %d, want 1", n)
	}
	if n := read(map[string]any{"ids": []string{"n1"}}); n != 0 {
		t.Errorf("marking n1 again marked %d, want 0 (idempotent)", n)
	}
	if diff := cmp.Diff([]string{"n3", "n2"}, list(map[string]any{"unread": true})); diff != "" {
		t.Errorf("unread (-want +got):\n%s", diff)
	}
	res := e.do(t, http.MethodGet, "/notifications?unread=1", "", bearer(alice), selectWorkspace(a.ws))
	want(t, res, http.StatusOK, "GET /notifications?unread=1")
	items, _ := json.Marshal(toolOK[struct {
		Items json.RawMessage `json:"items"`
	}](t, "list_notifications", call(t, cs, "list_notifications", map[string]any{"unread": true})).Items)
	sameJSON(t, "list_notifications vs GET /notifications", items, res.Body)
	if n := read(map[string]any{"all": true}); n != 2 {
		t.Errorf("all:true marked %d, want 2", n)
	}
	if got := list(map[string]any{"unread": true}); len(got) != 0 {
		t.Errorf("unread after all:true = %v", got)
	}
	bobs, err := e.store.ListNotifications(t.Context(), a.ws, "bob", true, 0)
	if err != nil || len(bobs) != 1 {
		t.Errorf("bob's unread = %v, %v; alice's reads must not touch them", bobs, err)
	}
	for _, body := range []string{`{}`, `{"ids":["x"],"all":true}`} {
		info := toolErr(t, "read_notifications "+body, call(t, cs, "read_notifications", map[string]any{"body": raw(body)}))
		sameRefusal(t, "read_notifications "+body, info, e.do(t, http.MethodPost, "/notifications/read", body, bearer(alice), selectWorkspace(a.ws)))
	}
}

// TestMCPToolJudges: validate, create, list and get a judge as the judge
// routes do, problems and all; a registration through a tool is stamped
// via mcp.
func TestMCPToolJudges(t *testing.T) {
	e := newEnv(t)
	a := e.tenant(t, "judges")
	cs, err := connectMCP(t, e, bearerTransport{token: a.key})
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	const bad = `{"id":"j","version":"1","kind":"model","model":"m"}` // legacy kinds are not offered
	v := toolOK[validationJSON](t, "validate_judge", call(t, cs, "validate_judge", map[string]any{"body": raw(bad)}))
	if v.Valid || len(v.Problems) == 0 {
		t.Errorf("validate_judge of a bad spec = %+v, want invalid with problems", v)
	}
	res := e.do(t, http.MethodPost, "/judges/validate", bad, bearer(a.key))
	want(t, res, http.StatusOK, "POST /judges/validate")
	sameJSON(t, "validate_judge vs POST /judges/validate", toolOK[json.RawMessage](t, "validate_judge", call(t, cs, "validate_judge", map[string]any{"body": raw(bad)})), res.Body)

	info := toolErr(t, "create_judge", call(t, cs, "create_judge", map[string]any{"body": raw(bad)}))
	if _, ok := info.Details["problems"]; info.Code != api.CodeBadRequest || !ok {
		t.Errorf("create_judge of a bad spec: %s %+v, want BAD_REQUEST with details.problems", info.Code, info.Details)
	}
	sameRefusal(t, "create_judge of a bad spec", info, e.do(t, http.MethodPost, "/judges", bad, bearer(a.key)))
	info = toolErr(t, "create_judge", call(t, cs, "create_judge", map[string]any{}))
	sameRefusal(t, "create_judge without a body", info, e.do(t, http.MethodPost, "/judges", "", bearer(a.key), header{"Content-Type", "application/json"}))

	good := judgeSpec("j", "1.0.0")
	created := toolOK[registeredJSON](t, "create_judge", call(t, cs, "create_judge", map[string]any{"body": raw(good)}))
	if !created.Created || created.ID != "j" || created.Version != "1.0.0" || created.Owner != a.ws || created.CreatedBy != "key:"+a.id {
		t.Errorf("create_judge = %+v, want j@1.0.0 created in %s by key:%s", created, a.ws, a.id)
	}
	// An MCP client is an agent (issue 33): its declared name and session
	// are stamped beside via mcp; what the call gives wins.
	agentOrigin := func(name string, o json.RawMessage) map[string]any {
		var m map[string]any
		if err := json.Unmarshal(o, &m); err != nil {
			t.Fatalf("%s: origin %s: %v", name, o, err)
		}
		if c, _ := m["conversationId"].(string); c == "" {
			t.Errorf("%s: origin %s has no conversationId (the MCP session)", name, o)
		}
		delete(m, "conversationId")
		return m
	}
	if got, want := agentOrigin("create_judge", created.Origin), map[string]any{"via": "mcp", "agentId": "svc-test", "agentName": "svc-test"}; !reflect.DeepEqual(got, want) {
		t.Errorf("origin of a registration through a tool = %v, want %v and the session", got, want)
	}
	stamped := toolOK[registeredJSON](t, "create_judge", call(t, cs, "create_judge", map[string]any{"body": raw(judgeSpec("k", "1")),
		"origin": map[string]any{"agentName": "claude", "note": "drafted in chat"}}))
	if got, want := agentOrigin("create_judge with origin", stamped.Origin), map[string]any{"via": "mcp", "agentId": "svc-test", "agentName": "claude", "note": "drafted in chat"}; !reflect.DeepEqual(got, want) {
		t.Errorf("origin given to create_judge = %v, want %v and the session", got, want)
	}
	info = toolErr(t, "create_judge", call(t, cs, "create_judge", map[string]any{"body": raw(judgeSpec("l", "1")), "origin": map[string]any{"via": "fax"}}))
	sameRefusal(t, "create_judge with a bad origin", info, e.do(t, http.MethodPost, "/judges", judgeSpec("l", "1"), bearer(a.key), header{api.OriginHeader, `{"via":"fax"}`}))
	again := toolOK[registeredJSON](t, "create_judge", call(t, cs, "create_judge", map[string]any{"body": raw(good)}))
	if again.Created || again.Digest != created.Digest {
		t.Errorf("create_judge again = %+v, want the same version, not created", again)
	}
	conflict := toolErr(t, "create_judge", call(t, cs, "create_judge", map[string]any{"body": raw(strings.Replace(good, "print(1)", "print(2)", 1))}))
	if conflict.Code != api.CodeConflict || conflict.Details["storedDigest"] != created.Digest {
		t.Errorf("create_judge of other content: %s %+v, want CONFLICT with the stored digest", conflict.Code, conflict.Details)
	}

	res = e.do(t, http.MethodGet, "/judges", "", bearer(a.key))
	want(t, res, http.StatusOK, "GET /judges")
	listed := toolOK[struct {
		Items json.RawMessage `json:"items"`
	}](t, "list_judges", call(t, cs, "list_judges", map[string]any{}))
	sameJSON(t, "list_judges vs GET /judges", listed.Items, res.Body)

	// get_judge answers the route's body, the spec; the route's X-Svc-*
	// headers (owner, resolved version, digest) are in the result's _meta.
	spec, hdr := e.getSpec(t, a.key, "/judges/j/versions/latest")
	gotRes := call(t, cs, "get_judge", map[string]any{"id": "j", "version": "latest"})
	if diff := cmp.Diff(spec, toolOK[map[string]any](t, "get_judge", gotRes)); diff != "" {
		t.Errorf("get_judge spec (-route +tool):\n%s", diff)
	}
	gotHdr, _ := gotRes.Meta["svc/headers"].(map[string]any)
	for _, h := range []string{"X-Svc-Owner", "X-Svc-Version", "X-Svc-Digest"} {
		if gotHdr[h] != hdr.Get(h) || hdr.Get(h) == "" {
			t.Errorf("get_judge _meta svc/headers %s = %v, the route says %q", h, gotHdr[h], hdr.Get(h))
		}
	}
	if st, _ := gotRes.Meta["svc/status"].(float64); st != http.StatusOK {
		t.Errorf("get_judge _meta svc/status = %v, want 200", gotRes.Meta["svc/status"])
	}
	info = toolErr(t, "get_judge", call(t, cs, "get_judge", map[string]any{"id": "ghost", "version": "1"}))
	sameRefusal(t, "get_judge of an unknown judge", info, e.do(t, http.MethodGet, "/judges/ghost/versions/1", "", bearer(a.key)))
}

// TestMCPToolInternalError: a failure the API did not foresee reaches the
// client as the route's generic 500, and the log holds the cause under the
// request id the body quotes, with a line naming the tool and the session.
func TestMCPToolInternalError(t *testing.T) {
	logger, logs := apitest.NewLogger()
	e := newEnv(t, withServerOptions(func(o *api.Options) { o.Logger = logger }))
	// The dev principal needs no store once its workspace exists. The
	// client names its requests: a tool error quotes that id.
	cs, err := connectMCP(t, e, bearerTransport{headers: map[string]string{"X-Request-Id": "agent-call-42"}})
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	if err := e.store.Close(); err != nil {
		t.Fatal(err)
	}
	info := toolErr(t, "get_run", call(t, cs, "get_run", map[string]any{"id": "run_x"}))
	if info.Code != api.CodeInternal || info.RequestID != "agent-call-42" {
		t.Errorf("get_run on a closed store: code %s, requestId %q; want INTERNAL quoting agent-call-42", info.Code, info.RequestID)
	}
	sameRefusal(t, "get_run on a closed store", info, e.do(t, http.MethodGet, "/runs/run_x", ""))
	if strings.Contains(strings.ToLower(info.Message), "closed") {
		t.Errorf("the 500's message %q leaks the cause", info.Message)
	}
	logs.Find(t, "the cause under the request id", func(rec map[string]any) bool {
		cause, _ := rec["error"].(string)
		return rec["msg"] == "request failed" && rec["request_id"] == "agent-call-42" && strings.Contains(cause, "closed")
	})
	logs.Find(t, "naming the tool and the request id", func(rec map[string]any) bool {
		return rec["msg"] == "tool call failed" && rec["tool"] == "get_run" && rec["request_id"] == "agent-call-42" && rec["mcp_session"] == cs.ID()
	})
}
