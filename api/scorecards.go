package api

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"svc/auth"
	"svc/internal/domain/eval"
	"svc/internal/domain/query"
	"svc/internal/platform/derrors"
	"svc/internal/service/scorecards"
)

// Scorecards, groups (experiments), detached scoring, cancel, manifest
// verification and the driver-ops view (spec §4.5 to §4.7). Handlers read
// the request and call package scorecards.

func (s *Server) scorecardRoutes() []Route {
	return []Route{
		{Method: http.MethodPost, Path: "/scorecards", Action: auth.ScorecardsRun, Summary: "Run a scorecard", Handler: s.submitScorecard},
		{Method: http.MethodGet, Path: "/scorecards", Action: auth.ScorecardsRead, Summary: "List scorecards", Handler: s.listScorecards},
		{Method: http.MethodGet, Path: "/scorecards/:id", Action: auth.ScorecardsRead, Summary: "Get a scorecard", Handler: s.getScorecard},
		{Method: http.MethodGet, Path: "/scorecards/diff", Action: auth.ScorecardsRead, Summary: "Diff two scorecards", Handler: s.diffScorecards},
		{Method: http.MethodPost, Path: "/scorecards/gate", Action: auth.ScorecardsRead, Summary: "Gate a candidate scorecard against a baseline", Handler: s.gateScorecards},
		{Method: http.MethodPost, Path: "/scorecards/query", Action: auth.ScorecardsRead, Summary: "Query scorecards", Handler: s.queryScorecards},
		{Method: http.MethodGet, Path: "/scorecards/:id/analysis", Action: auth.ScorecardsRead, Summary: "Get a scorecard's frozen analysis", Handler: s.scorecardAnalysis},
		{Method: http.MethodPost, Path: "/scorecards/:id/cancel", Action: auth.ScorecardsRun, Summary: "Cancel a scorecard", Handler: s.cancelScorecard},
		{Method: http.MethodPost, Path: "/scorecards/:id/score", Action: auth.ScorecardsRun, Summary: "Re-score a scorecard", Handler: s.scoreScorecard},
		{Method: http.MethodPost, Path: "/scorecards/:id/verify-manifest", Action: auth.ScorecardsRead, Summary: "Verify a scorecard's manifest", Handler: s.verifyManifest},
		{Method: http.MethodPost, Path: "/groups", Action: auth.ScorecardsRun, Summary: "Run an experiment", Handler: s.submitGroup},
		{Method: http.MethodGet, Path: "/groups/:id", Action: auth.ScorecardsRead, Summary: "Get an experiment", Handler: s.getScorecard},
		{Method: http.MethodPost, Path: "/groups/:id/score", Action: auth.ScorecardsRun, Summary: "Score an experiment", Handler: s.scoreScorecard},
		{Method: http.MethodGet, Path: "/ops/driver/:family/:id", Action: auth.RuntimesRead, Summary: "Read a batch's workflow", Handler: s.getDriver},
		{Method: http.MethodPost, Path: "/ops/driver/:family/:id/cancel", Action: auth.RuntimesControl, Summary: "Cancel a batch's workflow", Handler: s.cancelDriver},
	}
}

func (s *Server) submitScorecard(c echo.Context) error {
	var req scorecards.SubmitRequest
	if err := Bind(c, &req); err != nil {
		return err
	}
	sc, err := s.scorecards.Submit(c.Request().Context(), principal(c), req, originSource(c))
	if err != nil {
		return err
	}
	return accepted(c, "/scorecards/", sc)
}

func (s *Server) submitGroup(c echo.Context) error {
	var req scorecards.GroupRequest
	if err := Bind(c, &req); err != nil {
		return err
	}
	sc, err := s.scorecards.SubmitGroup(c.Request().Context(), principal(c), req, originSource(c))
	if err != nil {
		return err
	}
	return accepted(c, "/groups/", sc)
}

func accepted(c echo.Context, base string, sc eval.Scorecard) error {
	c.Response().Header().Set(echo.HeaderLocation, base+sc.ID)
	return c.JSON(http.StatusAccepted, sc)
}

func (s *Server) listScorecards(c echo.Context) error {
	q := scorecards.ListQuery{Kind: c.QueryParam("kind"), Status: c.QueryParam("status"), Cursor: c.QueryParam("cursor")}
	var err error
	if q.DatasetID, err = queryID(c, "datasetId"); err != nil {
		return err
	}
	if q.HarnessID, err = queryID(c, "harnessId"); err != nil {
		return err
	}
	if q.Limit, err = intQuery(c, "limit", 1, 500); err != nil {
		return err
	}
	list, next, err := s.scorecards.List(c.Request().Context(), principal(c), q)
	if err != nil {
		return err
	}
	if next != "" {
		c.Response().Header().Set(headerNextCursor, next)
	}
	return listJSON(c, list)
}

