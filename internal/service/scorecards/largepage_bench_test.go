package scorecards

import (
	"testing"
	"time"

	"svc/auth"
	"svc/internal/service/scorecards/scorecardstest"
	"svc/store/sqlite/sqlitetest"
)

// BenchmarkLargePage100k: the first page of the detail read of a finished
// 100,000-case batch (above maxDetailChildren, so read from the store a
// page at a time), JSON included, on SQLite. Storing the batch takes about
// a minute; run it with -benchtime 5x.
func BenchmarkLargePage100k(b *testing.B) {
	const n = 100_000
	st := sqlitetest.New(b)
	at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	p := auth.Principal{Subject: "alice", Workspace: "acme", Roles: []auth.Role{auth.RoleMember}}
	batch := scorecardstest.NewBatch(b, st, p.Workspace, "sc_large", n, at)
	for i := range n {
		batch.Start(b, i, at)
		batch.Finish(b, i, i%4 != 0, at.Add(time.Second))
	}
	s := New(Options{Store: st, Now: func() time.Time { return at.Add(time.Hour) }})
	b.ResetTimer()
	for b.Loop() {
		got, doc, err := s.GetPage(b.Context(), p, batch.ID, nil, true)
		if err != nil || got.ScorecardPage == nil || len(got.Scorecard.Scorecard) != DefaultDetailPage || len(doc) == 0 {
			b.Fatalf("GetPage: %v, page %+v", err, got.ScorecardPage)
		}
	}
}
