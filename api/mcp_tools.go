package api

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"regexp"
	"strings"
	"unicode"

	"github.com/labstack/echo/v4"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"svc/auth"
)

// The agent tools (spec §4.11): one per authenticated route, generated from
// the route table joined with the route's operation in openapi.json. A tool
// call is served by the route itself (mcp_dispatch.go), so authentication,
// role and scope gates, workspace scoping, validation and the service call
// are the route's, not a second implementation. docs/mcp.md explains the
// names, arguments and answers.

// mcpSource is origin.source of everything submitted through a tool.
const mcpSource = "mcp"

// Keys of a tool's _meta: the route it mirrors and the action it needs, so a
// client (and the test that holds tools and routes together) can see both.
// A result's _meta has the route's status and its X-Svc-* headers.
const (
	metaRoute   = "svc/route"
	metaAction  = "svc/action"
	metaStatus  = "svc/status"
	metaHeaders = "svc/headers"
)

// Argument names a tool adds to the route's path and query parameters.
const (
	argBody   = "body"   // the route's JSON request body
	argOrigin = "origin" // the x-svc-origin header of a registration, as an object
)

// specToolNames are the names spec §4.11 gives, by route. A name listed for
// a route the table does not have (yet) is simply unused;
// TestMCPEveryRouteIsATool checks the others are used.
var specToolNames = map[string]string{
	"POST /scorecards":                     "run_scorecard",
	"POST /groups":                         "run_experiment",
	"POST /groups/:id/score":               "score_group",
	"POST /scorecards/:id/cancel":          "cancel_scorecard",
	"POST /judges":                         "create_judge",
	"POST /judges/validate":                "validate_judge",
	"GET /judges":                          "list_judges",
	"GET /judges/:id/versions/:version":    "get_judge",
	"POST /rubrics":                        "create_rubric",
	"POST /runtimes":                       "create_runtime",
	"POST /runtimes/probe":                 "probe_runtime",
	"POST /sandboxes":                      "create_sandbox",
	"POST /sandboxes/:id/snapshot":         "snapshot_sandbox",
	"POST /sandboxes/:id/exec":             "sandbox_exec",
	"POST /sandboxes/:id/git/push":         "sandbox_git_push",
	"GET /notifications":                   "list_notifications",
	"POST /notifications/read":             "read_notifications",
	"POST /judges/preview":                 "preview_judge",
	"POST /judges/try":                     "try_judge",
	"POST /scorecards/:id/verify-manifest": "verify_scorecard_manifest",
	"POST /scorecards/query":               "query_scorecards",
	"GET /scorecards/:id/analysis":         "get_scorecard_analysis",
	"GET /workspace/pulse":                 "get_workspace_pulse",
}

// toolExclusions are the authenticated routes that are not tools, each
// with the reason. TestMCPEveryRouteIsATool fails on an entry that names
// no route, so the list cannot go stale.
var toolExclusions = map[string]string{
	"POST " + mcpPath:   "the MCP endpoint itself: a tool cannot send MCP messages",
	"GET " + mcpPath:    "the MCP endpoint's server-to-client event stream",
	"DELETE " + mcpPath: "ends the MCP session the call runs in",
	// The runner routes take a runner key only (api/runners.go): machines
	// leasing jobs, not tools for an agent.
	"POST /runner/lease":              "a runner's long poll for a job; runner keys only",
	"POST /runner/jobs/:id/heartbeat": "a runner's lease renewal; runner keys only",
	"POST /runner/jobs/:id/result":    "a runner's result post; runner keys only",
	"POST /runner/jobs/:id/logs":      "a runner's output post; runner keys only",
	// An image import's body is the image's tar (api/worlds.go).
	"POST /images": "its body is an image's tar, not JSON a tool can send",
}

// isToolRoute reports whether a route becomes a tool: it is authenticated
// (not public, not the operator's x-internal-token door) and not excluded.
func isToolRoute(r Route) bool {
	if r.Action == auth.Public || r.Action == auth.Internal {
		return false
	}
	_, excluded := toolExclusions[r.Method+" "+r.Path]
	return !excluded
}

