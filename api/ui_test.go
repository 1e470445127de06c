package api_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestWebViewIsPublicAndItsDataIsNot: under SVC_REQUIRE_AUTH the web
// view's assets answer without a credential (a browser must load the
// sign-in page), while the API they read still answers 401.
func TestWebViewIsPublicAndItsDataIsNot(t *testing.T) {
	e := newEnv(t, withRequireAuth())
	for _, tc := range []struct {
		target string
		status int
		has    string
	}{
		{"/ui/", http.StatusOK, `<main id="main"`},
		{"/ui/js/app.js", http.StatusOK, "export function go"},
		{"/ui", http.StatusMovedPermanently, ""},
		{"/scorecards", http.StatusUnauthorized, "UNAUTHENTICATED"},
	} {
		rec := httptest.NewRecorder()
		e.srv.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, tc.target, nil))
		if rec.Code != tc.status || !strings.Contains(rec.Body.String(), tc.has) {
			t.Errorf("GET %s: %d %.200q, want %d with %q", tc.target, rec.Code, rec.Body.String(), tc.status, tc.has)
		}
		if tc.status != http.StatusUnauthorized && !strings.Contains(rec.Header().Get("Content-Security-Policy"), "script-src 'self'") {
			t.Errorf("GET %s: no Content-Security-Policy", tc.target)
		}
	}
}
