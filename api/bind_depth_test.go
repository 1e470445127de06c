package api_test

import (
	"net/http"
	"strings"
	"testing"

	"svc/api"
)

// deepJSON is a JSON value nested n levels: {"a":{"a":...{}...}}.
func deepJSON(n int) string {
	return strings.Repeat(`{"a":`, n-1) + "{}" + strings.Repeat("}", n-1)
}

// deepArray is a JSON array nested n levels: [[...[]...]].
func deepArray(n int) string { return strings.Repeat("[", n) + strings.Repeat("]", n) }

// TestDeeplyNestedJSONIs400: JSON nested about 1,000 deep answers 400 with
// a message naming the limit, on every route that takes a JSON body,
// before anything decodes it (issue 30, finding 9: POST /runs answered
// 500).
func TestDeeplyNestedJSONIs400(t *testing.T) {
	e := newEnv(t, withServerOptions(func(o *api.Options) { o.Starter = acceptStarter{} }))
	a := e.tenant(t, "deep")
	e.register(t, a.key, "/harnesses", harnessSpec("h", "1.0.0", "img:1"), http.StatusCreated)
	// POST /runs with the depth where a field takes any JSON: case.expected.
	body := `{"harness":{"id":"h","version":"1.0.0"},"case":{"id":"c1","task":"x","expected":` + deepArray(1000) + `}}`
	res := e.do(t, http.MethodPost, "/runs", body, bearer(a.key))
	if res.Status != http.StatusBadRequest {
		t.Fatalf("POST /runs with case.expected nested 1000 deep: status %d, want 400; body %s", res.Status, res.Body)
	}
	if info := res.ErrorInfo(t); info.Code != api.CodeBadRequest || !strings.Contains(info.Message, "nested deeper than 64") {
		t.Errorf("POST /runs nested 1000 deep: %+v, want BAD_REQUEST naming the limit of 64", info)
	}
	for _, r := range e.srv.Routes() {
		switch r.Method {
		case http.MethodPost, http.MethodPut, http.MethodPatch:
		default:
			continue
		}
		for _, deep := range []string{deepJSON(1000), deepArray(1000), `{"a":` + deepArray(65) + `}`} {
			res := e.do(t, r.Method, anyPath(r.Path), deep, bearer(a.key))
			if res.Status >= 500 {
				t.Errorf("%s %s with a body nested deeper than 64: status %d; body %s", r.Method, r.Path, res.Status, res.Body)
			}
		}
	}
}
