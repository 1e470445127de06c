package api_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/labstack/echo/v4"

	"svc/api"
	"svc/api/apitest"
	"svc/internal/platform/derrors"
)

// internalText stands for what an unforeseen error may carry; no response
// body may contain it.
const internalText = "pq: password authentication failed for user svc_owner"

func TestErrorMapping(t *testing.T) {
	tests := []struct {
		name        string
		err         error
		wantStatus  int
		wantCode    string
		wantMessage string // substring; for 5xx the whole message
		wantDetails map[string]any
		wantHeader  [2]string // a header the response must carry
	}{
		{"invalid", derrors.Invalidf("name must not be empty"),
			400, api.CodeBadRequest, "name must not be empty", nil, [2]string{}},
		{"unauthenticated", fmt.Errorf("%w: the bearer token has expired; sign in again", derrors.ErrUnauthenticated),
			401, api.CodeUnauthenticated, "sign in again", nil, [2]string{"WWW-Authenticate", `Bearer realm="svc"`}},
		{"budget", fmt.Errorf("%w: the workspace spent its monthly budget", derrors.ErrBudgetExceeded),
			402, api.CodeBudgetExceeded, "monthly budget", nil, [2]string{}},
		{"forbidden", derrors.Forbiddenf("viewers may not submit runs"),
			403, api.CodeForbidden, "viewers may not submit runs", nil, [2]string{}},
		{"not found", derrors.NotFoundf("run %q", "r-1"),
			404, api.CodeNotFound, `run "r-1"`, nil, [2]string{}},
		// The store's operations stay in the log: the client reads what
		// was not found, not which call looked.
		{"not found wrapped by the store and a service", fmt.Errorf("reading the batch: %w", storeErr(derrors.NotFoundf("trace source %q", "lf"), `Store.GetTraceSource(ctx, "default", "lf")`)),
			404, api.CodeNotFound, `reading the batch: not found: trace source "lf"`, nil, [2]string{}},
		{"a refusal with details", storeErr(derrors.Refusef(derrors.ErrConflict, map[string]any{"id": "t1"}, "team t1 already exists"), "Service.CreateTeam(ctx)"),
			409, api.CodeConflict, "team t1 already exists", map[string]any{"id": "t1"}, [2]string{}},
		{"conflict wrapped twice", storeErr(derrors.Conflictf("dataset d@1.0.0 exists with other content"), `Store.CreateDataset(ctx, "d")`),
			409, api.CodeConflict, "exists with other content", nil, [2]string{}},
		{"too large", fmt.Errorf("%w: the trace has more than 10000 events", derrors.ErrTooLarge),
			413, api.CodePayloadTooLarge, "10000 events", nil, [2]string{}},
		{"rate limited", fmt.Errorf("%w: the scheduler queue is full; retry later", derrors.ErrRateLimited),
			429, api.CodeRateLimited, "queue is full", nil, [2]string{}},
		{"unavailable hides its cause", fmt.Errorf("%w: %s", derrors.ErrUnavailable, internalText),
			503, api.CodeUnavailable, "a dependency of the service is unavailable; retry later and quote the requestId if it persists", nil, [2]string{}},
		// A public 503 is written one way: derrors.Unavailablef (or a
		// sentinel built like it), wherever it is wrapped or joined.
		{"public 503", errors.Join(derrors.Unavailablef("no workflow orchestrator is configured; run svc dev"), errors.New(internalText)),
			503, api.CodeUnavailable, "no workflow orchestrator is configured; run svc dev", nil, [2]string{}},
		{"public 503 with details", api.WithDetails(fmt.Errorf("readyz: %w: %w", derrors.Unavailablef("not ready: database unreachable"), errors.New(internalText)), map[string]any{"checks": "x"}),
			503, api.CodeUnavailable, "not ready: database unreachable", map[string]any{"checks": "x"}, [2]string{}},
		{"no secret key", fmt.Errorf("records: %w: %w", derrors.ErrNoSecretKey, errors.New(internalText)),
			503, api.CodeUnavailable, derrors.ErrNoSecretKey.Error(), nil, [2]string{}},
		{"a 5xx never shows a detailed message", &api.DetailedError{Err: fmt.Errorf("%w: %s", derrors.ErrUnavailable, internalText), Message: "handwritten " + internalText},
			503, api.CodeUnavailable, "a dependency of the service is unavailable; retry later and quote the requestId if it persists", nil, [2]string{}},
		{"details", api.WithDetails(derrors.Invalidf("field tags has 21 entries; at most 20"), map[string]any{"field": "tags", "max": 20}),
			400, api.CodeBadRequest, "at most 20", map[string]any{"field": "tags", "max": float64(20)}, [2]string{}},
		{"detailed message", &api.DetailedError{Err: derrors.ErrNotFound, Message: "no such harness h@2", Details: map[string]any{"id": "h"}},
			404, api.CodeNotFound, "no such harness h@2", map[string]any{"id": "h"}, [2]string{}},
		{"unknown error", errors.New(internalText),
			500, api.CodeInternal, "internal error; quote the requestId when reporting", nil, [2]string{}},
		{"unknown error wrapped", fmt.Errorf("activities.Dispatch: %w", errors.New(internalText)),
			500, api.CodeInternal, "internal error; quote the requestId when reporting", nil, [2]string{}},
		{"echo error of another 4xx", echo.NewHTTPError(http.StatusUnsupportedMediaType, "send Content-Type: application/json"),
			415, api.CodeBadRequest, "send Content-Type: application/json", nil, [2]string{}},
		{"echo error 5xx", echo.NewHTTPError(http.StatusBadGateway, internalText),
			502, api.CodeInternal, "internal error; quote the requestId when reporting", nil, [2]string{}},
	}
	s, client, logs := newServer(t, api.Options{})
	// Filled before the first request, so the server only ever reads it.
	errs := map[string]error{}
	for i, tt := range tests {
		errs[fmt.Sprint(i)] = tt.err
	}
	s.Echo().GET("/test/error/:case", func(c echo.Context) error { return errs[c.Param("case")] })

	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := client.Get(t, fmt.Sprintf("/test/error/%d", i))
			if res.Status != tt.wantStatus {
				t.Fatalf("status = %d, want %d; body %s", res.Status, tt.wantStatus, res.Body)
			}
			info := res.ErrorInfo(t)
			if info.Code != tt.wantCode {
				t.Errorf("code = %q, want %q", info.Code, tt.wantCode)
			}
			if tt.wantStatus >= 500 && info.Message != tt.wantMessage {
				t.Errorf("message = %q, want %q", info.Message, tt.wantMessage)
			}
			if !strings.Contains(info.Message, tt.wantMessage) {
				t.Errorf("message = %q, want it to contain %q", info.Message, tt.wantMessage)
			}
			if diff := cmp.Diff(tt.wantDetails, info.Details); diff != "" {
				t.Errorf("details mismatch (-want +got):\n%s", diff)
			}
			if got := res.Header.Get("X-Request-Id"); info.RequestID != got || got == "" {
				t.Errorf("requestId = %q, X-Request-Id = %q: want equal and set", info.RequestID, got)
			}
			if h := tt.wantHeader; h[0] != "" && res.Header.Get(h[0]) != h[1] {
				t.Errorf("header %s = %q, want %q", h[0], res.Header.Get(h[0]), h[1])
			}
			if strings.Contains(string(res.Body), internalText) {
				t.Errorf("body leaks the internal error: %s", res.Body)
			}
			if strings.Contains(info.Message, "(ctx") || strings.Contains(info.Message, "Store.") {
				t.Errorf("message %q shows an internal call chain", info.Message)
			}
			if tt.wantStatus < 500 && tt.err.Error() != info.Message {
				// What the client did not read is logged, under its id.
				logs.Find(t, "with the chain and request id", func(rec map[string]any) bool {
					return rec["msg"] == "request refused" && rec["request_id"] == info.RequestID && rec["error"] == tt.err.Error()
				})
			}
			if tt.wantStatus >= 500 {
				// The operator gets what the client does not: the error
				// itself, under the id the client quotes.
				logs.Find(t, "with the error and request id", func(rec map[string]any) bool {
					return rec["msg"] == "request failed" && rec["request_id"] == info.RequestID &&
						strings.Contains(rec["error"].(string), internalText)
				})
			}
		})
	}
}

