package api

import (
	"bytes"
	"errors"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"svc/auth"
	"svc/internal/domain/trace"
	"svc/internal/platform/bufpool"
	"svc/internal/platform/derrors"
	"svc/internal/service/traces"
)

// The OTLP door and the trace ledger's settings (spec §4.2, issue 16).
// Handlers decode and call package traceingest.

func (s *Server) traceRoutes() []Route {
	return []Route{
		{Method: http.MethodPost, Path: "/v1/traces", Action: auth.RunsSubmit, Summary: "Export spans over OTLP/HTTP", Handler: s.exportTraces},
		{Method: http.MethodGet, Path: "/workspace/trace-ingestion", Action: auth.RunsRead, Summary: "Read the trace ingestion quota, usage and retention", Handler: s.getTraceIngestion},
		{Method: http.MethodPut, Path: "/workspace/trace-ingestion", Action: auth.SettingsWrite, Summary: "Set the trace ingestion quota and retention", Handler: s.putTraceIngestion},
		{Method: http.MethodGet, Path: "/workspace/trace-thresholds", Action: auth.RunsRead, Summary: "Read the trace thresholds", Handler: s.getTraceThresholds},
		{Method: http.MethodPut, Path: "/workspace/trace-thresholds", Action: auth.SettingsWrite, Summary: "Set the trace thresholds", Handler: s.putTraceThresholds},
		{Method: http.MethodGet, Path: "/harnesses/:id/span-attr-mapping", Action: auth.HarnessesRead, Summary: "Read a harness's span attribute mapping", Handler: s.getSpanAttrMapping},
		{Method: http.MethodPut, Path: "/harnesses/:id/span-attr-mapping", Action: auth.HarnessesRegister, Summary: "Set a harness's span attribute mapping overlay", Handler: s.putSpanAttrMapping},
	}
}

// otlpBodies holds the door's request buffers for reuse.
var otlpBodies = bufpool.Pool{Max: 16 << 20}

// exportTraces is the OTLP/HTTP door: an ExportTraceServiceRequest in
// protobuf or JSON, gzip or not, answered with an
// ExportTraceServiceResponse in the request's encoding. Its refusals are
// the API's JSON errors: 400 for a body that does not decode, 413 past
// the body limit or traces.MaxOTLPBytes decompressed, 415 for another
// encoding, 429 with Retry-After past the hourly quota.
func (s *Server) exportTraces(c echo.Context) error {
	req := c.Request()
	enc, err := trace.OTLPEncoding(req.Header.Get(echo.HeaderContentType))
	if err != nil {
		return echo.NewHTTPError(http.StatusUnsupportedMediaType, err.Error())
	}
	// The body's buffer is reused once the export is decoded: the
	// decoder copies what it keeps.
	pooled := otlpBodies.Get(0)
	raw, err := readBodyInto(req, *pooled)
	if err != nil {
		return err
	}
	// An uncompressed body is decoded where it was read.
	body := raw
	if ce := strings.ToLower(strings.TrimSpace(req.Header.Get(echo.HeaderContentEncoding))); ce != "" && ce != "identity" || len(raw) > trace.MaxOTLPBytes {
		body, err = trace.ReadOTLPBody(bytes.NewReader(raw), req.Header.Get(echo.HeaderContentEncoding))
	}
	switch {
	case errors.Is(err, trace.ErrOTLPTooLarge):
		return tooLarge(trace.MaxOTLPBytes)
	case errors.Is(err, trace.ErrOTLPEncoding):
		return echo.NewHTTPError(http.StatusUnsupportedMediaType, err.Error())
	case err != nil:
		// Whatever else breaks decompressing is the client's stream.
		return publicError(derrors.ErrInvalid, nil, "the request body could not be decompressed: %v", err)
	}
	export, err := trace.DecodeOTLP(body, enc)
	otlpBodies.Put(pooled, raw)
	if err != nil {
		return publicError(derrors.ErrInvalid, nil, "%v", err)
	}
	if err := checkRunTokenSpans(req.Context(), export); err != nil {
		return err
	}
	// A refusal past the quota (*traceingest.ThrottledError) carries its
	// Retry-After and details to the one error mapping.
	resp, err := s.traceIngest.Export(req.Context(), principal(c), export)
	if err != nil {
		return err
	}
	out, err := trace.EncodeOTLPResponse(resp, enc)
	if err != nil {
		return err
	}
	return c.Blob(http.StatusOK, enc, out)
}

func (s *Server) getTraceIngestion(c echo.Context) error {
	out, err := s.traceIngest.GetIngestion(c.Request().Context(), principal(c))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, out)
}

func (s *Server) putTraceIngestion(c echo.Context) error {
	var req traces.IngestionUpdate
	if err := Bind(c, &req); err != nil {
		return err
	}
	out, err := s.traceIngest.PutIngestion(c.Request().Context(), principal(c), req)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, out)
}

func (s *Server) getTraceThresholds(c echo.Context) error {
	out, err := s.traceIngest.GetThresholds(c.Request().Context(), principal(c))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, out)
}

func (s *Server) putTraceThresholds(c echo.Context) error {
	var req trace.Thresholds
	if err := Bind(c, &req); err != nil {
		return err
	}
	out, err := s.traceIngest.PutThresholds(c.Request().Context(), principal(c), req)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, out)
}

func (s *Server) getSpanAttrMapping(c echo.Context) error {
	id, err := pathParam(c, "id")
	if err != nil {
		return err
	}
	out, err := s.traceIngest.GetMapping(c.Request().Context(), principal(c), id)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, out)
}

func (s *Server) putSpanAttrMapping(c echo.Context) error {
	id, err := pathParam(c, "id")
	if err != nil {
		return err
	}
	var req trace.SpanAttrMapping
	if err := Bind(c, &req); err != nil {
		return err
	}
	out, err := s.traceIngest.PutMapping(c.Request().Context(), principal(c), id, req)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, out)
}
