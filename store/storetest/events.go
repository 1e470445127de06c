package storetest

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"svc/internal/platform/derrors"
	"svc/store"
)

// appendEvent appends e or fails t.
func appendEvent(t *testing.T, tx store.Tx, e store.Event) store.Event {
	t.Helper()
	got, err := tx.AppendEvent(t.Context(), e)
	if err != nil {
		t.Fatalf("AppendEvent(%+v): %v", e, err)
	}
	return got
}

// listEvents lists events or fails t.
func listEvents(t *testing.T, tx store.Tx, f store.EventFilter) []store.Event {
	t.Helper()
	got, err := tx.ListEvents(t.Context(), f)
	if err != nil {
		t.Fatalf("ListEvents(%+v): %v", f, err)
	}
	return got
}

func seqs(es []store.Event) []int64 { return pluck(es, func(e store.Event) int64 { return e.Seq }) }

var eventCases = []Case{
	{"events/append_fills_seq_id_and_time", func(t *testing.T, s store.Store) {
		e := appendEvent(t, s, store.Event{Workspace: "acme", Type: "dataset.registered"})
		if e.Seq <= 0 {
			t.Errorf("Seq = %d, want > 0", e.Seq)
		}
		if !strings.HasPrefix(e.ID, "evt_") || len(e.ID) < 20 {
			t.Errorf("ID = %q, want a generated evt_... id", e.ID)
		}
		if e.CreatedAt.IsZero() || e.CreatedAt.Location() != time.UTC || e.CreatedAt.Nanosecond()%1000 != 0 {
			t.Errorf("CreatedAt = %v, want now, in UTC, to the microsecond", e.CreatedAt)
		}
		other := appendEvent(t, s, store.Event{Workspace: "acme", Type: "dataset.registered"})
		if other.ID == e.ID {
			t.Errorf("two appends got the same generated id %q", e.ID)
		}
	}},
	{"events/round_trip", func(t *testing.T, s store.Store) {
		in := store.Event{
			ID:        "evt_given",
			Workspace: "acme",
			Type:      "run.snapshotted",
			Subject:   "run:r1",
			Actor:     "user:alice",
			CausedBy:  "agent:a1:c1",
			Data:      json.RawMessage(`{"z": 1, "a": [true, null, "x"], "n": {"k": 2.5}}`),
			CreatedAt: time.Date(2025, 1, 2, 3, 4, 5, 6789, time.UTC),
		}
		got := appendEvent(t, s, in)
		want := in
		want.Seq = got.Seq
		want.CreatedAt = time.Date(2025, 1, 2, 3, 4, 5, 6000, time.UTC)
		if diff := cmp.Diff(want, got, jsonEqual); diff != "" {
			t.Errorf("AppendEvent (-want +got):\n%s", diff)
		}
		list := listEvents(t, s, store.EventFilter{Workspace: "acme"})
		if diff := cmp.Diff([]store.Event{want}, list, jsonEqual); diff != "" {
			t.Errorf("ListEvents (-want +got):\n%s", diff)
		}
	}},
	{"events/same_id_is_appended_once", func(t *testing.T, s store.Store) {
		first := appendEvent(t, s, store.Event{ID: "evt_once", Workspace: "acme", Type: "a.happened", Data: json.RawMessage(`{"try":1}`)})
		appendEvent(t, s, store.Event{Workspace: "acme", Type: "b.happened"})
		again := appendEvent(t, s, store.Event{ID: "evt_once", Workspace: "acme", Type: "a.happened", Data: json.RawMessage(`{"try":2}`)})
		if diff := cmp.Diff(first, again, jsonEqual); diff != "" {
			t.Errorf("the retried append did not return the stored event (-first +retry):\n%s", diff)
		}
		list := listEvents(t, s, store.EventFilter{Workspace: "acme"})
		if len(list) != 2 {
			t.Errorf("ListEvents has %d events, want 2: %+v", len(list), list)
		}
	}},
	{"events/same_id_in_another_workspace_is_conflict", func(t *testing.T, s store.Store) {
		appendEvent(t, s, store.Event{ID: "evt_x", Workspace: "acme", Type: "a.happened"})
		_, err := s.AppendEvent(t.Context(), store.Event{ID: "evt_x", Workspace: "globex", Type: "a.happened"})
		wantErr(t, "AppendEvent in another workspace", err, derrors.ErrConflict)
		if got := listEvents(t, s, store.EventFilter{Workspace: "globex"}); len(got) != 0 {
			t.Errorf("globex sees %+v, want nothing", got)
		}
	}},
	{"events/invalid", func(t *testing.T, s store.Store) {
		for _, tc := range []struct {
			name string
			e    store.Event
		}{
			{"no workspace", store.Event{Type: "a.happened"}},
			{"no type", store.Event{Workspace: "acme"}},
			{"data not json", store.Event{Workspace: "acme", Type: "a.happened", Data: json.RawMessage(`{nope`)}},
		} {
			_, err := s.AppendEvent(t.Context(), tc.e)
			wantErr(t, tc.name, err, derrors.ErrInvalid)
		}
		for _, tc := range []struct {
			name string
			f    store.EventFilter
		}{
			{"no workspace", store.EventFilter{}},
			{"negative limit", store.EventFilter{Workspace: "acme", Limit: -1}},
		} {
			_, err := s.ListEvents(t.Context(), tc.f)
			wantErr(t, "ListEvents "+tc.name, err, derrors.ErrInvalid)
		}
	}},
	{"events/list_filters_and_orders", func(t *testing.T, s store.Store) {
		var acme, acmeRuns []store.Event
		for i := range 6 {
			typ := "dataset.registered"
			if i%2 == 1 {
				typ = "run.snapshotted"
			}
			e := appendEvent(t, s, store.Event{Workspace: "acme", Type: typ, Subject: fmt.Sprint(i)})
			acme = append(acme, e)
			if typ == "run.snapshotted" {
				acmeRuns = append(acmeRuns, e)
			}
			// Another tenant's events interleave, so seqs have gaps.
			appendEvent(t, s, store.Event{Workspace: "globex", Type: typ})
		}
		for _, tc := range []struct {
			name string
			f    store.EventFilter
			want []store.Event
		}{
			{"all of a workspace", store.EventFilter{Workspace: "acme"}, acme},
			{"by type", store.EventFilter{Workspace: "acme", Type: "run.snapshotted"}, acmeRuns},
			{"after a seq", store.EventFilter{Workspace: "acme", AfterSeq: acme[3].Seq}, acme[4:]},
			{"after the last", store.EventFilter{Workspace: "acme", AfterSeq: acme[5].Seq}, nil},
			{"limit", store.EventFilter{Workspace: "acme", Limit: 2}, acme[:2]},
			{"type, after and limit", store.EventFilter{Workspace: "acme", Type: "run.snapshotted", AfterSeq: acmeRuns[0].Seq, Limit: 1}, acmeRuns[1:2]},
			{"unknown type", store.EventFilter{Workspace: "acme", Type: "nope"}, nil},
			{"unknown workspace", store.EventFilter{Workspace: "initech"}, nil},
		} {
			got := listEvents(t, s, tc.f)
			if tc.want == nil {
				tc.want = []store.Event{}
			}
			if diff := cmp.Diff(tc.want, got, jsonEqual); diff != "" {
				t.Errorf("%s: ListEvents(%+v) (-want +got):\n%s", tc.name, tc.f, diff)
			}
		}
		for i := 1; i < len(acme); i++ {
			if acme[i].Seq <= acme[i-1].Seq {
				t.Errorf("seqs not increasing in append order: %v", seqs(acme))
				break
			}
		}
	}},
	{"events/list_newest_first_by_glob_since_and_before", func(t *testing.T, s store.Store) {
		t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
		types := []string{"dataset.registered", "trace.threshold_crossed", "judge.registered", "trace.ingestion_throttled", "dataset.moved", "trace_x"}
		var acme []store.Event
		for i, typ := range types {
			acme = append(acme, appendEvent(t, s, store.Event{Workspace: "acme", Type: typ, CreatedAt: t0.Add(time.Duration(i) * time.Minute)}))
			appendEvent(t, s, store.Event{Workspace: "globex", Type: typ, CreatedAt: t0.Add(time.Duration(i) * time.Minute)})
		}
		rev := func(es ...store.Event) []store.Event { return es }
		for _, tc := range []struct {
			name string
			f    store.EventFilter
			want []store.Event
		}{
			{"newest first", store.EventFilter{Workspace: "acme", Newest: true}, rev(acme[5], acme[4], acme[3], acme[2], acme[1], acme[0])},
			{"suffix glob", store.EventFilter{Workspace: "acme", Newest: true, TypeGlob: "*.registered"}, rev(acme[2], acme[0])},
			// '_' in a pattern is a character, not LIKE's any-one.
			{"prefix glob", store.EventFilter{Workspace: "acme", Newest: true, TypeGlob: "trace.*"}, rev(acme[3], acme[1])},
			{"literal underscore", store.EventFilter{Workspace: "acme", TypeGlob: "trace_*"}, rev(acme[5])},
			{"glob without a star is exact", store.EventFilter{Workspace: "acme", TypeGlob: "dataset.moved"}, rev(acme[4])},
			{"before a seq", store.EventFilter{Workspace: "acme", Newest: true, BeforeSeq: acme[2].Seq}, rev(acme[1], acme[0])},
			{"since", store.EventFilter{Workspace: "acme", Newest: true, Since: t0.Add(4 * time.Minute)}, rev(acme[5], acme[4])},
			{"page", store.EventFilter{Workspace: "acme", Newest: true, BeforeSeq: acme[5].Seq, Limit: 2}, rev(acme[4], acme[3])},
		} {
			got := listEvents(t, s, tc.f)
			if diff := cmp.Diff(tc.want, got, jsonEqual); diff != "" {
				t.Errorf("%s: ListEvents(%+v) (-want +got):\n%s", tc.name, tc.f, diff)
			}
		}
	}},
	{"events/poller_sees_every_append_once", func(t *testing.T, s store.Store) {
		// A poller that reads with AfterSeq while writers append must see
		// every event exactly once. It would miss one if a transaction
		// holding a lower seq could commit after one holding a higher seq
		// that the poller had already read past.
		ctx := t.Context()
		const writers, each = 4, 40
		var wg sync.WaitGroup
		errs := make(chan error, writers*each)
		appended := make(chan string, writers*each)
		for g := range writers {
			wg.Go(func() {
				for i := range each {
					id := fmt.Sprintf("evt_%d_%d", g, i)
					if i%2 == 0 {
						if _, err := s.AppendEvent(ctx, store.Event{ID: id, Workspace: "acme", Type: "a.happened"}); err != nil {
							errs <- err
							continue
						}
						appended <- id
						continue
					}
					// Work after the append keeps the transaction open, so
					// later appends have time to commit first if they can.
					err := s.Transact(ctx, func(tx store.Tx) error {
						if _, err := tx.AppendEvent(ctx, store.Event{ID: id, Workspace: "acme", Type: "a.happened"}); err != nil {
							return err
						}
						for j := range 3 {
							if _, err := tx.AppendEvent(ctx, store.Event{Workspace: fmt.Sprintf("other_%d", j), Type: "b.happened"}); err != nil {
								return err
							}
						}
						return nil
					})
					if err != nil {
						errs <- err
						continue
					}
					appended <- id
				}
			})
		}
		done := make(chan struct{})
		go func() { wg.Wait(); close(done) }()
		seen := map[string]int{}
		var cursor int64
		poll := func() int {
			es := listEvents(t, s, store.EventFilter{Workspace: "acme", AfterSeq: cursor, Limit: 1000})
			for _, e := range es {
				seen[e.ID]++
				cursor = e.Seq
			}
			return len(es)
		}
		for finished := false; ; {
			select {
			case <-done:
				finished = true
			default:
			}
			// After the writers are done, poll until a read comes back empty:
			// what is committed by then is everything.
			if n := poll(); finished && n == 0 {
				break
			}
		}
		close(errs)
		close(appended)
		for err := range errs {
			t.Error(err)
		}
		var missed []string
		n := 0
		for id := range appended {
			n++
			if seen[id] != 1 {
				missed = append(missed, fmt.Sprintf("%s seen %d times", id, seen[id]))
			}
		}
		if len(missed) > 0 || len(seen) != n {
			t.Errorf("the poller saw %d distinct events of %d appended; not seen exactly once: %v", len(seen), n, missed)
		}
	}},
	{"events/default_limit_is_100", func(t *testing.T, s store.Store) {
		err := s.Transact(t.Context(), func(tx store.Tx) error {
			for range 105 {
				if _, err := tx.AppendEvent(t.Context(), store.Event{Workspace: "acme", Type: "a.happened"}); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		first := listEvents(t, s, store.EventFilter{Workspace: "acme"})
		if len(first) != 100 {
			t.Fatalf("ListEvents without a limit returned %d events, want 100", len(first))
		}
		rest := listEvents(t, s, store.EventFilter{Workspace: "acme", AfterSeq: first[99].Seq})
		if len(rest) != 5 {
			t.Errorf("the next page has %d events, want 5", len(rest))
		}
	}},
}
