package api

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"svc/auth"
	"svc/internal/service/scorecards"
)

// Push ingest (spec §4.5, issue 16): traces of agents that ran elsewhere,
// graded and judged as a scorecard. docs/traces.md ("Push traces as a
// scorecard").

func (s *Server) ingestRoutes() []Route {
	return []Route{
		{Method: http.MethodPost, Path: "/scorecards/ingest", Action: auth.ScorecardsRun, Summary: "Ingest traces as a scorecard", Handler: s.ingestScorecard},
	}
}

func (s *Server) ingestScorecard(c echo.Context) error {
	var req scorecards.IngestRequest
	if err := Bind(c, &req); err != nil {
		return err
	}
	sc, err := s.scorecards.Ingest(c.Request().Context(), principal(c), req, originSource(c))
	if err != nil {
		return err
	}
	return accepted(c, "/scorecards/", sc)
}
