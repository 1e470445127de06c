package api_test

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"svc/api"
	"svc/auth"
)

var updateDocs = flag.Bool("update", false, "rewrite docs/mcp.md's tool table from the tools")

// listAllTools lists the tools through the real client, as an agent sees them.
func listAllTools(t *testing.T, e *testEnv) []*mcp.Tool {
	t.Helper()
	a := e.tenant(t, "tools")
	cs, err := connectMCP(t, e, bearerTransport{token: a.key})
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	list, err := cs.ListTools(t.Context(), nil)
	if err != nil {
		t.Fatalf("ListTools: %v", err)
	}
	return list.Tools
}

// TestMCPEveryRouteIsATool walks the route table: every authenticated
// route has exactly one tool, which needs the route's action, unless it is
// on the exclusion list; public and operator routes have none; every tool
// names a route; every exclusion names a route; the spec's names are used
// for the routes the spec names; docs/mcp.md lists exactly these tools.
func TestMCPEveryRouteIsATool(t *testing.T) {
	e := newEnv(t)
	tools := listAllTools(t, e)
	routes := map[string]auth.Action{}
	for _, r := range e.srv.Routes() {
		routes[r.Method+" "+r.Path] = r.Action
	}
	byRoute := map[string]*mcp.Tool{}
	for _, tool := range tools {
		route, _ := tool.Meta["svc/route"].(string)
		action, _ := tool.Meta["svc/action"].(string)
		want, ok := routes[route]
		switch {
		case !ok:
			t.Errorf("tool %s mirrors %q, which is not a route", tool.Name, route)
		case string(want) != action:
			t.Errorf("tool %s needs %q, but its route %s needs %q", tool.Name, action, route, want)
		}
		if other, dup := byRoute[route]; dup {
			t.Errorf("route %s has two tools, %s and %s", route, other.Name, tool.Name)
		}
		byRoute[route] = tool
	}
	exclusions := api.MCPToolExclusions()
	for route, action := range routes {
		_, excluded := exclusions[route]
		tool, has := byRoute[route]
		switch {
		case action == auth.Public || action == auth.Internal:
			if has {
				t.Errorf("%s route %s has the tool %s: only authenticated routes are tools", action, route, tool.Name)
			}
		case excluded:
			if has {
				t.Errorf("route %s is excluded but has the tool %s", route, tool.Name)
			}
		case !has:
			t.Errorf("authenticated route %s has no tool: document it in api/openapi.json (a tool is generated), or add it to toolExclusions with the reason", route)
		}
	}
	for route, reason := range exclusions {
		if _, ok := routes[route]; !ok {
			t.Errorf("toolExclusions names %s (%s), which is not a route: remove it", route, reason)
		}
		if reason == "" {
			t.Errorf("toolExclusions: %s has no reason", route)
		}
	}
	for route, name := range api.MCPSpecToolNames() {
		if tool, ok := byRoute[route]; ok && tool.Name != name {
			t.Errorf("route %s: tool %s, but spec §4.11 names it %s", route, tool.Name, name)
		}
	}
	checkDocsTable(t, tools)
}

