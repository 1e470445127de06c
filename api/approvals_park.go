package api

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/labstack/echo/v4"

	"svc/auth"
	"svc/internal/platform/derrors"
	"svc/internal/service/approvals"
	"svc/store"
)

// Parking (issue 33, docs/approvals.md): an agent's call (its principal
// declares an agent) of a route whose tool name a workspace policy names
// is not executed. It becomes an approval, and the request waits live for
// the decision: approved, the route runs once and its answer is the
// call's (delivered); denied or expired, the call is refused (403, saying
// by whom and when); the wait bound passed, the call answers 202 with the
// approval (poll GET /approvals/:id), and the ApprovalWorkflow runs it
// once on approval (resumed).

// defaultApprovalWait is how long a parked call waits for the decision:
// under the 60 s an MCP client gives a request by default. A caller asks
// for another bound with the Prefer header (RFC 7240: Prefer: wait=10).
const defaultApprovalWait = 55 * time.Second

// maxApprovalWait bounds what Prefer: wait may ask for.
const maxApprovalWait = 5 * time.Minute

// approvalPoll is how often a waiting call reads its approval.
const approvalPoll = 150 * time.Millisecond

// parkedHeaders are the request headers an approval keeps to replay the
// call (besides the X-Svc-* ones that do not declare the agent).
var parkedHeaders = []string{"If-Match", "If-None-Match", "Idempotency-Key"}

// parks reports whether a route's calls can park: the role-gated
// mutations. Reads, public, internal and runner routes never park.
func parks(r Route) bool {
	switch r.Action {
	case auth.Public, auth.Internal, auth.Runner, auth.Authenticated:
		return false
	}
	switch r.Method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
		return false
	}
	return !strings.HasPrefix(r.Path, "/approvals")
}

// parkingToolNames maps "METHOD /path" to the route's MCP tool name.
type parkingToolNames struct {
	once  sync.Once
	names map[string]string
}

func (s *Server) toolNameOf(r Route) string {
	s.parkNames.once.Do(func() {
		s.parkNames.names = map[string]string{}
		_, rts, err := buildTools(s.routes)
		if err != nil {
			return
		}
		for _, rt := range rts {
			s.parkNames.names[rt.route.Method+" "+rt.route.Path] = rt.name
		}
	})
	if n, ok := s.parkNames.names[r.Method+" "+r.Path]; ok {
		return n
	}
	return strings.ToLower(r.Method) + " " + r.Path
}

// park is the parking middleware of route r (after authenticate).
func (s *Server) park(r Route) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		if !parks(r) {
			return next
		}
		return func(c echo.Context) error {
			req := c.Request()
			ctx := req.Context()
			if _, ok := replayPrincipal(ctx); ok {
				return next(c)
			}
			p := principal(c)
			if p.Agent == nil || s.approvals == nil {
				return next(c)
			}
			agent := store.ApprovalAgent{ID: p.Agent.ID, Name: p.Agent.Name, Conversation: p.Agent.Conversation}
			if h, ok, err := s.approvals.Halted(ctx, p.Workspace, agent); err != nil {
				return err
			} else if ok {
				return approvals.Refusal(h)
			}
			var body []byte
			if req.Body != nil && req.Body != http.NoBody {
				b, err := io.ReadAll(req.Body)
				if err != nil {
					return decodeError(err, 0)
				}
				body = b
				req.Body = io.NopCloser(bytes.NewReader(b))
			}
			tool := s.toolNameOf(r)
			rule, ok, err := s.approvals.Match(ctx, p.Workspace, tool, callTeam(c, body))
			if err != nil || !ok {
				if err != nil {
					return err
				}
				return next(c)
			}
			if r.Method == http.MethodPut && r.Path == "/secrets/:name" {
				// An approval keeps the call as sent, and a secret's value is
				// never kept outside the sealed store: a person sets it.
				return derrors.Forbiddenf("setting a secret's value parks for approval (policy %q), and an approval would keep the value in the clear; a person sets secrets: ask the member to PUT /secrets/%s", rule.Name, c.Param("name"))
			}
			if len(bytes.TrimSpace(body)) > 0 && !json.Valid(body) {
				return derrors.Invalidf("the call parks for approval (policy %q) and its body is not JSON: send a JSON body", rule.Name)
			}
			wait := approvalWait(req)
			pj, err := json.Marshal(p)
			if err != nil {
				return err
			}
			source := "api"
			if ctx.Value(toolCallKey{}) != nil {
				source = mcpSource
			}
			header := map[string]string{}
			for k, v := range req.Header {
				lk := strings.ToLower(k)
				if len(v) == 0 || strings.HasPrefix(lk, "x-svc-agent") || lk == "x-svc-conversation-id" {
					continue
				}
				if strings.HasPrefix(lk, "x-svc-") {
					header[k] = v[0]
				}
			}
			for _, h := range parkedHeaders {
				if v := req.Header.Get(h); v != "" {
					header[h] = v
				}
			}
			var raw json.RawMessage
			if len(bytes.TrimSpace(body)) > 0 {
				raw = body
			}
			a, _, err := s.approvals.Park(ctx, approvals.ParkRequest{
				Workspace: p.Workspace, Member: p.Subject, Agent: agent,
				Origin: store.ApprovalOrigin{Actor: p.Subject, Source: source, AgentID: agent.ID, AgentName: agent.Name, ConversationID: agent.Conversation},
				Team:   callTeam(c, body), Source: approvals.SourceRoute, Tool: tool, Method: req.Method, Path: req.URL.RequestURI(),
				Header: header, Body: raw, Principal: pj, Policy: rule.Name, Expiry: rule.Expiry, OnExpiry: rule.OnExpiry,
				LiveFor: wait, Action: tool + " (" + req.Method + " " + req.URL.Path + ")",
			})
			if err != nil {
				return err
			}
			return s.awaitApproval(c, a, wait)
		}
	}
}

