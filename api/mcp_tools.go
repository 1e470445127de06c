package api

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"reflect"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/labstack/echo/v4"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"svc/auth"
	"svc/derrors"
	"svc/query"
	"svc/registry"
	"svc/registry/service"
	"svc/runs"
	"svc/scorecards"
)

// The agent tools (spec §4.11). Each tool mirrors one route: it needs that
// route's action, calls the service method the route's handler calls, and
// answers the JSON the route answers (as structured content and as text),
// or a tool error carrying the route's error body. docs/mcp.md lists them.

// mcpSource is origin.source of everything submitted through a tool.
const mcpSource = "mcp"

// Keys of a tool's _meta: the route it mirrors and the action it needs, so a
// client (and the test that holds tools and routes together) can see both.
const (
	metaRoute  = "svc/route"
	metaAction = "svc/action"
)

// toolDef is one tool: its name, the route it mirrors and that route's action.
type toolDef struct {
	name        string
	route       string      // "POST /scorecards", as in the route table
	action      auth.Action // the route's action; TestMCPToolsMirrorRoutes holds them equal
	readOnly    bool        // the route changes nothing
	destructive bool        // the route stops or discards work
	description string
}

// idInput names the record a tool acts on: the route's :id.
type idInput struct {
	ID string `json:"id" jsonschema:"the record's id"`
}

// Validate refuses an id the route's path could not carry.
func (in *idInput) Validate() error { return checkArg("id", in.ID) }

// scoreInput is the :id of the scorecard or experiment to score and the
// route's body.
type scoreInput struct {
	ID string `json:"id" jsonschema:"the scorecard's or experiment's id"`
	scorecards.ScoreRequest
}

// Validate checks the id, then the body as the route does.
func (in *scoreInput) Validate() error {
	if err := checkArg("id", in.ID); err != nil {
		return err
	}
	return in.ScoreRequest.Validate()
}

// listRunsInput is GET /runs's query.
type listRunsInput struct {
	ScorecardID string `json:"scorecardId,omitempty" jsonschema:"only the child runs of this scorecard"`
	Scope       string `json:"scope,omitempty" jsonschema:"\"all\" also lists the child runs of scorecards"`
	Cursor      string `json:"cursor,omitempty" jsonschema:"nextCursor of the previous page"`
	Limit       int    `json:"limit,omitempty" jsonschema:"page size, 1 to 500 (default 50)"`
}

// Validate checks what the route checks of its query.
func (in *listRunsInput) Validate() error {
	if in.Scope != "" && in.Scope != "all" {
		return derrors.Invalidf("scope=%q: the only scope is \"all\" (children of scorecards included)", clip(in.Scope))
	}
	return checkRange("limit", int64(in.Limit), 1, runs.MaxPage)
}

// runLogsInput is GET /runs/:id/logs's id and query.
type runLogsInput struct {
	ID    string `json:"id" jsonschema:"the run's id"`
	After int64  `json:"after,omitempty" jsonschema:"only chunks after this sequence number (lastSeq of the previous answer)"`
	Limit int    `json:"limit,omitempty" jsonschema:"at most this many chunks, 1 to 5000"`
}

// Validate checks what the route checks of its path and query.
func (in *runLogsInput) Validate() error {
	if err := checkArg("id", in.ID); err != nil {
		return err
	}
	if err := checkRange("after", in.After, 0, 1<<62); err != nil {
		return err
	}
	return checkRange("limit", int64(in.Limit), 1, 5000)
}

// listScorecardsInput is GET /scorecards's query.
type listScorecardsInput struct {
	Kind      string `json:"kind,omitempty" jsonschema:"scorecard or experiment"`
	Status    string `json:"status,omitempty" jsonschema:"comma-separated statuses, e.g. running,succeeded"`
	DatasetID string `json:"datasetId,omitempty" jsonschema:"only batches of this dataset"`
	HarnessID string `json:"harnessId,omitempty" jsonschema:"only batches of this harness"`
	Cursor    string `json:"cursor,omitempty" jsonschema:"nextCursor of the previous page"`
	Limit     int    `json:"limit,omitempty" jsonschema:"page size, 1 to 500 (default 50)"`
}

// Validate checks what the route checks of its query.
func (in *listScorecardsInput) Validate() error {
	return checkRange("limit", int64(in.Limit), 1, 500)
}