// Name patterns the spec gives with a wildcard, and their analogues.
var (
	// set_*_version_tags: PUT /<resource>/:id/versions/:version/tags.
	putTagsOp = regexp.MustCompile(`^put([A-Z]\w*)Tags$`)
	// move_<resource>: POST /<resource>/:id/team.
	moveOp = regexp.MustCompile(`^move([A-Z]\w*)$`)
	// create_judge, create_rubric, create_runtime name registrations; the
	// other registries follow them (create_dataset, create_harness, ...).
	registerOp = regexp.MustCompile(`^register([A-Z]\w*)$`)
	// get_judge names GET /judges/:id/versions/:version; the other
	// registries follow it (get_dataset, get_runtime, ...).
	getVersionOp = regexp.MustCompile(`^get([A-Z]\w*)Version$`)
)

// toolName is the spec's name of the route's tool, a name by one of the
// spec's patterns, or the operationId in snake case (getRun: get_run).
func toolName(r Route, operationID string) string {
	if n, ok := specToolNames[r.Method+" "+r.Path]; ok {
		return n
	}
	switch {
	case r.Method == http.MethodPut && strings.HasSuffix(r.Path, "/versions/:version/tags") && putTagsOp.MatchString(operationID):
		return "set_" + snakeCase(putTagsOp.FindStringSubmatch(operationID)[1]) + "_version_tags"
	case r.Method == http.MethodPost && strings.HasSuffix(r.Path, "/:id/team") && moveOp.MatchString(operationID):
		return "move_" + snakeCase(moveOp.FindStringSubmatch(operationID)[1])
	case r.Method == http.MethodPost && registerOp.MatchString(operationID):
		return "create_" + snakeCase(registerOp.FindStringSubmatch(operationID)[1])
	case r.Method == http.MethodGet && strings.HasSuffix(r.Path, "/versions/:version") && getVersionOp.MatchString(operationID):
		return "get_" + snakeCase(getVersionOp.FindStringSubmatch(operationID)[1])
	}
	return snakeCase(operationID)
}

// snakeCase turns an operationId into a tool name: getRunLogs is
// get_run_logs, getOpenAPI get_open_api, listRunWebhookDeliveries
// list_run_webhook_deliveries.
func snakeCase(s string) string {
	rs := []rune(s)
	var b strings.Builder
	for i, r := range rs {
		if unicode.IsUpper(r) && i > 0 {
			prev := rs[i-1]
			nextLower := i+1 < len(rs) && unicode.IsLower(rs[i+1])
			if unicode.IsLower(prev) || unicode.IsDigit(prev) || (unicode.IsUpper(prev) && nextLower) {
				b.WriteByte('_')
			}
		}
		b.WriteRune(unicode.ToLower(r))
	}
	return b.String()
}

// routeTool is one generated tool: the route it calls and how its
// arguments map onto that route's request.
type routeTool struct {
	route  Route
	name   string
	path   []string          // the path parameters, in the order of the path
	query  []string          // the query parameters
	header map[string]string // argument name to header name (x-svc-origin is argOrigin)
	body   bool              // the route takes a JSON body (argBody)
}

// buildTools generates the tool of every tool route, in table order. It
// fails when a route has no operation in openapi.json, or when two routes
// would give the same name: both are bugs every test run finds.
func buildTools(routes []Route) ([]*mcp.Tool, []*routeTool, error) {
	ops, err := openapiOperations()
	if err != nil {
		return nil, nil, err
	}
	var tools []*mcp.Tool
	var rts []*routeTool
	names := map[string]string{}
	for _, r := range routes {
		if !isToolRoute(r) {
			continue
		}
		key := r.Method + " " + r.Path
		op, ok := ops[key]
		if !ok {
			return nil, nil, fmt.Errorf("api: route %s has no operation in openapi.json, so no tool", key)
		}
		t, rt, err := toolFor(r, op)
		if err != nil {
			return nil, nil, fmt.Errorf("api: the tool of %s: %w", key, err)
		}
		if other, dup := names[t.Name]; dup {
			return nil, nil, fmt.Errorf("api: routes %s and %s both give the tool name %q: add one to specToolNames", other, key, t.Name)
		}
		names[t.Name] = key
		tools = append(tools, t)
		rts = append(rts, rt)
	}
	return tools, rts, nil
}

