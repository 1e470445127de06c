package api

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"

	"github.com/labstack/echo/v4"

	"svc/derrors"
)

// Error codes are the machine-readable half of every error body. Clients
// branch on them, so each is part of the API contract; the OpenAPI
// document's Error schema lists exactly these.
const (
	CodeBadRequest       = "BAD_REQUEST"
	CodeUnauthenticated  = "UNAUTHENTICATED"
	CodeBudgetExceeded   = "BUDGET_EXCEEDED"
	CodeForbidden        = "FORBIDDEN"
	CodeNotFound         = "NOT_FOUND"
	CodeMethodNotAllowed = "METHOD_NOT_ALLOWED"
	CodeConflict         = "CONFLICT"
	CodePayloadTooLarge  = "PAYLOAD_TOO_LARGE"
	CodeRateLimited      = "RATE_LIMITED"
	CodeInternal         = "INTERNAL"
	CodeUnavailable      = "UNAVAILABLE"
)

// internalMessage is all a client learns of a failure we did not foresee:
// the details stay in the log, under the request id.
const internalMessage = "internal error; quote the requestId when reporting"

// errorKinds is the one table from domain sentinel to status and code. The
// order matters only for an error that wraps several sentinels: the first
// row that matches wins. Rows without a sentinel are statuses that reach the
// handler only as *echo.HTTPError (the router's 405) or as the fallback.
var errorKinds = []struct {
	sentinel error
	status   int
	code     string
}{
	{derrors.ErrInvalid, http.StatusBadRequest, CodeBadRequest},
	{derrors.ErrUnauthenticated, http.StatusUnauthorized, CodeUnauthenticated},
	{derrors.ErrBudgetExceeded, http.StatusPaymentRequired, CodeBudgetExceeded},
	{derrors.ErrForbidden, http.StatusForbidden, CodeForbidden},
	{derrors.ErrNotFound, http.StatusNotFound, CodeNotFound},
	{nil, http.StatusMethodNotAllowed, CodeMethodNotAllowed},
	{derrors.ErrConflict, http.StatusConflict, CodeConflict},
	{derrors.ErrTooLarge, http.StatusRequestEntityTooLarge, CodePayloadTooLarge},
	{derrors.ErrRateLimited, http.StatusTooManyRequests, CodeRateLimited},
	{nil, http.StatusInternalServerError, CodeInternal},
	{derrors.ErrUnavailable, http.StatusServiceUnavailable, CodeUnavailable},
}

// errorCodes lists every code the API answers with, in table order.
func errorCodes() []string {
	codes := make([]string, 0, len(errorKinds))
	for _, k := range errorKinds {
		codes = append(codes, k.code)
	}
	return codes
}

// codeForStatus names a status that arrived without a sentinel. An
// unforeseen 4xx (such as echo's 415) is still the client's to fix, so it
// reads as BAD_REQUEST rather than as a server fault.
func codeForStatus(status int) string {
	for _, k := range errorKinds {
		if k.status == status {
			return k.code
		}
	}
	if status >= 400 && status < 500 {
		return CodeBadRequest
	}
	return CodeInternal
}

// ErrorBody is the JSON body of every error response: {"error": {...}}.
type ErrorBody struct {
	Error ErrorInfo `json:"error"`
}

// ErrorInfo says what went wrong, in the shape the OpenAPI Error schema describes.
type ErrorInfo struct {
	Code      string         `json:"code"`              // one of the Code* constants
	Message   string         `json:"message"`           // for a person; a 4xx says what to fix
	Details   map[string]any `json:"details,omitempty"` // structured facts, when there are any
	RequestID string         `json:"requestId"`         // equals the X-Request-Id header
}

// DetailedError attaches structured details, and optionally the exact
// message a client reads, to an error. The status still comes from the
// sentinel Err wraps, so errors.Is sees through it.
//
// Message, when set, replaces Err's text in the body; for a 5xx it is the
// only way to say more than the generic message, so set it only to text that
// is safe to show anyone.
type DetailedError struct {
	Err     error          // the cause; its sentinel decides the status
	Message string         // what the client reads; empty means Err's text (4xx) or the generic one (5xx)
	Details map[string]any // the body's "details", such as the offending field
}

// Error returns the text of the wrapped error, for logs.
func (e *DetailedError) Error() string {
	if e.Err == nil {
		return e.Message
	}
	return e.Err.Error()
}

// Unwrap exposes the wrapped error to errors.Is and errors.As.
func (e *DetailedError) Unwrap() error { return e.Err }

// WithDetails returns err with details for the error body; a nil err stays nil.
func WithDetails(err error, details map[string]any) error {
	if err == nil {
		return nil
	}
	return &DetailedError{Err: err, Details: details}
}

// publicError builds a DetailedError whose message is written for the
// client, wrapping sentinel so it maps to the right status.
func publicError(sentinel error, details map[string]any, format string, args ...any) *DetailedError {
	msg := fmt.Sprintf(format, args...)
	return &DetailedError{Err: fmt.Errorf("%w: %s", sentinel, msg), Message: msg, Details: details}
}

// tooLarge is the 413 for a body past limit bytes, however it was noticed.
func tooLarge(limit int64) *DetailedError {
	return publicError(derrors.ErrTooLarge, map[string]any{"limitBytes": limit},
		"the request body is larger than the limit of %d bytes; send a smaller body (operators set the limit with SVC_MAX_BODY_BYTES)", limit)
}

