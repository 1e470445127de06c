package activities_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"svc/internal/domain/eval"
	"svc/internal/domain/flows"
	"svc/internal/testing/testwait"
)

// Admission: two batches on one nomad runtime with maxConcurrent 3 never
// have more than 3 jobs on the cluster at once, counted on the cluster as
// the jobs start and end; each case waits for a slot rather than failing,
// and both batches end with every case run.
func TestNomadAdmissionBoundsJobsAcrossBatches(t *testing.T) {
	s := newNomadStack(t)
	s.Call(t, "POST", "/runtimes", fmt.Sprintf(`{"id":"small","version":"1","kind":"nomad","addr":%q,"image":%q,
		"authSecret":"nomad-token","datacenters":["dc1"],"cpuMhzPerCore":2000,"maxConcurrent":3}`, s.cluster.URL, nomadImage), 201, nil)
	s.dataset(t, "held", "hold1", "hold2", "hold3", "hold4", "hold5")
	var ids []string
	for range 2 {
		var sc eval.Scorecard
		s.Call(t, "POST", "/scorecards", `{"dataset":{"id":"held","version":"1.0.0"},"harness":{"id":"agent","version":"1.0.0"},
			"runtime":"small","concurrency":5}`, 202, &sc)
		ids = append(ids, sc.ID)
	}
	// live is the jobs the cluster runs: started and not yet released.
	released := map[string]bool{}
	live := func() []string {
		var out []string
		for _, id := range s.cluster.Jobs() {
			if !released[id] {
				out = append(out, id)
			}
		}
		slices.Sort(out)
		return out
	}
	for len(released) < 10 {
		want := min(3, 10-len(released))
		var now []string
		testwait.UntilValue(t, 2*time.Minute, fmt.Sprintf("%d jobs on the cluster (%d released)", want, len(released)), func() (int, bool) {
			now = live()
			if len(now) > 3 {
				t.Fatalf("%d jobs on the cluster at once (%v), over maxConcurrent 3", len(now), now)
			}
			return len(now), len(now) == want
		})
		if len(released) == 0 {
			// The cases waiting for a slot are queued, not running.
			testwait.UntilValue(t, time.Minute, "3 running and 7 queued across the batches", func() (string, bool) {
				var running, queued int
				for _, id := range ids {
					var sc eval.Scorecard
					s.Call(t, "GET", "/scorecards/"+id, "", 200, &sc)
					running, queued = running+sc.Progress.Running, queued+sc.Progress.Queued
				}
				return fmt.Sprintf("%d running, %d queued", running, queued), running == 3 && queued == 7
			})
			// And /ops/driver shows who holds and who waits. A case
			// counts as queued before its waiting slot is written, so
			// the slots may lag the progress counts a moment.
			testwait.UntilValue(t, time.Minute, "/ops/driver slots: 3 held and 7 waiting", func() (map[string]int, bool) {
				states := map[string]int{}
				for _, id := range ids {
					var v flows.DriverView
					s.Call(t, "GET", "/ops/driver/batch/"+id, "", 200, &v)
					for _, sl := range v.Slots {
						states[sl.State]++
					}
				}
				return states, states["held"] == 3 && states["waiting"] == 7
			})
		}
		// A pause before each release: a job started past the bound
		// would show in live.
		time.Sleep(300 * time.Millisecond)
		if n := len(live()); n > 3 {
			t.Fatalf("%d jobs on the cluster at once, over maxConcurrent 3", n)
		}
		released[now[0]] = true
		s.cluster.Release(now[0])
	}
	for _, id := range ids {
		sc := s.waitBatch(t, id)
		if sc.Status != eval.ScorecardSucceeded || sc.Progress.Done != 5 || sc.Progress.DispatchErrors != 0 {
			t.Errorf("batch %s: %s %+v, want succeeded with 5 done", id, sc.Status, sc.Progress)
		}
	}
}
