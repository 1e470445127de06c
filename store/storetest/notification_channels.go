package storetest

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"svc/internal/platform/derrors"
	"svc/store"
)

func channel(workspace, id, owner string, kinds ...string) store.NotificationChannel {
	return store.NotificationChannel{ID: id, Workspace: workspace, Owner: owner, Type: store.ChannelWebhook,
		URL: "https://hooks.example/" + id, Kinds: kinds, Secret: []byte("sealed"), CreatedAt: t0}
}

func createChannel(t *testing.T, s store.Store, c store.NotificationChannel) store.NotificationChannel {
	t.Helper()
	got, err := s.CreateNotificationChannel(t.Context(), c)
	if err != nil {
		t.Fatalf("CreateNotificationChannel(%q): %v", c.ID, err)
	}
	return got
}

func queued(t *testing.T, s store.Store, workspace string) []string {
	t.Helper()
	ds, err := s.ListNotificationDeliveries(t.Context(), workspace)
	if err != nil {
		t.Fatalf("ListNotificationDeliveries: %v", err)
	}
	return pluck(ds, func(d store.NotificationDelivery) string { return d.NotificationID + "->" + d.ChannelID })
}

// notificationChannelCases are the channels', the outbox's and the sweep's.
var notificationChannelCases = slices.Concat(channelOutboxCases, notificationSweepCases)

var channelOutboxCases = []Case{
	{"notification_channels/owner_scoped", func(t *testing.T, s store.Store) {
		ctx := t.Context()
		a := createChannel(t, s, channel("acme", "nch_a", "user:alice", "run_completed"))
		createChannel(t, s, channel("acme", "nch_b", "user:bob"))
		if _, err := s.CreateNotificationChannel(ctx, channel("acme", "nch_a", "user:alice")); !errors.Is(err, derrors.ErrConflict) {
			t.Errorf("a second nch_a: %v, want ErrConflict", err)
		}
		list, err := s.ListNotificationChannels(ctx, "acme", "user:alice")
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff([]store.NotificationChannel{a}, list); diff != "" {
			t.Errorf("alice's channels (-want +got):\n%s", diff)
		}
		if err := s.DeleteNotificationChannel(ctx, "acme", "user:alice", "nch_b"); !errors.Is(err, derrors.ErrNotFound) {
			t.Errorf("alice deleting bob's channel: %v, want ErrNotFound", err)
		}
		if _, err := s.EnableNotificationChannel(ctx, "acme", "user:alice", "nch_b"); !errors.Is(err, derrors.ErrNotFound) {
			t.Errorf("alice enabling bob's channel: %v, want ErrNotFound", err)
		}
		if _, err := s.GetNotificationChannel(ctx, "globex", "nch_a"); !errors.Is(err, derrors.ErrNotFound) {
			t.Errorf("nch_a from another workspace: %v, want ErrNotFound", err)
		}
		if err := s.DeleteNotificationChannel(ctx, "acme", "user:alice", "nch_a"); err != nil {
			t.Fatal(err)
		}
		if _, err := s.GetNotificationChannel(ctx, "acme", "nch_a"); !errors.Is(err, derrors.ErrNotFound) {
			t.Errorf("a deleted channel: %v, want ErrNotFound", err)
		}
	}},
	{"notification_channels/add_notification_queues_subscribed", func(t *testing.T, s store.Store) {
		createChannel(t, s, channel("acme", "nch_runs", "user:alice", "run_completed", "run_failed"))
		createChannel(t, s, channel("acme", "nch_all", "user:alice"))
		createChannel(t, s, channel("acme", "nch_sc", "user:alice", "scorecard_completed"))
		createChannel(t, s, channel("acme", "nch_bob", "user:bob"))
		createChannel(t, s, channel("globex", "nch_g", "user:alice"))
		n := notification("acme", "run_completed:r1", "user:alice", t0)
		addNotification(t, s, n)
		addNotification(t, s, n) // a retried writer queues nothing twice
		if diff := cmp.Diff([]string{"run_completed:r1->nch_all", "run_completed:r1->nch_runs"}, queued(t, s, "acme")); diff != "" {
			t.Errorf("queued deliveries (-want +got):\n%s", diff)
		}
		if got := queued(t, s, "globex"); len(got) != 0 {
			t.Errorf("another workspace's channel got %v", got)
		}
	}},
	{"notification_channels/claim_retry_disable", func(t *testing.T, s store.Store) {
		ctx := t.Context()
		createChannel(t, s, channel("acme", "nch_1", "user:alice"))
		addNotification(t, s, notification("acme", "n1", "user:alice", t0))
		addNotification(t, s, notification("acme", "n2", "user:alice", t0.Add(time.Second)))
		now := t0.Add(time.Minute)
		got, err := s.ClaimNotificationDeliveries(ctx, now, time.Minute, 10)
		if err != nil || len(got) != 2 {
			t.Fatalf("claim = %v, %v; want both", got, err)
		}
		if again, _ := s.ClaimNotificationDeliveries(ctx, now, time.Minute, 10); len(again) != 0 {
			t.Errorf("a leased delivery was claimed again: %v", again)
		}
		d := got[0]
		d.Attempts, d.NextAt, d.LastError = 1, now.Add(time.Hour), "receiver answered 500"
		if err := s.RetryNotificationDelivery(ctx, d); err != nil {
			t.Fatal(err)
		}
		if err := s.DeleteNotificationDelivery(ctx, "acme", got[1].NotificationID, "nch_1"); err != nil {
			t.Fatal(err)
		}
		if c, _ := s.ClaimNotificationDeliveries(ctx, now.Add(2*time.Minute), time.Minute, 10); len(c) != 0 {
			t.Errorf("a delivery not yet due was claimed: %v", c)
		}
		c, _ := s.ClaimNotificationDeliveries(ctx, now.Add(2*time.Hour), time.Minute, 10)
		if len(c) != 1 || c[0].Attempts != 1 || c[0].LastError != "receiver answered 500" {
			t.Errorf("the retried delivery = %+v", c)
		}
		for i := 1; i <= 2; i++ {
			ch, err := s.RecordChannelResult(ctx, "acme", "nch_1", false, "boom")
			if err != nil || ch.Failures != i || ch.LastError != "boom" {
				t.Fatalf("failure %d: %+v, %v", i, ch, err)
			}
		}
		if ch, _ := s.RecordChannelResult(ctx, "acme", "nch_1", true, ""); ch.Failures != 0 {
			t.Errorf("a success left failures at %d", ch.Failures)
		}
		changed, err := s.DisableNotificationChannel(ctx, "acme", "nch_1", now)
		if err != nil || !changed {
			t.Fatalf("disable = %t, %v", changed, err)
		}
		if changed, _ := s.DisableNotificationChannel(ctx, "acme", "nch_1", now); changed {
			t.Error("disabling twice changed it twice")
		}
		if got := queued(t, s, "acme"); len(got) != 0 {
			t.Errorf("a disabled channel keeps queued deliveries %v", got)
		}
		addNotification(t, s, notification("acme", "n3", "user:alice", now))
		if got := queued(t, s, "acme"); len(got) != 0 {
			t.Errorf("a disabled channel got a new delivery %v", got)
		}
		ch, err := s.EnableNotificationChannel(ctx, "acme", "user:alice", "nch_1")
		if err != nil || ch.DisabledAt != nil || ch.Failures != 0 {
			t.Fatalf("enable = %+v, %v", ch, err)
		}
		addNotification(t, s, notification("acme", "n4", "user:alice", now))
		if diff := cmp.Diff([]string{"n4->nch_1"}, queued(t, s, "acme")); diff != "" {
			t.Errorf("after re-enabling (-want +got):\n%s", diff)
		}
	}},
}

