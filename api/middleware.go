package api

import (
	"context"
	"crypto/rand"
	"log/slog"
	"net/http"
	"runtime/debug"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"svc/internal/platform/reqid"
)

// RequestID returns the id of the request ctx belongs to, or "" outside a
// request. Code below the handlers logs it (through package reqid, which
// the services can import) so one id finds every line.
func RequestID(ctx context.Context) string { return reqid.From(ctx) }

// requestIDOf reads the id back from the response header, which the
// requestID middleware sets before anything else can fail.
func requestIDOf(c echo.Context) string {
	return c.Response().Header().Get(echo.HeaderXRequestID)
}

// saneRequestID accepts an incoming id only when it cannot corrupt a log line
// or a header: 1 to 128 characters of [A-Za-z0-9._:-].
func saneRequestID(id string) bool {
	if len(id) == 0 || len(id) > 128 {
		return false
	}
	for i := 0; i < len(id); i++ {
		switch b := id[i]; {
		case 'a' <= b && b <= 'z', 'A' <= b && b <= 'Z', '0' <= b && b <= '9':
		case b == '.', b == '_', b == ':', b == '-':
		default:
			return false
		}
	}
	return true
}

// requestID gives every request an id: the caller's when it is sane (so a
// proxy's id follows the request through), else a new random one.
func (s *Server) requestID(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		req := c.Request()
		id := req.Header.Get(echo.HeaderXRequestID)
		if !saneRequestID(id) {
			id = rand.Text()
		}
		c.Response().Header().Set(echo.HeaderXRequestID, id)
		ctx := reqid.With(req.Context(), id)
		trace.SpanFromContext(ctx).SetAttributes(attribute.String("http.request.id", id))
		c.SetRequest(req.WithContext(ctx))
		return next(c)
	}
}

// methodLabel keeps the method label of the metrics to the standard
// methods: anything else a client invents is "OTHER".
func methodLabel(m string) string {
	switch m {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
		http.MethodDelete, http.MethodConnect, http.MethodOptions, http.MethodTrace:
		return m
	}
	return "OTHER"
}

// observe writes the access log line and the request metrics. It hands an
// error to the error handler itself so that both see the status the client
// got. The log line holds no header, query or body: secrets travel there.
func (s *Server) observe(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		start := time.Now()
		if err := next(c); err != nil {
			c.Error(err)
		}
		elapsed := time.Since(start)
		req, res := c.Request(), c.Response()
		route := s.routeLabel(c)
		method := methodLabel(req.Method)
		s.metrics.observe(method, route, strconv.Itoa(res.Status), elapsed)

		level := slog.LevelInfo
		if probeRoutes[route] && res.Status < 400 {
			level = slog.LevelDebug
		}
		ctx := req.Context()
		if !s.logger.Enabled(ctx, level) {
			return nil
		}
		attrs := []slog.Attr{
			slog.String("method", method),
			slog.String("route", route),
			slog.Int("status", res.Status),
			slog.Float64("duration_ms", float64(elapsed.Microseconds())/1000),
			slog.String("request_id", requestIDOf(c)),
			slog.Int64("bytes", res.Size),
		}
		if sc := trace.SpanContextFromContext(ctx); sc.IsValid() {
			attrs = append(attrs, slog.String("trace_id", sc.TraceID().String()))
		}
		s.logger.LogAttrs(ctx, level, "http request", attrs...)
		return nil
	}
}

// recoverPanic turns a panic in a handler into an error, which the error
// handler logs with its stack and answers as a 500 naming only the request id.
func recoverPanic(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) (err error) {
		defer func() {
			if r := recover(); r != nil {
				if r == http.ErrAbortHandler {
					// net/http's way to abort a response on purpose: let it.
					panic(r)
				}
				err = &panicError{value: r, stack: debug.Stack()}
			}
		}()
		return next(c)
	}
}

// limitBody refuses a declared Content-Length over the limit before any
// handler runs, and caps the body reader for chunked bodies and for clients
// that lie about the length; Bind and the error handler turn the reader's
// *http.MaxBytesError into the same 413.
func (s *Server) limitBody(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		req := c.Request()
		limit := s.maxBody
		if n, ok := routeBodyLimits[c.Path()]; ok {
			limit = n // an image import's tar (worlds.go)
		}
		if req.ContentLength > limit {
			return tooLarge(limit)
		}
		if req.Body != nil && req.Body != http.NoBody {
			// The server's own writer, so that net/http also closes the
			// connection instead of reading the rest of an oversized body.
			req.Body = http.MaxBytesReader(c.Response().Writer, req.Body, limit)
		}
		return next(c)
	}
}

// MaxHeaderBytes bounds the header fields of a request (names, values and
// their separators; not the request line, whose path ids have their own
// bound): limitHeaders answers a larger header section with a JSON 431.
// Credentials, request ids and trace headers fit many times over.
const MaxHeaderBytes = 64 << 10

// TransportMaxHeaderBytes is what http.Server.MaxHeaderBytes must be set to
// (net/http's default): well above MaxHeaderBytes, so that an oversized
// header section normally reaches limitHeaders and its JSON 431. Past it,
// net/http answers by itself; TransportErrors turns that answer into JSON too.
const TransportMaxHeaderBytes = http.DefaultMaxHeaderBytes

// limitHeaders refuses a request whose header fields total more than
// MaxHeaderBytes with 431, in the one error shape, before authentication
// parses any of them.
func (s *Server) limitHeaders(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		req := c.Request()
		// net/http moves Host out of the map; count it as the line it was.
		n := len("Host: \r\n") + len(req.Host)
		for name, values := range req.Header {
			for _, v := range values {
				n += len(name) + len(": \r\n") + len(v)
			}
		}
		if n > MaxHeaderBytes {
			return headersTooLarge(n)
		}
		return next(c)
	}
}