// analysisInput is GET /scorecards/:id/analysis's id and query.
type analysisInput struct {
	ID       string `json:"id" jsonschema:"the scorecard's id"`
	Revision int    `json:"revision,omitempty" jsonschema:"the scoring revision whose analysis to read (default: the latest)"`
}

// Validate checks what the route checks of its path and query.
func (in *analysisInput) Validate() error {
	if err := checkArg("id", in.ID); err != nil {
		return err
	}
	return checkRange("revision", int64(in.Revision), 1, 1<<30)
}

// diffInput is GET /scorecards/diff's query; the service checks it.
type diffInput struct {
	Baseline  string `json:"baseline" jsonschema:"the baseline scorecard's id"`
	Candidate string `json:"candidate" jsonschema:"the candidate scorecard's id"`
}

// listNotificationsInput is GET /notifications's query.
type listNotificationsInput struct {
	Unread bool `json:"unread,omitempty" jsonschema:"only unread notifications"`
	Limit  int  `json:"limit,omitempty" jsonschema:"at most this many, 1 to 200"`
}

// Validate checks what the route checks of its query.
func (in *listNotificationsInput) Validate() error {
	return checkRange("limit", int64(in.Limit), 1, runs.MaxNotificationPage)
}

// versionInput is GET /judges/:id/versions/:version's path.
type versionInput struct {
	ID      string `json:"id" jsonschema:"the judge's id"`
	Version string `json:"version" jsonschema:"an exact version or \"latest\""`
}

// Validate refuses what the route's path could not carry.
func (in *versionInput) Validate() error {
	if err := checkArg("id", in.ID); err != nil {
		return err
	}
	return checkArg("version", in.Version)
}

// registerInput is a registration: the spec the route takes as its body and
// the CapabilityOrigin it takes in the x-svc-origin header.
type registerInput struct {
	Spec   json.RawMessage            `json:"spec" jsonschema:"the judge spec, as POST /judges takes it"`
	Origin *registry.CapabilityOrigin `json:"origin,omitempty" jsonschema:"where the version came from (the route's x-svc-origin header); via defaults to mcp"`
}

// Validate requires the spec.
func (in *registerInput) Validate() error { return requireSpec(in.Spec) }

// specInput is the spec a dry run checks.
type specInput struct {
	Spec json.RawMessage `json:"spec" jsonschema:"the judge spec to check, as POST /judges/validate takes it"`
}

// Validate requires the spec.
func (in *specInput) Validate() error { return requireSpec(in.Spec) }

// mcpOrigin is the origin a registration through a tool stamps: the
// caller's, through the mcp door unless it names another, or just the door.
func mcpOrigin(o *registry.CapabilityOrigin) ([]byte, error) {
	if o == nil {
		o = &registry.CapabilityOrigin{}
	}
	if o.Via == "" {
		o.Via = registry.ViaMCP
	}
	b, err := json.Marshal(o)
	if err != nil {
		return nil, fmt.Errorf("api: encoding the origin: %w", err)
	}
	return b, nil
}

func requireSpec(spec json.RawMessage) error {
	if len(spec) == 0 || string(spec) == "null" {
		return derrors.Invalidf("spec is required: the judge spec as a JSON object")
	}
	return nil
}

// listResult is a list tool's answer: the route's array, and the cursor
// the route sends in X-Svc-Next-Cursor. A tool result has no headers, and
// MCP wants structured content to be an object, hence the wrapper.
type listResult[T any] struct {
	Items      []T    `json:"items"`
	NextCursor string `json:"nextCursor,omitempty"`
}

// page turns a service's list answer into a list tool's.
func page[T any](items []T, next string, err error) (any, error) {
	if err != nil {
		return nil, err
	}
	if items == nil {
		items = []T{}
	}
	return listResult[T]{Items: items, NextCursor: next}, nil
}

// versionResult is a version read: the spec the route answers as its body,
// with the identity it answers in X-Svc-Owner, X-Svc-Version, X-Svc-Digest.
type versionResult struct {
	Owner   string          `json:"owner"`
	ID      string          `json:"id"`
	Version string          `json:"version"`
	Digest  string          `json:"digest"`
	Spec    json.RawMessage `json:"spec"`
}

