package storetest

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"svc/internal/platform/derrors"
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
	{"traceingest/a_span_in_two_exports_is_kept_once", func(t *testing.T, s store.Store) {
		ctx := t.Context()
		first := []store.PendingSpan{pendingSpan("acme", "run-1", "t/b", 20, false), pendingSpan("acme", "run-1", "t/a", 10, false)}
		if n := addSpans(t, s, first...); n != 2 {
			t.Errorf("first export added = %d, want 2", n)
		}
		// The second export repeats t/b (with another event: the first
		// received is kept) and brings t/c, which starts first.
		again := pendingSpan("acme", "run-1", "t/b", 20, false)
		again.Event = json.RawMessage(`{"kind":"span","name":"t/b again"}`)
		if n := addSpans(t, s, again, pendingSpan("acme", "run-1", "t/c", 5, false)); n != 1 {
			t.Errorf("second export added = %d, want 1 (t/c)", n)
		}
		// A third repeats only known spans, twice within itself.
		if n := addSpans(t, s, pendingSpan("acme", "run-1", "t/a", 10, false), pendingSpan("acme", "run-1", "t/c", 5, false), pendingSpan("acme", "run-1", "t/c", 5, false)); n != 0 {
			t.Errorf("third export added = %d, want 0", n)
		}
		// One call whose group's spans differ in receipt time (two rows)
		// and repeat a key in the first.
		late := pendingSpan("acme", "run-1", "t/e", 40, false)
		late.ReceivedAt = t0.Add(time.Second)
		if n := addSpans(t, s, pendingSpan("acme", "run-1", "t/d", 30, false), pendingSpan("acme", "run-1", "t/d", 30, false), late,
			pendingSpan("acme", "run-1", "t/d", 30, false)); n != 2 {
			t.Errorf("fourth export added = %d, want 2 (t/d once, t/e)", n)
		}
		got, err := s.ListPendingSpans(ctx, "acme", "run-1")
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff([]string{"t/c", "t/a", "t/b", "t/d", "t/e"}, spanKeys(got)); diff != "" {
			t.Errorf("ListPendingSpans keys (-want +got):\n%s", diff)
		}
		if len(got) == 5 && string(got[2].Event) != `{"kind":"span","name":"t/b"}` {
			t.Errorf("t/b's event = %s, want the first received", got[2].Event)
		}
		groups, err := s.ListPendingGroups(ctx, time.Time{}, 0)
		if err != nil {
			t.Fatal(err)
		}
		if len(groups) != 1 || groups[0].Spans != 5 {
			t.Errorf("ListPendingGroups = %+v, want run-1 with 5 spans", groups)
		}
	}},
	{"traceingest/concurrent_exports_of_one_group_store_each_span_once", func(t *testing.T, s store.Store) {
		// Eight exports at once, each of 40 spans overlapping its
		// neighbours': 0-39, 20-59, ..., 140-179; half of them under a
		// quota. The hour's usage counts each span once too.
		hour := time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC)
		const exports, per, step = 8, 40, 20
		added := make([]int, exports)
		errs := make([]error, exports)
		var wg sync.WaitGroup
		for e := range exports {
			wg.Go(func() {
				var spans []store.PendingSpan
				for i := e * step; i < e*step+per; i++ {
					spans = append(spans, pendingSpan("acme", "busy", fmt.Sprintf("t/%03d", i), int64(1000-i), true))
				}
				if e%2 == 0 {
					added[e], errs[e] = s.AddPendingSpans(t.Context(), spans)
					return
				}
				// Half under a quota, as the door adds them.
				var over bool
				added[e], _, over, errs[e] = s.AddPendingSpansQuota(t.Context(), spans, "acme", hour, 1_000_000)
				if over {
					errs[e] = fmt.Errorf("over a quota of 1,000,000")
				}
			})
		}
		wg.Wait()
		total := 0
		for e := range exports {
			if errs[e] != nil {
				t.Fatalf("export %d: %v", e, errs[e])
			}
			total += added[e]
		}
		const distinct = (exports-1)*step + per
		if total != distinct {
			t.Errorf("the exports added %v spans, %d in all; want %d (each span counted once)", added, total, distinct)
		}
		if used, err := s.GetTraceUsage(t.Context(), "acme", hour); err != nil || used > distinct {
			t.Errorf("usage = %d, %v; want at most %d", used, err, distinct)
		}
		got, err := s.ListPendingSpans(t.Context(), "acme", "busy")
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != distinct {
			t.Fatalf("ListPendingSpans: %d spans, want %d", len(got), distinct)
		}
		for i, sp := range got {
			if want := fmt.Sprintf("t/%03d", distinct-1-i); sp.Key != want {
				t.Fatalf("span %d is %q, want %q (start order, each once)", i, sp.Key, want)
			}
		}
	}},
	{"traceingest/pending_spans_of_several_groups_in_one_read", func(t *testing.T, s store.Store) {
		addSpans(t, s, pendingSpan("acme", "run-1", "t/b", 2, false), pendingSpan("acme", "run-1", "t/a", 1, false),
			pendingSpan("acme", "run-2", "t/c", 3, false), pendingSpan("other", "run-1", "t/z", 1, false))
		addSpans(t, s, pendingSpan("acme", "run-2", "t/d", 0, false))
		got, err := s.ListPendingSpansOf(t.Context(), []store.PendingGroupRef{
			{Workspace: "acme", Group: "run-1"}, {Workspace: "acme", Group: "run-2"}, {Workspace: "acme", Group: "none"},
			{Workspace: "acme", Group: "run-1"}})
		if err != nil {
			t.Fatal(err)
		}
		keys := map[string][]string{}
		for g, spans := range got {
			keys[g.Workspace+"/"+g.Group] = spanKeys(spans)
		}
		want := map[string][]string{"acme/run-1": {"t/a", "t/b"}, "acme/run-2": {"t/d", "t/c"}}
		if diff := cmp.Diff(want, keys); diff != "" {
			t.Errorf("ListPendingSpansOf (-want +got):\n%s", diff)
		}
		if got, err := s.ListPendingSpansOf(t.Context(), nil); err != nil || len(got) != 0 {
			t.Errorf("ListPendingSpansOf(none) = %v, %v", got, err)
		}
	}},
	{"traceingest/an_event_is_one_json_value_kept_on_one_line", func(t *testing.T, s store.Store) {
		for _, ev := range []string{`1,2`, `{"a":1},{"b":2}`, `{a:1}`, `{"a":1`, `"open`, `]`, `{"a":1}{"b":2}`, "[1,\n2,]"} {
			sp := pendingSpan("acme", "g", "k", 1, false)
			sp.Event = json.RawMessage(ev)
			_, err := s.AddPendingSpans(t.Context(), []store.PendingSpan{sp})
			wantErr(t, fmt.Sprintf("AddPendingSpans(event %q)", ev), err, derrors.ErrInvalid)
		}
		// Newlines, which JSON allows between tokens, are dropped.
		sp := pendingSpan("acme", "g", "k", 1, false)
		sp.Event = json.RawMessage("{\n  \"kind\": \"span\",\n  \"name\": \"a\\nb\"\n}")
		addSpans(t, s, sp, pendingSpan("acme", "g", "k2", 2, false))
		got, err := s.ListPendingSpans(t.Context(), "acme", "g")
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 2 || string(got[0].Event) != `{"kind":"span","name":"a\nb"}` || string(got[1].Event) != `{"kind":"span","name":"k2"}` {
			t.Errorf("ListPendingSpans = %+v", got)
		}
	}},
	{"traceingest/a_group_of_one_canonical_row_is_sealed_in_the_store", func(t *testing.T, s store.Store) {
		ctx := t.Context()
		canonical := func(group, key string, start int64) store.PendingSpan {
			sp := pendingSpan("acme", group, key, start, true)
			sp.Canonical = true
			return sp
		}
		traj := func(ws, group string) store.Trajectory {
			return store.Trajectory{Workspace: ws, RunID: group, Source: "otel", SealedAt: t0}
		}
		addSpans(t, s, canonical("ext", "t/b", 20), canonical("ext", "t/a", 10), canonical("ext", "t/c", 30), canonical("ext", "t/a", 10))
		if _, sealed, err := s.SealPendingGroup(ctx, traj("other", "ext"), 10); err != nil || sealed {
			t.Errorf("SealPendingGroup(another workspace's group) = %v, %v; want false", sealed, err)
		}
		if _, sealed, err := s.SealPendingGroup(ctx, traj("acme", "ext"), 2); err != nil || sealed {
			t.Errorf("SealPendingGroup(3 spans, at most 2) = %v, %v; want false", sealed, err)
		}
		got, sealed, err := s.SealPendingGroup(ctx, traj("acme", "ext"), 10)
		if err != nil || !sealed {
			t.Fatalf("SealPendingGroup(acme/ext) = %v, %v; want true", sealed, err)
		}
		events := `[{"kind":"span","name":"t/a"},{"kind":"span","name":"t/b"},{"kind":"span","name":"t/c"}]`
		sum := sha256.Sum256([]byte(events))
		stored, err := s.GetTrajectory(ctx, "acme", "ext")
		if err != nil {
			t.Fatal(err)
		}
		want := store.Trajectory{Workspace: "acme", RunID: "ext", Source: "otel", EventCount: 3, Digest: "sha256:" + hex.EncodeToString(sum[:]), SealedAt: stored.SealedAt}
		if diff := cmp.Diff(want, got); diff != "" || !got.SealedAt.Equal(t0.Truncate(time.Microsecond)) {
			t.Errorf("SealPendingGroup = %+v; want %+v sealed at %v", got, want, t0)
		}
		if string(stored.Events) != events || stored.Digest != want.Digest || stored.EventCount != 3 || stored.Source != "otel" {
			t.Errorf("GetTrajectory(acme/ext) = %s %s %d %s; want %s %s 3 otel", stored.Events, stored.Digest, stored.EventCount, stored.Source, events, want.Digest)
		}
		if left, err := s.ListPendingSpans(ctx, "acme", "ext"); err != nil || len(left) != 0 {
			t.Errorf("pending spans of a sealed group = %v, %v; want none", spanKeys(left), err)
		}

		// Every other group is left for the general seal.
		addSpans(t, s, canonical("two", "t/a", 10))
		addSpans(t, s, canonical("two", "t/b", 20))
		plain := pendingSpan("acme", "plain", "t/a", 10, true)
		addSpans(t, s, plain)
		addSpans(t, s, canonical("untimed", "t/a", 0), canonical("untimed", "t/b", 5))
		run := canonical("run", "t/a", 10)
		run.External = false
		addSpans(t, s, run)
		addSpans(t, s, canonical("done", "t/a", 10))
		done := traj("acme", "done")
		done.Events, done.Digest, done.EventCount = json.RawMessage(`[]`), "sha256:"+strings.Repeat("0", 64), 0
		if _, _, err := s.SealTrajectory(ctx, done); err != nil {
			t.Fatal(err)
		}
		for _, g := range []string{"two", "plain", "untimed", "run", "done"} {
			if _, sealed, err := s.SealPendingGroup(ctx, traj("acme", g), 10); err != nil || sealed {
				t.Errorf("SealPendingGroup(%s) = %v, %v; want false", g, sealed, err)
			}
			if left, err := s.ListPendingSpans(ctx, "acme", g); err != nil || len(left) == 0 {
				t.Errorf("pending spans of %s after a refused seal = %v, %v; want them kept", g, spanKeys(left), err)
			}
		}
		if stored, err := s.GetTrajectory(ctx, "acme", "done"); err != nil || string(stored.Events) != `[]` {
			t.Errorf("the trajectory sealed before = %s, %v; want it unchanged", stored.Events, err)
		}
	}},
	{"traceingest/pending_spans_under_a_quota", func(t *testing.T, s store.Store) {
		ctx := t.Context()
		hour := time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC)
		spans := func(keys ...string) []store.PendingSpan {
			var out []store.PendingSpan
			for i, k := range keys {
				out = append(out, pendingSpan("acme", "q", k, int64(i+1), true))
			}
			return out
		}
		for _, step := range []struct {
			keys       []string
			added      int
			used       int64
			over       bool
			wantStored int
		}{
			{[]string{"a", "b", "c"}, 3, 0, false, 3},
			{[]string{"c", "d"}, 1, 3, false, 4},           // c is a retry: only d counts
			{[]string{"a", "b", "c", "d"}, 0, 4, false, 4}, // all retries: nothing counts
			{[]string{"e", "f"}, 2, 4, true, 4},            // 6 > 5: refused whole
			{[]string{"e"}, 1, 4, false, 5},                // 5: at the quota
		} {
			added, used, over, err := s.AddPendingSpansQuota(ctx, spans(step.keys...), "acme", hour, 5)
			if err != nil || added != step.added || used != step.used || over != step.over {
				t.Errorf("AddPendingSpansQuota(%v) = %d, %d, %v, %v; want %d, %d, %v", step.keys, added, used, over, err, step.added, step.used, step.over)
			}
			got, _ := s.ListPendingSpans(ctx, "acme", "q")
			if len(got) != step.wantStored {
				t.Errorf("after %v: %d spans stored, want %d", step.keys, len(got), step.wantStored)
			}
		}
		if used, err := s.GetTraceUsage(ctx, "acme", hour); err != nil || used != 5 {
			t.Errorf("usage = %d, %v; want 5 (the refused export counted nothing)", used, err)
		}
		_, _, _, err := s.AddPendingSpansQuota(ctx, []store.PendingSpan{pendingSpan("other", "q", "k", 1, true)}, "acme", hour, 0)
		wantErr(t, "AddPendingSpansQuota(another workspace's span)", err, derrors.ErrInvalid)
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
	{"traceingest/get_pending_group", func(t *testing.T, s store.Store) {
		first, later := pendingSpan("acme", "ext", "k1", 1, true), pendingSpan("acme", "ext", "k2", 2, true)
		first.ReceivedAt, later.ReceivedAt = t0, t0.Add(time.Minute)
		live := pendingSpan("acme", "run-live", "k1", 1, false)
		live.ReceivedAt = t0
		addSpans(t, s, first, later, live)
		got, err := s.GetPendingGroup(t.Context(), "acme", "ext")
		want := store.PendingGroup{Workspace: "acme", Group: "ext", External: true, Spans: 2, LastReceived: norm(t0.Add(time.Minute))}
		if diff := cmp.Diff(want, got); err != nil || diff != "" {
			t.Errorf("GetPendingGroup(ext) = %v (-want +got):\n%s", err, diff)
		}
		if g, err := s.GetPendingGroup(t.Context(), "acme", "run-live"); err != nil || g.External || g.Spans != 1 {
			t.Errorf("GetPendingGroup(run-live) = %+v, %v; want 1 span, not external", g, err)
		}
		_, err = s.GetPendingGroup(t.Context(), "globex", "ext")
		wantErr(t, "GetPendingGroup(another workspace)", err, derrors.ErrNotFound)
		if err := s.DeletePendingSpans(t.Context(), "acme", "ext"); err != nil {
			t.Fatal(err)
		}
		_, err = s.GetPendingGroup(t.Context(), "acme", "ext")
		wantErr(t, "GetPendingGroup(sealed)", err, derrors.ErrNotFound)
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
