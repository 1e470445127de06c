package api

import (
	"net/http"
	"strconv"

	"github.com/labstack/echo/v4"

	"svc/auth"
	"svc/internal/domain/trace"
	"svc/internal/integrations/pull"
	"svc/internal/platform/derrors"
)

// Trace sources (spec §4.2, issue 16 point 7): a workspace's named
// connections to its observability platforms. Declaring one is a
// workspace setting (settings:write, as model bindings and the trace
// settings are); reading them, listing a source's recent traces and
// inspecting one are harnesses:read, as the spec gates the last two: the
// people who tune a harness's span attribute mapping need them. A source
// names the workspace secret holding its credential; the credential is
// opened only to call the platform and never appears in an answer.

func (s *Server) traceSourceRoutes() []Route {
	return []Route{
		{Method: http.MethodPut, Path: "/workspace/trace-sources/:name", Action: auth.SettingsWrite,
			Summary: "Declare a trace source", Handler: s.putTraceSource},
		{Method: http.MethodGet, Path: "/workspace/trace-sources", Action: auth.HarnessesRead,
			Summary: "List the workspace's trace sources", Handler: s.listTraceSources},
		{Method: http.MethodGet, Path: "/workspace/trace-sources/:name", Action: auth.HarnessesRead,
			Summary: "Read one trace source", Handler: s.getTraceSource},
		{Method: http.MethodDelete, Path: "/workspace/trace-sources/:name", Action: auth.SettingsWrite,
			Summary: "Delete a trace source", Handler: s.deleteTraceSource},
		{Method: http.MethodGet, Path: "/workspace/trace-sources/:name/traces", Action: auth.HarnessesRead,
			Summary: "List a trace source's recent traces with metrics", Handler: s.listSourceTraces},
		{Method: http.MethodPost, Path: "/workspace/trace-sources/:name/traces/:traceId/inspect", Action: auth.HarnessesRead,
			Summary: "Inspect one trace of a trace source with a span attribute mapping", Handler: s.inspectSourceTrace},
	}
}

func (s *Server) putTraceSource(c echo.Context) error {
	name, err := pathParam(c, "name")
	if err != nil {
		return err
	}
	var cfg pull.Config
	if err := Bind(c, &cfg); err != nil {
		return err
	}
	if _, err := s.traceSources.Put(c.Request().Context(), principal(c), name, cfg); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

func (s *Server) listTraceSources(c echo.Context) error {
	out, err := s.traceSources.List(c.Request().Context(), principal(c))
	if err != nil {
		return err
	}
	return listJSON(c, out)
}

func (s *Server) getTraceSource(c echo.Context) error {
	name, err := pathParam(c, "name")
	if err != nil {
		return err
	}
	src, err := s.traceSources.Get(c.Request().Context(), principal(c), name)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, src)
}

func (s *Server) deleteTraceSource(c echo.Context) error {
	name, err := pathParam(c, "name")
	if err != nil {
		return err
	}
	if err := s.traceSources.Delete(c.Request().Context(), principal(c), name); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

func (s *Server) listSourceTraces(c echo.Context) error {
	name, err := pathParam(c, "name")
	if err != nil {
		return err
	}
	limit := 20
	if v := c.QueryParam("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > pull.MaxList {
			return derrors.Invalidf("limit %q: a number from 1 to %d", clipParam(v), pull.MaxList)
		}
		limit = n
	}
	out, err := s.traceSources.Traces(c.Request().Context(), principal(c), name, limit)
	if err != nil {
		return err
	}
	return listJSON(c, out)
}

// InspectRequest is the body of POST
// /workspace/trace-sources/:name/traces/:traceId/inspect: the mapping to
// try, overlaid on the source's own.
type InspectRequest struct {
	Mapping trace.SpanAttrMapping `json:"mapping"`
}

func (s *Server) inspectSourceTrace(c echo.Context) error {
	name, err := pathParam(c, "name")
	if err != nil {
		return err
	}
	traceID, err := pathParam(c, "traceId")
	if err != nil {
		return err
	}
	var req InspectRequest
	if err := Bind(c, &req); err != nil {
		return err
	}
	out, err := s.traceSources.Inspect(c.Request().Context(), principal(c), name, traceID, req.Mapping)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, out)
}

// clipParam bounds a query value quoted in an error.
func clipParam(v string) string {
	if len(v) > 40 {
		return v[:40] + "…"
	}
	return v
}