// toolFor builds the tool of route r from its operation op.
func toolFor(r Route, op openapiOperation) (*mcp.Tool, *routeTool, error) {
	rt := &routeTool{route: r, name: toolName(r, op.ID), header: map[string]string{}}
	props := map[string]any{}
	var required []string
	add := func(name string, schema map[string]any, doc string, req bool) error {
		if _, dup := props[name]; dup {
			return fmt.Errorf("two inputs are named %q", name)
		}
		s := map[string]any{}
		for k, v := range schema {
			s[k] = v
		}
		if doc != "" {
			s["description"] = doc
		}
		props[name] = s
		if req {
			required = append(required, name)
		}
		return nil
	}
	for _, seg := range strings.Split(r.Path, "/") {
		if name, ok := strings.CutPrefix(seg, ":"); ok {
			rt.path = append(rt.path, name)
		}
	}
	documented := map[string]bool{}
	for _, p := range op.Params {
		var err error
		switch {
		case p.In == "path":
			documented[p.Name] = true
			err = add(p.Name, p.Schema, p.Description, true)
		case p.In == "query":
			rt.query = append(rt.query, p.Name)
			err = add(p.Name, p.Schema, p.Description, p.Required)
		case p.In == "header" && strings.EqualFold(p.Name, auth.WorkspaceHeader):
			// The call carries the MCP request's own x-svc-workspace.
		case p.In == "header" && strings.EqualFold(p.Name, OriginHeader):
			rt.header[argOrigin] = OriginHeader
			err = add(argOrigin, capabilityOriginSchema(), "Where the version came from (the route's "+OriginHeader+
				" header, as an object); via defaults to mcp.", false)
		case p.In == "header":
			rt.header[p.Name] = p.Name
			err = add(p.Name, p.Schema, p.Description, p.Required)
		default:
			err = fmt.Errorf("parameter %s in %s: a tool cannot send it", p.Name, p.In)
		}
		if err != nil {
			return nil, nil, err
		}
	}
	for _, name := range rt.path {
		if !documented[name] {
			return nil, nil, fmt.Errorf("path parameter %s is not in openapi.json", name)
		}
	}
	if op.Body != nil {
		rt.body = true
		doc := op.BodyDoc
		if doc == "" {
			doc = "The route's JSON request body."
		}
		if err := add(argBody, op.Body, doc, op.BodyNeeded); err != nil {
			return nil, nil, err
		}
	}
	schema := map[string]any{"type": "object", "properties": props, "additionalProperties": false}
	if len(required) > 0 {
		schema["required"] = required
	}
	if len(op.Defs) > 0 {
		schema["$defs"] = op.Defs
	}
	readOnly := r.Method == http.MethodGet || strings.HasSuffix(string(r.Action), ":read")
	destructive := r.Method == http.MethodDelete || strings.HasSuffix(r.Path, "/cancel") || strings.HasSuffix(r.Path, "/rotate")
	idempotent := readOnly || r.Method == http.MethodPut || r.Method == http.MethodDelete
	desc := op.Summary
	if op.Description != "" {
		desc = strings.TrimRight(desc, ".") + ". " + op.Description
	}
	t := &mcp.Tool{
		Name:        rt.name,
		Title:       op.Summary,
		Description: fmt.Sprintf("%s\n\nMirrors %s %s; needs %s.", desc, r.Method, r.Path, actionText(r.Action)),
		InputSchema: schema,
		Annotations: &mcp.ToolAnnotations{Title: op.Summary, ReadOnlyHint: readOnly, DestructiveHint: &destructive,
			IdempotentHint: idempotent, OpenWorldHint: new(bool)},
		Meta: mcp.Meta{metaRoute: r.Method + " " + r.Path, metaAction: string(r.Action)},
	}
	return t, rt, nil
}

