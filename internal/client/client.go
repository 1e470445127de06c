// Package client is the typed HTTP client of the svc API, as the `svc`
// client commands (internal/cli) and a self-hosted runner use it: a base
// URL, a bearer token, the workspace header, the one JSON error shape
// decoded into an *Error whose message is the service's, and one method
// per call they make. A method answers the typed record where a caller
// reads fields, and the body as the service sent it (json.RawMessage) for
// a caller that only prints it (--json), so fields this binary does not
// know still reach the user.
package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"
)

// The environment a client reads (the settings of the client commands,
// not the server's): nomad's NOMAD_ADDR and NOMAD_TOKEN.
const (
	EnvURL       = "SVC_URL"
	EnvToken     = "SVC_TOKEN" // a secret: environment only, never a flag, never printed
	EnvWorkspace = "SVC_WORKSPACE"
	DefaultURL   = "http://127.0.0.1:8080"

	// WorkspaceHeader selects the active workspace (auth.WorkspaceHeader).
	WorkspaceHeader = "x-svc-workspace"
)

// RequestLimit bounds one request; a gate over a large batch bootstraps
// every metric, so it is generous.
const RequestLimit = 2 * time.Minute

// ErrUsage marks the caller's mistake rather than the service's: a
// request that cannot be built. The CLI reports it as a usage error.
var ErrUsage = errors.New("usage")

// Client sends requests to the svc API.
type Client struct {
	// Base is the API's base URL, without a trailing slash.
	Base string
	// Token is the bearer token; none is sent when empty.
	Token string
	// Workspace is sent as WorkspaceHeader when not empty.
	Workspace string
	HTTP      *http.Client
}

// New returns a client of base (an http(s) URL without a trailing slash)
// whose requests last at most RequestLimit.
func New(base, token, workspace string) *Client {
	return &Client{Base: base, Token: token, Workspace: workspace, HTTP: &http.Client{Timeout: RequestLimit}}
}

// Error is an error the service answered with its JSON error body.
type Error struct {
	Status    int
	Code      string
	Message   string
	RequestID string
	// Details is the error body's details, as sent: a registry's refusal
	// lists its problems there ({problems: [{path, message}]}).
	Details json.RawMessage
}

// Error reads "<message> (request <id>)": what a user quotes when reporting.
func (e *Error) Error() string {
	msg := e.Message
	if msg == "" {
		msg = fmt.Sprintf("HTTP %d %s", e.Status, http.StatusText(e.Status))
	}
	if e.RequestID != "" {
		msg += " (request " + e.RequestID + ")"
	}
	return msg
}

// Transient reports whether a retry may succeed: the service is
// restarting, overloaded or behind a proxy that lost it.
func (e *Error) Transient() bool {
	switch e.Status {
	case http.StatusTooManyRequests, http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return true
	}
	return false
}

// StatusOf is the HTTP status of the service's refusal err, or 0 when err
// is not one (nil, or no answer at all).
func StatusOf(err error) int {
	var e *Error
	if errors.As(err, &e) {
		return e.Status
	}
	return 0
}

// Problems returns the {path, message} problems an invalid spec was
// refused with, one "path: message" each; none for other errors.
func Problems(err error) []string {
	var ae *Error
	if !errors.As(err, &ae) || len(ae.Details) == 0 {
		return nil
	}
	var d struct {
		Problems []struct {
			Path    string `json:"path"`
			Message string `json:"message"`
		} `json:"problems"`
	}
	if json.Unmarshal(ae.Details, &d) != nil {
		return nil
	}
	var out []string
	for _, p := range d.Problems {
		if p.Path == "" {
			out = append(out, p.Message)
		} else {
			out = append(out, p.Path+": "+p.Message)
		}
	}
	return out
}

// TransportError is a request that got no HTTP answer.
type TransportError struct {
	URL string
	Err error
}

func (e *TransportError) Error() string {
	return fmt.Sprintf("cannot reach %s: %v", e.URL, e.Err)
}

func (e *TransportError) Unwrap() error { return e.Err }

// Transient reports whether err is worth retrying while waiting on a batch.
func Transient(err error) bool {
	var te *TransportError
	if errors.As(err, &te) {
		return !errors.Is(err, context.Canceled)
	}
	var ae *Error
	return errors.As(err, &ae) && ae.Transient()
}

// Do sends one request with a JSON body (when body is not nil) and returns
// the raw 2xx answer, decoded into out when out is not nil. A non-2xx
// answer is an *Error; no answer at all is a *TransportError.
func (c *Client) Do(ctx context.Context, method, path string, body, out any) ([]byte, error) {
	raw, _, err := c.DoHeader(ctx, method, path, body, out)
	return raw, err
}

// DoHeader is Do that also returns the answer's headers: the registries
// and the paginated lists say things there (X-Svc-Next-Cursor, X-Svc-Digest).
func (c *Client) DoHeader(ctx context.Context, method, path string, body, out any) ([]byte, http.Header, error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return nil, nil, fmt.Errorf("encoding the request: %w", err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.Base+path, rd)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %v", ErrUsage, err)
	}
	req.Header.Set("Accept", "application/json")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.Token != "" {
		req.Header.Set("Authorization", "Bearer "+c.Token)
	}
	if c.Workspace != "" {
		req.Header.Set(WorkspaceHeader, c.Workspace)
	}
	resp, err := c.HTTP.Do(req)
	if err != nil {
		// url.Error repeats the method and URL; keep only the cause.
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return nil, nil, &TransportError{URL: c.Base, Err: err}
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, nil, &TransportError{URL: c.Base, Err: fmt.Errorf("reading the answer to %s %s: %w", method, path, err)}
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return nil, resp.Header, c.errorOf(resp, raw)
	}
	if out != nil {
		if err := json.Unmarshal(raw, out); err != nil {
			return nil, resp.Header, fmt.Errorf("%s %s answered %d with a body that is not the expected JSON: %v", method, path, resp.StatusCode, err)
		}
	}
	return raw, resp.Header, nil
}

// errorOf reads the service's error body, or describes an answer that has
// none (a proxy's HTML page, say) without echoing it.
func (c *Client) errorOf(resp *http.Response, raw []byte) *Error {
	var body struct {
		Error struct {
			Code      string          `json:"code"`
			Message   string          `json:"message"`
			RequestID string          `json:"requestId"`
			Details   json.RawMessage `json:"details"`
		} `json:"error"`
	}
	e := &Error{Status: resp.StatusCode, RequestID: resp.Header.Get("X-Request-Id")}
	if json.Unmarshal(raw, &body) == nil && body.Error.Message != "" {
		e.Code, e.Message, e.Details = body.Error.Code, body.Error.Message, body.Error.Details
		if body.Error.RequestID != "" {
			e.RequestID = body.Error.RequestID
		}
	} else {
		e.Message = fmt.Sprintf("%s answered HTTP %d %s", c.Base, resp.StatusCode, http.StatusText(resp.StatusCode))
	}
	if resp.StatusCode == http.StatusUnauthorized && c.Token == "" {
		e.Message += "; set " + EnvToken + " to a bearer token"
	}
	return e
}
