package storetest

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"svc/internal/platform/derrors"
	"svc/store"
)

// notification returns a valid run_completed notification for recipient.
func notification(workspace, id, recipient string, at time.Time) store.Notification {
	return store.Notification{
		ID: id, Workspace: workspace, Recipient: recipient, Kind: "run_completed",
		Title: "Run " + id + " completed", CreatedAt: at,
	}
}

// addNotification adds n or fails t.
func addNotification(t *testing.T, tx store.Tx, n store.Notification) (store.Notification, bool) {
	t.Helper()
	got, created, err := tx.AddNotification(t.Context(), n)
	if err != nil {
		t.Fatalf("AddNotification(%q, %q): %v", n.Workspace, n.ID, err)
	}
	return got, created
}

// listNotifications lists a feed or fails t.
func listNotifications(t *testing.T, tx store.Tx, workspace, recipient string, unreadOnly bool, limit int) []store.Notification {
	t.Helper()
	got, err := tx.ListNotifications(t.Context(), workspace, recipient, unreadOnly, limit)
	if err != nil {
		t.Fatalf("ListNotifications(%q, %q, %t, %d): %v", workspace, recipient, unreadOnly, limit, err)
	}
	return got
}

// markRead marks notifications read or fails t, returning the count.
func markRead(t *testing.T, tx store.Tx, workspace, recipient string, ids []string, all bool, at time.Time) int {
	t.Helper()
	n, err := tx.MarkNotificationsRead(t.Context(), workspace, recipient, ids, all, at)
	if err != nil {
		t.Fatalf("MarkNotificationsRead(%q, %q, %q, %t): %v", workspace, recipient, ids, all, err)
	}
	return n
}

func notificationIDs(ns []store.Notification) []string {
	return pluck(ns, func(n store.Notification) string { return n.ID })
}

