package api_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"svc/auth"
)

// idRoute is a row of the route table that takes path parameters, with
// what a request to it needs besides the path.
type idRoute struct {
	method, path string
	params       []string // names, without the colon
	body         string
	hs           []header
}

// idRoutes lists every route of the live table with a path parameter, so
// a route added later is covered by the tests and the fuzzer that use it.
func idRoutes(t testing.TB, e *testEnv) []idRoute {
	t.Helper()
	var out []idRoute
	for _, r := range e.srv.Routes() {
		if !strings.Contains(r.Path, ":") {
			continue
		}
		ir := idRoute{method: r.Method, path: r.Path}
		for _, m := range pathParamPattern.FindAllStringSubmatch(r.Path, -1) {
			ir.params = append(ir.params, m[1])
		}
		switch r.Method {
		case http.MethodPost, http.MethodPut, http.MethodPatch:
			ir.body = `{}`
		}
		if r.Action == auth.Internal {
			ir.hs = []header{{auth.InternalTokenHeader, internalToken}}
		}
		out = append(out, ir)
	}
	if len(out) == 0 {
		t.Fatal("no route takes a path parameter: the route table is not what this test expects")
	}
	return out
}

// with fills the route's path: value (escaped) for param, "x" for the others.
func (r idRoute) with(param, value string) string {
	return pathParamPattern.ReplaceAllStringFunc(r.path, func(m string) string {
		if m[1:] == param {
			return url.PathEscape(value)
		}
		return "x"
	})
}

// TestPathParamsChecked: every path parameter of every route is refused
// with 400 when no record could have it: too long, or with a NUL or another
// control character. The message names the parameter, never echoes a huge
// value, and never names an internal call.
func TestPathParamsChecked(t *testing.T) {
	e := newEnv(t)
	huge := strings.Repeat("a", 100<<10)
	values := []struct{ name, value string }{
		{"100 KB", huge},
		{"NUL", "run\x00id"},
		{"control character", "run\x1bid"},
		{"invalid UTF-8", "run\xffid"},
	}
	for _, r := range idRoutes(t, e) {
		for _, p := range r.params {
			for _, v := range values {
				path := r.with(p, v.value)
				what := r.method + " " + r.path + " with a " + v.name + " " + p
				res := e.do(t, r.method, path, r.body, r.hs...)
				want(t, res, http.StatusBadRequest, what)
				msg := res.ErrorInfo(t).Message
				if len(msg) > 200 || strings.Contains(msg, strings.Repeat("a", 65)) {
					t.Errorf("%s: message of %d bytes echoes the value: %.200q", what, len(msg), msg)
				}
				if strings.Contains(msg, "Store.") || strings.Contains(msg, "\x00") {
					t.Errorf("%s: message %q names an internal call or echoes the NUL", what, msg)
				}
				if !strings.Contains(msg, p) {
					t.Errorf("%s: message %q does not name the parameter", what, msg)
				}
			}
		}
	}
}

// TestIDQueryParamsChecked: the query parameters that name a record are
// vetted like path ids, so a NUL never reaches the store, whose error text
// names its internal calls.
func TestIDQueryParamsChecked(t *testing.T) {
	e := newEnv(t)
	for _, path := range []string{
		"/runs?scorecardId=", "/scorecards?datasetId=", "/scorecards?harnessId=",
		"/scorecards/diff?candidate=b&baseline=", "/scorecards/diff?baseline=a&candidate=",
	} {
		for _, v := range []string{"a%00b", strings.Repeat("a", 600)} {
			res := e.do(t, http.MethodGet, path+v, "")
			want(t, res, http.StatusBadRequest, "GET "+path+v[:min(len(v), 10)])
			if msg := res.ErrorInfo(t).Message; strings.Contains(msg, "Store.") || len(msg) > 200 {
				t.Errorf("GET %s...: message %.200q", path, msg)
			}
		}
	}
}
