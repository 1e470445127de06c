package api

import (
	"errors"
	"net/http"
	"strconv"

	"github.com/labstack/echo/v4"

	"svc/auth"
	"svc/internal/platform/derrors"
	"svc/internal/service/identity"
	"svc/internal/service/runs"
)

// Runs, trajectories, notifications and the webhook signing secret (spec
// §4.2, §4.9). Handlers read the request and call package runs.

// headerNextCursor carries the cursor of the next page of a cursor-paginated
// list; absent on the last page.
const headerNextCursor = "X-Svc-Next-Cursor"

func (s *Server) runRoutes() []Route {
	return []Route{
		{Method: http.MethodPost, Path: "/runs", Action: auth.RunsSubmit, Summary: "Submit a single eval run", Handler: s.submitRun},
		{Method: http.MethodGet, Path: "/runs", Action: auth.RunsRead, Summary: "List runs", Handler: s.listRuns},
		{Method: http.MethodGet, Path: "/runs/:id", Action: auth.RunsRead, Summary: "Get a run", Handler: s.getRun},
		{Method: http.MethodGet, Path: "/runs/:id/logs", Action: auth.RunsRead, Summary: "Read a run's logs", Handler: s.runLogs},
		{Method: http.MethodGet, Path: "/runs/:id/trajectory", Action: auth.RunsRead, Summary: "Read a run's trajectory", Handler: s.runTrajectory},
		{Method: http.MethodGet, Path: "/runs/:id/webhook-deliveries", Action: auth.RunsRead, Summary: "List a run's webhook delivery attempts", Handler: s.runDeliveries},
		{Method: http.MethodGet, Path: "/trajectories", Action: auth.RunsRead, Summary: "List sealed trajectories", Handler: s.listTrajectories},
		{Method: http.MethodGet, Path: "/trajectories/:id", Action: auth.RunsRead, Summary: "Get a sealed trajectory", Handler: s.getTrajectory},
		{Method: http.MethodGet, Path: "/notifications", Action: auth.Authenticated, Summary: "List my notifications", Handler: s.listNotifications},
		{Method: http.MethodPost, Path: "/notifications/read", Action: auth.Authenticated, Summary: "Mark my notifications read", Handler: s.readNotifications},
		{Method: http.MethodGet, Path: "/workspace/webhook-secret", Action: auth.SettingsWrite, Summary: "Read the webhook signing secret", Handler: s.getWebhookSecret},
		{Method: http.MethodPost, Path: "/workspace/webhook-secret/rotate", Action: auth.SettingsWrite, Summary: "Rotate the webhook signing secret", Handler: s.rotateWebhookSecret},
		{Method: http.MethodGet, Path: "/workspace/usage", Action: auth.SettingsWrite, Summary: "Read what the workspace spent and what is left of its budget", Handler: s.getUsage},
	}
}

func (s *Server) submitRun(c echo.Context) error {
	var req runs.SubmitRequest
	if err := Bind(c, &req); err != nil {
		return err
	}
	run, err := s.runs.Submit(c.Request().Context(), principal(c), req, originSource(c))
	if err != nil {
		return err
	}
	c.Response().Header().Set(echo.HeaderLocation, "/runs/"+run.ID)
	return c.JSON(http.StatusAccepted, run)
}

// originSource is the surface a submit came through, for origin.source:
// "mcp" from the agent tool endpoint, else "api".
func originSource(c echo.Context) string {
	if v, ok := c.Get(originSourceKey).(string); ok && v != "" {
		return v
	}
	return "api"
}

// originSourceKey is the context key an embedding surface (the MCP tools)
// sets to name itself.
const originSourceKey = "svc.origin-source"

func (s *Server) listRuns(c echo.Context) error {
	q := runs.ListQuery{Cursor: c.QueryParam("cursor")}
	var err error
	if q.ScorecardID, err = queryID(c, "scorecardId"); err != nil {
		return err
	}
	switch v := c.QueryParam("scope"); v {
	case "":
	case "all":
		q.All = true
	default:
		return derrors.Invalidf("scope=%q: the only scope is \"all\" (children of scorecards included)", clip(v))
	}
	if q.Limit, err = intQuery(c, "limit", 1, runs.MaxPage); err != nil {
		return err
	}
	list, next, err := s.runs.List(c.Request().Context(), principal(c), q)
	if err != nil {
		return err
	}
	if next != "" {
		c.Response().Header().Set(headerNextCursor, next)
	}
	return listJSON(c, list)
}

func (s *Server) getRun(c echo.Context) error {
	id, err := pathParam(c, "id")
	if err != nil {
		return err
	}
	run, err := s.runs.Get(c.Request().Context(), principal(c), id)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, run)
}