var notificationCases = []Case{
	{"notifications/add_is_once_per_id", func(t *testing.T, s store.Store) {
		in := notification("acme", "run_completed:run-1", "user:alice", t0)
		in.Body = "All 12 graders passed."
		in.Link = json.RawMessage(`{"runId": "run-1", "scorecardId": "sc-1"}`)
		got, created := addNotification(t, s, in)
		if !created {
			t.Error("first add: created = false, want true")
		}
		want := in
		want.CreatedAt = norm(t0)
		if diff := cmp.Diff(want, got, jsonEqual); diff != "" {
			t.Errorf("AddNotification (-want +got):\n%s", diff)
		}
		retry := notification("acme", "run_completed:run-1", "user:alice", t0.Add(time.Hour))
		retry.Title = "a retried activity's title"
		got, created = addNotification(t, s, retry)
		if created {
			t.Error("second add of the id: created = true, want false")
		}
		if diff := cmp.Diff(want, got, jsonEqual); diff != "" {
			t.Errorf("second AddNotification returns (-stored +got):\n%s", diff)
		}
		if diff := cmp.Diff([]store.Notification{want}, listNotifications(t, s, "acme", "user:alice", false, 0), jsonEqual); diff != "" {
			t.Errorf("ListNotifications (-want +got):\n%s", diff)
		}
		stamped, _ := addNotification(t, s, notification("acme", "n-2", "user:alice", time.Time{}))
		wantStamped(t, "CreatedAt", stamped.CreatedAt)
		if stamped.ReadAt != nil || stamped.Link != nil {
			t.Errorf("ReadAt, Link = %v, %s, want nil: none was given", stamped.ReadAt, stamped.Link)
		}
	}},
	{"notifications/list_newest_first_per_recipient", func(t *testing.T, s store.Store) {
		// n-b and n-c share a CreatedAt: the id breaks the tie, descending.
		for _, n := range []store.Notification{
			notification("acme", "n-a", "user:alice", t0),
			notification("acme", "n-b", "user:alice", t0.Add(time.Minute)),
			notification("acme", "n-c", "user:alice", t0.Add(time.Minute)),
			notification("acme", "n-d", "user:alice", t0.Add(2*time.Minute)),
			notification("acme", "n-bob", "user:bob", t0.Add(3*time.Minute)),
			notification("globex", "n-g", "user:alice", t0.Add(3*time.Minute)),
		} {
			addNotification(t, s, n)
		}
		for _, tc := range []struct {
			workspace, recipient string
			limit                int
			want                 []string
		}{
			{"acme", "user:alice", 0, []string{"n-d", "n-c", "n-b", "n-a"}},
			{"acme", "user:alice", 2, []string{"n-d", "n-c"}},
			{"acme", "user:bob", 0, []string{"n-bob"}},
			{"globex", "user:alice", 0, []string{"n-g"}},
			{"globex", "user:bob", 0, []string{}},
		} {
			got := listNotifications(t, s, tc.workspace, tc.recipient, false, tc.limit)
			if diff := cmp.Diff(tc.want, notificationIDs(got)); diff != "" {
				t.Errorf("ListNotifications(%s, %s, limit %d) (-want +got):\n%s", tc.workspace, tc.recipient, tc.limit, diff)
			}
		}
	}},
	{"notifications/default_limit_is_50", func(t *testing.T, s store.Store) {
		err := s.Transact(t.Context(), func(tx store.Tx) error {
			for i := range 51 {
				addNotification(t, tx, notification("acme", fmt.Sprintf("n-%02d", i), "user:alice", t0.Add(time.Duration(i)*time.Second)))
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if got := listNotifications(t, s, "acme", "user:alice", false, 0); len(got) != 50 || got[0].ID != "n-50" {
			t.Errorf("ListNotifications without a limit = %d, want the newest 50", len(got))
		}
	}},
	{"notifications/mark_read_touches_only_the_recipients_unread_rows", func(t *testing.T, s store.Store) {
		for _, n := range []store.Notification{
			notification("acme", "a1", "user:alice", t0),
			notification("acme", "a2", "user:alice", t0.Add(time.Minute)),
			notification("acme", "a3", "user:alice", t0.Add(2*time.Minute)),
			notification("acme", "b1", "user:bob", t0.Add(3*time.Minute)),
			notification("globex", "a1", "user:alice", t0),
		} {
			addNotification(t, s, n)
		}
		first := t0.Add(time.Hour)
		// bob's id and an unknown one are skipped, a duplicate counts once.
		if n := markRead(t, s, "acme", "user:alice", []string{"a1", "a2", "a2", "b1", "nope"}, false, first); n != 2 {
			t.Errorf("first mark = %d, want 2", n)
		}
		if n := markRead(t, s, "acme", "user:alice", []string{"a1", "a2"}, false, first.Add(time.Hour)); n != 0 {
			t.Errorf("repeated mark = %d, want 0", n)
		}
		got := listNotifications(t, s, "acme", "user:alice", false, 0)
		readAt := pluck(got, func(n store.Notification) *time.Time { return n.ReadAt })
		wantAt := norm(first)
		if diff := cmp.Diff([]*time.Time{nil, &wantAt, &wantAt}, readAt); diff != "" {
			t.Errorf("ReadAt of a3, a2, a1 (-want +got): the first mark's time, kept\n%s", diff)
		}
		if diff := cmp.Diff([]string{"a3"}, notificationIDs(listNotifications(t, s, "acme", "user:alice", true, 0))); diff != "" {
			t.Errorf("unread (-want +got):\n%s", diff)
		}
		if n := markRead(t, s, "acme", "user:alice", nil, true, first); n != 1 {
			t.Errorf("mark all = %d, want 1 (a3)", n)
		}
		if n := markRead(t, s, "acme", "user:alice", nil, true, first); n != 0 {
			t.Errorf("repeated mark all = %d, want 0", n)
		}
		if n := markRead(t, s, "acme", "user:alice", nil, false, first); n != 0 {
			t.Errorf("mark of no ids = %d, want 0", n)
		}
		for _, tc := range []struct{ workspace, recipient, id string }{{"acme", "user:bob", "b1"}, {"globex", "user:alice", "a1"}} {
			unread := listNotifications(t, s, tc.workspace, tc.recipient, true, 0)
			if diff := cmp.Diff([]string{tc.id}, notificationIDs(unread)); diff != "" {
				t.Errorf("%s's unread in %s (-want +got): untouched by alice's marks in acme\n%s", tc.recipient, tc.workspace, diff)
			}
		}
	}},
	{"notifications/delete", func(t *testing.T, s store.Store) {
		ctx := t.Context()
		addNotification(t, s, notification("acme", "approval:s1", "user:alice", t0))
		addNotification(t, s, notification("globex", "approval:s1", "user:alice", t0))
		for range 2 { // absent is a no-op
			if err := s.DeleteNotification(ctx, "acme", "approval:s1"); err != nil {
				t.Fatal(err)
			}
		}
		if got := listNotifications(t, s, "acme", "user:alice", false, 0); len(got) != 0 {
			t.Errorf("acme's feed after delete = %v, want empty", notificationIDs(got))
		}
		if got := listNotifications(t, s, "globex", "user:alice", false, 0); len(got) != 1 {
			t.Errorf("globex's feed = %v, want its notification untouched", notificationIDs(got))
		}
		// The next ask pings again.
		if _, created := addNotification(t, s, notification("acme", "approval:s1", "user:alice", t0.Add(time.Hour))); !created {
			t.Error("add after delete: created = false, want true")
		}
	}},
	{"notifications/invalid_input", func(t *testing.T, s store.Store) {
		ctx := t.Context()
		bad := func(edit func(n *store.Notification)) store.Notification {
			n := notification("acme", "n-1", "user:alice", t0)
			edit(&n)
			return n
		}
		for _, tc := range []struct {
			name string
			n    store.Notification
		}{
			{"no workspace", bad(func(n *store.Notification) { n.Workspace = "" })},
			{"no id", bad(func(n *store.Notification) { n.ID = "" })},
			{"no recipient", bad(func(n *store.Notification) { n.Recipient = "" })},
			{"no kind", bad(func(n *store.Notification) { n.Kind = "" })},
			{"no title", bad(func(n *store.Notification) { n.Title = "" })},
			{"body with NUL", bad(func(n *store.Notification) { n.Body = "a\x00" })},
			{"link not JSON", bad(func(n *store.Notification) { n.Link = json.RawMessage(`{"runId":`) })},
		} {
			_, _, err := s.AddNotification(ctx, tc.n)
			wantErr(t, "AddNotification: "+tc.name, err, derrors.ErrInvalid)
		}
		_, err := s.ListNotifications(ctx, "acme", "user:alice", false, -1)
		wantErr(t, "ListNotifications with a negative limit", err, derrors.ErrInvalid)
		_, err = s.MarkNotificationsRead(ctx, "acme", "user:alice", []string{"a\xff"}, false, t0)
		wantErr(t, "MarkNotificationsRead of an id not UTF-8", err, derrors.ErrInvalid)
		if got := listNotifications(t, s, "acme", "user:alice", false, 0); len(got) != 0 {
			t.Errorf("ListNotifications = %v, want nothing stored", notificationIDs(got))
		}
	}},
}
