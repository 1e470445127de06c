package api_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"svc/api/apitest"
	"svc/auth"
)

// fuzzRoute is one route whose JSON body FuzzIdentityBodies feeds.
type fuzzRoute struct {
	method, path string
	hs           []header
}

// FuzzIdentityBodies posts arbitrary bytes to every identity route that
// takes a JSON body, through the real handler on a real SQLite store, as
// the dev principal (an admin) so the body always reaches the handler. No
// input may cause a 5xx or a panic, and every answer must be one the
// OpenAPI document allows.
func FuzzIdentityBodies(f *testing.F) {
	e := newEnv(f)
	if res := e.do(f, http.MethodPost, "/teams", `{"id":"fz"}`); res.Status != http.StatusCreated {
		f.Fatalf("creating the team: %d %s", res.Status, res.Body)
	}
	operator := header{auth.InternalTokenHeader, internalToken}
	routes := []fuzzRoute{
		{method: http.MethodPost, path: "/workspaces"},
		{method: http.MethodPost, path: "/internal/tenant-keys", hs: []header{operator}},
		{method: http.MethodPost, path: "/keys"},
		{method: http.MethodPatch, path: "/members/dev"},
		{method: http.MethodPatch, path: "/members/nobody"},
		{method: http.MethodPost, path: "/invites"},
		{method: http.MethodPost, path: "/invites/accept"},
		{method: http.MethodPost, path: "/teams"},
		{method: http.MethodPatch, path: "/teams/fz"},
	}
	seeds := []string{
		`{"id":"ws1","name":"Workspace One"}`,
		`{"workspace":"tenant1","label":"first"}`,
		`{"label":"ci","scopes":["read","write"]}`,
		`{"role":"viewer"}`,
		`{"role":"member"}`,
		`{"role":"admin","expiresInHours":24}`,
		`{"token":"inv_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"}`,
		`{"id":"team-1","name":"One","private":true}`,
		`{"name":"Renamed","private":false}`,
		``, `null`, `[]`, `{"id":null}`, `{"scopes":"read"}`, `{"expiresInHours":-1,"role":"member"}`,
		`{"label":"\u0000"}`, `{"id":"\ud800"}`, "{\"name\":\"\xff\"}", `{} {}`, `{"role":"admin"`,
	}
	for i, s := range seeds {
		f.Add(uint8(i%len(routes)), []byte(s))
		f.Add(uint8((i+1)%len(routes)), []byte(s))
	}
	fuzzBodies(f, e, routes)
}

// fuzzBodies posts each fuzzed body to one of routes (picked by the fuzzed
// byte) through the real handler and store: never a 5xx, never a panic, and
// every answer as the OpenAPI document describes it.
func fuzzBodies(f *testing.F, e *testEnv, routes []fuzzRoute) {
	h := e.srv.Handler()
	f.Fuzz(func(t *testing.T, which uint8, body []byte) {
		req, res := fuzzServe(t, h, routes[int(which)%len(routes)], body)
		apitest.ValidateResponse(t, req, res)
	})
}

// fuzzServe is the one harness of the fuzzers: it sends body (none when
// nil, else as JSON) to r through h and returns the request and the answer,
// read whole. No input may cause a 5xx, so one fails t, naming the input;
// a handler that hangs is cut off after 10 s rather than stall the fuzzer.
func fuzzServe(t *testing.T, h http.Handler, r fuzzRoute, body []byte) (*http.Request, *apitest.Response) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req := httptest.NewRequestWithContext(ctx, r.method, r.path, rd)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for _, hd := range r.hs {
		req.Header.Set(hd.name, hd.value)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	res := rec.Result()
	got, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	if res.StatusCode >= 500 {
		t.Fatalf("%s %s with headers %v and body %q: status %d; body %s", r.method, r.path, r.hs, body, res.StatusCode, got)
	}
	return req, &apitest.Response{Status: res.StatusCode, Header: res.Header, Body: got}
}