// approvalNotice is an agent_approval_requested notification for alice.
func approvalNotice(ws, id string) store.Notification {
	n := notification(ws, id, "alice", t0)
	n.Kind = "agent_approval_requested"
	return n
}

// parkedWith is a pending approval naming notification notice.
func parkedWith(ws, id, notice string) store.Approval {
	a := parked(ws, id, t0)
	a.Notification = notice
	return a
}

var notificationSweepCases = []Case{
	// Spec §3: an agent_approval_requested notification is deleted on a
	// decision, an expiry or a sweep; the sweep deletes those no pending
	// approval of their workspace names (decided or expired by a path
	// that skipped the delete, or gone), read or not, and nothing else.
	{"notification_channels/sweep_deletes_approval_notices_without_a_pending_approval", func(t *testing.T, s store.Store) {
		ctx := t.Context()
		const kind = "agent_approval_requested"
		settle := func(ws, id, status string) {
			t.Helper()
			if _, err := s.UpdateApproval(ctx, ws, id, func(a *store.Approval) error { a.Status = status; return nil }); err != nil {
				t.Fatalf("settling %s: %v", id, err)
			}
		}
		for _, c := range []struct{ ws, approval, notice, status string }{
			{"acme", "ap-pending", "n-pending", store.ApprovalPending},
			{"acme", "ap-denied", "n-denied", store.ApprovalDenied},
			{"acme", "ap-expired", "n-expired", store.ApprovalExpired},
			{"acme", "ap-approved", "n-approved", store.ApprovalApproved},
			// One session's notification named by a settled approval and
			// a pending one: the pending one keeps it.
			{"acme", "ap-shared-1", "n-shared", store.ApprovalDenied},
			{"acme", "ap-shared-2", "n-shared", store.ApprovalPending},
			// A pending approval of another workspace does not keep
			// acme's notification of the same id.
			{"globex", "ap-other", "n-denied", store.ApprovalPending},
		} {
			if _, _, err := s.CreateApproval(ctx, parkedWith(c.ws, c.approval, c.notice)); err != nil {
				t.Fatalf("CreateApproval(%s): %v", c.approval, err)
			}
			if c.status != store.ApprovalPending {
				settle(c.ws, c.approval, c.status)
			}
		}
		for _, id := range []string{"n-pending", "n-denied", "n-expired", "n-approved", "n-shared", "n-gone"} {
			addNotification(t, s, approvalNotice("acme", id))
		}
		addNotification(t, s, notification("acme", "run_completed:r1", "alice", t0))
		if n := markRead(t, s, "acme", "alice", []string{"n-denied"}, false, t0); n != 1 {
			t.Fatalf("marked %d read, want 1", n)
		}
		deleted, err := s.SweepApprovalNotifications(ctx, kind)
		if err != nil {
			t.Fatal(err)
		}
		if deleted != 4 {
			t.Errorf("the sweep deleted %d, want 4 (denied, expired, approved, gone)", deleted)
		}
		feed := pluck(listNotifications(t, s, "acme", "alice", false, 0), func(n store.Notification) string { return n.ID })
		slices.Sort(feed)
		if diff := cmp.Diff([]string{"n-pending", "n-shared", "run_completed:r1"}, feed); diff != "" {
			t.Errorf("after the sweep the feed (-want +got):\n%s", diff)
		}
		if again, err := s.SweepApprovalNotifications(ctx, kind); err != nil || again != 0 {
			t.Errorf("a second sweep = %d, %v; want 0", again, err)
		}
		if _, err := s.SweepApprovalNotifications(ctx, ""); !errors.Is(err, derrors.ErrInvalid) {
			t.Errorf("a sweep without a kind: %v, want ErrInvalid", err)
		}
	}},
}
