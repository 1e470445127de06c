package flows

import "testing"

// TestTraceSweepIDFor: the default task queue keeps the sweep's id of
// earlier versions (its running cron is not doubled); every other queue
// has a sweep of its own.
func TestTraceSweepIDFor(t *testing.T) {
	for queue, want := range map[string]string{"": "svc-trace-sweep", "svc": "svc-trace-sweep", "staging": "svc-trace-sweep:staging"} {
		if got := TraceSweepIDFor(queue); got != want {
			t.Errorf("TraceSweepIDFor(%q) = %q, want %q", queue, got, want)
		}
	}
}