// storeErr is err as a store method's deferred derrors.Wrap leaves it.
func storeErr(err error, op string) error {
	derrors.Wrap(&err, "%s", op)
	return err
}

func TestUnknownRoute(t *testing.T) {
	_, client, _ := newServer(t, api.Options{})
	res := client.Get(t, "/no/such/route")
	if res.Status != http.StatusNotFound {
		t.Fatalf("status = %d, want 404", res.Status)
	}
	info := res.ErrorInfo(t)
	if info.Code != api.CodeNotFound || !strings.Contains(info.Message, "/openapi.json") {
		t.Errorf("error = %+v, want NOT_FOUND pointing at /openapi.json", info)
	}
}

func TestMethodNotAllowed(t *testing.T) {
	_, client, _ := newServer(t, api.Options{})
	res := client.Do(t, client.NewRequest(t, http.MethodDelete, "/healthz", nil))
	if res.Status != http.StatusMethodNotAllowed {
		t.Fatalf("status = %d, want 405", res.Status)
	}
	info := res.ErrorInfo(t)
	if info.Code != api.CodeMethodNotAllowed {
		t.Errorf("code = %q, want %q", info.Code, api.CodeMethodNotAllowed)
	}
	if allow := res.Header.Get("Allow"); !strings.Contains(allow, http.MethodGet) || !strings.Contains(info.Message, allow) {
		t.Errorf("Allow = %q, message %q: want GET allowed and named", allow, info.Message)
	}
}

