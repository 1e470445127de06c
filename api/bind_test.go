package api_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/labstack/echo/v4"

	"svc/api"
	"svc/api/apitest"
	"svc/internal/platform/config"
	"svc/internal/platform/derrors"
)

// bindRequest stands for the typed request of a later handler: nested
// objects, lists, a type with its own UnmarshalJSON and a Validate method.
type bindRequest struct {
	Name  string    `json:"name"`
	Count int       `json:"count"`
	Ratio float64   `json:"ratio"`
	Tags  []string  `json:"tags"`
	When  time.Time `json:"when"`
	Inner struct {
		Level int `json:"level"`
	} `json:"inner"`
	Labels map[string]string `json:"labels"`
}

func (r *bindRequest) Validate() error {
	if r.Count < 0 {
		return errors.New("count must not be negative")
	}
	return nil
}

// registerBind adds POST /test/bind, which decodes with Bind and echoes the
// request back.
func registerBind(s *api.Server, client *apitest.Client) {
	s.Echo().POST("/test/bind", func(c echo.Context) error {
		var req bindRequest
		if err := api.Bind(c, &req); err != nil {
			return err
		}
		return c.JSON(http.StatusOK, req)
	})
	client.AllowUndocumented(http.MethodPost, "/test/bind")
}

// chunked hides the length of body, so the client sends it chunked and
// only the capped reader can notice it is too large.
type chunked struct{ io.Reader }

