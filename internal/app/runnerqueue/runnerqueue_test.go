package runnerqueue

import (
	"testing"

	"svc/drivers/runner"
	"svc/internal/service/runners"
)

// TestEveryRunnerJobStateHasTheDriversWord: each state of the service's
// queue maps to the driver's, so the driver's follow loop reads them all.
func TestEveryRunnerJobStateHasTheDriversWord(t *testing.T) {
	for svc, drv := range map[string]string{runners.JobQueued: runner.Queued, runners.JobLeased: runner.Leased, runners.JobDone: runner.Done} {
		if got := job(runners.QueuedJob{State: svc}).State; got != drv {
			t.Errorf("state %q reads %q, want %q", svc, got, drv)
		}
	}
}
