package storetest

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"svc/internal/platform/derrors"
	"svc/store"
)

// slotReq is a request of holder for a slot of runtime rt in acme, at most
// max held, at now, for a minute.
func slotReq(rt, holder string, max int, now time.Time) store.SlotRequest {
	return store.SlotRequest{Workspace: "acme", Runtime: rt, Holder: holder, MaxConcurrent: max, Now: now, Until: now.Add(time.Minute)}
}

// acquire asks for a slot or fails t.
func acquire(t *testing.T, s store.Store, r store.SlotRequest) bool {
	t.Helper()
	held, err := s.AcquireSlot(t.Context(), r)
	if err != nil {
		t.Fatalf("AcquireSlot(%+v): %v", r, err)
	}
	return held
}

// slotStates lists acme's live rows as holder:state.
func slotStates(t *testing.T, s store.Store, now time.Time) []string {
	t.Helper()
	ls, err := s.ListSlots(t.Context(), "acme", now)
	if err != nil {
		t.Fatal(err)
	}
	return pluck(ls, func(l store.Slot) string { return l.Runtime + "/" + l.Holder + ":" + l.State })
}

var slotCases = []Case{
	{"slots/max_concurrent_bounds_held_slots", func(t *testing.T, s store.Store) {
		for i, h := range []string{"r1", "r2", "r3"} {
			if got, want := acquire(t, s, slotReq("nomad-a", h, 2, t0.Add(time.Duration(i)*time.Second))), i < 2; got != want {
				t.Errorf("%s: held %v, want %v", h, got, want)
			}
		}
		// Another runtime and another workspace have slots of their own.
		if !acquire(t, s, slotReq("nomad-b", "r4", 1, t0)) {
			t.Errorf("another runtime's slot was not given")
		}
		other := slotReq("nomad-a", "g1", 2, t0)
		other.Workspace = "globex"
		if !acquire(t, s, other) {
			t.Errorf("another workspace's slot was not given")
		}
		want := []string{"nomad-a/r1:held", "nomad-b/r4:held", "nomad-a/r2:held", "nomad-a/r3:waiting"}
		if diff := cmp.Diff(want, slotStates(t, s, t0)); diff != "" {
			t.Errorf("ListSlots (-want +got):\n%s", diff)
		}
		// A holder asking again keeps its slot; it never takes a second.
		if !acquire(t, s, slotReq("nomad-a", "r1", 2, t0.Add(5*time.Second))) {
			t.Errorf("r1 asking again lost its slot")
		}
		if acquire(t, s, slotReq("nomad-a", "r3", 2, t0.Add(5*time.Second))) {
			t.Errorf("r3 got a slot while two are held")
		}
		// A release frees a slot for the waiter.
		if err := s.ReleaseSlot(t.Context(), "acme", "nomad-a", "r1"); err != nil {
			t.Fatal(err)
		}
		if err := s.ReleaseSlot(t.Context(), "acme", "nomad-a", "r1"); err != nil {
			t.Errorf("releasing twice: %v", err)
		}
		if !acquire(t, s, slotReq("nomad-a", "r3", 2, t0.Add(6*time.Second))) {
			t.Errorf("r3 did not get the released slot")
		}
	}},
	{"slots/expired_slots_are_freed", func(t *testing.T, s store.Store) {
		acquire(t, s, slotReq("k", "dead", 2, t0)) // its worker is killed: never renewed
		acquire(t, s, slotReq("k", "alive", 2, t0))
		if err := s.RenewSlot(t.Context(), "acme", "k", "alive", t0.Add(time.Hour)); err != nil {
			t.Fatal(err)
		}
		if acquire(t, s, slotReq("k", "next", 2, t0.Add(30*time.Second))) {
			t.Errorf("a slot was given within its holders' leases")
		}
		later := t0.Add(2 * time.Minute)
		if !acquire(t, s, slotReq("k", "next", 2, later)) {
			t.Errorf("the dead holder's slot was not given after its lease")
		}
		if diff := cmp.Diff([]string{"k/alive:held", "k/next:held"}, slotStates(t, s, later)); diff != "" {
			t.Errorf("after the dead holder's lease (-want +got):\n%s", diff)
		}
		if err := s.RenewSlot(t.Context(), "acme", "k", "dead", later); !errors.Is(err, derrors.ErrNotFound) {
			t.Errorf("renewing an expired, forgotten slot: %v, want ErrNotFound", err)
		}
		if acquire(t, s, slotReq("k", "third", 2, later)) {
			t.Errorf("a third slot was given under maxConcurrent 2")
		}
		if !acquire(t, s, slotReq("k", "third", 3, later)) {
			t.Errorf("a slot under a raised maxConcurrent was not given")
		}
	}},
	{"slots/memory_budget", func(t *testing.T, s store.Store) {
		mem := func(h string, mb int) store.SlotRequest {
			r := slotReq("m", h, 10, t0)
			r.MemoryMb, r.MemoryBudgetMb = mb, 1000
			return r
		}
		for _, tc := range []struct {
			r    store.SlotRequest
			held bool
		}{
			{mem("a", 600), true},
			{mem("b", 500), false}, // 1,100 MB over 1,000
			{mem("c", 400), true},  // 1,000 MB: at the budget
			{mem("d", 0), true},    // declares none: outside the budget
			{mem("e", 1), false},
		} {
			if got := acquire(t, s, tc.r); got != tc.held {
				t.Errorf("%s (%d MB): held %v, want %v", tc.r.Holder, tc.r.MemoryMb, got, tc.held)
			}
		}
	}},
	{"slots/concurrent_acquirers_never_pass_the_bound", func(t *testing.T, s store.Store) {
		var wg sync.WaitGroup
		var mu sync.Mutex
		held := 0
		for i := range 8 {
			wg.Go(func() {
				ok, err := s.AcquireSlot(t.Context(), slotReq("c", string(rune('a'+i)), 3, t0))
				if err != nil {
					t.Errorf("AcquireSlot: %v", err)
				}
				if ok {
					mu.Lock()
					held++
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		if held != 3 {
			t.Errorf("%d of 8 concurrent acquirers hold a slot, want 3", held)
		}
	}},
	{"slots/bad_requests", func(t *testing.T, s store.Store) {
		for _, r := range []store.SlotRequest{
			{Runtime: "k", Holder: "h", MaxConcurrent: 1, Now: t0, Until: t0.Add(time.Minute)},
			{Workspace: "acme", Runtime: "k", Holder: "h", MaxConcurrent: 0, Now: t0, Until: t0.Add(time.Minute)},
			{Workspace: "acme", Runtime: "k", Holder: "h", MaxConcurrent: 1, Now: t0, Until: t0},
		} {
			if _, err := s.AcquireSlot(t.Context(), r); !errors.Is(err, derrors.ErrInvalid) {
				t.Errorf("AcquireSlot(%+v): %v, want ErrInvalid", r, err)
			}
		}
	}},
}
