package api_test

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

// BenchmarkAuthenticatedRead measures the whole server path of an API-key
// request, in process without the network: request id, access log, metrics,
// tracing, API-key lookup by SHA-256 in the real SQLite store, workspace
// resolution, authorization and the handler (GET /me and GET /members).
func BenchmarkAuthenticatedRead(b *testing.B) {
	for _, path := range []string{"/me", "/members"} {
		b.Run(path[1:], func(b *testing.B) {
			e := newEnv(b)
			tn := e.tenant(b, "bench")
			h := e.srv.Handler()
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				req := httptest.NewRequest(http.MethodGet, path, nil)
				req.Header.Set("Authorization", "Bearer "+tn.key)
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, req)
				if rec.Code != http.StatusOK {
					b.Fatalf("GET %s = %d %s", path, rec.Code, rec.Body)
				}
			}
		})
	}
}

// BenchmarkHealthz is the floor: the middleware stack with no auth and no store.
func BenchmarkHealthz(b *testing.B) {
	e := newEnv(b)
	h := e.srv.Handler()
	b.ReportAllocs()
	for b.Loop() {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/healthz", nil))
		if rec.Code != http.StatusOK {
			b.Fatalf("GET /healthz = %d", rec.Code)
		}
	}
}
