package storetest

import (
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"svc/derrors"
	"svc/store"
)

// pendingSpan is a valid pending span of group, starting at start.
func pendingSpan(workspace, group, key string, start int64, external bool) store.PendingSpan {
	return store.PendingSpan{
		Workspace: workspace, Group: group, Key: key, External: external, StartUnixNano: start,
		Event: json.RawMessage(fmt.Sprintf(`{"kind":"span","name":%q}`, key)), ReceivedAt: t0,
	}
}

func addSpans(t *testing.T, tx store.Tx, spans ...store.PendingSpan) int {
	t.Helper()
	n, err := tx.AddPendingSpans(t.Context(), spans)
	if err != nil {
		t.Fatalf("AddPendingSpans: %v", err)
	}
	return n
}

func spanKeys(ss []store.PendingSpan) []string {
	return pluck(ss, func(s store.PendingSpan) string { return s.Key })
}

var traceIngestCases = []Case{
	{"traceingest/pending_spans_are_kept_once_in_start_order", func(t *testing.T, s store.Store) {
		ctx := t.Context()
		n := addSpans(t, s,
			pendingSpan("acme", "run-1", "t/b", 20, false),
			pendingSpan("acme", "run-1", "t/a", 10, false),
			pendingSpan("acme", "run-2", "t/c", 5, false),
			pendingSpan("other", "run-1", "t/z", 1, true))
		if n != 4 {
			t.Errorf("added = %d, want 4", n)
		}
		// A retried export: the same keys add nothing.
		if n := addSpans(t, s, pendingSpan("acme", "run-1", "t/a", 10, false), pendingSpan("acme", "run-1", "t/d", 30, false)); n != 1 {
			t.Errorf("retry added = %d, want 1 (only t/d is new)", n)
		}
		got, err := s.ListPendingSpans(ctx, "acme", "run-1")
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff([]string{"t/a", "t/b", "t/d"}, spanKeys(got)); diff != "" {
			t.Errorf("ListPendingSpans(acme, run-1) keys (-want +got):\n%s", diff)
		}
		var ev map[string]any
		if err := json.Unmarshal(got[0].Event, &ev); err != nil || ev["name"] != "t/a" {
			t.Errorf("event of t/a = %s (%v), want its document back", got[0].Event, err)
		}
		if !got[0].ReceivedAt.Equal(norm(t0)) {
			t.Errorf("ReceivedAt = %v, want %v", got[0].ReceivedAt, norm(t0))
		}
		// Another workspace's group of the same id is its own.
		other, err := s.ListPendingSpans(ctx, "other", "run-1")
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff([]string{"t/z"}, spanKeys(other)); diff != "" {
			t.Errorf("ListPendingSpans(other, run-1) (-want +got):\n%s", diff)
		}
		if err := s.DeletePendingSpans(ctx, "acme", "run-1"); err != nil {
			t.Fatal(err)
		}
		left, err := s.ListPendingSpans(ctx, "acme", "run-1")
		if err != nil {
			t.Fatal(err)
		}
		if len(left) != 0 {
			t.Errorf("after DeletePendingSpans: %d spans left", len(left))
		}
		if rest, _ := s.ListPendingSpans(ctx, "acme", "run-2"); len(rest) != 1 {
			t.Errorf("DeletePendingSpans(run-1) touched run-2: %d spans left, want 1", len(rest))
		}
	}},
	{"traceingest/many_spans_in_one_call", func(t *testing.T, s store.Store) {
		// More than one INSERT's worth, with a duplicate across batches.
		var spans []store.PendingSpan
		for i := range 150 {
			spans = append(spans, pendingSpan("acme", "big", fmt.Sprintf("t/%03d", i), int64(150-i), false))
		}
		spans = append(spans, pendingSpan("acme", "big", "t/000", 0, false))
		if n := addSpans(t, s, spans...); n != 150 {
			t.Errorf("added = %d, want 150", n)
		}
		got, err := s.ListPendingSpans(t.Context(), "acme", "big")
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 150 {
			t.Fatalf("ListPendingSpans: %d spans, want 150", len(got))
		}
		if got[0].Key != "t/149" || got[149].Key != "t/000" {
			t.Errorf("ListPendingSpans: first %q, last %q; want t/149 to t/000 (start order)", got[0].Key, got[149].Key)
		}
	}},
	{"traceingest/idle_groups_by_latest_span", func(t *testing.T, s store.Store) {
		old, recent := pendingSpan("acme", "ext-old", "k1", 1, true), pendingSpan("acme", "run-live", "k1", 1, false)
		old.ReceivedAt, recent.ReceivedAt = t0, t0.Add(time.Hour)
		later := pendingSpan("acme", "ext-old", "k2", 2, true)
		later.ReceivedAt = t0.Add(time.Minute)
		addSpans(t, s, old, recent, later)
		got, err := s.ListPendingGroups(t.Context(), t0.Add(30*time.Minute), 0)
		if err != nil {
			t.Fatal(err)
		}
		want := []store.PendingGroup{{Workspace: "acme", Group: "ext-old", External: true, Spans: 2, LastReceived: norm(t0.Add(time.Minute))}}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("ListPendingGroups(idle since t0+30m) (-want +got):\n%s", diff)
		}
		all, err := s.ListPendingGroups(t.Context(), time.Time{}, 0)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff([]string{"ext-old", "run-live"}, pluck(all, func(g store.PendingGroup) string { return g.Group })); diff != "" {
			t.Errorf("ListPendingGroups(all), oldest first (-want +got):\n%s", diff)
		}
		if all[1].External {
			t.Error("run-live: External = true, want false")
		}
	}},
	{"traceingest/pending_span_needs_a_group_and_json", func(t *testing.T, s store.Store) {
		bad := pendingSpan("acme", "", "k", 1, false)
		_, err := s.AddPendingSpans(t.Context(), []store.PendingSpan{bad})
		wantErr(t, "AddPendingSpans(no group)", err, derrors.ErrInvalid)
		bad = pendingSpan("acme", "g", "k", 1, false)
		bad.Event = json.RawMessage(`{not json`)
		_, err = s.AddPendingSpans(t.Context(), []store.PendingSpan{bad})
		wantErr(t, "AddPendingSpans(bad event)", err, derrors.ErrInvalid)
	}},
	{"traceingest/usage_counts_per_workspace_and_hour", func(t *testing.T, s store.Store) {
		ctx := t.Context()
		h := time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC)
		for _, step := range []struct {
			ws   string
			at   time.Time
			n    int64
			want int64
		}{{"acme", h, 5, 5}, {"acme", h, 7, 12}, {"acme", h.Add(time.Hour), 1, 1}, {"other", h, 3, 3}} {
			got, err := s.AddTraceUsage(ctx, step.ws, step.at, step.n)
			if err != nil {
				t.Fatal(err)
			}
			if got != step.want {
				t.Errorf("AddTraceUsage(%s, %v, %d) = %d, want %d", step.ws, step.at, step.n, got, step.want)
			}
		}
		if got, err := s.GetTraceUsage(ctx, "acme", h); err != nil || got != 12 {
			t.Errorf("GetTraceUsage(acme, h) = %d, %v; want 12", got, err)
		}
		if got, err := s.GetTraceUsage(ctx, "acme", h.Add(-time.Hour)); err != nil || got != 0 {
			t.Errorf("GetTraceUsage(acme, an hour with none) = %d, %v; want 0", got, err)
		}
		_, err := s.AddTraceUsage(ctx, "acme", h.Add(time.Minute), 1)
		wantErr(t, "AddTraceUsage(not an hour's start)", err, derrors.ErrInvalid)
	}},
	{"traceingest/settings_round_trip", func(t *testing.T, s store.Store) {
		ctx := t.Context()
		_, err := s.GetTraceSettings(ctx, "acme")
		wantErr(t, "GetTraceSettings before any", err, derrors.ErrNotFound)
		quota, days := int64(1000), 30
		in := store.TraceSettings{Workspace: "acme", MaxEventsPerHour: &quota, RetentionDays: &days,
			Thresholds: json.RawMessage(`{"maxErrors":2}`), UpdatedBy: "user:alice", UpdatedAt: t0}
		if _, err := s.PutTraceSettings(ctx, in); err != nil {
			t.Fatal(err)
		}
		got, err := s.GetTraceSettings(ctx, "acme")
		if err != nil {
			t.Fatal(err)
		}
		want := in
		want.UpdatedAt = norm(t0)
		if diff := cmp.Diff(want, got, jsonEqual); diff != "" {
			t.Errorf("GetTraceSettings (-want +got):\n%s", diff)
		}
		// Replaced whole: the quota override is gone.
		if _, err := s.PutTraceSettings(ctx, store.TraceSettings{Workspace: "acme", RetentionDays: &days}); err != nil {
			t.Fatal(err)
		}
		got, _ = s.GetTraceSettings(ctx, "acme")
		if got.MaxEventsPerHour != nil {
			t.Errorf("after the second put, MaxEventsPerHour = %d, want unset", *got.MaxEventsPerHour)
		}
		if _, err := s.GetTraceSettings(ctx, "other"); !errors.Is(err, derrors.ErrNotFound) {
			t.Errorf("GetTraceSettings(other) = %v, want ErrNotFound", err)
		}
	}},
	{"traceingest/span_attr_mapping_per_workspace_and_harness", func(t *testing.T, s store.Store) {
		ctx := t.Context()
		_, err := s.GetSpanAttrMapping(ctx, "acme", "h")
		wantErr(t, "GetSpanAttrMapping before any", err, derrors.ErrNotFound)
		in := store.SpanAttrMapping{Workspace: "acme", HarnessID: "h", Mapping: json.RawMessage(`{"fields":{"model":["x.model"]}}`), UpdatedBy: "u", UpdatedAt: t0}
		if _, err := s.PutSpanAttrMapping(ctx, in); err != nil {
			t.Fatal(err)
		}
		got, err := s.GetSpanAttrMapping(ctx, "acme", "h")
		if err != nil {
			t.Fatal(err)
		}
		want := in
		want.UpdatedAt = norm(t0)
		if diff := cmp.Diff(want, got, jsonEqual); diff != "" {
			t.Errorf("GetSpanAttrMapping (-want +got):\n%s", diff)
		}
		_, err = s.GetSpanAttrMapping(ctx, "other", "h")
		wantErr(t, "GetSpanAttrMapping(other workspace)", err, derrors.ErrNotFound)
		_, err = s.PutSpanAttrMapping(ctx, store.SpanAttrMapping{Workspace: "acme", HarnessID: "h"})
		wantErr(t, "PutSpanAttrMapping(no mapping)", err, derrors.ErrInvalid)
	}},
	{"traceingest/delete_trajectories_before_a_cutoff", func(t *testing.T, s store.Store) {
		ctx := t.Context()
		for i, at := range []time.Time{t0, t0.Add(time.Hour), t0.Add(2 * time.Hour), t0.Add(3 * time.Hour)} {
			seal(t, s, trajectory("acme", fmt.Sprintf("run-%d", i), 1, at))
		}
		seal(t, s, trajectory("other", "run-0", 1, t0))
		n, err := s.DeleteTrajectoriesBefore(ctx, "acme", t0.Add(150*time.Minute), 2)
		if err != nil || n != 2 {
			t.Fatalf("DeleteTrajectoriesBefore(limit 2) = %d, %v; want 2", n, err)
		}
		n, err = s.DeleteTrajectoriesBefore(ctx, "acme", t0.Add(150*time.Minute), 2)
		if err != nil || n != 1 {
			t.Fatalf("second DeleteTrajectoriesBefore = %d, %v; want 1", n, err)
		}
		left := listTrajectories(t, s, store.TrajectoryFilter{Workspace: "acme", Viewer: "x"})
		if diff := cmp.Diff([]string{"run-3"}, trajectoryRuns(left)); diff != "" {
			t.Errorf("left in acme (-want +got):\n%s", diff)
		}
		if _, err := s.GetTrajectory(ctx, "other", "run-0"); err != nil {
			t.Errorf("another workspace's trajectory was deleted: %v", err)
		}
	}},
}