func (s *Server) runLogs(c echo.Context) error {
	after, err := intQuery(c, "after", 0, 1<<62)
	if err != nil {
		return err
	}
	limit, err := intQuery(c, "limit", 1, 5000)
	if err != nil {
		return err
	}
	id, err := pathParam(c, "id")
	if err != nil {
		return err
	}
	logs, err := s.runs.Logs(c.Request().Context(), principal(c), id, int64(after), limit)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, logs)
}

func (s *Server) runTrajectory(c echo.Context) error {
	id, err := pathParam(c, "id")
	if err != nil {
		return err
	}
	t, err := s.runs.Trajectory(c.Request().Context(), principal(c), id)
	if err != nil {
		return s.pendingTrajectory(c, id, err)
	}
	return c.JSON(http.StatusOK, t)
}

func (s *Server) runDeliveries(c echo.Context) error {
	id, err := pathParam(c, "id")
	if err != nil {
		return err
	}
	ds, err := s.runs.Deliveries(c.Request().Context(), principal(c), id)
	if err != nil {
		return err
	}
	return listJSON(c, ds)
}

func (s *Server) listTrajectories(c echo.Context) error {
	limit, err := intQuery(c, "limit", 1, runs.MaxPage)
	if err != nil {
		return err
	}
	list, next, err := s.runs.ListTrajectories(c.Request().Context(), principal(c), c.QueryParam("cursor"), limit)
	if err != nil {
		return err
	}
	if next != "" {
		c.Response().Header().Set(headerNextCursor, next)
	}
	return listJSON(c, list)
}

func (s *Server) getTrajectory(c echo.Context) error {
	id, err := pathParam(c, "id")
	if err != nil {
		return err
	}
	t, err := s.runs.GetTrajectory(c.Request().Context(), principal(c), id)
	if err != nil {
		return s.pendingTrajectory(c, id, err)
	}
	return c.JSON(http.StatusOK, t)
}

// pendingTrajectory is the answer for trajectory id that was not found
// (err): when spans of id are received but not sealed yet, a NOT_FOUND
// that says how many wait and when they are sealed (details.sealsAt),
// rather than a bare 404 (docs/traces.md, "Before a trajectory is
// sealed"); else err.
func (s *Server) pendingTrajectory(c echo.Context, id string, err error) error {
	if !errors.Is(err, derrors.ErrNotFound) {
		return err
	}
	ctx, p := c.Request().Context(), principal(c)
	teams, terr := identity.TeamAudiences(ctx, s.store, p.Workspace, p.Subject, auth.ReachesEveryTeam(p))
	if terr != nil {
		return terr
	}
	pe, perr := s.traceIngest.Pending(ctx, p.Workspace, p.Subject, teams, id)
	switch {
	case perr != nil:
		return perr
	case pe == nil:
		return err
	}
	return publicError(derrors.ErrNotFound, pe.ErrorDetails(), "%s", pe.Error())
}

func (s *Server) listNotifications(c echo.Context) error {
	unread := false
	switch v := c.QueryParam("unread"); v {
	case "", "0", "false":
	case "1", "true":
		unread = true
	default:
		return derrors.Invalidf("unread=%q: want 1 or 0", clip(v))
	}
	limit, err := intQuery(c, "limit", 1, runs.MaxNotificationPage)
	if err != nil {
		return err
	}
	list, err := s.runs.Notifications(c.Request().Context(), principal(c), unread, limit)
	if err != nil {
		return err
	}
	return listJSON(c, list)
}

func (s *Server) readNotifications(c echo.Context) error {
	var req runs.ReadRequest
	if err := Bind(c, &req); err != nil {
		return err
	}
	n, err := s.runs.MarkRead(c.Request().Context(), principal(c), req)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, map[string]int{"marked": n})
}

func (s *Server) getWebhookSecret(c echo.Context) error {
	ws, err := s.runs.GetWebhookSecret(c.Request().Context(), principal(c))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, ws)
}

func (s *Server) getUsage(c echo.Context) error {
	u, err := s.runs.Usage(c.Request().Context(), principal(c), clip(c.QueryParam("window")))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, u)
}

func (s *Server) rotateWebhookSecret(c echo.Context) error {
	ws, err := s.runs.RotateWebhookSecret(c.Request().Context(), principal(c))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, ws)
}

// intQuery reads an optional integer query parameter within [lo, hi]; 0
// when absent.
func intQuery(c echo.Context, name string, lo, hi int) (int, error) {
	v := c.QueryParam(name)
	if v == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < lo || n > hi {
		return 0, derrors.Invalidf("%s=%q: want an integer from %d to %d", name, clip(v), lo, hi)
	}
	return n, nil
}
