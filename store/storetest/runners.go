package storetest

import (
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"svc/internal/platform/derrors"
	"svc/store"
)

// runnerJob is job id of run on runtime rt in acme, created at at.
func runnerJob(id, run, rt string, at time.Time) store.RunnerJob {
	return store.RunnerJob{Workspace: "acme", ID: id, Runtime: rt, RunID: run, Attempt: 1, ScorecardID: "sc1",
		Payload: json.RawMessage(`{"command":["/bin/true"]}`), Secrets: []byte{1, 2, 3}, CreatedAt: at}
}

// enqueue stores j or fails t.
func enqueue(t *testing.T, s store.Store, j store.RunnerJob) (store.RunnerJob, bool) {
	t.Helper()
	got, created, err := s.EnqueueRunnerJob(t.Context(), j)
	if err != nil {
		t.Fatalf("EnqueueRunnerJob(%s): %v", j.ID, err)
	}
	return got, created
}

// lease asks for a job as runner with lease id, at now for a minute.
func lease(s store.Store, t *testing.T, runtime, runner, leaseID string, now time.Time) (store.RunnerJob, error) {
	return s.LeaseRunnerJob(t.Context(), store.RunnerLease{Workspace: "acme", Runtime: runtime, Runner: runner, LeaseID: leaseID,
		Now: now, Until: now.Add(time.Minute)})
}