// checkDocsTable compares docs/mcp.md's tool table with the tools; with
// -update it rewrites the table instead.
func checkDocsTable(t *testing.T, tools []*mcp.Tool) {
	t.Helper()
	type row struct{ Action, Route string }
	got := map[string]row{}
	var lines []string
	sorted := slices.Clone(tools)
	slices.SortFunc(sorted, func(a, b *mcp.Tool) int { return strings.Compare(a.Name, b.Name) })
	for _, tool := range sorted {
		route, _ := tool.Meta["svc/route"].(string)
		action, _ := tool.Meta["svc/action"].(string)
		got[tool.Name] = row{action, route}
		lines = append(lines, fmt.Sprintf("| `%s` | `%s` | `%s` |", tool.Name, action, route))
	}
	const path = "../docs/mcp.md"
	doc, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	table := regexp.MustCompile(`(?m)^\| tool \| action \| mirrors \|\n\|---\|---\|---\|\n(?:\|.*\n)*`)
	if *updateDocs {
		loc := table.FindIndex(doc)
		if loc == nil {
			t.Fatalf("%s has no table headed | tool | action | mirrors |", path)
		}
		repl := "| tool | action | mirrors |\n|---|---|---|\n" + strings.Join(lines, "\n") + "\n"
		doc = append(doc[:loc[0]:loc[0]], append([]byte(repl), doc[loc[1]:]...)...)
		if err := os.WriteFile(path, doc, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	documented := map[string]row{}
	for line := range strings.Lines(string(table.Find(doc))) {
		cells := strings.Split(strings.TrimSpace(line), "|")
		if len(cells) < 5 || !strings.HasPrefix(strings.TrimSpace(cells[1]), "`") {
			continue
		}
		cell := func(i int) string { return strings.Trim(strings.TrimSpace(cells[i]), "`") }
		documented[cell(1)] = row{cell(2), cell(3)}
	}
	if diff := cmp.Diff(got, documented); diff != "" {
		t.Errorf("docs/mcp.md's tool table (-tools +docs); go test ./api -run TestMCPEveryRouteIsATool -update rewrites it:\n%s", diff)
	}
}

// TestMCPToolNames: the spec's names, its patterns and their analogues,
// else the operationId in snake case.
func TestMCPToolNames(t *testing.T) {
	tests := []struct{ method, path, op, want string }{
		{"POST", "/scorecards", "submitScorecard", "run_scorecard"},
		{"POST", "/groups/:id/score", "scoreGroup", "score_group"},
		{"POST", "/runtimes/probe", "probeRuntime", "probe_runtime"},
		{"GET", "/judges/:id/versions/:version", "getJudgeVersion", "get_judge"},
		{"GET", "/datasets/:id/versions/:version", "getDatasetVersion", "get_dataset"},
		{"POST", "/rubrics", "registerRubric", "create_rubric"},
		{"POST", "/harness-templates", "registerHarnessTemplate", "create_harness_template"},
		{"PUT", "/harnesses/:id/versions/:version/tags", "putHarnessTags", "set_harness_version_tags"},
		{"POST", "/harness-templates/:id/team", "moveHarnessTemplate", "move_harness_template"},
		{"GET", "/runs/:id/logs", "getRunLogs", "get_run_logs"},
		{"GET", "/runs/:id/webhook-deliveries", "listRunWebhookDeliveries", "list_run_webhook_deliveries"},
		{"GET", "/openapi.json", "getOpenAPI", "get_open_api"},
		{"GET", "/ops/driver/:family/:id", "getDriver", "get_driver"},
	}
	for _, tt := range tests {
		if got := api.MCPToolName(tt.method, tt.path, tt.op); got != tt.want {
			t.Errorf("name of %s %s (%s) = %q, want %q", tt.method, tt.path, tt.op, got, tt.want)
		}
	}
}

// TestMCPToolSchemas: every input schema is a closed object whose
// references all point inside it (a client has no OpenAPI document to
// resolve them against); path parameters are required; a route with a
// body takes it as body, with the document's schema.
func TestMCPToolSchemas(t *testing.T) {
	e := newEnv(t)
	byName := map[string]map[string]any{}
	for _, tool := range listAllTools(t, e) {
		b, err := json.Marshal(tool.InputSchema)
		if err != nil {
			t.Fatal(err)
		}
		var s map[string]any
		if err := json.Unmarshal(b, &s); err != nil {
			t.Fatal(err)
		}
		byName[tool.Name] = s
		if s["type"] != "object" || s["additionalProperties"] != false {
			t.Errorf("%s: schema %s, want a closed object", tool.Name, b)
		}
		defs, _ := s["$defs"].(map[string]any)
		for _, ref := range regexp.MustCompile(`"\$ref":"([^"]*)"`).FindAllStringSubmatch(string(b), -1) {
			name, ok := strings.CutPrefix(ref[1], "#/$defs/")
			if _, def := defs[name]; !ok || !def {
				t.Errorf("%s: $ref %q points outside the schema", tool.Name, ref[1])
			}
		}
		if strings.Contains(tool.Description, "Mirrors ") == false {
			t.Errorf("%s: description %q does not name its route", tool.Name, tool.Description)
		}
	}
	tests := []struct {
		tool     string
		props    []string
		required []string
	}{
		{"get_run", []string{"id"}, []string{"id"}},
		{"list_runs", []string{"cursor", "limit", "scope", "scorecardId"}, nil},
		{"get_judge", []string{"id", "version"}, []string{"id", "version"}},
		{"create_judge", []string{"body", "origin"}, []string{"body"}},
		{"score_group", []string{"body", "id"}, []string{"body", "id"}},
		{"set_dataset_version_tags", []string{"body", "id", "version"}, []string{"body", "id", "version"}},
		{"cancel_scorecard", []string{"id"}, []string{"id"}},
	}
	for _, tt := range tests {
		s, ok := byName[tt.tool]
		if !ok {
			t.Errorf("no tool %s", tt.tool)
			continue
		}
		props, _ := s["properties"].(map[string]any)
		var names []string
		for n := range props {
			names = append(names, n)
		}
		slices.Sort(names)
		if diff := cmp.Diff(tt.props, names); diff != "" {
			t.Errorf("%s arguments (-want +got):\n%s", tt.tool, diff)
		}
		var req []string
		if r, ok := s["required"].([]any); ok {
			for _, n := range r {
				req = append(req, n.(string))
			}
		}
		slices.Sort(req)
		if diff := cmp.Diff(tt.required, req); diff != "" {
			t.Errorf("%s required (-want +got):\n%s", tt.tool, diff)
		}
	}
	// run_scorecard's body is the document's SubmitScorecardRequest, inlined.
	body, _ := byName["run_scorecard"]["properties"].(map[string]any)["body"].(map[string]any)
	bodyProps, _ := body["properties"].(map[string]any)
	for _, member := range []string{"dataset", "harness", "concurrency", "cases"} {
		if _, ok := bodyProps[member]; !ok {
			t.Errorf("run_scorecard's body schema has no %s: %v", member, body)
		}
	}
}