// registerMCPTools adds every tool to the MCP server.
func (s *Server) registerMCPTools() {
	addTool(s, toolDef{name: "submit_run", route: "POST /runs", action: auth.RunsSubmit,
		description: "Submit a single eval run: a registered harness ({id, version or \"latest\"}) on one eval case, optionally on a registered runtime. Answers the queued run; poll get_run for its result."},
		func(ctx context.Context, p auth.Principal, in *runs.SubmitRequest) (any, error) {
			return s.runs.Submit(ctx, p, *in, mcpSource)
		})
	addTool(s, toolDef{name: "get_run", route: "GET /runs/:id", action: auth.RunsRead, readOnly: true,
		description: "Get a run with its status and, once finished, its result."},
		func(ctx context.Context, p auth.Principal, in *idInput) (any, error) {
			return s.runs.Get(ctx, p, in.ID)
		})
	addTool(s, toolDef{name: "list_runs", route: "GET /runs", action: auth.RunsRead, readOnly: true,
		description: "List the runs of the workspace, newest first, a page at a time (pass nextCursor back as cursor)."},
		func(ctx context.Context, p auth.Principal, in *listRunsInput) (any, error) {
			return page(s.runs.List(ctx, p, runs.ListQuery{ScorecardID: in.ScorecardID, All: in.Scope == "all", Cursor: in.Cursor, Limit: in.Limit}))
		})
	addTool(s, toolDef{name: "get_run_logs", route: "GET /runs/:id/logs", action: auth.RunsRead, readOnly: true,
		description: "Read a run's stdout and stderr chunks after a sequence number."},
		func(ctx context.Context, p auth.Principal, in *runLogsInput) (any, error) {
			return s.runs.Logs(ctx, p, in.ID, in.After, in.Limit)
		})
	addTool(s, toolDef{name: "get_run_trajectory", route: "GET /runs/:id/trajectory", action: auth.RunsRead, readOnly: true,
		description: "Read a run's trajectory: the agent's events, sealed once the run ends."},
		func(ctx context.Context, p auth.Principal, in *idInput) (any, error) {
			return s.runs.Trajectory(ctx, p, in.ID)
		})

	addTool(s, toolDef{name: "run_scorecard", route: "POST /scorecards", action: auth.ScorecardsRun,
		description: "Run a scorecard: a harness on the cases of a dataset, scored by graders and judges. Answers the queued scorecard; poll get_scorecard for progress."},
		func(ctx context.Context, p auth.Principal, in *scorecards.SubmitRequest) (any, error) {
			return s.scorecards.Submit(ctx, p, *in, mcpSource)
		})
	addTool(s, toolDef{name: "run_experiment", route: "POST /groups", action: auth.ScorecardsRun,
		description: "Run an experiment: a harness on a dataset or on one task prompt, over several trials. Answers the queued experiment; poll get_scorecard."},
		func(ctx context.Context, p auth.Principal, in *scorecards.GroupRequest) (any, error) {
			return s.scorecards.SubmitGroup(ctx, p, *in, mcpSource)
		})
	addTool(s, toolDef{name: "get_scorecard", route: "GET /scorecards/:id", action: auth.ScorecardsRead, readOnly: true,
		description: "Get a scorecard or an experiment with its progress, metrics and per-case results."},
		func(ctx context.Context, p auth.Principal, in *idInput) (any, error) {
			return s.scorecards.Get(ctx, p, in.ID)
		})
	addTool(s, toolDef{name: "list_scorecards", route: "GET /scorecards", action: auth.ScorecardsRead, readOnly: true,
		description: "List the scorecards and experiments of the workspace, newest first, a page at a time (pass nextCursor back as cursor)."},
		func(ctx context.Context, p auth.Principal, in *listScorecardsInput) (any, error) {
			return page(s.scorecards.List(ctx, p, scorecards.ListQuery{Kind: in.Kind, Status: in.Status,
				DatasetID: in.DatasetID, HarnessID: in.HarnessID, Cursor: in.Cursor, Limit: in.Limit}))
		})
	addTool(s, toolDef{name: "cancel_scorecard", route: "POST /scorecards/:id/cancel", action: auth.ScorecardsRun, destructive: true,
		description: "Cancel a queued or running scorecard or experiment; its unfinished cases stop."},
		func(ctx context.Context, p auth.Principal, in *idInput) (any, error) {
			return s.scorecards.Cancel(ctx, p, in.ID)
		})
	addTool(s, toolDef{name: "score_scorecard", route: "POST /scorecards/:id/score", action: auth.ScorecardsRun,
		description: "Re-score a finished scorecard with the given judges, without running the agent again; the pass adds a scoring revision."},
		func(ctx context.Context, p auth.Principal, in *scoreInput) (any, error) {
			return s.scorecards.Score(ctx, p, in.ID, in.ScoreRequest)
		})
	addTool(s, toolDef{name: "score_group", route: "POST /groups/:id/score", action: auth.ScorecardsRun,
		description: "Score a finished experiment with the given judges; the pass adds a scoring revision."},
		func(ctx context.Context, p auth.Principal, in *scoreInput) (any, error) {
			return s.scorecards.Score(ctx, p, in.ID, in.ScoreRequest)
		})
	addTool(s, toolDef{name: "verify_scorecard_manifest", route: "POST /scorecards/:id/verify-manifest", action: auth.ScorecardsRead, readOnly: true,
		description: "Verify a scorecard's manifest: recompute its digests and say whether they match what was recorded."},
		func(ctx context.Context, p auth.Principal, in *idInput) (any, error) {
			return s.scorecards.VerifyManifest(ctx, p, in.ID)
		})
	addTool(s, toolDef{name: "query_scorecards", route: "POST /scorecards/query", action: auth.ScorecardsRead, readOnly: true,
		description: "Query scorecards: filter, group and pivot batches of the workspace into a table of a metric."},
		func(ctx context.Context, p auth.Principal, in *query.Request) (any, error) {
			return s.scorecards.Query(ctx, p, *in)
		})
	addTool(s, toolDef{name: "get_scorecard_analysis", route: "GET /scorecards/:id/analysis", action: auth.ScorecardsRead, readOnly: true,
		description: "Get the analysis a scorecard's scoring revision froze (default: the latest revision)."},
		func(ctx context.Context, p auth.Principal, in *analysisInput) (any, error) {
			return s.scorecards.Analysis(ctx, p, in.ID, in.Revision)
		})
	addTool(s, toolDef{name: "diff_scorecards", route: "GET /scorecards/diff", action: auth.ScorecardsRead, readOnly: true,
		description: "Diff two scorecards: metric deltas, case transitions and whether they are comparable."},
		func(ctx context.Context, p auth.Principal, in *diffInput) (any, error) {
			return s.scorecards.Diff(ctx, p, in.Baseline, in.Candidate)
		})
	addTool(s, toolDef{name: "gate_scorecards", route: "POST /scorecards/gate", action: auth.ScorecardsRead, readOnly: true,
		description: "Gate a candidate scorecard against a baseline under a policy: pass, block, blocked_missing or not_comparable, with the reasons."},
		func(ctx context.Context, p auth.Principal, in *scorecards.GateRequest) (any, error) {
			return s.scorecards.Gate(ctx, p, *in)
		})

	addTool(s, toolDef{name: "list_notifications", route: "GET /notifications", action: auth.Authenticated, readOnly: true,
		description: "List my notifications in the workspace, newest first."},
		func(ctx context.Context, p auth.Principal, in *listNotificationsInput) (any, error) {
			ns, err := s.runs.Notifications(ctx, p, in.Unread, in.Limit)
			return page(ns, "", err)
		})
	addTool(s, toolDef{name: "read_notifications", route: "POST /notifications/read", action: auth.Authenticated,
		description: "Mark my notifications read: the given ids, or all:true. Answers how many were marked."},
		func(ctx context.Context, p auth.Principal, in *runs.ReadRequest) (any, error) {
			n, err := s.runs.MarkRead(ctx, p, *in)
			if err != nil {
				return nil, err
			}
			return map[string]int{"marked": n}, nil
		})

	addTool(s, toolDef{name: "list_judges", route: "GET /judges", action: auth.JudgesRead, readOnly: true,
		description: "List the judges the workspace can use (its own and shared ones) with their versions and tags."},
		func(ctx context.Context, p auth.Principal, _ *struct{}) (any, error) {
			es, err := s.registries.List(ctx, p, registry.Judge)
			return page(es, "", err)
		})
	addTool(s, toolDef{name: "get_judge", route: "GET /judges/:id/versions/:version", action: auth.JudgesRead, readOnly: true,
		description: "Get a judge version's spec, with its owner, resolved version and digest."},
		func(ctx context.Context, p auth.Principal, in *versionInput) (any, error) {
			d, err := s.registries.GetVersion(ctx, p, registry.Judge, in.ID, in.Version, service.CasePage{})
			if err != nil {
				return nil, err
			}
			return versionResult{Owner: d.Owner, ID: in.ID, Version: d.Version, Digest: d.Digest, Spec: d.Spec}, nil
		})
	addTool(s, toolDef{name: "create_judge", route: "POST /judges", action: auth.JudgesWrite,
		description: "Register a judge version, stamped with its origin (via mcp unless the origin says otherwise). Registering the same content again is a no-op (created false); other content under the same id and version is a conflict."},
		func(ctx context.Context, p auth.Principal, in *registerInput) (any, error) {
			origin, err := mcpOrigin(in.Origin)
			if err != nil {
				return nil, err
			}
			v, err := s.registries.Register(ctx, p, registry.Judge, in.Spec, origin)
			if err != nil {
				return nil, registryError(err)
			}
			return v, nil
		})
	addTool(s, toolDef{name: "validate_judge", route: "POST /judges/validate", action: auth.JudgesWrite, readOnly: true,
		description: "Check a judge spec without registering it: its problems, and whether registering it would be new, identical or a conflict."},
		func(ctx context.Context, p auth.Principal, in *specInput) (any, error) {
			return s.registries.Validate(ctx, p, registry.Judge, in.Spec)
		})
}

