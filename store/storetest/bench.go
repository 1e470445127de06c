package storetest

import (
	"fmt"
	"testing"
	"time"

	"svc/store"
)

// BenchAppendEvent measures one autocommit AppendEvent.
func BenchAppendEvent(b *testing.B, s store.Store) {
	ctx := b.Context()
	for b.Loop() {
		if _, err := s.AppendEvent(ctx, store.Event{Workspace: "bench", Type: "bench.appended"}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchAppendEventBatch measures n AppendEvents in one Transact, and reports
// the time per event too.
func BenchAppendEventBatch(b *testing.B, s store.Store, n int) {
	ctx := b.Context()
	for b.Loop() {
		err := s.Transact(ctx, func(tx store.Tx) error {
			for range n {
				if _, err := tx.AppendEvent(ctx, store.Event{Workspace: "bench", Type: "bench.appended"}); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/event")
}

// BenchRegisterDataset measures registering a dataset version of n cases
// (each iteration a new version), and reports the time per case too.
func BenchRegisterDataset(b *testing.B, s store.Store, n int) {
	ctx := b.Context()
	cases := makeCases(n, func(i int) []string { return []string{fmt.Sprintf("bucket-%d", i%10)} })
	i := 0
	for b.Loop() {
		i++
		v := dataset("bench", "big", fmt.Sprintf("%d.0.0", i))
		if _, created, err := s.RegisterVersion(ctx, v, "", cases); err != nil || !created {
			b.Fatalf("RegisterVersion(%s): created = %v, err = %v", v.Version, created, err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/case")
}

// seedChildren stores a batch sc-big of n finished canonical children,
// one in ten failed, in transactions of 1,000.
func seedChildren(b *testing.B, s store.Store, n int) {
	ctx := b.Context()
	if _, err := s.CreateScorecard(ctx, batch("bench", "sc-big", t0)); err != nil {
		b.Fatal(err)
	}
	const perTx = 1000
	for from := 0; from < n; from += perTx {
		err := s.Transact(ctx, func(tx store.Tx) error {
			for i := from; i < min(n, from+perTx); i++ {
				r := childRun("bench", fmt.Sprintf("run-%07d", i), "sc-big", fmt.Sprintf("case-%07d", i), 0, true, t0.Add(time.Duration(i)*time.Millisecond))
				r.Status, r.Outcome = "succeeded", "pass"
				if i%10 == 0 {
					r.Status, r.Outcome = "failed", "fail"
				}
				if _, err := tx.CreateRun(ctx, r); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
	}
}

// BenchChildRunCounts measures ChildRunCounts over a batch of n finished
// canonical children (what the light read of a running batch costs each
// poll), and reports the time per child too.
func BenchChildRunCounts(b *testing.B, s store.Store, n int) {
	ctx := b.Context()
	seedChildren(b, s, n)
	for b.Loop() {
		c, err := s.ChildRunCounts(ctx, "bench", "sc-big")
		if err != nil || c.Total != n {
			b.Fatalf("ChildRunCounts = %+v, %v; want %d children", c, err, n)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/child")
}

// BenchListChildRuns measures a page of 100 of a batch of n children as
// GET /runs?scorecardId= reads it (ListRuns by ScorecardID, newest first),
// the first page and one deep in the batch, alternately.
func BenchListChildRuns(b *testing.B, s store.Store, n int) {
	ctx := b.Context()
	seedChildren(b, s, n)
	deep := t0.Add(time.Duration(n/2) * time.Millisecond)
	i := 0
	for b.Loop() {
		f := store.RunFilter{Workspace: "bench", ScorecardID: "sc-big", Viewer: "user:alice", Limit: 100}
		if i++; i%2 == 0 {
			f.BeforeTime, f.BeforeID = deep, fmt.Sprintf("run-%07d", n/2)
		}
		rs, err := s.ListRuns(ctx, f)
		if err != nil || len(rs) != 100 {
			b.Fatalf("ListRuns = %d runs, %v; want 100", len(rs), err)
		}
	}
}

// BenchCanonicalChildPage measures a page of 1,000 of a batch of n
// children in the detail table's order (ListCanonicalChildPage), the first
// page and one deep in the batch, alternately.
func BenchCanonicalChildPage(b *testing.B, s store.Store, n int) {
	ctx := b.Context()
	seedChildren(b, s, n)
	i := 0
	for b.Loop() {
		p := store.CaseTrialPage{AfterTrial: -1, Limit: 1000}
		if i++; i%2 == 0 {
			p.AfterCase, p.AfterTrial = fmt.Sprintf("case-%07d", n/2), 0
		}
		rs, err := s.ListCanonicalChildPage(ctx, "bench", "sc-big", p)
		if err != nil || len(rs) != 1000 {
			b.Fatalf("ListCanonicalChildPage = %d runs, %v; want 1000", len(rs), err)
		}
	}
}
