package traces_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"

	"svc/auth"
	"svc/internal/domain/eval"
	"svc/internal/domain/registry"
	"svc/internal/platform/derrors"
	"svc/internal/service/traces"
	"svc/store"
	"svc/store/records"
	"svc/store/sqlite/sqlitetest"
)

var t0 = time.Date(2026, 5, 1, 10, 30, 0, 0, time.UTC)

// export is one span named name under svc.run_id=run, span id n.
func export(run, name string, n byte) *coltracepb.ExportTraceServiceRequest {
	return &coltracepb.ExportTraceServiceRequest{ResourceSpans: []*tracepb.ResourceSpans{{
		Resource: &resourcepb.Resource{Attributes: []*commonpb.KeyValue{{Key: "svc.run_id",
			Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: run}}}}},
		ScopeSpans: []*tracepb.ScopeSpans{{Spans: []*tracepb.Span{{
			TraceId: []byte("0123456789abcdef"), SpanId: []byte{1, 2, 3, 4, 5, 6, 7, n}, Name: name,
			StartTimeUnixNano: uint64(t0.UnixNano()), EndTimeUnixNano: uint64(t0.Add(time.Second).UnixNano()),
		}}}},
	}}}
}

func storeRun(t *testing.T, st store.Store, ws, id string, status eval.Status, personalTo string) {
	t.Helper()
	run := eval.Run{ID: id, Tenant: ws, Harness: registry.Ref{ID: "h", Version: "1.0.0"}, CaseID: "c1", Status: status,
		Kind: eval.KindEval, Trigger: eval.TriggerAPI, CreatedBy: "alice", CreatedAt: t0, UpdatedAt: t0}
	if personalTo != "" {
		run.Kind, run.Origin = eval.KindConversation, &eval.Origin{Actor: personalTo}
	}
	row, err := records.Row(run)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.CreateRun(t.Context(), row); err != nil {
		t.Fatal(err)
	}
}

// TestExportRoutesSpans: where each span of an export goes, by what its
// svc.run_id names, as the caller sees it.
func TestExportRoutesSpans(t *testing.T) {
	st := sqlitetest.New(t)
	svc := traces.New(traces.Options{Store: st, Now: func() time.Time { return t0 }})
	storeRun(t, st, "acme", "run_live", eval.StatusRunning, "")
	storeRun(t, st, "acme", "run_done", eval.StatusSucceeded, "")
	storeRun(t, st, "acme", "run_bobs", eval.StatusRunning, "bob")
	storeRun(t, st, "other", "run_theirs", eval.StatusRunning, "")
	alice := auth.Principal{Subject: "alice", Workspace: "acme", Roles: []auth.Role{auth.RoleMember}}
	for _, tt := range []struct {
		run          string
		wantRejected int64
		wantExternal bool
	}{
		{"run_live", 0, false},
		{"run_done", 1, false},  // late: the run has ended
		{"run_bobs", 1, false},  // another member's personal run: refused, never widened (issue 30, finding 5)
		{"run_theirs", 0, true}, // another workspace's run: as unknown
		{"never_seen", 0, true}, // unknown: external
		{"bad id!", 1, false},   // not an id
		{"", 1, false},          // an empty svc.run_id is refused
	} {
		t.Run(tt.run, func(t *testing.T) {
			resp, err := svc.Export(t.Context(), alice, export(tt.run, "s", 1))
			if err != nil {
				t.Fatal(err)
			}
			if got := resp.GetPartialSuccess().GetRejectedSpans(); got != tt.wantRejected {
				t.Fatalf("rejected = %d (%s), want %d", got, resp.GetPartialSuccess().GetErrorMessage(), tt.wantRejected)
			}
			if tt.wantRejected > 0 {
				return
			}
			groups, err := st.ListPendingGroups(t.Context(), time.Time{}, 0)
			if err != nil {
				t.Fatal(err)
			}
			found := false
			for _, g := range groups {
				if g.Workspace == "acme" && g.Group == tt.run {
					found = true
					if g.External != tt.wantExternal {
						t.Errorf("External = %v, want %v", g.External, tt.wantExternal)
					}
				}
			}
			if !found {
				t.Errorf("no pending group %s in acme: %+v", tt.run, groups)
			}
		})
	}
	if spans, _ := st.ListPendingSpans(t.Context(), "other", "run_theirs"); len(spans) != 0 {
		t.Errorf("the other workspace's run got %d spans", len(spans))
	}
}