// addTool adds one tool. Its handler authorizes the route's action, checks
// the input as Bind checks the route's body, and calls call; call's answer
// becomes the result's structured content (and, by the SDK, its text).
func addTool[In any](s *Server, d toolDef, call func(ctx context.Context, p auth.Principal, in *In) (any, error)) {
	t := &mcp.Tool{
		Name:        d.name,
		Description: fmt.Sprintf("%s Mirrors %s; needs %s.", d.description, d.route, actionText(d.action)),
		InputSchema: inputSchema[In](),
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: d.readOnly, DestructiveHint: &d.destructive},
		Meta:        mcp.Meta{metaRoute: d.route, metaAction: string(d.action)},
	}
	mcp.AddTool(s.mcpServer, t, func(ctx context.Context, req *mcp.CallToolRequest, in In) (*mcp.CallToolResult, any, error) {
		// The caller is the one /mcp's middleware resolved for this very
		// request; Authorize refuses an absent one as unauthenticated.
		p, _ := mcpPrincipal(req.Extra)
		if err := auth.Authorize(p, d.action); err != nil {
			return s.toolError(ctx, req, err), nil, nil
		}
		if v, ok := any(&in).(Validator); ok {
			if err := v.Validate(); err != nil {
				return s.toolError(ctx, req, asInvalid(err)), nil, nil
			}
		}
		out, err := call(ctx, p, &in)
		if err != nil {
			return s.toolError(ctx, req, err), nil, nil
		}
		return nil, out, nil
	})
}