func TestPanicRecovery(t *testing.T) {
	const panicText = "secret-panic-text"
	s, client, logs := newServer(t, api.Options{})
	s.Echo().GET("/test/panic", func(c echo.Context) error { panic(panicText) })

	res := client.Get(t, "/test/panic")
	if res.Status != http.StatusInternalServerError {
		t.Fatalf("status = %d, want 500", res.Status)
	}
	info := res.ErrorInfo(t)
	want := api.ErrorInfo{Code: api.CodeInternal, Message: "internal error; quote the requestId when reporting", RequestID: res.Header.Get("X-Request-Id")}
	if diff := cmp.Diff(want, info); diff != "" || info.RequestID == "" {
		t.Errorf("error mismatch (-want +got):\n%s", diff)
	}
	if strings.Contains(string(res.Body), panicText) {
		t.Errorf("body leaks the panic: %s", res.Body)
	}
	rec := logs.Find(t, "of the panic", func(rec map[string]any) bool {
		return rec["msg"] == "request failed" && rec["request_id"] == info.RequestID
	})
	if !strings.Contains(rec["error"].(string), panicText) || !strings.Contains(rec["stack"].(string), "errors_test.go") {
		t.Errorf("panic log lacks the value or the stack: %v", rec)
	}
	logs.Find(t, "access line of the 500", func(rec map[string]any) bool {
		return rec["msg"] == "http request" && rec["request_id"] == info.RequestID && rec["status"] == float64(500)
	})

	// The server survives: the next request is served.
	if res := client.Get(t, "/healthz"); res.Status != http.StatusOK {
		t.Errorf("after the panic, /healthz = %d", res.Status)
	}
}

// TestTransportErrors: what net/http refuses before any handler runs (a
// malformed request line or escape, a bad Host, an unsupported version or
// transfer encoding, headers past MaxHeaderBytes) is answered in the one
// error shape when the server is served on api.TransportErrors, as svc is.
func TestTransportErrors(t *testing.T) {
	s, _, _ := newServer(t, api.Options{})
	logger, logs := apitest.NewLogger()
	srv := httptest.NewUnstartedServer(s.Handler())
	srv.Config.MaxHeaderBytes = 4 << 10 // so that its own 431 needs only a few KB
	srv.Listener = api.TransportErrors(srv.Listener, logger)
	srv.Start()
	t.Cleanup(srv.Close)

	tests := []struct {
		name    string
		request string
		status  int
		message string // substring
	}{
		{"malformed escape in the path", "GET /runs/%zz HTTP/1.1\r\nHost: x\r\n\r\n", 400, "%-escapes"},
		{"no Host", "GET /healthz HTTP/1.1\r\n\r\n", 400, "missing required Host header"},
		{"malformed Host", "GET /healthz HTTP/1.1\r\nHost: a b\r\n\r\n", 400, "malformed Host header"},
		{"invalid header name", "GET /healthz HTTP/1.1\r\nHost: x\r\nBad Name: v\r\n\r\n", 400, "invalid header name"},
		{"unsupported version", "GET /healthz HTTP/3.0\r\nHost: x\r\n\r\n", 505, "use HTTP/1.1"},
		{"unsupported transfer encoding", "POST /runs HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip\r\n\r\n", 501, "Transfer-Encoding"},
		{"headers past the transport's limit", "GET /healthz HTTP/1.1\r\nHost: x\r\nX-Padding: " + strings.Repeat("a", 16<<10) + "\r\n\r\n", 431, "header"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, body := rawRequest(t, srv.Listener.Addr().String(), tt.request)
			if res.StatusCode != tt.status {
				t.Fatalf("status %d, want %d; body %s", res.StatusCode, tt.status, body)
			}
			if ct := res.Header.Get("Content-Type"); ct != "application/json" {
				t.Errorf("Content-Type %q, want application/json", ct)
			}
			var b api.ErrorBody
			dec := json.NewDecoder(bytes.NewReader(body))
			dec.DisallowUnknownFields()
			if err := dec.Decode(&b); err != nil {
				t.Fatalf("body %q is not the error shape: %v", body, err)
			}
			info := b.Error
			if info.Code != api.CodeBadRequest || !strings.Contains(info.Message, tt.message) {
				t.Errorf("error = %+v, want BAD_REQUEST with %q in the message", info, tt.message)
			}
			if id := res.Header.Get("X-Request-Id"); id == "" || info.RequestID != id {
				t.Errorf("requestId %q, X-Request-Id %q: want equal and set", info.RequestID, id)
			}
			logs.Find(t, "the access line", func(rec map[string]any) bool {
				return rec["msg"] == "http request" && rec["request_id"] == info.RequestID && rec["status"] == float64(tt.status)
			})
		})
	}

	// A request net/http can read passes through the wrapped connection
	// unchanged, and so does the next one on the same connection.
	res, body := rawRequest(t, srv.Listener.Addr().String(), "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
	if res.StatusCode != http.StatusOK || !json.Valid(body) {
		t.Errorf("GET /healthz through the wrapped listener: %d %s", res.StatusCode, body)
	}
}

// rawRequest writes request on a new connection to addr and reads one response.
func rawRequest(t *testing.T, addr, request string) (*http.Response, []byte) {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(conn, request); err != nil {
		t.Fatalf("writing the request: %v", err)
	}
	res, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("reading the response: %v", err)
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatalf("reading the body: %v", err)
	}
	return res, body
}
