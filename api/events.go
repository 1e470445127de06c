package api

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"svc/auth"
	"svc/internal/service/events"
)

// The platform event log, read (spec §6; the route is beyond the spec's
// table, issue 33). The handler reads the query and calls package events.

func (s *Server) eventRoutes() []Route {
	return []Route{
		{Method: http.MethodGet, Path: "/events", Action: auth.EventsRead, Summary: "List the workspace's events, newest first", Handler: s.listEvents},
	}
}

func (s *Server) listEvents(c echo.Context) error {
	q := events.Query{Type: c.QueryParam("type"), Since: c.QueryParam("since"), Cursor: c.QueryParam("cursor")}
	var err error
	if q.Limit, err = intQuery(c, "limit", 1, events.MaxPage); err != nil {
		return err
	}
	list, next, err := events.New(s.store).List(c.Request().Context(), principal(c), q)
	if err != nil {
		return err
	}
	if next != "" {
		c.Response().Header().Set(headerNextCursor, next)
	}
	return listJSON(c, list)
}