func TestQuotaAndThrottledEvent(t *testing.T) {
	st := sqlitetest.New(t)
	now := t0
	svc := traces.New(traces.Options{Store: st, MaxEventsPerHour: 1, Now: func() time.Time { return now }})
	p := auth.Principal{Subject: "alice", Workspace: "acme", Roles: []auth.Role{auth.RoleAdmin}}
	if _, err := svc.Export(t.Context(), p, export("job", "a", 1)); err != nil {
		t.Fatalf("within the quota: %v", err)
	}
	// A retry of the same span is stored and counted once: still within.
	if _, err := svc.Export(t.Context(), p, export("job", "a", 1)); err != nil {
		t.Fatalf("a retried span: %v", err)
	}
	for range 2 {
		_, err := svc.Export(t.Context(), p, export("job", "b", 2))
		var th *traces.ThrottledError
		if !errors.As(err, &th) || !errors.Is(err, derrors.ErrRateLimited) || th.RetryAfter != 30*time.Minute {
			t.Fatalf("past the quota: %v, want a ThrottledError retrying in 30m", err)
		}
	}
	evs, err := st.ListEvents(t.Context(), store.EventFilter{Workspace: "acme", Type: traces.ThrottledEvent})
	if err != nil || len(evs) != 1 {
		t.Errorf("throttled events = %d, %v; want 1", len(evs), err)
	}
	// The workspace's override wins over the default: 0 is unlimited.
	zero := int64(0)
	if _, err := svc.PutIngestion(t.Context(), p, traces.IngestionUpdate{MaxEventsPerHour: &zero}); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Export(t.Context(), p, export("job", "b", 2)); err != nil {
		t.Errorf("unlimited override: %v", err)
	}
	got, err := svc.GetIngestion(t.Context(), p)
	if err != nil {
		t.Fatal(err)
	}
	want := traces.Ingestion{MaxEventsPerHour: 0, MaxEventsPerHourOverride: &zero, DefaultMaxEventsPerHour: 1, UsageLastHour: 2,
		WindowStart: t0.Truncate(time.Hour), WindowEnd: t0.Truncate(time.Hour).Add(time.Hour)}
	if diff := cmp.Diff(want, got, cmp.FilterPath(func(p cmp.Path) bool {
		return strings.HasSuffix(p.String(), "UpdatedAt") || strings.HasSuffix(p.String(), "UpdatedBy")
	}, cmp.Ignore())); diff != "" {
		t.Errorf("GetIngestion (-want +got):\n%s", diff)
	}
}