// actionText words an action for a tool's description.
func actionText(a auth.Action) string {
	if a == auth.Authenticated {
		return "any authenticated caller"
	}
	rule, _ := auth.RuleFor(a)
	return fmt.Sprintf("%s (%s or above)", a, rule.MinRole)
}

// schemaOverrides describe the request types whose JSON is not what their
// Go fields suggest, so the SDK's validation accepts what the route does.
var schemaOverrides = map[reflect.Type]*jsonschema.Schema{
	// A grader is {"id": ..., any other members}: see registry.Grader.
	reflect.TypeFor[registry.Grader](): {Type: "object", Properties: map[string]*jsonschema.Schema{"id": {Type: "string"}}},
	// A filter's values are a string or an array of strings.
	reflect.TypeFor[query.Values](): {Types: []string{"null", "string", "array"}, Items: &jsonschema.Schema{Type: "string"}},
	// Raw JSON is whatever the field's description says: a spec is an object.
	reflect.TypeFor[json.RawMessage](): {Types: []string{"null", "object"}},
}

// inputSchema is the tool's input schema inferred from In. It lists no
// required properties: the request's Validate refuses a missing field with
// the message the route gives (a Go field without omitempty is not always
// required by the route, e.g. a gate's policy).
func inputSchema[In any]() *jsonschema.Schema {
	s, err := jsonschema.For[In](&jsonschema.ForOptions{TypeSchemas: schemaOverrides})
	if err != nil {
		// A type the schema cannot describe is a bug that every test run finds.
		panic(fmt.Sprintf("api: input schema of %T: %v", *new(In), err))
	}
	dropRequired(s)
	return s
}

