package api

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"svc/auth"
	"svc/internal/domain/flows"
	"svc/internal/platform/derrors"
	"svc/internal/service/approvals"
	"svc/store"
)

// Approvals (spec §4.9; issue 33, docs/approvals.md): an agent's call that
// a workspace policy parks (approvals_park.go) waits for a person's
// decision. GET /approvals lists them (agents:read), POST
// /approvals/:id/decide settles one once (agents:write; an agent's decide
// is refused). The policies are a workspace setting: read with
// agents:read, replaced with settings:write (admin), as the other
// workspace settings are. The worker runs an approved call whose caller
// is gone through POST /internal/approvals/:id/execute (internal token).

func (s *Server) approvalRoutes() []Route {
	return []Route{
		{Method: http.MethodGet, Path: "/approvals", Action: auth.AgentsRead,
			Summary: "List parked agent actions", Handler: s.listApprovals},
		{Method: http.MethodGet, Path: "/approvals/:id", Action: auth.AgentsRead,
			Summary: "Read one approval", Handler: s.getApproval},
		{Method: http.MethodPost, Path: "/approvals/:id/decide", Action: auth.AgentsWrite,
			Summary: "Approve or deny a parked agent action", Handler: s.decideApproval},
		{Method: http.MethodGet, Path: "/approval-policies", Action: auth.AgentsRead,
			Summary: "Read the workspace's approval policies", Handler: s.getApprovalPolicies},
		{Method: http.MethodPut, Path: "/approval-policies", Action: auth.SettingsWrite,
			Summary: "Replace the workspace's approval policies", Handler: s.putApprovalPolicies},
		{Method: http.MethodPost, Path: "/internal/approvals/:id/execute", Action: auth.Internal,
			Summary: "Run an approved parked call once", Handler: s.executeApprovalRoute},
	}
}

// approvalView is an approval as the routes show it to p: without the
// stored principal, and with the call's answer only for the member whose
// call it was (an approved call's answer is theirs, not every reader's).
func approvalView(a store.Approval, p auth.Principal) store.Approval {
	a.Principal = nil
	if a.Result != nil && p.Subject != a.Member {
		r := *a.Result
		r.Body = nil
		a.Result = &r
	}
	return a
}

// secretFields are the answer fields that carry a secret shown once.
var secretFields = map[string]bool{"apiKey": true, "secret": true, "token": true, "value": true, "password": true, "clientSecret": true}

// redactSecrets replaces, at any depth of a JSON answer, the string
// values of secretFields by a note; a body that is not JSON is dropped.
func redactSecrets(body []byte) []byte {
	if len(bytes.TrimSpace(body)) == 0 {
		return body
	}
	var v any
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		return nil
	}
	var walk func(any) any
	walk = func(x any) any {
		switch t := x.(type) {
		case map[string]any:
			for k, e := range t {
				if s, ok := e.(string); ok && secretFields[k] && s != "" {
					t[k] = "[not kept: shown once to the caller]"
					continue
				}
				t[k] = walk(e)
			}
		case []any:
			for i, e := range t {
				t[i] = walk(e)
			}
		}
		return x
	}
	out, err := json.Marshal(walk(v))
	if err != nil {
		return nil
	}
	return out
}

func (s *Server) listApprovals(c echo.Context) error {
	list, err := s.approvals.List(c.Request().Context(), principal(c), c.QueryParam("status"))
	if err != nil {
		return err
	}
	for i := range list {
		list[i] = approvalView(list[i], principal(c))
	}
	return listJSON(c, list)
}

func (s *Server) getApproval(c echo.Context) error {
	id, err := pathParam(c, "id")
	if err != nil {
		return err
	}
	a, err := s.approvals.Get(c.Request().Context(), principal(c), id)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, approvalView(a, principal(c)))
}

func (s *Server) decideApproval(c echo.Context) error {
	id, err := pathParam(c, "id")
	if err != nil {
		return err
	}
	var req approvals.DecideRequest
	if err := Bind(c, &req); err != nil {
		return err
	}
	a, err := s.approvals.Decide(c.Request().Context(), principal(c), id, req)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, approvalView(a, principal(c)))
}

func (s *Server) getApprovalPolicies(c echo.Context) error {
	ps, err := s.approvals.Policies(c.Request().Context(), principal(c))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, policiesView(ps))
}

// policiesView adds the built-in rule's tools, so a reader sees what parks
// when no policy is set.
func policiesView(ps store.ApprovalPolicies) map[string]any {
	return map[string]any{"policies": ps.Policies, "defaultOff": ps.DefaultOff, "defaultTools": approvals.DefaultTools,
		"updatedBy": ps.UpdatedBy, "updatedAt": ps.UpdatedAt}
}

func (s *Server) putApprovalPolicies(c echo.Context) error {
	var ps store.ApprovalPolicies
	if err := Bind(c, &ps); err != nil {
		return err
	}
	out, err := s.approvals.PutPolicies(c.Request().Context(), principal(c), ps)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, policiesView(out))
}