// panicError is what the recovery middleware turns a panic into, so the
// error handler logs it, with its stack, in the one place errors are logged.
type panicError struct {
	value any
	stack []byte
}

func (p *panicError) Error() string { return fmt.Sprintf("panic: %v", p.value) }

// errorResponse decides the status and body for err. It never puts the
// text of an unforeseen error into the body.
func errorResponse(err error, c echo.Context) (int, ErrorInfo) {
	info := ErrorInfo{RequestID: requestIDOf(c)}
	var detailed *DetailedError
	if errors.As(err, &detailed) {
		info.Details = detailed.Details
	}

	status, code := sentinelStatus(err)
	info.Code = code
	var maxBytes *http.MaxBytesError
	var he *echo.HTTPError
	switch {
	case status != 0:
	case errors.As(err, &maxBytes):
		// A handler that read the body itself and returned the reader's error.
		detailed = tooLarge(maxBytes.Limit)
		status, info.Code, info.Details = http.StatusRequestEntityTooLarge, CodePayloadTooLarge, detailed.Details
	case errors.As(err, &he):
		status, info.Code = he.Code, codeForStatus(he.Code)
		if status < 400 || status > 599 {
			status, info.Code = http.StatusInternalServerError, CodeInternal
		}
		info.Message = echoMessage(he, c)
	default:
		status, info.Code = http.StatusInternalServerError, CodeInternal
	}

	info.Message = publicMessage(err, status, detailed, info.Message)
	return status, info
}

// sentinelStatus is the status and code of err's sentinel, or 0 and "" when
// it wraps none.
func sentinelStatus(err error) (int, string) {
	for _, k := range errorKinds {
		if k.sentinel != nil && errors.Is(err, k.sentinel) {
			return k.status, k.code
		}
	}
	return 0, ""
}

// unavailableMessage is what a 503 without a public message says.
const unavailableMessage = "a dependency of the service is unavailable; retry later and quote the requestId if it persists"

// publicMessage is the message a client reads for err answered with
// status: a message written for the client when there is one (preset, a
// DetailedError's, a derrors.Public's), else err's text for a 4xx and a
// generic one for a 5xx, whose text is never shown.
func publicMessage(err error, status int, detailed *DetailedError, preset string) string {
	var public *derrors.Public
	switch {
	case detailed != nil && detailed.Message != "":
		return detailed.Message
	case errors.As(err, &public):
		return public.Msg
	case status == http.StatusServiceUnavailable:
		return unavailableMessage
	case status >= 500:
		return internalMessage
	case preset != "":
		return preset
	}
	return err.Error()
}

// echoMessage words echo's own errors (the router's 404 and 405, its
// middleware's refusals) so they say what to change.
func echoMessage(he *echo.HTTPError, c echo.Context) string {
	req := c.Request()
	switch he.Code {
	case http.StatusNotFound:
		return fmt.Sprintf("no route matches %s %s; the routes are listed at /openapi.json", req.Method, clip(req.URL.Path))
	case http.StatusMethodNotAllowed:
		msg := fmt.Sprintf("method %s is not allowed on %s", req.Method, clip(req.URL.Path))
		if allow := c.Response().Header().Get(echo.HeaderAllow); allow != "" {
			msg += "; use " + allow
		}
		return msg
	}
	if m, ok := he.Message.(string); ok && he.Code < 500 {
		return m
	}
	return http.StatusText(he.Code)
}

// clip keeps client-supplied text short enough for a message.
func clip(s string) string {
	const max = 200
	if len(s) <= max {
		return s
	}
	return s[:max] + "..."
}

// handleError is the Echo HTTPErrorHandler: every error of every route
// reaches the client through here, in the one JSON shape.
func (s *Server) handleError(err error, c echo.Context) {
	ctx := c.Request().Context()
	if c.Response().Committed {
		// The status line is gone; all that is left is to say so in the log.
		s.logger.LogAttrs(ctx, slog.LevelWarn, "error after the response started",
			slog.String("request_id", requestIDOf(c)), slog.String("error", err.Error()))
		return
	}
	status, info := errorResponse(err, c)
	if status >= 500 {
		attrs := []slog.Attr{
			slog.String("request_id", info.RequestID),
			slog.String("method", c.Request().Method),
			slog.String("route", s.routeLabel(c)),
			slog.Int("status", status),
			slog.String("error", err.Error()),
		}
		var p *panicError
		if errors.As(err, &p) {
			attrs = append(attrs, slog.String("stack", string(p.stack)))
		}
		s.logger.LogAttrs(ctx, slog.LevelError, "request failed", attrs...)
	}
	if status == http.StatusUnauthorized && c.Response().Header().Get(echo.HeaderWWWAuthenticate) == "" {
		// RFC 9110 §11.6.1: a 401 must say which scheme would work.
		c.Response().Header().Set(echo.HeaderWWWAuthenticate, `Bearer realm="svc"`)
	}
	if c.Request().Method == http.MethodHead {
		err = c.NoContent(status)
	} else {
		err = c.JSON(status, ErrorBody{Error: info})
	}
	if err != nil {
		s.logger.LogAttrs(ctx, slog.LevelWarn, "writing the error response",
			slog.String("request_id", info.RequestID), slog.String("error", err.Error()))
	}
}
