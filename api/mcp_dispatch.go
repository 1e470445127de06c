package api

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"svc/auth"
	"svc/internal/domain/registry"
	"svc/internal/platform/derrors"
)

// A tool call is served by its route: the call becomes an HTTP request for
// the route's method and path, with the arguments as path parameters, query
// and JSON body, and the caller's own credential and workspace headers,
// served by the server's Echo handler in process. Authentication, the role
// and scope gate, workspace scoping, validation and the service call are
// therefore exactly the route's; the answer is the route's.

// forwardedHeaders are the headers of the MCP request a tool call carries
// to its route: who calls, in which workspace, with which client, as which
// agent.
var forwardedHeaders = []string{
	echo.HeaderAuthorization, auth.WorkspaceHeader, auth.TenantHeader, "User-Agent",
	auth.AgentIDHeader, auth.AgentNameHeader, auth.ConversationIDHeader,
}

// toolCallKey marks the context of a request that serves a tool call.
type toolCallKey struct{}

// markToolCall is the middleware that tells a route it serves a tool call:
// a submit then records origin.source mcp (originSource).
func markToolCall(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if c.Request().Context().Value(toolCallKey{}) != nil {
			c.Set(originSourceKey, mcpSource)
		}
		return next(c)
	}
}

// callRoute serves one tool call through the tool's route.
func (s *Server) callRoute(ctx context.Context, req *mcp.CallToolRequest, rt *routeTool) *mcp.CallToolResult {
	ctx, release := s.postContext(ctx, req.Extra)
	defer release()
	id := toolCallID(req)
	args, err := toolArgs(req.Params.Arguments)
	if err != nil {
		return toolRefusal(id, err)
	}
	rctx := context.WithValue(ctx, toolCallKey{}, true)
	if req.Session != nil {
		// The client's declared name is its agent, unless the call's
		// X-Svc-Agent-* headers name one (docs/agents.md).
		if ip := req.Session.InitializeParams(); ip != nil && ip.ClientInfo != nil {
			rctx = withMCPClient(rctx, ip.ClientInfo.Name, ip.ClientInfo.Title, req.Session.ID())
		}
	}
	r, err := rt.request(rctx, args)
	if err != nil {
		return toolRefusal(id, err)
	}
	if req.Extra != nil {
		for _, h := range forwardedHeaders {
			if v := req.Extra.Header.Values(h); len(v) > 0 {
				r.Header[http.CanonicalHeaderKey(h)] = slices.Clone(v)
			}
		}
	}
	if p, ok := mcpPrincipal(req.Extra); ok && p.Via == auth.ViaDev {
		// The dev principal came without a credential; /mcp gave the SDK a
		// placeholder bearer that the route must not see.
		r.Header.Del(echo.HeaderAuthorization)
	}
	r.Header.Set(echo.HeaderXRequestID, id)
	r.Header.Set(echo.HeaderAccept, echo.MIMEApplicationJSON)
	w := newToolResponse()
	s.e.ServeHTTP(w, r)
	res := toolResult(w.status, w.written(), w.body.Bytes())
	if w.status >= 500 {
		s.logToolFailure(ctx, req, id, w.status)
	}
	return res
}

// toolResponse is the in-process http.ResponseWriter a tool call's route
// writes its answer to: the status, the headers as they were when the
// status was written, and the body, which toolResult reads back.
type toolResponse struct {
	header http.Header
	sent   http.Header // header when the status was written; nil before
	status int
	body   bytes.Buffer
}

func newToolResponse() *toolResponse {
	return &toolResponse{header: http.Header{}, status: http.StatusOK}
}

// Header is the header the route sets before writing its status.
func (w *toolResponse) Header() http.Header { return w.header }

// WriteHeader records the status and the headers sent with it; a second
// call is ignored, as a server ignores it.
func (w *toolResponse) WriteHeader(status int) {
	if w.sent != nil {
		return
	}
	w.status, w.sent = status, w.header.Clone()
}

