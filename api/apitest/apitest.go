// Package apitest helps the tests of package api and of every handler added
// later: a Client that sends real HTTP requests to a Server on loopback and
// checks every response against the checked-in OpenAPI document, and a
// logger whose output a test can search.
package apitest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"

	"svc/api"
)

var (
	loadOnce sync.Once
	doc      *openapi3.T
	router   routers.Router
	loadErr  error
)

func load() {
	loader := openapi3.NewLoader()
	d, err := loader.LoadFromData(api.OpenAPIDocument())
	if err != nil {
		loadErr = fmt.Errorf("loading api/openapi.json: %w", err)
		return
	}
	if err := d.Validate(loader.Context); err != nil {
		loadErr = fmt.Errorf("api/openapi.json is not a valid OpenAPI document: %w", err)
		return
	}
	r, err := gorillamux.NewRouter(d)
	if err != nil {
		loadErr = fmt.Errorf("routing api/openapi.json: %w", err)
		return
	}
	doc, router = d, r
}

// Document returns the embedded OpenAPI document, loaded and validated once
// per test binary; t fails when it does not load or is not valid.
func Document(t testing.TB) *openapi3.T {
	t.Helper()
	loadOnce.Do(load)
	if loadErr != nil {
		t.Fatal(loadErr)
	}
	return doc
}

// Response is one answer, read whole.
type Response struct {
	Status int
	Header http.Header
	Body   []byte
}

// JSON decodes the body into v, failing t on unknown fields or bad JSON.
func (r *Response) JSON(t testing.TB, v any) {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(r.Body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		t.Fatalf("decoding response body %q: %v", r.Body, err)
	}
}

// ErrorInfo decodes an error body, failing t when the body is not one.
func (r *Response) ErrorInfo(t testing.TB) api.ErrorInfo {
	t.Helper()
	var b api.ErrorBody
	r.JSON(t, &b)
	return b.Error
}

// Client sends requests to a Server over loopback HTTP and checks each
// response against the OpenAPI document.
type Client struct {
	URL          string
	HTTP         *http.Client
	undocumented map[string]bool
}

// NewClient serves h on a loopback port chosen by the OS for the life of t.
func NewClient(t testing.TB, h http.Handler) *Client {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return &Client{URL: srv.URL, HTTP: srv.Client(), undocumented: map[string]bool{}}
}

// AllowUndocumented lets a test-only route (registered on Server.Echo, not
// in the table) answer 2xx without an operation in the document. Its error
// responses are still checked against the Error schema.
func (c *Client) AllowUndocumented(method, path string) {
	c.undocumented[method+" "+path] = true
}