var runnerJobCases = []Case{
	{"runner_jobs/enqueue_is_idempotent_per_run_and_attempt", func(t *testing.T, s store.Store) {
		first, created := enqueue(t, s, runnerJob("j1", "run1", "laptops", t0))
		if !created || first.State != store.RunnerJobQueued || string(first.Payload) != `{"command":["/bin/true"]}` || string(first.Secrets) != "\x01\x02\x03" {
			t.Fatalf("first enqueue = %+v created %v, want a queued job with its payload and secrets", first, created)
		}
		// A retried dispatch of the same attempt, even under another id,
		// adopts the stored job.
		again, created := enqueue(t, s, runnerJob("j1-other", "run1", "laptops", t0.Add(time.Second)))
		if created || again.ID != "j1" {
			t.Errorf("second enqueue = %s created %v, want j1 adopted", again.ID, created)
		}
		if _, err := s.GetRunnerJob(t.Context(), "acme", "j1-other"); !errors.Is(err, derrors.ErrNotFound) {
			t.Errorf("GetRunnerJob(j1-other) = %v, want ErrNotFound", err)
		}
		if _, err := s.GetRunnerJob(t.Context(), "globex", "j1"); !errors.Is(err, derrors.ErrNotFound) {
			t.Errorf("another workspace's GetRunnerJob(j1) = %v, want ErrNotFound", err)
		}
		bad := runnerJob("j2", "run2", "laptops", t0)
		bad.Payload = json.RawMessage(`{`)
		_, _, err := s.EnqueueRunnerJob(t.Context(), bad)
		wantErr(t, "EnqueueRunnerJob(bad payload)", err, derrors.ErrInvalid)
	}},
	{"runner_jobs/lease_renew_complete", func(t *testing.T, s store.Store) {
		enqueue(t, s, runnerJob("j1", "run1", "laptops", t0))
		enqueue(t, s, runnerJob("j2", "run2", "laptops", t0.Add(time.Second)))
		enqueue(t, s, runnerJob("j3", "run3", "gpu", t0.Add(2*time.Second)))
		// Oldest first, within the runtime asked for.
		got, err := lease(s, t, "gpu", "r1", "L1", t0)
		if err != nil || got.ID != "j3" {
			t.Fatalf("lease on gpu = %s, %v; want j3", got.ID, err)
		}
		got, err = lease(s, t, "", "r1", "L2", t0)
		if err != nil || got.ID != "j1" || got.State != store.RunnerJobLeased || got.Leases != 1 || got.Runner != "r1" || got.LeaseExpires == nil {
			t.Fatalf("lease = %+v, %v; want j1 leased once to r1", got, err)
		}
		if got, err = lease(s, t, "", "r2", "L3", t0); err != nil || got.ID != "j2" {
			t.Fatalf("second lease = %s, %v; want j2", got.ID, err)
		}
		if _, err := lease(s, t, "", "r2", "L4", t0); !errors.Is(err, derrors.ErrNotFound) {
			t.Fatalf("lease with none left = %v, want ErrNotFound", err)
		}
		// Heartbeats renew the lease; another lease id is refused.
		renewed, err := s.RenewRunnerLease(t.Context(), "acme", "j1", "L2", t0.Add(30*time.Second), t0.Add(90*time.Second))
		if err != nil || renewed.Cancelled || !renewed.LeaseExpires.Equal(t0.Add(90*time.Second).UTC().Truncate(time.Microsecond)) {
			t.Fatalf("RenewRunnerLease = %+v, %v", renewed, err)
		}
		_, err = s.RenewRunnerLease(t.Context(), "acme", "j1", "L3", t0, t0.Add(time.Minute))
		wantErr(t, "RenewRunnerLease(wrong lease)", err, derrors.ErrConflict)
		_, err = s.RenewRunnerLease(t.Context(), "acme", "nope", "L3", t0, t0.Add(time.Minute))
		wantErr(t, "RenewRunnerLease(no job)", err, derrors.ErrNotFound)
		// A result completes it once; the same post again is a no-op.
		res := json.RawMessage(`{"exitCode":0}`)
		done, err := s.CompleteRunnerJob(t.Context(), "acme", "j1", "L2", res, t0.Add(40*time.Second))
		if err != nil || done.State != store.RunnerJobDone || string(done.Result) != `{"exitCode":0}` {
			t.Fatalf("CompleteRunnerJob = %+v, %v", done, err)
		}
		if _, err := s.CompleteRunnerJob(t.Context(), "acme", "j1", "L2", res, t0.Add(41*time.Second)); err != nil {
			t.Errorf("posting the same result again: %v", err)
		}
		_, err = s.CompleteRunnerJob(t.Context(), "acme", "j2", "L2", res, t0)
		wantErr(t, "CompleteRunnerJob(another lease)", err, derrors.ErrConflict)
		_, err = s.RenewRunnerLease(t.Context(), "acme", "j1", "L2", t0, t0.Add(time.Minute))
		wantErr(t, "RenewRunnerLease(done job)", err, derrors.ErrConflict)
		open, err := s.ListRunnerJobs(t.Context(), "acme")
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff([]string{"j2", "j3"}, pluck(open, func(j store.RunnerJob) string { return j.ID })); diff != "" {
			t.Errorf("ListRunnerJobs (-want +got):\n%s", diff)
		}
		if err := s.DeleteRunnerJob(t.Context(), "acme", "j1"); err != nil {
			t.Fatal(err)
		}
		if _, err := s.GetRunnerJob(t.Context(), "acme", "j1"); !errors.Is(err, derrors.ErrNotFound) {
			t.Errorf("GetRunnerJob after delete = %v, want ErrNotFound", err)
		}
	}},
	{"runner_jobs/an_expired_lease_is_leased_again", func(t *testing.T, s store.Store) {
		enqueue(t, s, runnerJob("j1", "run1", "laptops", t0))
		if _, err := lease(s, t, "", "dead", "L1", t0); err != nil { // until t0+1m; never renewed
			t.Fatal(err)
		}
		if _, err := lease(s, t, "", "alive", "L2", t0.Add(59*time.Second)); !errors.Is(err, derrors.ErrNotFound) {
			t.Fatalf("lease before expiry = %v, want ErrNotFound", err)
		}
		got, err := lease(s, t, "", "alive", "L2", t0.Add(61*time.Second))
		if err != nil || got.ID != "j1" || got.Runner != "alive" || got.Leases != 2 {
			t.Fatalf("lease after expiry = %+v, %v; want j1 leased a second time to alive", got, err)
		}
		// The dead runner's lease is gone: a late result is refused.
		_, err = s.CompleteRunnerJob(t.Context(), "acme", "j1", "L1", json.RawMessage(`{}`), t0.Add(62*time.Second))
		wantErr(t, "CompleteRunnerJob(expired lease)", err, derrors.ErrConflict)
		if _, err := s.CompleteRunnerJob(t.Context(), "acme", "j1", "L2", json.RawMessage(`{}`), t0.Add(62*time.Second)); err != nil {
			t.Errorf("CompleteRunnerJob(current lease): %v", err)
		}
	}},
	{"runner_jobs/cancel_marks_a_batch_and_stops_leases", func(t *testing.T, s store.Store) {
		enqueue(t, s, runnerJob("j1", "run1", "laptops", t0))
		enqueue(t, s, runnerJob("j2", "run2", "laptops", t0.Add(time.Second)))
		other := runnerJob("j3", "run3", "laptops", t0)
		other.ScorecardID = "sc2"
		enqueue(t, s, other)
		if _, err := lease(s, t, "", "r1", "L1", t0); err != nil { // j1
			t.Fatal(err)
		}
		n, err := s.CancelRunnerJobs(t.Context(), "acme", "", "sc1", t0)
		if err != nil || n != 2 {
			t.Fatalf("CancelRunnerJobs(sc1) = %d, %v; want 2", n, err)
		}
		if n, _ := s.CancelRunnerJobs(t.Context(), "globex", "", "sc1", t0); n != 0 {
			t.Errorf("another workspace's cancel marked %d jobs", n)
		}
		hb, err := s.RenewRunnerLease(t.Context(), "acme", "j1", "L1", t0, t0.Add(time.Minute))
		if err != nil || !hb.Cancelled {
			t.Errorf("heartbeat after cancel = %+v, %v; want cancelled", hb, err)
		}
		// The queued j2 is never leased; the other batch's j3 is.
		got, err := lease(s, t, "", "r2", "L2", t0)
		if err != nil || got.ID != "j3" {
			t.Fatalf("lease after cancel = %s, %v; want j3", got.ID, err)
		}
		if n, err := s.CancelRunnerJobs(t.Context(), "acme", "run3", "", t0); err != nil || n != 1 {
			t.Errorf("CancelRunnerJobs(run3) = %d, %v; want 1", n, err)
		}
		// Past every lease: no cancelled job is leased again.
		if got, err := lease(s, t, "", "r2", "L3", t0.Add(2*time.Minute)); !errors.Is(err, derrors.ErrNotFound) {
			t.Errorf("a cancelled job was leased again: %s, %v", got.ID, err)
		}
		_, err = s.CancelRunnerJobs(t.Context(), "acme", "", "", t0)
		wantErr(t, "CancelRunnerJobs(nothing named)", err, derrors.ErrInvalid)
	}},
	{"runner_jobs/orphaned_cancelled_jobs_are_dropped", func(t *testing.T, s store.Store) {
		enqueue(t, s, runnerJob("j1", "run1", "laptops", t0))                  // cancelled while queued
		enqueue(t, s, runnerJob("j2", "run2", "laptops", t0.Add(time.Second))) // cancelled while leased
		other := runnerJob("j3", "run3", "other", t0.Add(2*time.Second))       // another batch's, never cancelled
		other.ScorecardID = "sc2"
		enqueue(t, s, other)
		if _, err := lease(s, t, "laptops", "r1", "L1", t0); err != nil { // j1
			t.Fatal(err)
		}
		if _, err := lease(s, t, "laptops", "r1", "L2", t0); err != nil { // j2
			t.Fatal(err)
		}
		if _, err := s.CancelRunnerJobs(t.Context(), "acme", "", "sc1", t0); err != nil {
			t.Fatal(err)
		}
		// Within OrphanedRunnerJob of the cancel a worker may still be
		// following them: they stay.
		soon := t0.Add(store.OrphanedRunnerJob / 2)
		if got, err := lease(s, t, "other", "r2", "L3", soon); err != nil || got.ID != "j3" {
			t.Fatalf("lease = %s, %v; want j3", got.ID, err)
		}
		for _, id := range []string{"j1", "j2"} {
			if _, err := s.GetRunnerJob(t.Context(), "acme", id); err != nil {
				t.Errorf("GetRunnerJob(%s) soon after the cancel = %v, want it kept", id, err)
			}
		}
		// Past it, with their leases run out, the next lease drops them.
		late := t0.Add(store.OrphanedRunnerJob + 2*time.Minute)
		if _, err := lease(s, t, "laptops", "r2", "L4", late); !errors.Is(err, derrors.ErrNotFound) {
			t.Errorf("lease past the orphan window = %v, want ErrNotFound", err)
		}
		for _, id := range []string{"j1", "j2"} {
			if _, err := s.GetRunnerJob(t.Context(), "acme", id); !errors.Is(err, derrors.ErrNotFound) {
				t.Errorf("GetRunnerJob(%s) past the orphan window = %v, want ErrNotFound", id, err)
			}
		}
		if _, err := s.GetRunnerJob(t.Context(), "acme", "j3"); err != nil {
			t.Errorf("GetRunnerJob(j3), leased and not cancelled = %v, want it kept", err)
		}
	}},
	{"runner_jobs/concurrent_leases_never_share_a_job", func(t *testing.T, s store.Store) {
		const jobs, runners = 20, 6
		for i := range jobs {
			enqueue(t, s, runnerJob(fmt.Sprintf("j%02d", i), fmt.Sprintf("run%02d", i), "laptops", t0.Add(time.Duration(i)*time.Millisecond)))
		}
		var mu sync.Mutex
		seen := map[string]string{}
		var wg sync.WaitGroup
		for r := range runners {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for n := 0; n < 3*jobs; n++ {
					id := fmt.Sprintf("L%d-%d", r, n)
					got, err := lease(s, t, "", fmt.Sprintf("r%d", r), id, t0)
					if errors.Is(err, derrors.ErrNotFound) {
						mu.Lock()
						done := len(seen) == jobs
						mu.Unlock()
						if done {
							return
						}
						continue
					}
					if err != nil {
						t.Errorf("lease: %v", err)
						return
					}
					mu.Lock()
					if prev, dup := seen[got.ID]; dup {
						t.Errorf("job %s leased twice: %s and %s", got.ID, prev, id)
					}
					seen[got.ID] = id
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
		if len(seen) != jobs {
			t.Errorf("%d jobs leased, want %d", len(seen), jobs)
		}
	}},
}