// Write appends to the body, writing status 200 first if none was.
func (w *toolResponse) Write(b []byte) (int, error) {
	w.WriteHeader(http.StatusOK)
	return w.body.Write(b)
}

// Flush does nothing but write the status: the answer is read whole. A
// route that flushes (Echo's Response.Flush) needs the writer to have it.
func (w *toolResponse) Flush() { w.WriteHeader(http.StatusOK) }

// written is the answer's header: as sent with the status, or as set when
// the route wrote nothing.
func (w *toolResponse) written() http.Header {
	if w.sent != nil {
		return w.sent
	}
	return w.header
}

// toolArgs decodes a call's arguments: a JSON object, or nothing.
func toolArgs(raw any) (map[string]json.RawMessage, error) {
	var b []byte
	switch v := raw.(type) {
	case nil:
		return map[string]json.RawMessage{}, nil
	case json.RawMessage:
		b = v
	default:
		var err error
		if b, err = json.Marshal(v); err != nil {
			return nil, derrors.Invalidf("the arguments are not JSON")
		}
	}
	args := map[string]json.RawMessage{}
	if len(bytes.TrimSpace(b)) == 0 || string(bytes.TrimSpace(b)) == "null" {
		return args, nil
	}
	if err := json.Unmarshal(b, &args); err != nil {
		return nil, derrors.Invalidf("the arguments must be a JSON object")
	}
	return args, nil
}

// request builds the route's HTTP request from a call's arguments. It
// refuses an argument the tool does not have and a path or query argument
// that is not a scalar; everything else is the route's to check.
func (rt *routeTool) request(ctx context.Context, args map[string]json.RawMessage) (*http.Request, error) {
	known := map[string]bool{}
	for _, n := range rt.path {
		known[n] = true
	}
	for _, n := range rt.query {
		known[n] = true
	}
	for n := range rt.header {
		known[n] = true
	}
	if rt.body {
		known[argBody] = true
	}
	var unknown []string
	for n := range args {
		if !known[n] {
			unknown = append(unknown, n)
		}
	}
	if len(unknown) > 0 {
		slices.Sort(unknown)
		return nil, derrors.Invalidf("unknown argument %s: %s takes %s", clip(strings.Join(unknown, ", ")), rt.name, argList(known))
	}

	segs := strings.Split(rt.route.Path, "/")
	for i, seg := range segs {
		name, ok := strings.CutPrefix(seg, ":")
		if !ok {
			continue
		}
		v, present, err := scalarArg(name, args[name])
		if err != nil {
			return nil, err
		}
		if !present || v == "" {
			return nil, derrors.Invalidf("%s is required", name)
		}
		segs[i] = url.PathEscape(v)
	}
	q := url.Values{}
	for _, name := range rt.query {
		raw, ok := args[name]
		if !ok {
			continue
		}
		var list []json.RawMessage
		if json.Unmarshal(raw, &list) == nil {
			for _, e := range list {
				v, _, err := scalarArg(name, e)
				if err != nil {
					return nil, err
				}
				q.Add(name, v)
			}
			continue
		}
		v, present, err := scalarArg(name, raw)
		if err != nil {
			return nil, err
		}
		if present {
			q.Set(name, v)
		}
	}
	target := strings.Join(segs, "/")
	if len(q) > 0 {
		target += "?" + q.Encode()
	}

	var body io.Reader = http.NoBody
	raw, hasBody := args[argBody]
	if hasBody && string(bytes.TrimSpace(raw)) != "null" {
		body = bytes.NewReader(raw)
	} else {
		hasBody = false
	}
	r, err := http.NewRequestWithContext(ctx, rt.route.Method, target, body)
	if err != nil {
		return nil, derrors.Invalidf("the arguments do not make a request of %s %s", rt.route.Method, rt.route.Path)
	}
	r.RequestURI = r.URL.RequestURI()
	r.RemoteAddr = "127.0.0.1:0"
	if hasBody {
		r.Header.Set(echo.HeaderContentType, echo.MIMEApplicationJSON)
	}
	for arg, h := range rt.header {
		if arg == argOrigin {
			o, err := toolOrigin(args[argOrigin])
			if err != nil {
				return nil, err
			}
			r.Header.Set(h, o)
			continue
		}
		v, present, err := scalarArg(arg, args[arg])
		if err != nil {
			return nil, err
		}
		if present {
			r.Header.Set(h, v)
		}
	}
	return r, nil
}

