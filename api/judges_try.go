package api

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"svc/auth"
	"svc/internal/service/judges"
)

// POST /judges/try and /judges/:id/try (spec §4.4): one real execution of
// a judge over one case (judges.Service.Try). A model or harness judge
// answers its scores inline (200); a code judge runs as a first-class run
// with trigger judge-preview (202 {runId}).

func (s *Server) judgeTryRoutes() []Route {
	return []Route{
		{Method: http.MethodPost, Path: "/judges/try", Action: auth.ScorecardsRun,
			Summary: "Run a judge once over one case", Handler: s.tryJudge},
		{Method: http.MethodPost, Path: "/judges/:id/try", Action: auth.ScorecardsRun,
			Summary: "Run a registered judge once over one case", Handler: s.tryRegisteredJudge},
	}
}

func (s *Server) tryJudge(c echo.Context) error {
	var req judges.TryRequest
	if err := Bind(c, &req); err != nil {
		return err
	}
	res, err := s.judges.Try(c.Request().Context(), principal(c), req, originSource(c))
	if err != nil {
		return err
	}
	return writeTry(c, res)
}

func (s *Server) tryRegisteredJudge(c echo.Context) error {
	id, err := pathParam(c, "id")
	if err != nil {
		return err
	}
	var req judges.TryRequest
	if err := Bind(c, &req); err != nil {
		return err
	}
	res, err := s.judges.TryRegistered(c.Request().Context(), principal(c), id, req, originSource(c))
	if err != nil {
		return err
	}
	return writeTry(c, res)
}

// writeTry encodes a try's answer: a code judge's run is 202, a verdict 200.
func writeTry(c echo.Context, res judges.TryResult) error {
	if res.Run != nil {
		return c.JSON(http.StatusAccepted, res.Run)
	}
	return c.JSON(http.StatusOK, res.Verdict)
}