// executeRequest is the body of POST /internal/approvals/:id/execute.
type executeRequest struct {
	Workspace string `json:"workspace"`
}

func (s *Server) executeApprovalRoute(c echo.Context) error {
	id, err := pathParam(c, "id")
	if err != nil {
		return err
	}
	var req executeRequest
	if err := Bind(c, &req); err != nil {
		return err
	}
	if req.Workspace == "" {
		return derrors.Invalidf("workspace is required")
	}
	out, err := s.ExecuteApproval(c.Request().Context(), req.Workspace, id)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, out)
}

// ExecuteApproval runs an approved call as the ApprovalWorkflow's
// continuation (the caller is gone): once; a second execute, or one after
// the waiting caller ran it, answers the stored result.
func (s *Server) ExecuteApproval(ctx context.Context, workspace, id string) (flows.ApprovalExecuted, error) {
	a, err := s.runApproval(ctx, workspace, id, store.ExecutorWorkflow)
	if err != nil {
		return flows.ApprovalExecuted{}, err
	}
	out := flows.ApprovalExecuted{Resumed: a.Resumed, Delivered: a.Delivered}
	if a.Result != nil {
		out.Status = a.Result.Status
	}
	return out, nil
}

// replayKey carries, on the context of a re-dispatched parked call, the
// principal it runs as (authenticate takes it instead of a credential, and
// the parking middleware lets the call through). Only this package can set
// it.
type replayKey struct{}

// replayPrincipal is the principal of a re-dispatched parked call.
func replayPrincipal(ctx context.Context) (auth.Principal, bool) {
	p, ok := ctx.Value(replayKey{}).(auth.Principal)
	return p, ok
}

// executeWait bounds how long an executor waits for another's run.
const executeWait = 90 * time.Second

// runApproval runs an approved call once, as executor: claimed in the
// store first; the answer stored with its executed mark in one write. An
// executor that does not get the claim waits for the stored answer.
func (s *Server) runApproval(ctx context.Context, workspace, id, executor string) (store.Approval, error) {
	deadline := s.now().Add(executeWait)
	for {
		a, run, err := s.approvals.Claim(ctx, workspace, id, executor)
		if err != nil {
			return a, err
		}
		if run {
			return s.dispatchApproved(ctx, a, executor)
		}
		if a.Result != nil {
			return a, nil
		}
		if s.now().After(deadline) {
			return a, derrors.Unavailablef("approval %s is being run by its %s; ask again for its result", id, a.Executor)
		}
		select {
		case <-ctx.Done():
			return a, ctx.Err()
		case <-time.After(approvalPoll):
		}
	}
}

// dispatchApproved serves the stored request through the route table as
// the stored principal, and stores the answer.
func (s *Server) dispatchApproved(ctx context.Context, a store.Approval, executor string) (store.Approval, error) {
	var p auth.Principal
	if err := json.Unmarshal(a.Principal, &p); err != nil || p.Subject == "" {
		return a, derrors.Invalidf("approval %s has no caller to run as", a.ID)
	}
	rctx := context.WithValue(context.WithoutCancel(ctx), replayKey{}, p)
	if a.Origin.Source == mcpSource {
		rctx = context.WithValue(rctx, toolCallKey{}, true)
	}
	var body *bytes.Reader
	if len(a.Body) > 0 {
		body = bytes.NewReader(a.Body)
	} else {
		body = bytes.NewReader(nil)
	}
	r, err := http.NewRequestWithContext(rctx, a.Method, a.Path, body)
	if err != nil {
		return a, derrors.Invalidf("approval %s: the stored call is not a request", a.ID)
	}
	r.RequestURI = r.URL.RequestURI()
	r.RemoteAddr = "127.0.0.1:0"
	for k, v := range a.Header {
		r.Header.Set(k, v)
	}
	if len(a.Body) > 0 {
		r.Header.Set(echo.HeaderContentType, echo.MIMEApplicationJSON)
	}
	r.Header.Set(echo.HeaderAccept, echo.MIMEApplicationJSON)
	w := newToolResponse()
	s.e.ServeHTTP(w, r)
	res := store.ApprovalResult{Status: w.status, ContentType: w.written().Get(echo.HeaderContentType), Body: bytes.Clone(w.body.Bytes())}
	// The stored answer is read by others later: the secrets a route
	// answers once (a new API key, a channel's signing secret) are not
	// kept in it; the caller waiting live still gets them.
	stored := res
	stored.Body = redactSecrets(res.Body)
	done, err := s.approvals.Finish(context.WithoutCancel(ctx), a.Workspace, a.ID, executor, stored)
	if err == nil && done.Result != nil && done.ExecutedAt != nil && done.Executor == executor {
		live := res
		done.Result = &live
	}
	return done, err
}
