package api_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"svc/api"
)

// sdkClientResult is what testdata/mcp-client/client.mjs prints.
type sdkClientResult struct {
	Server struct{ Name, Version string } `json:"server"`
	Tools  []string                       `json:"tools"`
	Calls  []struct {
		Name    string          `json:"name"`
		IsError bool            `json:"isError"`
		Result  json.RawMessage `json:"result"`
	} `json:"calls"`
}

// typeScriptSDK returns node and the folder whose node_modules holds the
// official TypeScript MCP SDK (testdata/mcp-client/install.sh puts it in
// SVC_NPM_CACHE, default /tmp/svc-mcp-client). Without them the test is
// skipped, except under CI=true, where it fails saying what to install.
func typeScriptSDK(t *testing.T) (node, dir string) {
	t.Helper()
	dir = os.Getenv("SVC_NPM_CACHE")
	if dir == "" {
		dir = filepath.Join(os.TempDir(), "svc-mcp-client")
	}
	node, err := exec.LookPath("node")
	if err == nil {
		_, err = os.Stat(filepath.Join(dir, "node_modules", "@modelcontextprotocol", "sdk", "package.json"))
	}
	if err != nil {
		const how = "install Node.js 18 or later and run api/testdata/mcp-client/install.sh (npm install of @modelcontextprotocol/sdk into $SVC_NPM_CACHE)"
		if os.Getenv("CI") == "true" {
			t.Fatalf("the TypeScript MCP SDK client cannot run (%v): %s", err, how)
		}
		t.Skipf("the TypeScript MCP SDK client cannot run (%v): %s", err, how)
	}
	return node, dir
}

// TestMCPWithTypeScriptSDK: the official TypeScript SDK's client, over
// streamable HTTP with a tenant key as its bearer, lists every tool and
// calls a sample across resources on a real server on loopback.
func TestMCPWithTypeScriptSDK(t *testing.T) {
	node, cache := typeScriptSDK(t)
	e := newEnv(t, withRequireAuth())
	a := e.tenant(t, "sdk")

	// Node resolves the SDK from the node_modules beside the script.
	dir := t.TempDir()
	if err := os.Symlink(filepath.Join(cache, "node_modules"), filepath.Join(dir, "node_modules")); err != nil {
		t.Fatal(err)
	}
	script, err := os.ReadFile(filepath.Join("testdata", "mcp-client", "client.mjs"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "client.mjs"), script, 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, filepath.Join(dir, "client.mjs"))
	cmd.Env = append(os.Environ(), "SVC_MCP_URL="+e.client.URL+"/mcp", "SVC_MCP_KEY="+a.key)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		var exit *exec.ExitError
		if errors.As(err, &exit) || ctx.Err() != nil {
			t.Fatalf("node client.mjs: %v\nstderr:\n%s\nstdout:\n%s", err, stderr.String(), out)
		}
		t.Fatal(err)
	}
	var got sdkClientResult
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("decoding the client's output: %v\n%s", err, out)
	}
	if got.Server.Name != "svc" {
		t.Errorf("server = %+v, want svc", got.Server)
	}

	// The SDK sees the tools the Go client sees: one per tool route.
	var names []string
	for _, tool := range listAllTools(t, e) {
		names = append(names, tool.Name)
	}
	slices.Sort(names)
	if diff := cmp.Diff(names, got.Tools); diff != "" {
		t.Errorf("tools listed by the TypeScript SDK (-go client +typescript):\n%s", diff)
	}

	results := map[string]json.RawMessage{}
	for _, c := range got.Calls {
		refused := c.Name == "get_scorecard"
		if c.IsError != refused {
			t.Errorf("%s: isError %v, want %v; result %s", c.Name, c.IsError, refused, c.Result)
		}
		results[c.Name] = c.Result
	}
	check := func(name string, into any) {
		t.Helper()
		if err := json.Unmarshal(results[name], into); err != nil {
			t.Errorf("%s: decoding %s: %v", name, results[name], err)
		}
	}
	var me struct{ Workspace, Via string }
	check("get_me", &me)
	if me.Workspace != a.ws || me.Via != "api-key" {
		t.Errorf("get_me = %+v, want the key's workspace %s via api-key", me, a.ws)
	}
	var created struct {
		ID, Version string
		Created     bool
		Origin      map[string]any
	}
	check("create_dataset", &created)
	if !created.Created || created.ID != "mcp-sdk-ds" || created.Origin["via"] != "mcp" || created.Origin["note"] != "typescript sdk" {
		t.Errorf("create_dataset = %+v, want mcp-sdk-ds created with origin via mcp and the note", created)
	}
	var datasets struct {
		Items []struct {
			ID          string              `json:"id"`
			VersionTags map[string][]string `json:"versionTags"`
		} `json:"items"`
	}
	check("list_datasets", &datasets)
	if !slices.ContainsFunc(datasets.Items, func(d struct {
		ID          string              `json:"id"`
		VersionTags map[string][]string `json:"versionTags"`
	}) bool {
		return d.ID == "mcp-sdk-ds"
	}) {
		t.Errorf("list_datasets = %s, want mcp-sdk-ds", results["list_datasets"])
	}
	var spec struct {
		ID    string `json:"id"`
		Cases []any  `json:"cases"`
	}
	check("get_dataset", &spec)
	if spec.ID != "mcp-sdk-ds" || len(spec.Cases) != 2 {
		t.Errorf("get_dataset = %s, want mcp-sdk-ds with 2 cases", results["get_dataset"])
	}
	var refusal api.ErrorBody
	check("get_scorecard", &refusal)
	if refusal.Error.Code != api.CodeNotFound || refusal.Error.RequestID == "" {
		t.Errorf("get_scorecard of an unknown id = %s, want NOT_FOUND with a request id", results["get_scorecard"])
	}
	for _, name := range []string{"list_runs", "list_scorecards", "list_notifications"} {
		var page struct {
			Items []any `json:"items"`
		}
		check(name, &page)
		if page.Items == nil || len(page.Items) != 0 {
			t.Errorf("%s = %s, want {\"items\": []} in a fresh workspace", name, results[name])
		}
	}

	// What the tools did is there for the routes too, in the key's workspace.
	res := e.do(t, http.MethodGet, "/datasets", "", bearer(a.key))
	if res.Status != http.StatusOK || !strings.Contains(string(res.Body), `"stable"`) || !strings.Contains(string(res.Body), "mcp-sdk-ds") {
		t.Errorf("GET /datasets after the tools: %d %s, want mcp-sdk-ds tagged stable", res.Status, res.Body)
	}
	res = e.do(t, http.MethodGet, "/judges/mcp-sdk-judge/versions/1.0.0", "", bearer(a.key))
	want(t, res, http.StatusOK, "GET the judge create_judge registered")
}