// callTeam is the team a call names: the body's "team" or the query's.
func callTeam(c echo.Context, body []byte) string {
	var v struct {
		Team string `json:"team"`
	}
	if json.Unmarshal(body, &v) == nil && v.Team != "" {
		return v.Team
	}
	return c.QueryParam("team")
}

// approvalWait is the live wait a call asks for (Prefer: wait=N seconds),
// else defaultApprovalWait.
func approvalWait(r *http.Request) time.Duration {
	for _, pref := range strings.Split(r.Header.Get("Prefer"), ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(pref), "=")
		if !ok || !strings.EqualFold(strings.TrimSpace(k), "wait") {
			continue
		}
		if n, err := strconv.Atoi(strings.TrimSpace(v)); err == nil && n >= 0 {
			return min(time.Duration(n)*time.Second, maxApprovalWait)
		}
	}
	return defaultApprovalWait
}

// CodeApprovalPending is the code of a parked call's 202: the call did not
// run yet. Its body has the one error shape (every route's documented
// non-2xx answer is that shape, and a parked call may be any route's), with
// the approval's id, status and where to poll in details.
const CodeApprovalPending = "APPROVAL_PENDING"

// awaitApproval holds the parked call until its approval settles or the
// wait ends.
func (s *Server) awaitApproval(c echo.Context, a store.Approval, wait time.Duration) error {
	ctx := c.Request().Context()
	bg := context.WithoutCancel(ctx)
	p := principal(c)
	deadline := time.Now().Add(wait)
	for {
		cur, err := s.approvals.Get(bg, p, a.ID)
		if err != nil {
			return err
		}
		switch cur.Status {
		case store.ApprovalApproved:
			done, err := s.runApproval(bg, cur.Workspace, cur.ID, store.ExecutorLive)
			if err != nil {
				return err
			}
			return writeResult(c, done)
		case store.ApprovalDenied, store.ApprovalExpired:
			return approvals.Refusal(cur)
		}
		if ctx.Err() != nil || !time.Now().Before(deadline) {
			cur, err := s.approvals.Release(bg, cur.Workspace, cur.ID)
			if err != nil {
				return err
			}
			if cur.Status == store.ApprovalApproved && cur.Result == nil {
				// Approved just now: run it here rather than answer 202.
				continue
			}
			c.Response().Header().Set(echo.HeaderLocation, "/approvals/"+cur.ID)
			return c.JSON(http.StatusAccepted, ErrorBody{Error: ErrorInfo{Code: CodeApprovalPending, RequestID: requestIDOf(c),
				Message: "the call is parked for approval " + cur.ID + " (policy " + cur.Policy + ") and has not run; it runs once when a person approves it: poll GET /approvals/" + cur.ID,
				Details: map[string]any{"approval": cur.ID, "status": cur.Status, "poll": "/approvals/" + cur.ID, "expiresAt": cur.ExpiresAt}}})
		}
		select {
		case <-ctx.Done():
		case <-time.After(approvalPoll):
		}
	}
}

// writeResult answers the call with the stored answer of its run.
func writeResult(c echo.Context, a store.Approval) error {
	if a.Result == nil {
		return derrors.Unavailablef("approval %s ran but its answer is not stored yet; read GET /approvals/%s", a.ID, a.ID)
	}
	c.Response().Header().Set("X-Svc-Approval-Id", a.ID)
	if a.Result.Status == http.StatusNoContent || len(a.Result.Body) == 0 {
		return c.NoContent(a.Result.Status)
	}
	ct := a.Result.ContentType
	if ct == "" {
		ct = echo.MIMEApplicationJSON
	}
	return c.Blob(a.Result.Status, ct, a.Result.Body)
}