func (s *Server) getScorecard(c echo.Context) error {
	id, err := pathParam(c, "id")
	if err != nil {
		return err
	}
	switch view := c.QueryParam("view"); view {
	case "", "detail":
	case "summary":
		sc, err := s.scorecards.Summary(c.Request().Context(), principal(c), id)
		if err != nil {
			return err
		}
		return c.JSON(http.StatusOK, sc)
	default:
		return derrors.Invalidf("view must be detail (the default: the per-case table included) or summary (progress, summary and steps only), not %q", view)
	}
	// The table is paged when the read asks for a page (casesAfter,
	// limit) or holds more than scorecards.MaxUnpagedCaseTrials rows.
	page, err := detailPage(c)
	if err != nil {
		return err
	}
	_, pretty := c.QueryParams()["pretty"]
	// The same bytes c.JSON would write, built from the pieces the service
	// keeps per batch, so that polling a running batch stays cheap; c.JSON
	// indents for ?pretty, the cached bytes are compact.
	sc, body, err := s.scorecards.GetPage(c.Request().Context(), principal(c), id, page, !pretty)
	if err != nil {
		return err
	}
	res := c.Response()
	if sc.ScorecardPage != nil && sc.ScorecardPage.Next != "" {
		res.Header().Set(headerNextCursor, sc.ScorecardPage.Next)
	}
	if pretty {
		return c.JSON(http.StatusOK, sc)
	}
	if res.Header().Get(echo.HeaderContentType) == "" {
		res.Header().Set(echo.HeaderContentType, echo.MIMEApplicationJSON)
	}
	res.WriteHeader(http.StatusOK)
	_, err = body.WriteTo(res)
	return err
}

// detailPage reads the page a detail read asks for: nil when it sets
// neither casesAfter nor limit.
func detailPage(c echo.Context) (*scorecards.DetailPage, error) {
	q := c.QueryParams()
	if _, ok := q["casesAfter"]; !ok {
		if _, ok := q["limit"]; !ok {
			return nil, nil
		}
	}
	limit, err := intQuery(c, "limit", 1, scorecards.MaxDetailPage)
	if err != nil {
		return nil, err
	}
	p := &scorecards.DetailPage{CasesAfter: c.QueryParam("casesAfter"), Limit: limit}
	if p.CasesAfter != "" {
		if _, _, err := scorecards.ParseCasesAfter(p.CasesAfter); err != nil {
			return nil, err
		}
	}
	return p, nil
}

func (s *Server) cancelScorecard(c echo.Context) error {
	id, err := pathParam(c, "id")
	if err != nil {
		return err
	}
	sc, err := s.scorecards.Cancel(c.Request().Context(), principal(c), id)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, sc)
}

func (s *Server) scoreScorecard(c echo.Context) error {
	var req scorecards.ScoreRequest
	if err := Bind(c, &req); err != nil {
		return err
	}
	id, err := pathParam(c, "id")
	if err != nil {
		return err
	}
	sc, err := s.scorecards.Score(c.Request().Context(), principal(c), id, req)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusAccepted, sc)
}

func (s *Server) verifyManifest(c echo.Context) error {
	id, err := pathParam(c, "id")
	if err != nil {
		return err
	}
	v, err := s.scorecards.VerifyManifest(c.Request().Context(), principal(c), id)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, v)
}

func (s *Server) getDriver(c echo.Context) error {
	family, id, err := driverParams(c)
	if err != nil {
		return err
	}
	v, err := s.scorecards.Driver(c.Request().Context(), principal(c), family, id)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, v)
}

func (s *Server) cancelDriver(c echo.Context) error {
	family, id, err := driverParams(c)
	if err != nil {
		return err
	}
	v, err := s.scorecards.CancelDriver(c.Request().Context(), principal(c), family, id)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, v)
}

func (s *Server) queryScorecards(c echo.Context) error {
	var req query.Request
	if err := Bind(c, &req); err != nil {
		return err
	}
	res, err := s.scorecards.Query(c.Request().Context(), principal(c), req)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, res)
}

func (s *Server) scorecardAnalysis(c echo.Context) error {
	rev, err := intQuery(c, "revision", 1, 1<<30)
	if err != nil {
		return err
	}
	id, err := pathParam(c, "id")
	if err != nil {
		return err
	}
	doc, err := s.scorecards.Analysis(c.Request().Context(), principal(c), id, rev)
	if err != nil {
		return err
	}
	return c.JSONBlob(http.StatusOK, doc)
}

func (s *Server) diffScorecards(c echo.Context) error {
	baseline, err := queryID(c, "baseline")
	if err != nil {
		return err
	}
	candidate, err := queryID(c, "candidate")
	if err != nil {
		return err
	}
	d, err := s.scorecards.Diff(c.Request().Context(), principal(c), baseline, candidate)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, d)
}

func (s *Server) gateScorecards(c echo.Context) error {
	var req scorecards.GateRequest
	if err := Bind(c, &req); err != nil {
		return err
	}
	d, err := s.scorecards.Gate(c.Request().Context(), principal(c), req)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, d)
}

// driverParams are the family and batch id of the /ops/driver routes.
func driverParams(c echo.Context) (family, id string, err error) {
	if family, err = pathParam(c, "family"); err != nil {
		return "", "", err
	}
	if id, err = pathParam(c, "id"); err != nil {
		return "", "", err
	}
	return family, id, nil
}
