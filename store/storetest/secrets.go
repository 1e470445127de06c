package storetest

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"svc/internal/platform/derrors"
	"svc/store"
)

func putSecret(t *testing.T, tx store.Tx, s store.Secret) store.Secret {
	t.Helper()
	got, err := tx.PutSecret(t.Context(), s)
	if err != nil {
		t.Fatalf("PutSecret(%q, %q): %v", s.Workspace, s.Name, err)
	}
	return got
}

func listSecrets(t *testing.T, tx store.Tx, workspace string) []store.Secret {
	t.Helper()
	got, err := tx.ListSecrets(t.Context(), workspace)
	if err != nil {
		t.Fatalf("ListSecrets(%q): %v", workspace, err)
	}
	return got
}

var secretCases = []Case{
	{"secrets/put_get_list_delete", func(t *testing.T, s store.Store) {
		ctx := t.Context()
		// Ciphertext is bytes, not text: NUL and invalid UTF-8 included.
		hosts := []string{"nomad.example.com", "10.0.0.5:4646", "*.corp.example", "[::1]:9000"}
		b := putSecret(t, s, store.Secret{Workspace: "acme", Name: "b-token", Ciphertext: []byte{0, 0xff, 1}, AllowedHosts: hosts, CreatedBy: "user:alice", UpdatedAt: t0})
		a := putSecret(t, s, store.Secret{Workspace: "acme", Name: "A-key", Ciphertext: []byte("ct-a"), CreatedBy: "user:alice"})
		wantB := store.Secret{Workspace: "acme", Name: "b-token", Ciphertext: []byte{0, 0xff, 1}, AllowedHosts: hosts, CreatedBy: "user:alice", UpdatedAt: norm(t0)}
		if a.AllowedHosts != nil {
			t.Errorf("PutSecret without hosts: AllowedHosts = %q, want nil", a.AllowedHosts)
		}
		if diff := cmp.Diff(wantB, b); diff != "" {
			t.Errorf("PutSecret (-want +got):\n%s", diff)
		}
		if a.UpdatedAt.IsZero() || a.UpdatedAt.Location() != time.UTC {
			t.Errorf("UpdatedAt = %v, want now in UTC", a.UpdatedAt)
		}
		got, err := s.GetSecret(ctx, "acme", "b-token")
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(wantB, got); diff != "" {
			t.Errorf("GetSecret (-want +got):\n%s", diff)
		}
		// By name in byte order, with the hosts, and never the ciphertext.
		noCT := func(s store.Secret) store.Secret { s.Ciphertext = nil; return s }
		if diff := cmp.Diff([]store.Secret{noCT(a), noCT(wantB)}, listSecrets(t, s, "acme")); diff != "" {
			t.Errorf("ListSecrets (-want +got):\n%s", diff)
		}
		for range 2 { // absent is a no-op
			if err := s.DeleteSecret(ctx, "acme", "b-token"); err != nil {
				t.Fatal(err)
			}
		}
		_, err = s.GetSecret(ctx, "acme", "b-token")
		wantErr(t, "GetSecret after delete", err, derrors.ErrNotFound)
		if got := listSecrets(t, s, "acme"); len(got) != 1 || got[0].Name != "A-key" {
			t.Errorf("ListSecrets after delete = %+v, want A-key only", got)
		}
	}},
	{"secrets/put_replaces_and_keeps_the_creator", func(t *testing.T, s store.Store) {
		ctx := t.Context()
		putSecret(t, s, store.Secret{Workspace: "acme", Name: "k", Ciphertext: []byte("old"), AllowedHosts: []string{"old.example"}, CreatedBy: "user:alice", UpdatedAt: t0})
		later := t0.Add(time.Hour)
		got := putSecret(t, s, store.Secret{Workspace: "acme", Name: "k", Ciphertext: []byte("new"), AllowedHosts: []string{"new.example:443"}, CreatedBy: "user:bob", UpdatedAt: later})
		// The hosts are replaced with the value, never merged.
		want := store.Secret{Workspace: "acme", Name: "k", Ciphertext: []byte("new"), AllowedHosts: []string{"new.example:443"}, CreatedBy: "user:alice", UpdatedAt: norm(later)}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("replacing PutSecret (-want +got):\n%s", diff)
		}
		stored, err := s.GetSecret(ctx, "acme", "k")
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, stored); diff != "" {
			t.Errorf("GetSecret after replace (-want +got):\n%s", diff)
		}
		if n := len(listSecrets(t, s, "acme")); n != 1 {
			t.Errorf("%d secrets, want 1", n)
		}
		// Replacing without hosts leaves none.
		putSecret(t, s, store.Secret{Workspace: "acme", Name: "k", Ciphertext: []byte("newer"), AllowedHosts: []string{}})
		if stored, err := s.GetSecret(ctx, "acme", "k"); err != nil || stored.AllowedHosts != nil {
			t.Errorf("GetSecret after a replace without hosts = %q, %v; want no hosts", stored.AllowedHosts, err)
		}
	}},
	{"secrets/workspace_scoping", func(t *testing.T, s store.Store) {
		ctx := t.Context()
		putSecret(t, s, store.Secret{Workspace: "acme", Name: "k", Ciphertext: []byte("acme's")})
		_, err := s.GetSecret(ctx, "globex", "k")
		wantErr(t, "GetSecret(globex, k)", err, derrors.ErrNotFound)
		if got := listSecrets(t, s, "globex"); len(got) != 0 {
			t.Errorf("ListSecrets(globex) = %+v, want none", got)
		}
		if err := s.DeleteSecret(ctx, "globex", "k"); err != nil {
			t.Fatal(err)
		}
		// globex's secret of the same name is its own.
		putSecret(t, s, store.Secret{Workspace: "globex", Name: "k", Ciphertext: []byte("globex's")})
		got, err := s.GetSecret(ctx, "acme", "k")
		if err != nil {
			t.Fatal(err)
		}
		if string(got.Ciphertext) != "acme's" {
			t.Errorf("acme's secret = %q, want it untouched", got.Ciphertext)
		}
	}},
	{"secrets/invalid_input", func(t *testing.T, s store.Store) {
		ctx := t.Context()
		for _, tc := range []struct {
			name string
			s    store.Secret
		}{
			{"no workspace", store.Secret{Name: "k", Ciphertext: []byte("x")}},
			{"no name", store.Secret{Workspace: "acme", Ciphertext: []byte("x")}},
			{"no ciphertext", store.Secret{Workspace: "acme", Name: "k"}},
			{"name with NUL", store.Secret{Workspace: "acme", Name: "k\x00", Ciphertext: []byte("x")}},
			{"host with NUL", store.Secret{Workspace: "acme", Name: "k", Ciphertext: []byte("x"), AllowedHosts: []string{"a\x00"}}},
		} {
			_, err := s.PutSecret(ctx, tc.s)
			wantErr(t, tc.name, err, derrors.ErrInvalid)
		}
		if got := listSecrets(t, s, "acme"); len(got) != 0 {
			t.Errorf("ListSecrets = %+v, want none stored", got)
		}
	}},
	{"secrets/in_a_transaction", func(t *testing.T, s store.Store) {
		ctx := t.Context()
		err := s.Transact(ctx, func(tx store.Tx) error {
			putSecret(t, tx, store.Secret{Workspace: "acme", Name: "k", Ciphertext: []byte("x")})
			if _, err := tx.GetSecret(ctx, "acme", "k"); err != nil {
				t.Errorf("GetSecret in the transaction: %v", err)
			}
			return errAbort
		})
		wantErr(t, "Transact", err, errAbort)
		_, err = s.GetSecret(ctx, "acme", "k")
		wantErr(t, "GetSecret after rollback", err, derrors.ErrNotFound)
	}},
}
