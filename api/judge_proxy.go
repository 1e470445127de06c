package api

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"svc/auth"
)

// The run-scoped model proxy (issue 17, spec §2.5, §7;
// judges.Service.Proxy): a code judge or a harness job calls its bound
// model here with the token the worker minted for it, in the OpenAI chat
// completions wire format; the key stays in the workspace's secret store.
// The route is public in the route table because the token, not a
// principal, authenticates it; it is not an agent tool.

func (s *Server) judgeProxyRoutes() []Route {
	return []Route{
		{Method: http.MethodPost, Path: "/judge-proxy/v1/chat/completions", Action: auth.Public,
			Summary: "A code judge's model call, through the run-scoped proxy", Handler: s.judgeProxy},
		{Method: http.MethodPost, Path: "/model-proxy/v1/chat/completions", Action: auth.Public,
			Summary: "A harness job's (or a code judge's) model call, through the run-scoped proxy", Handler: s.judgeProxy},
	}
}

func (s *Server) judgeProxy(c echo.Context) error {
	answer, err := s.judges.Proxy(c.Request().Context(), c.Request().Header.Get(echo.HeaderAuthorization), c.Request().Body)
	if err != nil {
		return err
	}
	return c.Blob(answer.Status, echo.MIMEApplicationJSON, answer.Body)
}
