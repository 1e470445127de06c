package storetest

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"svc/internal/platform/derrors"
	"svc/store"
)

// putWebhookSecret puts s or fails t.
func putWebhookSecret(t *testing.T, tx store.Tx, s store.WebhookSecret) store.WebhookSecret {
	t.Helper()
	got, err := tx.PutWebhookSecret(t.Context(), s)
	if err != nil {
		t.Fatalf("PutWebhookSecret(%q): %v", s.Workspace, err)
	}
	return got
}

// addDelivery records d or fails t.
func addDelivery(t *testing.T, tx store.Tx, d store.WebhookDelivery) {
	t.Helper()
	if err := tx.AddWebhookDelivery(t.Context(), d); err != nil {
		t.Fatalf("AddWebhookDelivery(%q, %q, %d): %v", d.Workspace, d.MessageID, d.Attempt, err)
	}
}

// listDeliveries lists a run's attempts or fails t.
func listDeliveries(t *testing.T, tx store.Tx, workspace, run string) []store.WebhookDelivery {
	t.Helper()
	got, err := tx.ListWebhookDeliveries(t.Context(), workspace, run)
	if err != nil {
		t.Fatalf("ListWebhookDeliveries(%q, %q): %v", workspace, run, err)
	}
	return got
}

// delivery is attempt of message msg for run, at t0 plus attempt minutes.
func delivery(workspace, msg, run string, attempt, status int) store.WebhookDelivery {
	return store.WebhookDelivery{
		Workspace: workspace, MessageID: msg, RunID: run, URL: "https://hooks.example.com/svc?token=t",
		Attempt: attempt, Status: status, At: t0.Add(time.Duration(attempt) * time.Minute),
	}
}

var webhookCases = []Case{
	{"webhooks/secret_put_get_rotate", func(t *testing.T, s store.Store) {
		ctx := t.Context()
		_, err := s.GetWebhookSecret(ctx, "acme")
		wantErr(t, "GetWebhookSecret before any", err, derrors.ErrNotFound)
		first := putWebhookSecret(t, s, store.WebhookSecret{Workspace: "acme", Ciphertext: []byte{0, 0xff, 1}, CreatedBy: "user:alice", RotatedAt: t0})
		want := store.WebhookSecret{Workspace: "acme", Ciphertext: []byte{0, 0xff, 1}, CreatedBy: "user:alice", RotatedAt: norm(t0)}
		if diff := cmp.Diff(want, first); diff != "" {
			t.Errorf("PutWebhookSecret (-want +got):\n%s", diff)
		}
		got, err := s.GetWebhookSecret(ctx, "acme")
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("GetWebhookSecret (-want +got):\n%s", diff)
		}
		// A rotation replaces the secret; its rotator made the new one.
		rotated := putWebhookSecret(t, s, store.WebhookSecret{Workspace: "acme", Ciphertext: []byte("new"), CreatedBy: "user:bob"})
		wantStamped(t, "RotatedAt", rotated.RotatedAt)
		got, err = s.GetWebhookSecret(ctx, "acme")
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(rotated, got); diff != "" {
			t.Errorf("GetWebhookSecret after rotation (-want +got):\n%s", diff)
		}
		_, err = s.GetWebhookSecret(ctx, "globex")
		wantErr(t, "GetWebhookSecret(globex)", err, derrors.ErrNotFound)
		for _, bad := range []store.WebhookSecret{{Ciphertext: []byte("x")}, {Workspace: "acme"}, {Workspace: "acme", Ciphertext: []byte("x"), CreatedBy: "\xff"}} {
			_, err := s.PutWebhookSecret(ctx, bad)
			wantErr(t, "PutWebhookSecret of an invalid secret", err, derrors.ErrInvalid)
		}
	}},
	{"webhooks/deliveries_once_per_attempt_oldest_first", func(t *testing.T, s store.Store) {
		ctx := t.Context()
		failed := delivery("acme", "msg-1", "run-1", 1, 0)
		failed.Error = "connection refused"
		for _, d := range []store.WebhookDelivery{
			delivery("acme", "msg-1", "run-1", 2, 200),
			failed,
			delivery("acme", "msg-2", "run-2", 1, 200),
			delivery("globex", "msg-1", "run-1", 1, 500),
		} {
			addDelivery(t, s, d)
		}
		// A retried record of attempt 1 is skipped: the first stays.
		addDelivery(t, s, delivery("acme", "msg-1", "run-1", 1, 204))
		want := []store.WebhookDelivery{failed, delivery("acme", "msg-1", "run-1", 2, 200)}
		for i := range want {
			want[i].At = norm(want[i].At)
		}
		if diff := cmp.Diff(want, listDeliveries(t, s, "acme", "run-1")); diff != "" {
			t.Errorf("ListWebhookDeliveries(acme, run-1) (-want +got):\n%s", diff)
		}
		if got := listDeliveries(t, s, "globex", "run-1"); len(got) != 1 || got[0].Status != 500 {
			t.Errorf("globex's deliveries = %+v, want its one attempt", got)
		}
		if got := listDeliveries(t, s, "acme", "run-9"); len(got) != 0 {
			t.Errorf("deliveries of a run without any = %+v, want none", got)
		}
		for _, bad := range []store.WebhookDelivery{
			{MessageID: "m", URL: "https://x"},
			{Workspace: "acme", URL: "https://x"},
			{Workspace: "acme", MessageID: "m"},
			{Workspace: "acme", MessageID: "m", URL: "https://x", Attempt: -1},
			{Workspace: "acme", MessageID: "m", URL: "https://x", Error: "a\x00"},
		} {
			err := s.AddWebhookDelivery(ctx, bad)
			wantErr(t, "AddWebhookDelivery of an invalid attempt", err, derrors.ErrInvalid)
		}
	}},
}