func TestBind(t *testing.T) {
	const limit = 256
	s, client, _ := newServer(t, api.Options{Config: config.Config{MaxBodyBytes: limit}})
	registerBind(s, client)

	atLimit := `{"name":"edge"}` + strings.Repeat(" ", limit-len(`{"name":"edge"}`))
	overLimit := `{"name":"` + strings.Repeat("x", limit) + `"}`
	tests := []struct {
		name        string
		body        string
		chunked     bool
		contentType string // empty: application/json
		wantStatus  int
		wantCode    string
		wantMessage string
		wantDetails map[string]any
	}{
		{name: "valid", body: `{"name":"a","count":2,"tags":["x"],"inner":{"level":3},"when":"2026-01-02T03:04:05Z"}`, wantStatus: 200},
		{name: "valid chunked", body: `{"name":"a"}`, chunked: true, wantStatus: 200},
		{name: "exactly at the limit", body: atLimit, wantStatus: 200},
		{name: "exactly at the limit chunked", body: atLimit, chunked: true, wantStatus: 200},
		{name: "empty", body: ``, wantStatus: 400, wantCode: api.CodeBadRequest, wantMessage: "the request body is empty"},
		{name: "whitespace only", body: " \n\t", wantStatus: 400, wantCode: api.CodeBadRequest, wantMessage: "the request body is empty"},
		{name: "null", body: `null`, wantStatus: 400, wantCode: api.CodeBadRequest, wantMessage: "the request body is null"},
		{name: "malformed", body: `{"name":}`, wantStatus: 400, wantCode: api.CodeBadRequest,
			wantMessage: "malformed JSON at byte offset 9", wantDetails: map[string]any{"offset": float64(9)}},
		{name: "truncated", body: `{"name":"a"`, wantStatus: 400, wantCode: api.CodeBadRequest,
			wantMessage: "ends at byte offset 11", wantDetails: map[string]any{"offset": float64(11)}},
		{name: "unknown field", body: `{"name":"a","colour":"red"}`, wantStatus: 400, wantCode: api.CodeBadRequest,
			wantMessage: `unknown field "colour"`, wantDetails: map[string]any{"field": "colour"}},
		{name: "unknown nested field", body: `{"inner":{"lvl":1}}`, wantStatus: 400, wantCode: api.CodeBadRequest,
			wantMessage: `unknown field "lvl"`, wantDetails: map[string]any{"field": "lvl"}},
		{name: "wrong type", body: `{"count":"two"}`, wantStatus: 400, wantCode: api.CodeBadRequest,
			wantMessage: `field "count" must be a JSON integer, not string`, wantDetails: map[string]any{"field": "count", "offset": float64(14)}},
		{name: "wrong nested type", body: `{"inner":{"level":true}}`, wantStatus: 400, wantCode: api.CodeBadRequest,
			wantMessage: `field "inner.level" must be a JSON integer, not bool`, wantDetails: map[string]any{"field": "inner.level", "offset": float64(22)}},
		{name: "not an object", body: `[1,2]`, wantStatus: 400, wantCode: api.CodeBadRequest,
			wantMessage: "the request body must be a JSON object, not array", wantDetails: map[string]any{"offset": float64(1)}},
		{name: "trailing data", body: `{"name":"a"} {"name":"b"}`, wantStatus: 400, wantCode: api.CodeBadRequest,
			wantMessage: "unexpected data after the JSON value at byte offset 13", wantDetails: map[string]any{"offset": float64(13)}},
		{name: "trailing garbage", body: `{"name":"a"}x`, wantStatus: 400, wantCode: api.CodeBadRequest,
			wantMessage: "at byte offset 12", wantDetails: map[string]any{"offset": float64(12)}},
		{name: "nested deeper than the limit", body: `{"labels":` + strings.Repeat("[", 64) + strings.Repeat("]", 64) + `}`,
			wantStatus: 400, wantCode: api.CodeBadRequest, wantMessage: "nested deeper than 64 levels (objects and arrays) at byte offset 73",
			wantDetails: map[string]any{"offset": float64(73), "maxDepth": float64(64)}},
		{name: "value its type refuses", body: `{"when":"yesterday"}`, wantStatus: 400, wantCode: api.CodeBadRequest,
			wantMessage: "invalid value in the request body"},
		{name: "fails Validate", body: `{"count":-1}`, wantStatus: 400, wantCode: api.CodeBadRequest,
			wantMessage: "count must not be negative"},
		{name: "json with charset", body: `{"name":"a"}`, contentType: "application/json; charset=utf-8", wantStatus: 200},
		{name: "vendor json", body: `{"name":"a"}`, contentType: "application/merge-patch+json", wantStatus: 200},
		{name: "no content type", body: `{"name":"a"}`, contentType: "-", wantStatus: 200},
		{name: "text/plain as a cross-site form would", body: `{"name":"a"}`, contentType: "text/plain", wantStatus: 415,
			wantCode: api.CodeBadRequest, wantMessage: "send the body with Content-Type: application/json"},
		{name: "form as curl -d sends", body: `{"name":"a"}`, contentType: "application/x-www-form-urlencoded", wantStatus: 415,
			wantCode: api.CodeBadRequest, wantMessage: "is not JSON"},
		{name: "too large with Content-Length", body: overLimit, wantStatus: 413, wantCode: api.CodePayloadTooLarge,
			wantMessage: "limit of 256 bytes", wantDetails: map[string]any{"limitBytes": float64(limit)}},
		{name: "too large chunked", body: overLimit, chunked: true, wantStatus: 413, wantCode: api.CodePayloadTooLarge,
			wantMessage: "limit of 256 bytes", wantDetails: map[string]any{"limitBytes": float64(limit)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var body io.Reader = strings.NewReader(tt.body)
			if tt.chunked {
				body = chunked{body}
			}
			req := client.NewRequest(t, http.MethodPost, "/test/bind", body)
			switch tt.contentType {
			case "":
			case "-":
				req.Header.Del("Content-Type")
			default:
				req.Header.Set("Content-Type", tt.contentType)
			}
			if tt.chunked {
				req.TransferEncoding = []string{"chunked"}
			}
			res := client.Do(t, req)
			if res.Status != tt.wantStatus {
				t.Fatalf("status = %d, want %d; body %s", res.Status, tt.wantStatus, res.Body)
			}
			if tt.wantStatus == http.StatusOK {
				var got bindRequest
				res.JSON(t, &got)
				var want bindRequest
				if err := json.Unmarshal([]byte(tt.body), &want); err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff(want, got); diff != "" {
					t.Errorf("decoded request mismatch (-want +got):\n%s", diff)
				}
				return
			}
			info := res.ErrorInfo(t)
			if info.Code != tt.wantCode {
				t.Errorf("code = %q, want %q", info.Code, tt.wantCode)
			}
			if !strings.Contains(info.Message, tt.wantMessage) {
				t.Errorf("message = %q, want it to contain %q", info.Message, tt.wantMessage)
			}
			if diff := cmp.Diff(tt.wantDetails, info.Details); diff != "" {
				t.Errorf("details mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// TestBindNotAPointer shows that a handler's own mistake is a 500, not a
// 400 blaming the client.
func TestBindNotAPointer(t *testing.T) {
	c := echo.New().NewContext(httptest.NewRequest(http.MethodPost, "/", strings.NewReader(`{}`)), httptest.NewRecorder())
	err := api.Bind(c, bindRequest{})
	if err == nil || errors.Is(err, derrors.ErrInvalid) {
		t.Errorf("Bind(non-pointer) = %v, want an error that is not ErrInvalid", err)
	}
}

// jsonDepth is the nesting of objects and arrays in a decoded JSON value.
func jsonDepth(v any) int {
	d := 0
	switch v := v.(type) {
	case map[string]any:
		for _, e := range v {
			d = max(d, jsonDepth(e))
		}
	case []any:
		for _, e := range v {
			d = max(d, jsonDepth(e))
		}
	default:
		return 0
	}
	return d + 1
}

// FuzzBind: whatever the body, Bind does not panic, accepts only valid JSON
// within the size and depth limits, and refuses everything else as 400 or,
// past the size limit, 413.
func FuzzBind(f *testing.F) {
	const limit = 512
	for _, seed := range []string{
		``, ` `, `{}`, `null`, `[]`, `"s"`, `0`, `{"name":}`, `{"name":"a"`, `{"a":1}`, `{} {}`, `{}x`,
		`{"name":"a","count":1,"ratio":0.5,"tags":["x"],"when":"2026-01-02T03:04:05Z","inner":{"level":2},"labels":{"k":"v"}}`,
		`{"count":1e999}`, `{"count":-1}`, `{"when":"never"}`, `{"tags":[1]}`, `{"labels":{"k":1}}`,
		strings.Repeat("[", 200), `{"name":"\ud800"}`, "\xff\xfe", `{"name":"` + strings.Repeat("x", limit) + `"}`,
		`{"labels":` + strings.Repeat("[", 65) + strings.Repeat("]", 65) + `}`,
		`{"name":"[[[[` + strings.Repeat("[", 70) + `"}`, // brackets in a string are not nesting
		strings.Repeat(`{"inner":`, 64) + `{}` + strings.Repeat("}", 64),
	} {
		f.Add([]byte(seed))
	}
	e := echo.New()
	f.Fuzz(func(t *testing.T, body []byte) {
		rec := httptest.NewRecorder()
		req := httptest.NewRequest(http.MethodPost, "/", bytes.NewReader(body))
		req.Body = http.MaxBytesReader(rec, req.Body, limit)
		var v bindRequest
		err := api.Bind(e.NewContext(req, rec), &v)
		switch {
		case err == nil:
			if len(body) > limit || !json.Valid(body) {
				t.Fatalf("Bind accepted %d bytes %q", len(body), body)
			}
			var tree any
			if err := json.Unmarshal(body, &tree); err != nil || jsonDepth(tree) > api.MaxJSONDepth {
				t.Fatalf("Bind accepted %q, nested %d deep (limit %d)", body, jsonDepth(tree), api.MaxJSONDepth)
			}
		case errors.Is(err, derrors.ErrTooLarge):
			if len(body) <= limit {
				t.Fatalf("Bind said %d bytes are too large: %v", len(body), err)
			}
		case errors.Is(err, derrors.ErrInvalid):
			if len(body) > limit {
				t.Fatalf("Bind answered 400 to %d bytes, want 413: %v", len(body), err)
			}
		default:
			t.Fatalf("Bind(%q) = %v, want nil, ErrInvalid or ErrTooLarge", body, err)
		}
	})
}