// capabilityOriginSchema is components.schemas.CapabilityOrigin, inlined.
func capabilityOriginSchema() map[string]any {
	var d struct {
		Components map[string]map[string]any `json:"components"`
	}
	if err := json.Unmarshal(openapiJSON, &d); err == nil {
		in := &inliner{components: d.Components, defs: map[string]any{}}
		if s, err := in.schema(map[string]any{"$ref": "#/components/schemas/CapabilityOrigin"}); err == nil && len(in.defs) == 0 {
			return s
		}
	}
	return map[string]any{"type": "object"}
}

// registerMCPTools adds the tool of every tool route to the MCP server.
// An error is a mismatch between the route table and the embedded
// openapi.json: a bug that every test run finds (TestMCPEveryRouteIsATool),
// and NewServer refuses to start with it.
func (s *Server) registerMCPTools(routes []Route) error {
	tools, rts, err := buildTools(routes)
	if err != nil {
		return fmt.Errorf("api: generating the MCP tools: %w", err)
	}
	for i, t := range tools {
		rt := rts[i]
		s.mcpServer.AddTool(t, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return s.callRoute(ctx, req, rt), nil
		})
	}
	return nil
}

// actionText words an action for a tool's description.
func actionText(a auth.Action) string {
	if a == auth.Authenticated {
		return "any authenticated caller"
	}
	rule, _ := auth.RuleFor(a)
	return fmt.Sprintf("%s (%s or above)", a, rule.MinRole)
}

// toolCallID names one tool call in the log, in the route's request and in
// its error body: the X-Request-Id the client sent with the call's HTTP
// request (the id the access log has for it), else a new one. Not
// RequestID(ctx): a tool's context comes from the request that opened the
// MCP session, so every call of a session would share that id.
func toolCallID(req *mcp.CallToolRequest) string {
	if req.Extra != nil {
		if id := req.Extra.Header.Get(echo.HeaderXRequestID); saneRequestID(id) {
			return id
		}
	}
	return rand.Text()
}

// toolErrorInfo is errorResponse without an HTTP exchange: the status and
// the error body a route would answer err with. It never puts the text of
// an unforeseen error into the body. Tool calls use it for the arguments
// they refuse before the route is called.
func toolErrorInfo(err error) (int, ErrorInfo) {
	var info ErrorInfo
	detailed := errorDetails(err, &info)
	status, code := sentinelStatus(err)
	if status == 0 {
		status, code = http.StatusInternalServerError, CodeInternal
	}
	info.Code = code
	info.Message = publicMessage(err, status, detailed, "")
	return status, info
}

// toolRefusal is the tool result of arguments refused before the route is
// called: the error body the route would give, as structured content and
// as text.
func toolRefusal(id string, err error) *mcp.CallToolResult {
	status, info := toolErrorInfo(err)
	info.RequestID = id
	body := ErrorBody{Error: info}
	text, mErr := json.Marshal(body)
	if mErr != nil {
		body.Error.Details = nil
		text, _ = json.Marshal(body)
	}
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: string(text)}},
		StructuredContent: body, Meta: mcp.Meta{metaStatus: status}}
}

// logToolFailure notes a call whose route answered 5xx: the route's error
// handler logged the cause under the same request id; this line adds the
// tool and the MCP session.
func (s *Server) logToolFailure(ctx context.Context, req *mcp.CallToolRequest, id string, status int) {
	attrs := []slog.Attr{slog.String("request_id", id), slog.String("tool", req.Params.Name), slog.Int("status", status)}
	if req.Session != nil {
		attrs = append(attrs, slog.String("mcp_session", req.Session.ID()))
	}
	s.logger.LogAttrs(ctx, slog.LevelError, "tool call failed", attrs...)
}