// TestSweepDropsSpansOfEndedRuns: spans of a run that ended without
// merging them (late, or its dispatch gave up) are dropped once idle; a
// live run's wait for it.
func TestSweepDropsSpansOfEndedRuns(t *testing.T) {
	st := sqlitetest.New(t)
	now := t0
	svc := traces.New(traces.Options{Store: st, IdleWindow: time.Minute, Now: func() time.Time { return now }})
	storeRun(t, st, "acme", "run_a", eval.StatusRunning, "")
	storeRun(t, st, "acme", "run_b", eval.StatusRunning, "")
	p := auth.Principal{Subject: "alice", Workspace: "acme", Roles: []auth.Role{auth.RoleAdmin}}
	for _, r := range []string{"run_a", "run_b"} {
		if _, err := svc.Export(t.Context(), p, export(r, "s", 1)); err != nil {
			t.Fatal(err)
		}
	}
	// run_b ends (say its dispatch gave up and never merged them).
	row, _ := st.GetRun(t.Context(), "acme", "run_b")
	run, _ := records.FromRow(row)
	run.Status = eval.StatusFailed
	row, _ = records.Row(run)
	if _, err := st.PutRun(t.Context(), row); err != nil {
		t.Fatal(err)
	}
	now = now.Add(2 * time.Minute)
	rep, err := svc.Sweep(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if rep.Dropped != 1 || rep.RunsPending != 1 || rep.Sealed != 0 {
		t.Errorf("Sweep = %+v, want run_b dropped and run_a pending", rep)
	}
	if spans, _ := st.ListPendingSpans(t.Context(), "acme", "run_a"); len(spans) != 1 {
		t.Errorf("run_a's spans: %d, want 1 (it is still running)", len(spans))
	}
}

// TestSweepSealsPastOnePage: a sweep seals every idle external trajectory
// however many pages of idle groups they fill, not one page a minute.
func TestSweepSealsPastOnePage(t *testing.T) {
	st := sqlitetest.New(t)
	now := t0
	svc := traces.New(traces.Options{Store: st, Now: func() time.Time { return now }, IdleWindow: time.Minute})
	p := auth.Principal{Subject: "alice", Workspace: "acme", Roles: []auth.Role{auth.RoleAdmin}}
	const n = 1100 // over two pages of 500
	for i := range n {
		if _, err := svc.Export(t.Context(), p, export(fmt.Sprintf("ext-%04d", i), "step", 1)); err != nil {
			t.Fatal(err)
		}
	}
	now = now.Add(2 * time.Minute)
	rep, err := svc.Sweep(t.Context())
	if err != nil || rep.Sealed != n || rep.Remaining != 0 {
		t.Fatalf("Sweep = %+v, %v; want %d sealed, none remaining", rep, err, n)
	}
	if groups, err := st.ListPendingGroups(t.Context(), time.Time{}, 0); err != nil || len(groups) != 0 {
		t.Errorf("pending groups after the sweep = %d, %v; want none", len(groups), err)
	}
}

// TestSpansForAnotherMembersPersonalRunAreRefused: bob's spans for his
// personal run are his run's; alice's spans under the same svc.run_id are
// refused, and bob's pending group stays his run's, never an external
// (workspace-visible) trajectory (issue 30, finding 5).
func TestSpansForAnotherMembersPersonalRunAreRefused(t *testing.T) {
	st := sqlitetest.New(t)
	svc := traces.New(traces.Options{Store: st, Now: func() time.Time { return t0 }})
	storeRun(t, st, "acme", "run_bobs", eval.StatusRunning, "bob")
	bob := auth.Principal{Subject: "bob", Workspace: "acme", Roles: []auth.Role{auth.RoleMember}}
	alice := auth.Principal{Subject: "alice", Workspace: "acme", Roles: []auth.Role{auth.RoleMember}}

	resp, err := svc.Export(t.Context(), bob, export("run_bobs", "bobs-own", 1))
	if err != nil || resp.GetPartialSuccess().GetRejectedSpans() != 0 {
		t.Fatalf("bob's export: %v %v, want accepted", resp, err)
	}
	resp, err = svc.Export(t.Context(), alice, export("run_bobs", "forged", 2))
	if err != nil {
		t.Fatal(err)
	}
	if got := resp.GetPartialSuccess().GetRejectedSpans(); got != 1 {
		t.Fatalf("alice's export: rejected %d, want 1", got)
	}
	groups, err := st.ListPendingGroups(t.Context(), time.Time{}, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range groups {
		if g.Group == "run_bobs" && g.External {
			t.Errorf("bob's run's spans became an external (workspace-visible) group: %+v", g)
		}
	}
	spans, err := st.ListPendingSpans(t.Context(), "acme", "run_bobs")
	if err != nil {
		t.Fatal(err)
	}
	if len(spans) != 1 {
		t.Errorf("run_bobs holds %d pending span(s), want only bob's one", len(spans))
	}
}