// dropRequired clears Required in s and every schema under it.
func dropRequired(s *jsonschema.Schema) {
	if s == nil {
		return
	}
	s.Required = nil
	for _, p := range s.Properties {
		dropRequired(p)
	}
	dropRequired(s.Items)
	dropRequired(s.AdditionalProperties)
}

// checkArg refuses an id argument that is empty or that a path parameter
// could not carry (the same bounds as pathParam).
func checkArg(name, v string) error {
	switch {
	case v == "":
		return derrors.Invalidf("%s is required", name)
	case len(v) > maxParamLen:
		return derrors.Invalidf("%s is %d bytes long; the limit is %d", name, len(v), maxParamLen)
	case !utf8.ValidString(v) || strings.IndexFunc(v, unicode.IsControl) >= 0:
		return derrors.Invalidf("%s must be valid UTF-8 without control characters", name)
	}
	return nil
}

// checkRange refuses an optional integer (0: absent) outside [lo, hi], as
// intQuery does for the route's query parameter.
func checkRange(name string, v, lo, hi int64) error {
	if v != 0 && (v < lo || v > hi) {
		// Worded as intQuery words the route's query parameter.
		return derrors.Invalidf("%s=%q: want an integer from %d to %d", name, strconv.FormatInt(v, 10), lo, hi)
	}
	return nil
}

// asInvalid is how Bind treats a Validate error: one without a status of
// its own is the input's fault.
func asInvalid(err error) error {
	if hasSentinel(err) {
		return err
	}
	return fmt.Errorf("%w: %w", derrors.ErrInvalid, err)
}

// toolCallID names one tool call in the log and in its error body: the
// X-Request-Id the client sent with the call's HTTP request (the id the
// access log has for it), else a new one. Not RequestID(ctx): a tool's
// context comes from the request that opened the MCP session, so every call
// of a session would share that id.
func toolCallID(req *mcp.CallToolRequest) string {
	if req.Extra != nil {
		if id := req.Extra.Header.Get(echo.HeaderXRequestID); saneRequestID(id) {
			return id
		}
	}
	return rand.Text()
}

// toolErrorInfo is errorResponse without an HTTP exchange: the status and
// the error body the route would answer err with. It never puts the text of
// an unforeseen error into the body.
func toolErrorInfo(err error) (int, ErrorInfo) {
	var info ErrorInfo
	var detailed *DetailedError
	if errors.As(err, &detailed) {
		info.Details = detailed.Details
	}
	status, code := sentinelStatus(err)
	if status == 0 {
		status, code = http.StatusInternalServerError, CodeInternal
	}
	info.Code = code
	info.Message = publicMessage(err, status, detailed, "")
	return status, info
}

// toolError is the tool result of a refusal or failure: the route's error
// body as structured content and as text. A 5xx is logged, with the id the
// body quotes, since its text is not shown.
func (s *Server) toolError(ctx context.Context, req *mcp.CallToolRequest, err error) *mcp.CallToolResult {
	status, info := toolErrorInfo(err)
	info.RequestID = toolCallID(req)
	if status >= 500 {
		attrs := []slog.Attr{slog.String("request_id", info.RequestID), slog.String("tool", req.Params.Name),
			slog.Int("status", status), slog.String("error", err.Error())}
		if req.Session != nil {
			attrs = append(attrs, slog.String("mcp_session", req.Session.ID()))
		}
		s.logger.LogAttrs(ctx, slog.LevelError, "tool call failed", attrs...)
	}
	body := ErrorBody{Error: info}
	text, mErr := json.Marshal(body)
	if mErr != nil {
		// Details hold only values the handlers built; should one not
		// encode, the message alone still says what went wrong.
		body.Error.Details = nil
		text, _ = json.Marshal(body)
	}
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: string(text)}}, StructuredContent: body}
}
