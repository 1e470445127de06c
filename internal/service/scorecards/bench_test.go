package scorecards

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sync"
	"testing"
	"time"

	"svc/auth"
	"svc/internal/service/scorecards/scorecardstest"
	"svc/store/records"
	"svc/store/sqlite/sqlitetest"
)

// fakeClock is the time of the writers and of the service in the tests
// and benchmarks of the detail read.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) add(d time.Duration) time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
	return c.t
}

// BenchmarkGet measures the detail read of a batch of 2,000 cases on
// SQLite: finished and unchanged between reads, and running with 30 of
// its children changing between reads (a poll every 250 ms while a few
// dozen cases finish or are re-scored). The writes are not timed.
// "cached" is Get; "uncached" is the read as it was before the cache
// (freshGetWith, decoding through a records.DecodeCache as it did); "+json"
// adds the encoding the handler does.
//
//	go test -run '^$' -bench BenchmarkGet -benchmem ./scorecards/
func BenchmarkGet(b *testing.B) {
	const cases, changed = 2000, 30
	p := auth.Principal{Subject: "alice", Workspace: "acme", Roles: []auth.Role{auth.RoleMember}}
	type read func(ctx context.Context, s *Service) error
	reads := []struct {
		name string
		new  func() read
	}{
		{"cached", func() read {
			return func(ctx context.Context, s *Service) error { _, err := s.Get(ctx, p, "sc_bench"); return err }
		}},
		{"uncached", func() read {
			decoded := records.NewDecodeCache(50_000)
			return func(ctx context.Context, s *Service) error {
				_, err := freshGetWith(ctx, s, p, "sc_bench", decoded.FromRow)
				return err
			}
		}},
		// With the JSON the handler writes: GetJSON, and the read before
		// the cache encoded by a json.Encoder as echo's c.JSON does.
		{"cached+json", func() read {
			return func(ctx context.Context, s *Service) error {
				doc, err := s.GetJSON(ctx, p, "sc_bench")
				if err != nil {
					return err
				}
				_, err = doc.WriteTo(io.Discard)
				return err
			}
		}},
		{"uncached+json", func() read {
			decoded := records.NewDecodeCache(50_000)
			return func(ctx context.Context, s *Service) error {
				sc, err := freshGetWith(ctx, s, p, "sc_bench", decoded.FromRow)
				if err != nil {
					return err
				}
				return json.NewEncoder(io.Discard).Encode(sc)
			}
		}},
	}
	setup := func(b *testing.B, started int) (*Service, *scorecardstest.Batch, *fakeClock) {
		st := sqlitetest.New(b)
		clk := &fakeClock{t: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
		batch := scorecardstest.NewBatch(b, st, p.Workspace, "sc_bench", cases, clk.Now())
		for i := range started {
			batch.Start(b, i, clk.add(time.Millisecond))
			batch.Finish(b, i, i%3 != 0, clk.add(time.Millisecond))
		}
		return New(Options{Store: st, Now: clk.Now}), batch, clk
	}
	for _, r := range reads {
		b.Run("unchanged/"+r.name, func(b *testing.B) {
			s, _, clk := setup(b, cases)
			get := r.new()
			// The first read fills the cache, and the batch is quiet from
			// the second on.
			for range 2 {
				if err := get(b.Context(), s); err != nil {
					b.Fatal(err)
				}
				clk.add(3 * time.Second)
			}
			b.ReportAllocs()
			for b.Loop() {
				clk.add(250 * time.Millisecond)
				if err := get(b.Context(), s); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	for _, r := range reads {
		b.Run(fmt.Sprintf("%d-changed/%s", changed, r.name), func(b *testing.B) {
			// Cases finish from half-way; once every case is done,
			// re-scoring passes rewrite scores round the batch.
			s, batch, clk := setup(b, cases/2)
			get := r.new()
			next, round := cases/2, 0
			if err := get(b.Context(), s); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				b.StopTimer()
				// The changes spread over the 250 ms between polls.
				const step = 250 * time.Millisecond / (2 * changed)
				for range changed {
					if next < cases {
						batch.Start(b, next, clk.add(step))
						batch.Finish(b, next, next%3 != 0, clk.add(step))
					} else {
						clk.add(step)
						batch.Rescore(b, round%cases, round%2 == 0, float64(round%7)/7, clk.add(step))
						round++
					}
					next++
				}
				b.StartTimer()
				if err := get(b.Context(), s); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
