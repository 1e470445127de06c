package api

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"svc/auth"
	"svc/internal/service/judges"
)

// POST /judges/preview (spec §4.4): the exact prompt a model-backed judge
// would send for one case, with per-placeholder evidence, warnings and the
// coverage of the judge's requires (judges.Service.Preview). No model is
// called.

func (s *Server) judgePreviewRoutes() []Route {
	return []Route{
		{Method: http.MethodPost, Path: "/judges/preview", Action: auth.JudgesRead,
			Summary: "Preview the exact prompt of a judge over one case", Handler: s.previewJudge},
	}
}

func (s *Server) previewJudge(c echo.Context) error {
	var req judges.PreviewRequest
	if err := Bind(c, &req); err != nil {
		return err
	}
	out, err := s.judges.Preview(c.Request().Context(), principal(c), req, originSource(c))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, out)
}