// NewRequest builds a request for path (which may carry a query) on the
// client's server. A body of unknown length (not a *bytes.Reader,
// *bytes.Buffer or *strings.Reader) is sent chunked.
func (c *Client) NewRequest(t testing.TB, method, path string, body io.Reader) *http.Request {
	t.Helper()
	req, err := http.NewRequest(method, c.URL+path, body)
	if err != nil {
		t.Fatalf("building %s %s: %v", method, path, err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	return req
}

// Do sends req, reads the whole response and validates it (see ValidateResponse).
func (c *Client) Do(t testing.TB, req *http.Request) *Response {
	t.Helper()
	res, err := c.HTTP.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", req.Method, req.URL.Path, err)
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatalf("%s %s: reading the body: %v", req.Method, req.URL.Path, err)
	}
	r := &Response{Status: res.StatusCode, Header: res.Header, Body: body}
	if c.undocumented[req.Method+" "+req.URL.Path] && r.Status < 400 {
		return r
	}
	ValidateResponse(t, req, r)
	return r
}

// Get sends GET path.
func (c *Client) Get(t testing.TB, path string) *Response {
	t.Helper()
	return c.Do(t, c.NewRequest(t, http.MethodGet, path, nil))
}

// Post sends POST path with a JSON body.
func (c *Client) Post(t testing.TB, path, body string) *Response {
	t.Helper()
	return c.Do(t, c.NewRequest(t, http.MethodPost, path, strings.NewReader(body)))
}

// ValidateResponse fails t when res does not match the document's operation
// for req: status, headers (X-Request-Id on every one), content type and
// body schema. A request the document has no operation for (an unknown
// route, a wrong method) must get an error body of the Error schema.
func ValidateResponse(t testing.TB, req *http.Request, res *Response) {
	t.Helper()
	d := Document(t)
	what := req.Method + " " + req.URL.Path
	if res.Header.Get("X-Request-Id") == "" {
		t.Errorf("%s answered %d without an X-Request-Id header", what, res.Status)
	}
	route, params, err := router.FindRoute(req)
	if errors.Is(err, routers.ErrPathNotFound) || errors.Is(err, routers.ErrMethodNotAllowed) {
		if res.Status < 400 {
			t.Errorf("%s answered %d but api/openapi.json has no such operation: add it (or call AllowUndocumented for a test-only route)", what, res.Status)
			return
		}
		checkErrorBody(t, d, what, res)
		return
	}
	if err != nil {
		t.Fatalf("%s: finding the operation in api/openapi.json: %v", what, err)
	}
	in := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: &openapi3filter.RequestValidationInput{Request: req, PathParams: params, Route: route},
		Status:                 res.Status,
		Header:                 res.Header,
		Options:                &openapi3filter.Options{IncludeResponseStatus: true, MultiError: true},
	}
	in.SetBodyBytes(res.Body)
	if err := openapi3filter.ValidateResponse(t.Context(), in); err != nil {
		t.Errorf("%s answered %d with a response api/openapi.json does not allow: %v\nbody: %s", what, res.Status, err, res.Body)
	}
}

// checkErrorBody validates an error response that no operation describes.
func checkErrorBody(t testing.TB, d *openapi3.T, what string, res *Response) {
	t.Helper()
	if ct := res.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		t.Errorf("%s answered %d with Content-Type %q, want application/json", what, res.Status, ct)
		return
	}
	var v any
	if err := json.Unmarshal(res.Body, &v); err != nil {
		t.Errorf("%s answered %d with a body that is not JSON: %v\nbody: %s", what, res.Status, err, res.Body)
		return
	}
	schema := d.Components.Schemas["Error"]
	if schema == nil || schema.Value == nil {
		t.Fatal("api/openapi.json has no components.schemas.Error")
	}
	if err := schema.Value.VisitJSON(v, openapi3.EnableJSONSchema2020()); err != nil {
		t.Errorf("%s answered %d with a body that is not the Error shape: %v\nbody: %s", what, res.Status, err, res.Body)
	}
}

// Logs collects what a logger from NewLogger writes; it is safe for the
// server's goroutines to write while a test reads.
type Logs struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

// Write implements io.Writer.
func (l *Logs) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

// String returns everything logged so far.
func (l *Logs) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// Records returns the JSON log lines so far, decoded.
func (l *Logs) Records(t testing.TB) []map[string]any {
	t.Helper()
	var recs []map[string]any
	for line := range strings.Lines(l.String()) {
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("log line is not JSON: %v: %q", err, line)
		}
		recs = append(recs, rec)
	}
	return recs
}

// Find waits up to five seconds for a log record for which match is true
// and returns it, failing t when none comes: the access log line is written
// as the response completes, so it may trail the client by a moment.
func (l *Logs) Find(t testing.TB, what string, match func(rec map[string]any) bool) map[string]any {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		for _, rec := range l.Records(t) {
			if match(rec) {
				return rec
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no log record %s in:\n%s", what, l.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// NewLogger returns a JSON logger at debug level that writes into Logs.
func NewLogger() (*slog.Logger, *Logs) {
	l := &Logs{}
	return slog.New(slog.NewJSONHandler(l, &slog.HandlerOptions{Level: slog.LevelDebug})), l
}
