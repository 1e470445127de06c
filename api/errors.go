package api

import (
	"bytes"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"svc/internal/platform/derrors"
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
	// A parked call's 202 (approvals_park.go) has the error shape too.
	return append(codes, CodeApprovalPending)
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
// Message, when set, replaces Err's text in the body of a 4xx. A 5xx never
// reads it: a 5xx says more than the generic message only when Err wraps a
// derrors.Public (derrors.Unavailablef), the one way to write a public 503.
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

// publicError is a refusal whose message is written for the client, of
// the kind sentinel (derrors.Refusef): the API's shorthand.
func publicError(sentinel error, details map[string]any, format string, args ...any) *derrors.Public {
	return derrors.Refusef(sentinel, details, format, args...)
}

// tooLarge is the 413 for a body past limit bytes, however it was noticed.
func tooLarge(limit int64) *derrors.Public {
	return publicError(derrors.ErrTooLarge, map[string]any{"limitBytes": limit},
		"the request body is larger than the limit of %d bytes; send a smaller body (operators set the limit with SVC_MAX_BODY_BYTES)", limit)
}

// headersTooLarge is the 431 for header fields totalling n bytes, past
// MaxHeaderBytes. No sentinel means 431, so the status rides on an
// echo.HTTPError; like echo's other 4xx it reads as BAD_REQUEST.
func headersTooLarge(n int) *DetailedError {
	msg := fmt.Sprintf("the request's header fields total %d bytes; the limit is %d: send fewer or smaller headers", n, MaxHeaderBytes)
	return &DetailedError{Err: echo.NewHTTPError(http.StatusRequestHeaderFieldsTooLarge, msg), Message: msg,
		Details: map[string]any{"limitBytes": MaxHeaderBytes}}
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
	detailed := errorDetails(err, &info)

	status, code := sentinelStatus(err)
	info.Code = code
	var maxBytes *http.MaxBytesError
	var he *echo.HTTPError
	switch {
	case status != 0:
	case errors.As(err, &maxBytes):
		// A handler that read the body itself and returned the reader's error.
		te := tooLarge(maxBytes.Limit)
		status, info.Code, info.Details, info.Message = http.StatusRequestEntityTooLarge, CodePayloadTooLarge, te.Details, te.Msg
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

// errorDetails sets info's details from err: a DetailedError's, else
// those of the first error in the chain that carries any (a
// derrors.Public's, a refused spec's problems, a conflict's digests, ...).
// It returns the DetailedError, if any.
func errorDetails(err error, info *ErrorInfo) *DetailedError {
	var detailed *DetailedError
	if errors.As(err, &detailed) && detailed.Details != nil {
		info.Details = detailed.Details
		return detailed
	}
	info.Details = derrors.Details(err)
	return detailed
}

// sentinelFor is the sentinel that maps to status, or nil when none does.
func sentinelFor(status int) error {
	for _, k := range errorKinds {
		if k.status == status && k.sentinel != nil {
			return k.sentinel
		}
	}
	return nil
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
// status. A 5xx shows only a derrors.Public's text (derrors.Unavailablef),
// else a generic one: its other text is never shown. A 4xx shows a message
// written for the client when there is one (a DetailedError's, a
// derrors.Public's, preset), else derrors.Message(err): err's text without
// the internal operations derrors.Wrap added (the log has them, under the
// request id).
func publicMessage(err error, status int, detailed *DetailedError, preset string) string {
	var public *derrors.Public
	switch {
	case detailed != nil && detailed.Message != "" && status < 500:
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
	return derrors.Message(err)
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
	if status < 500 && info.Message != err.Error() {
		// The client read the message; the chain it was made from (the
		// store calls, the wrapped causes) is for the operator.
		s.logger.LogAttrs(ctx, slog.LevelInfo, "request refused",
			slog.String("request_id", info.RequestID),
			slog.String("method", c.Request().Method),
			slog.String("route", s.routeLabel(c)),
			slog.Int("status", status),
			slog.String("error", err.Error()))
	}
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
	if after, ok := derrors.RetryAfter(err); ok && status == http.StatusTooManyRequests && c.Response().Header().Get("Retry-After") == "" {
		c.Response().Header().Set("Retry-After", strconv.Itoa(max(1, int(math.Ceil(after.Seconds())))))
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

// The answers net/http writes itself, before any handler runs, for a
// request it cannot parse: a malformed request line or URL (GET /runs/%zz),
// a bad Host or header, an unsupported HTTP version or transfer encoding,
// header fields past http.Server.MaxHeaderBytes. Each is one Write on the
// connection in a fixed plain-text form (net/http's server.go, errorHeaders);
// TransportErrors rewrites exactly that form into the one JSON error body.

// netHTTPErrorHeaders is what net/http puts between the status line and the
// body of those answers, and nothing else: an answer of a handler always
// carries more (Date, Content-Length, X-Request-Id).
const netHTTPErrorHeaders = "\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\n"

// TransportErrors wraps ln so that net/http's own error answers carry the
// one JSON error body, with a fresh request id that logger records. Serve
// the API's http.Server on the returned listener.
func TransportErrors(ln net.Listener, logger *slog.Logger) net.Listener {
	if logger == nil {
		logger = slog.Default()
	}
	return &errorListener{Listener: ln, logger: logger}
}

type errorListener struct {
	net.Listener
	logger *slog.Logger
}

func (l *errorListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &errorConn{Conn: c, logger: l.logger}, nil
}

// errorConn is one accepted connection; see TransportErrors.
type errorConn struct {
	net.Conn
	logger *slog.Logger
}

// Write passes p through unless it is a whole net/http error answer.
func (c *errorConn) Write(p []byte) (int, error) {
	status, ok := netHTTPError(p)
	if !ok {
		return c.Conn.Write(p)
	}
	id := rand.Text()
	body, err := json.Marshal(ErrorBody{Error: ErrorInfo{Code: CodeBadRequest, Message: transportMessage(status, p), RequestID: id}})
	if err != nil {
		return c.Conn.Write(p)
	}
	// No request exists to take a context from: net/http could not read one.
	c.logger.Info("http request", "route", "unparsed", "status", status, "request_id", id)
	var b bytes.Buffer
	fmt.Fprintf(&b, "HTTP/1.1 %d %s\r\nContent-Type: application/json\r\nConnection: close\r\n", status, http.StatusText(status))
	fmt.Fprintf(&b, "Date: %s\r\n%s: %s\r\nContent-Length: %d\r\n\r\n", time.Now().UTC().Format(http.TimeFormat), echo.HeaderXRequestID, id, len(body))
	b.Write(body)
	if _, err := c.Conn.Write(b.Bytes()); err != nil {
		return 0, err
	}
	return len(p), nil
}

// CloseWrite lets net/http half-close after its 431, as it does on a bare
// TCP connection.
func (c *errorConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

// netHTTPError reports whether p is a whole error answer of net/http's own
// form ("HTTP/1.1 <4xx|5xx> <reason>" + netHTTPErrorHeaders + text), and
// its status.
func netHTTPError(p []byte) (int, bool) {
	rest, ok := bytes.CutPrefix(p, []byte("HTTP/1.1 "))
	if !ok || len(rest) < 4 || rest[3] != ' ' {
		return 0, false
	}
	status, err := strconv.Atoi(string(rest[:3]))
	if err != nil || status < 400 || status > 599 {
		return 0, false
	}
	line, _, ok := bytes.Cut(rest, []byte(netHTTPErrorHeaders))
	if !ok || bytes.ContainsAny(line, "\r\n") {
		return 0, false
	}
	return status, true
}

// transportMessage words net/http's refusal for the client. Its own detail
// ("missing required Host header") is net/http's fixed text, never the
// client's input, so it is safe to pass on.
func transportMessage(status int, p []byte) string {
	_, text, _ := bytes.Cut(p, []byte(netHTTPErrorHeaders))
	_, detail, _ := strings.Cut(string(text), ": ")
	switch status {
	case http.StatusRequestHeaderFieldsTooLarge:
		return fmt.Sprintf("the request's header section is larger than the server reads (%d bytes); send fewer or smaller headers (at most %d bytes of header fields)", TransportMaxHeaderBytes, MaxHeaderBytes)
	case http.StatusHTTPVersionNotSupported:
		return "the HTTP version is not supported; use HTTP/1.1"
	case http.StatusNotImplemented:
		return "the Transfer-Encoding is not supported; send the body with Content-Length or Transfer-Encoding: chunked"
	case http.StatusBadRequest:
		if detail != "" {
			return "malformed request: " + detail + "; fix the request line and headers"
		}
	}
	return "malformed HTTP request: the request line (method, path and its %-escapes, version) or a header does not parse; fix the request"
}