// scalarArg is a path, query or header argument as the text the route
// reads: a string as is, a number or boolean as JSON writes it.
func scalarArg(name string, raw json.RawMessage) (string, bool, error) {
	if len(raw) == 0 || string(bytes.TrimSpace(raw)) == "null" {
		return "", false, nil
	}
	var v any
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	if err := d.Decode(&v); err != nil {
		return "", false, derrors.Invalidf("%s is not JSON", name)
	}
	switch v := v.(type) {
	case string:
		return v, true, nil
	case json.Number:
		return v.String(), true, nil
	case bool:
		return strconv.FormatBool(v), true, nil
	}
	return "", false, derrors.Invalidf("%s must be a string, a number or a boolean", name)
}

// toolOrigin is the x-svc-origin header of a registration through a tool:
// the given origin, with via mcp unless it names another door.
func toolOrigin(raw json.RawMessage) (string, error) {
	o := map[string]any{}
	if len(raw) > 0 && string(bytes.TrimSpace(raw)) != "null" {
		if err := json.Unmarshal(raw, &o); err != nil {
			return "", derrors.Invalidf("%s must be an object (a CapabilityOrigin)", argOrigin)
		}
	}
	if v, ok := o["via"]; !ok || v == "" {
		o["via"] = string(registry.ViaMCP)
	}
	b, err := json.Marshal(o)
	if err != nil {
		return "", fmt.Errorf("api: encoding the origin: %w", err)
	}
	return string(b), nil
}

// argList words a tool's argument names for a refusal.
func argList(known map[string]bool) string {
	if len(known) == 0 {
		return "no arguments"
	}
	names := make([]string, 0, len(known))
	for n := range known {
		names = append(names, n)
	}
	slices.Sort(names)
	return strings.Join(names, ", ")
}

// toolResult turns the route's answer into the tool's result. A JSON
// object is the structured content as is; an array is {"items": [...]}
// with the route's X-Svc-Next-Cursor as nextCursor; an empty answer (204)
// is {}. The text content is the same JSON. A 4xx or 5xx is a tool error
// whose content is the route's error body. _meta has the route's status
// and its X-Svc-* headers (a version read's owner, version and digest).
func toolResult(status int, header http.Header, body []byte) *mcp.CallToolResult {
	meta := mcp.Meta{metaStatus: status}
	headers := map[string]string{}
	for k, v := range header {
		if strings.HasPrefix(k, "X-Svc-") && len(v) > 0 {
			headers[k] = v[0]
		}
	}
	if loc := header.Get(echo.HeaderLocation); loc != "" {
		headers[echo.HeaderLocation] = loc
	}
	if len(headers) > 0 {
		meta[metaHeaders] = headers
	}
	out := &mcp.CallToolResult{IsError: status >= 400, Meta: meta}

	var v any
	d := json.NewDecoder(bytes.NewReader(body))
	d.UseNumber()
	switch err := d.Decode(&v); {
	case len(bytes.TrimSpace(body)) == 0:
		v = map[string]any{}
	case err != nil:
		// Not JSON: the text as the route sent it.
		out.Content = []mcp.Content{&mcp.TextContent{Text: string(body)}}
		return out
	}
	switch x := v.(type) {
	case map[string]any:
	case []any:
		m := map[string]any{"items": x}
		if next := header.Get(headerNextCursor); next != "" {
			m["nextCursor"] = next
		}
		v = m
	default:
		v = map[string]any{"value": x}
	}
	text, err := json.Marshal(v)
	if err != nil {
		text = body
	}
	out.Content = []mcp.Content{&mcp.TextContent{Text: string(text)}}
	out.StructuredContent = json.RawMessage(text)
	return out
}
