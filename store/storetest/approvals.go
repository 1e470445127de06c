package storetest

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"svc/internal/platform/derrors"
	"svc/store"
)

// parked is a pending approval of workspace ws.
func parked(ws, id string, at time.Time) store.Approval {
	return store.Approval{Workspace: ws, ID: id, Status: store.ApprovalPending, Member: "alice",
		Agent:  store.ApprovalAgent{ID: "claude", Name: "Claude", Conversation: "c1"},
		Origin: store.ApprovalOrigin{Actor: "alice", Source: "mcp", AgentID: "claude", ConversationID: "c1"},
		Tool:   "delete_dataset", Method: "DELETE", Path: "/datasets/d1", Body: json.RawMessage(`{"why": "old"}`),
		Source: "route", OnExpiry: store.ExpiryDeny, CreatedAt: at, ExpiresAt: at.Add(time.Hour)}
}

var approvalCases = []Case{
	{"approvals/create_once_get_list", func(t *testing.T, s store.Store) {
		ctx := t.Context()
		a, created, err := s.CreateApproval(ctx, parked("acme", "ap-1", t0))
		if err != nil || !created {
			t.Fatalf("CreateApproval = %v, %v; want created", created, err)
		}
		// A second create of the same id returns the stored one.
		again := parked("acme", "ap-1", t0.Add(time.Minute))
		again.Tool = "other"
		got, created, err := s.CreateApproval(ctx, again)
		if err != nil || created {
			t.Fatalf("CreateApproval again = %v, %v; want not created", created, err)
		}
		if diff := cmp.Diff(a, got, jsonEqual); diff != "" {
			t.Errorf("CreateApproval again returned (-first +got):\n%s", diff)
		}
		if _, _, err := s.CreateApproval(ctx, parked("acme", "ap-2", t0.Add(time.Second))); err != nil {
			t.Fatal(err)
		}
		if _, _, err := s.CreateApproval(ctx, parked("other", "ap-3", t0)); err != nil {
			t.Fatal(err)
		}
		got, err = s.GetApproval(ctx, "acme", "ap-1")
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(a, got, jsonEqual); diff != "" {
			t.Errorf("GetApproval (-want +got):\n%s", diff)
		}
		if _, err := s.GetApproval(ctx, "other", "ap-1"); !errors.Is(err, derrors.ErrNotFound) {
			t.Errorf("GetApproval of another workspace's id: %v, want ErrNotFound", err)
		}
		list, err := s.ListApprovals(ctx, store.ApprovalFilter{Workspace: "acme"})
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff([]string{"ap-2", "ap-1"}, pluck(list, func(a store.Approval) string { return a.ID })); diff != "" {
			t.Errorf("ListApprovals, newest first (-want +got):\n%s", diff)
		}
		if _, _, err := s.CreateApproval(ctx, store.Approval{Workspace: "acme", ID: "bad", Status: store.ApprovalPending, Body: json.RawMessage(`{`)}); !errors.Is(err, derrors.ErrInvalid) {
			t.Errorf("a body that is not JSON: %v, want ErrInvalid", err)
		}
	}},
	{"approvals/update_settles_once_and_filters", func(t *testing.T, s store.Store) {
		ctx := t.Context()
		for _, id := range []string{"ap-1", "ap-2"} {
			if _, _, err := s.CreateApproval(ctx, parked("acme", id, t0)); err != nil {
				t.Fatal(err)
			}
		}
		decided := t0.Add(time.Minute)
		settle := func(a *store.Approval) error {
			if a.Status != store.ApprovalPending {
				return derrors.Conflictf("approval %s is already %s", a.ID, a.Status)
			}
			a.Status, a.DecidedBy, a.DecidedAt = store.ApprovalApproved, "bob", &decided
			return nil
		}
		got, err := s.UpdateApproval(ctx, "acme", "ap-1", settle)
		if err != nil || got.Status != store.ApprovalApproved || got.DecidedBy != "bob" {
			t.Fatalf("UpdateApproval = %+v, %v; want approved by bob", got, err)
		}
		got, err = s.UpdateApproval(ctx, "acme", "ap-1", settle)
		if !errors.Is(err, derrors.ErrConflict) || got.Status != store.ApprovalApproved {
			t.Errorf("settling again = %q, %v; want the stored approval and ErrConflict", got.Status, err)
		}
		if _, err := s.UpdateApproval(ctx, "acme", "nope", settle); !errors.Is(err, derrors.ErrNotFound) {
			t.Errorf("UpdateApproval of an unknown id: %v, want ErrNotFound", err)
		}
		// An expired, halted approval of the same agent conversation.
		if _, err := s.UpdateApproval(ctx, "acme", "ap-2", func(a *store.Approval) error {
			a.Status, a.Halted = store.ApprovalExpired, true
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		for _, tc := range []struct {
			f    store.ApprovalFilter
			want []string
		}{
			{store.ApprovalFilter{Workspace: "acme", Status: store.ApprovalApproved}, []string{"ap-1"}},
			{store.ApprovalFilter{Workspace: "acme", Status: store.ApprovalPending}, []string{}},
			{store.ApprovalFilter{Workspace: "acme", AgentID: "claude", Conversation: "c1", Halted: true}, []string{"ap-2"}},
			{store.ApprovalFilter{Workspace: "acme", AgentID: "claude", Conversation: "c2"}, []string{}},
		} {
			list, err := s.ListApprovals(ctx, tc.f)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, pluck(list, func(a store.Approval) string { return a.ID })); diff != "" {
				t.Errorf("ListApprovals(%+v) (-want +got):\n%s", tc.f, diff)
			}
		}
	}},
	{"approvals/policies_put_get", func(t *testing.T, s store.Store) {
		ctx := t.Context()
		if _, err := s.GetApprovalPolicies(ctx, "acme"); !errors.Is(err, derrors.ErrNotFound) {
			t.Errorf("GetApprovalPolicies before any: %v, want ErrNotFound", err)
		}
		p := store.ApprovalPolicies{Workspace: "acme", UpdatedBy: "alice", UpdatedAt: t0,
			Policies: []store.ApprovalPolicy{{Name: "deletes", Tools: []string{"delete_*"}, Expiry: "10m", OnExpiry: store.ExpiryHalt}}}
		if _, err := s.PutApprovalPolicies(ctx, p); err != nil {
			t.Fatal(err)
		}
		p.DefaultOff, p.Policies = true, nil
		if _, err := s.PutApprovalPolicies(ctx, p); err != nil {
			t.Fatal(err)
		}
		got, err := s.GetApprovalPolicies(ctx, "acme")
		if err != nil {
			t.Fatal(err)
		}
		want := store.ApprovalPolicies{Workspace: "acme", DefaultOff: true, Policies: []store.ApprovalPolicy{}, UpdatedBy: "alice", UpdatedAt: t0.UTC().Truncate(time.Microsecond)}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("GetApprovalPolicies (-want +got):\n%s", diff)
		}
	}},
}
