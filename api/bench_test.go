package api_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"svc/internal/service/scorecards/scorecardstest"
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

// BenchmarkGetScorecard measures GET /scorecards/:id of a batch of 2,000
// cases, the whole server path with the JSON encoding of the 1.2 MB
// answer: finished and unchanged between polls, and running with 30 of its
// children changing between polls (a poll every 250 ms of the test clock,
// as `svc scorecard get --wait` polls; the writes are not timed).
//
//	go test -run '^$' -bench BenchmarkGetScorecard -benchmem ./api/
func BenchmarkGetScorecard(b *testing.B) {
	const cases, changed = 2000, 30
	setup := func(b *testing.B, started int) (*testEnv, http.Handler, string, *scorecardstest.Batch) {
		e := newEnv(b)
		tn := e.tenant(b, "bench")
		batch := scorecardstest.NewBatch(b, e.store, tn.ws, "sc_bench", cases, e.clock.Now())
		for i := range started {
			e.clock.Advance(time.Millisecond)
			batch.Start(b, i, e.clock.Now())
			e.clock.Advance(time.Millisecond)
			batch.Finish(b, i, i%3 != 0, e.clock.Now())
		}
		return e, e.srv.Handler(), tn.key, batch
	}
	get := func(b *testing.B, h http.Handler, key string) {
		req := httptest.NewRequest(http.MethodGet, "/scorecards/sc_bench", nil)
		req.Header.Set("Authorization", "Bearer "+key)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != http.StatusOK {
			b.Fatalf("GET /scorecards/sc_bench = %d %s", rec.Code, rec.Body)
		}
	}
	b.Run("unchanged", func(b *testing.B) {
		e, h, key, _ := setup(b, cases)
		for range 2 {
			get(b, h, key)
			e.clock.Advance(3 * time.Second)
		}
		b.ReportAllocs()
		for b.Loop() {
			e.clock.Advance(250 * time.Millisecond)
			get(b, h, key)
		}
	})
	b.Run(fmt.Sprintf("%d-changed", changed), func(b *testing.B) {
		e, h, key, batch := setup(b, cases/2)
		next, round := cases/2, 0
		get(b, h, key)
		b.ReportAllocs()
		for b.Loop() {
			b.StopTimer()
			const step = 250 * time.Millisecond / (2 * changed)
			for range changed {
				e.clock.Advance(step)
				if next < cases {
					batch.Start(b, next, e.clock.Now())
					e.clock.Advance(step)
					batch.Finish(b, next, next%3 != 0, e.clock.Now())
				} else {
					e.clock.Advance(step)
					batch.Rescore(b, round%cases, round%2 == 0, float64(round%7)/7, e.clock.Now())
					round++
				}
				next++
			}
			b.StartTimer()
			get(b, h, key)
		}
	})
}
