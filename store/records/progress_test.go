package records

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"svc/internal/domain/eval"
	"svc/store"
)

var progressT0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func timeAt(d time.Duration) *time.Time {
	t := progressT0.Add(d)
	return &t
}

func TestCountProgress(t *testing.T) {
	counts := func(first time.Duration, byStatus, byOutcome map[string]int) store.RunCounts {
		c := store.RunCounts{ByStatus: byStatus, ByOutcome: byOutcome, FirstCreatedAt: progressT0.Add(first)}
		for _, n := range byStatus {
			c.Total += n
		}
		return c
	}
	for _, tc := range []struct {
		name  string
		total int
		c     store.RunCounts
		at    time.Duration
		want  eval.Progress
	}{
		{"nothing started", 300, store.RunCounts{ByStatus: map[string]int{}, ByOutcome: map[string]int{}}, 5 * time.Second,
			eval.Progress{Total: 300, Queued: 300, UpdatedAt: timeAt(5 * time.Second)}},
		// The 2 children still queued (waiting for a runtime's slot) are
		// queued, not running.
		{"started, none done: no rate yet", 300, counts(0, map[string]int{"queued": 2, "running": 62}, map[string]int{}), 5 * time.Second,
			eval.Progress{Total: 300, Queued: 238, Running: 62, StartedAt: timeAt(0), UpdatedAt: timeAt(5 * time.Second)}},
		{"under way", 2000, counts(time.Second, map[string]int{"running": 64, "succeeded": 445, "failed": 5},
			map[string]int{"pass": 440, "fail": 5, "error": 3, "cancelled": 2}), 12 * time.Second,
			eval.Progress{Total: 2000, Done: 450, Passed: 440, Failed: 8, DispatchErrors: 3, Cancelled: 2, Queued: 1486, Running: 64,
				CasesPerSecond: 40.909, StartedAt: timeAt(time.Second), UpdatedAt: timeAt(12 * time.Second)}},
		{"all done", 4, counts(0, map[string]int{"succeeded": 4}, map[string]int{"pass": 3, "fail": 1}), 3 * time.Second,
			eval.Progress{Total: 4, Done: 4, Passed: 3, Failed: 1, CasesPerSecond: 1.333, StartedAt: timeAt(0), UpdatedAt: timeAt(3 * time.Second)}},
		{"a clock behind the first case: no rate", 4, counts(time.Minute, map[string]int{"succeeded": 1, "running": 1}, map[string]int{"pass": 1}), 0,
			eval.Progress{Total: 4, Done: 1, Passed: 1, Queued: 2, Running: 1, StartedAt: timeAt(time.Minute), UpdatedAt: timeAt(0)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := CountProgress(tc.total, tc.c, progressT0.Add(tc.at))
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("CountProgress (-want +got):\n%s", diff)
			}
			if got.Queued+got.Running+got.Done != got.Total {
				t.Errorf("queued %d + running %d + done %d != total %d", got.Queued, got.Running, got.Done, got.Total)
			}
		})
	}
}
