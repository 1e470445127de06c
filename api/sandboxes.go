package api

import (
	"context"
	"net/http"

	"github.com/labstack/echo/v4"

	"svc/auth"
	"svc/internal/domain/eval"
	"svc/internal/service/sandboxes"
)

// Sandbox sessions (spec §2.9, §4.8). Handlers read the request and call
// package sandboxes.

func (s *Server) sandboxRoutes() []Route {
	return []Route{
		{Method: http.MethodPost, Path: "/sandboxes", Action: auth.RunsSubmit, Summary: "Create a sandbox session", Handler: s.createSandbox},
		{Method: http.MethodGet, Path: "/sandboxes", Action: auth.RunsRead, Summary: "List my live sandbox sessions", Handler: s.listSandboxes},
		{Method: http.MethodGet, Path: "/sandboxes/:id", Action: auth.RunsRead, Summary: "Get a sandbox session", Handler: s.getSandbox},
		{Method: http.MethodPost, Path: "/sandboxes/:id/exec", Action: auth.RunsRead, Summary: "Run a command in a sandbox session", Handler: s.sandboxExec},
		{Method: http.MethodPost, Path: "/sandboxes/:id/touch", Action: auth.RunsRead, Summary: "Extend a sandbox session's deadline", Handler: s.touchSandbox},
		{Method: http.MethodPost, Path: "/sandboxes/:id/close", Action: auth.RunsRead, Summary: "Close a sandbox session", Handler: s.closeSandbox},
	}
}

// mcpClientKey carries, in the context of a request serving a tool call,
// the agent the MCP client is by its initialize clientInfo and its MCP
// session (auth.MCPClientAgent): the principal's agent when the call
// declares none by header.
type mcpClientKey struct{}

// withMCPClient marks ctx with the calling MCP client.
func withMCPClient(ctx context.Context, name, title, session string) context.Context {
	a := auth.MCPClientAgent(name, title, session)
	if a == nil {
		return ctx
	}
	return context.WithValue(ctx, mcpClientKey{}, a)
}

// mcpClientAgent is the agent withMCPClient put in ctx; nil outside a tool
// call.
func mcpClientAgent(ctx context.Context) *eval.Agent {
	a, _ := ctx.Value(mcpClientKey{}).(*eval.Agent)
	if a == nil {
		return nil
	}
	cp := *a
	return &cp
}

func (s *Server) createSandbox(c echo.Context) error {
	var req sandboxes.CreateRequest
	if err := Bind(c, &req); err != nil {
		return err
	}
	run, err := s.sandboxes.Create(c.Request().Context(), principal(c), req, originSource(c))
	if err != nil {
		return err
	}
	c.Response().Header().Set(echo.HeaderLocation, "/sandboxes/"+run.ID)
	return c.JSON(http.StatusCreated, run)
}

func (s *Server) listSandboxes(c echo.Context) error {
	out, err := s.sandboxes.List(c.Request().Context(), principal(c))
	if err != nil {
		return err
	}
	return listJSON(c, out)
}

func (s *Server) getSandbox(c echo.Context) error {
	v, err := s.sandboxes.Get(c.Request().Context(), principal(c), c.Param("id"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, v)
}

func (s *Server) sandboxExec(c echo.Context) error {
	var req sandboxes.ExecRequest
	if err := Bind(c, &req); err != nil {
		return err
	}
	res, err := s.sandboxes.Exec(c.Request().Context(), principal(c), c.Param("id"), req)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, res)
}

func (s *Server) touchSandbox(c echo.Context) error {
	var req sandboxes.TouchRequest
	if err := bindOptional(c, &req); err != nil {
		return err
	}
	v, err := s.sandboxes.Touch(c.Request().Context(), principal(c), c.Param("id"), req)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, v)
}

func (s *Server) closeSandbox(c echo.Context) error {
	var req sandboxes.CloseRequest
	if err := bindOptional(c, &req); err != nil {
		return err
	}
	v, err := s.sandboxes.Close(c.Request().Context(), principal(c), c.Param("id"), req)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, v)
}

// bindOptional binds a body that may be absent (no Content-Length, or 0).
func bindOptional(c echo.Context, v any) error {
	if c.Request().ContentLength == 0 {
		return nil
	}
	return Bind(c, v)
}
