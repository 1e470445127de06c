package api

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"svc/auth"
	"svc/internal/service/scorecards"
)

// Pull ingest (spec §4.5, issue 16 point 6): traces read from a
// workspace's observability platform (Langfuse, LangSmith, Phoenix,
// MLflow, an OTLP-JSON trace query API) or from the owned ledger (source
// name svc), graded and judged as a scorecard. docs/traces.md ("Pull
// traces as a scorecard").

func (s *Server) ingestPullRoutes() []Route {
	return []Route{
		{Method: http.MethodPost, Path: "/scorecards/ingest/pull", Action: auth.ScorecardsRun, Summary: "Pull traces from a trace source as a scorecard", Handler: s.ingestPull},
	}
}

func (s *Server) ingestPull(c echo.Context) error {
	var req scorecards.PullRequest
	if err := Bind(c, &req); err != nil {
		return err
	}
	sc, err := s.scorecards.IngestPull(c.Request().Context(), principal(c), req, originSource(c), s.traceSources)
	if err != nil {
		return err
	}
	return accepted(c, "/scorecards/", sc)
}
