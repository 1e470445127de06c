package storetest

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"svc/internal/platform/derrors"
	"svc/store"
)

// hashOf is the SHA-256 of s, as the callers of Identity compute it.
func hashOf(s string) []byte {
	h := sha256.Sum256([]byte(s))
	return h[:]
}

// t0 is a fixed time, in a zone other than UTC and finer than a microsecond,
// so that round trips show the store's normalisation.
var t0 = time.Date(2025, 3, 4, 5, 6, 7, 891234567, time.FixedZone("CET", 3600))

// norm is t as the store keeps it.
func norm(t time.Time) time.Time { return t.UTC().Truncate(time.Microsecond) }

func createAPIKey(t *testing.T, tx store.Tx, k store.APIKey) store.APIKey {
	t.Helper()
	got, err := tx.CreateAPIKey(t.Context(), k)
	if err != nil {
		t.Fatalf("CreateAPIKey(%q): %v", k.ID, err)
	}
	return got
}

// key returns a valid key of workspace with id, hashing "secret-"+id.
func key(workspace, id string, createdAt time.Time) store.APIKey {
	return store.APIKey{
		ID: id, Workspace: workspace, Subject: "user:alice", Prefix: "ak_" + id, Kind: "api-key",
		Roles: []string{"admin"}, Hash: hashOf("secret-" + id), CreatedAt: createdAt,
	}
}

func putMember(t *testing.T, tx store.Tx, m store.Member) store.Member {
	t.Helper()
	got, err := tx.PutMember(t.Context(), m)
	if err != nil {
		t.Fatalf("PutMember(%q, %q): %v", m.Workspace, m.Subject, err)
	}
	return got
}

func createInvite(t *testing.T, tx store.Tx, inv store.Invite) store.Invite {
	t.Helper()
	got, err := tx.CreateInvite(t.Context(), inv)
	if err != nil {
		t.Fatalf("CreateInvite(%q): %v", inv.ID, err)
	}
	return got
}

// invite returns a valid invite of workspace with id, hashing "inv_"+id.
func invite(workspace, id string, createdAt, expiresAt time.Time) store.Invite {
	return store.Invite{ID: id, Workspace: workspace, Role: "member", Hash: hashOf("inv_" + id), CreatedAt: createdAt, ExpiresAt: expiresAt}
}

func createTeam(t *testing.T, tx store.Tx, workspace, id string) store.Team {
	t.Helper()
	got, err := tx.CreateTeam(t.Context(), store.Team{ID: id, Workspace: workspace, Name: "Team " + id, CreatedBy: "user:alice"})
	if err != nil {
		t.Fatalf("CreateTeam(%q, %q): %v", workspace, id, err)
	}
	return got
}

func addTeamMember(t *testing.T, tx store.Tx, workspace, team, subject string) store.TeamMember {
	t.Helper()
	got, err := tx.AddTeamMember(t.Context(), store.TeamMember{Workspace: workspace, TeamID: team, Subject: subject})
	if err != nil {
		t.Fatalf("AddTeamMember(%q, %q, %q): %v", workspace, team, subject, err)
	}
	return got
}

func teamsOf(t *testing.T, tx store.Tx, workspace, subject string) []string {
	t.Helper()
	got, err := tx.TeamsOf(t.Context(), workspace, subject)
	if err != nil {
		t.Fatalf("TeamsOf(%q, %q): %v", workspace, subject, err)
	}
	return got
}

func countAdmins(t *testing.T, tx store.Tx, workspace string) int {
	t.Helper()
	n, err := tx.CountAdmins(t.Context(), workspace)
	if err != nil {
		t.Fatalf("CountAdmins(%q): %v", workspace, err)
	}
	return n
}

func keyIDs(ks []store.APIKey) []string {
	return pluck(ks, func(k store.APIKey) string { return k.ID })
}

func inviteIDs(is []store.Invite) []string {
	return pluck(is, func(i store.Invite) string { return i.ID })
}

var apiKeyCases = []Case{
	{"identity/api_key_round_trip", func(t *testing.T, s store.Store) {
		ctx := t.Context()
		in := store.APIKey{
			ID: "key1", Workspace: "acme", Subject: "user:alice", Label: "CI", Prefix: "ak_3f9c", Kind: "api-key",
			Roles: []string{"member", "admin"}, Scopes: []string{"read", "write"}, Hash: hashOf("ak_3f9c..."),
			CreatedBy: "user:bob", CreatedAt: t0,
		}
		want := in
		want.CreatedAt = norm(t0)
		got := createAPIKey(t, s, in)
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("CreateAPIKey (-want +got):\n%s", diff)
		}
		byHash, err := s.APIKeyByHash(ctx, hashOf("ak_3f9c..."))
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, byHash); diff != "" {
			t.Errorf("APIKeyByHash (-want +got):\n%s", diff)
		}
		list, err := s.ListAPIKeys(ctx, "acme")
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff([]store.APIKey{want}, list); diff != "" {
			t.Errorf("ListAPIKeys (-want +got):\n%s", diff)
		}
	}},
	{"identity/api_key_defaults", func(t *testing.T, s store.Store) {
		before := time.Now().UTC().Truncate(time.Microsecond)
		k := key("acme", "k", time.Time{})
		k.Scopes = []string{}
		got := createAPIKey(t, s, k)
		if got.CreatedAt.Before(before) || got.CreatedAt.Location() != time.UTC || got.CreatedAt.Nanosecond()%1000 != 0 {
			t.Errorf("CreatedAt = %v, want now (after %v), UTC, to the microsecond", got.CreatedAt, before)
		}
		stored, err := s.APIKeyByHash(t.Context(), k.Hash)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(got, stored); diff != "" {
			t.Errorf("stored key differs from the returned one (-returned +stored):\n%s", diff)
		}
		if stored.Scopes != nil {
			t.Errorf("Scopes = %#v, want nil (no scopes: unrestricted)", stored.Scopes)
		}
	}},
	{"identity/api_key_duplicate_id_or_hash_is_conflict", func(t *testing.T, s store.Store) {
		ctx := t.Context()
		first := createAPIKey(t, s, key("acme", "k1", t0))
		sameID := key("acme", "k1", t0)
		sameID.Hash = hashOf("other")
		sameHash := key("globex", "k2", t0) // another workspace: hashes are global
		sameHash.Hash = first.Hash
		// Inside one transaction: a conflict must leave it usable.
		err := s.Transact(ctx, func(tx store.Tx) error {
			_, err := tx.CreateAPIKey(ctx, sameID)
			wantErr(t, "CreateAPIKey(same id)", err, derrors.ErrConflict)
			_, err = tx.CreateAPIKey(ctx, sameHash)
			wantErr(t, "CreateAPIKey(same hash)", err, derrors.ErrConflict)
			_, err = tx.CreateAPIKey(ctx, key("acme", "k3", t0))
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		got, err := s.APIKeyByHash(ctx, first.Hash)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(first, got); diff != "" {
			t.Errorf("the stored key changed (-want +got):\n%s", diff)
		}
		if _, err := s.APIKeyByHash(ctx, hashOf("other")); !errors.Is(err, derrors.ErrNotFound) {
			t.Errorf("APIKeyByHash of the refused key: err = %v, want ErrNotFound", err)
		}
	}},
	{"identity/api_key_unknown_hash_is_not_found", func(t *testing.T, s store.Store) {
		createAPIKey(t, s, key("acme", "k1", t0))
		_, err := s.APIKeyByHash(t.Context(), hashOf("nope"))
		wantErr(t, "APIKeyByHash(unknown)", err, derrors.ErrNotFound)
	}},
	{"identity/api_key_invalid", func(t *testing.T, s store.Store) {
		for _, tc := range []struct {
			name string
			edit func(*store.APIKey)
		}{
			{"no id", func(k *store.APIKey) { k.ID = "" }},
			{"no workspace", func(k *store.APIKey) { k.Workspace = "" }},
			{"no subject", func(k *store.APIKey) { k.Subject = "" }},
			{"no kind", func(k *store.APIKey) { k.Kind = "" }},
			{"no hash", func(k *store.APIKey) { k.Hash = nil }},
			{"hash is hex text", func(k *store.APIKey) { k.Hash = []byte(fmt.Sprintf("%x", k.Hash)) }},
			{"NUL in id", func(k *store.APIKey) { k.ID = "a\x00b" }},
			{"NUL in label", func(k *store.APIKey) { k.Label = "a\x00b" }},
		} {
			k := key("acme", "k", t0)
			tc.edit(&k)
			_, err := s.CreateAPIKey(t.Context(), k)
			wantErr(t, "CreateAPIKey("+tc.name+")", err, derrors.ErrInvalid)
		}
		if ks, err := s.ListAPIKeys(t.Context(), "acme"); err != nil || len(ks) != 0 {
			t.Errorf("ListAPIKeys = %v, %v; want none stored", ks, err)
		}
	}},
	{"identity/api_keys_list_oldest_first_in_their_workspace", func(t *testing.T, s store.Store) {
		ctx := t.Context()
		createAPIKey(t, s, key("acme", "b", t0.Add(time.Hour)))
		createAPIKey(t, s, key("acme", "c", t0))
		createAPIKey(t, s, key("globex", "g", t0.Add(-time.Hour)))
		createAPIKey(t, s, key("acme", "a", t0.Add(time.Hour))) // same time as b: id breaks the tie
		for _, tc := range []struct {
			workspace string
			want      []string
		}{
			{"acme", []string{"c", "a", "b"}},
			{"globex", []string{"g"}},
			{"initech", []string{}},
		} {
			got, err := s.ListAPIKeys(ctx, tc.workspace)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, keyIDs(got)); diff != "" {
				t.Errorf("ListAPIKeys(%q) ids (-want +got):\n%s", tc.workspace, diff)
			}
		}
	}},
	{"identity/api_key_delete_is_scoped_to_its_workspace", func(t *testing.T, s store.Store) {
		ctx := t.Context()
		k := createAPIKey(t, s, key("acme", "k1", t0))
		createAPIKey(t, s, key("acme", "k2", t0))
		for _, tc := range []struct{ workspace, id string }{{"globex", "k1"}, {"acme", "unknown"}} {
			if err := s.DeleteAPIKey(ctx, tc.workspace, tc.id); err != nil {
				t.Errorf("DeleteAPIKey(%q, %q) = %v, want a no-op", tc.workspace, tc.id, err)
			}
		}
		if _, err := s.APIKeyByHash(ctx, k.Hash); err != nil {
			t.Errorf("the key is gone after another workspace deleted its id: %v", err)
		}
		if err := s.DeleteAPIKey(ctx, "acme", "k1"); err != nil {
			t.Fatal(err)
		}
		_, err := s.APIKeyByHash(ctx, k.Hash)
		wantErr(t, "APIKeyByHash after delete", err, derrors.ErrNotFound)
		got, err := s.ListAPIKeys(ctx, "acme")
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff([]string{"k2"}, keyIDs(got)); diff != "" {
			t.Errorf("ListAPIKeys after delete (-want +got):\n%s", diff)
		}
	}},
	{"identity/api_key_grant_reads_the_members_role", func(t *testing.T, s store.Store) {
		ctx := t.Context()
		k := createAPIKey(t, s, key("acme", "k1", t0)) // subject user:alice
		grant := func(what string) store.APIKeyGrant {
			t.Helper()
			g, err := s.APIKeyGrantByHash(ctx, k.Hash)
			if err != nil {
				t.Fatalf("APIKeyGrantByHash %s: %v", what, err)
			}
			if diff := cmp.Diff(k, g.Key); diff != "" {
				t.Errorf("APIKeyGrantByHash %s: key (-want +got):\n%s", what, diff)
			}
			return g
		}
		putMember(t, s, store.Member{Workspace: "globex", Subject: "user:alice", Role: "admin"})
		if g := grant("with a membership elsewhere only"); g.MemberRole != "" || g.OwnerKeyFound {
			t.Errorf("grant = %+v, want no role: another workspace's membership does not count", g)
		}
		putMember(t, s, store.Member{Workspace: "acme", Subject: "user:alice", Role: "viewer"})
		if g := grant("of a viewer"); g.MemberRole != "viewer" || g.OwnerKeyFound {
			t.Errorf("grant = %+v, want member role viewer and no owner key", g)
		}
		if err := s.DeleteMember(ctx, "acme", "user:alice"); err != nil {
			t.Fatal(err)
		}
		if g := grant("after removal"); g.MemberRole != "" {
			t.Errorf("grant after removal = %+v, want no role", g)
		}
		_, err := s.APIKeyGrantByHash(ctx, hashOf("nope"))
		wantErr(t, "APIKeyGrantByHash(unknown)", err, derrors.ErrNotFound)
	}},
	{"identity/api_key_grant_reads_the_owner_key", func(t *testing.T, s store.Store) {
		ctx := t.Context()
		withSubject := func(k store.APIKey, subject string, roles ...string) store.APIKey {
			k.Subject = subject
			if roles != nil {
				k.Roles = roles
			}
			return k
		}
		tenant := createAPIKey(t, s, withSubject(key("acme", "t1", t0), store.KeySubjectPrefix+"t1"))
		minted := createAPIKey(t, s, withSubject(key("acme", "m1", t0), store.KeySubjectPrefix+"t1", "member"))
		foreign := createAPIKey(t, s, withSubject(key("globex", "f1", t0), store.KeySubjectPrefix+"t1"))
		upper := createAPIKey(t, s, withSubject(key("acme", "u1", t0), "KEY:t1"))
		for _, tc := range []struct {
			name      string
			k         store.APIKey
			wantFound bool
			wantRoles []string
		}{
			{"a key that is its own subject", tenant, true, []string{"admin"}},
			{"a key minted by it", minted, true, []string{"admin"}},
			{"a key naming another workspace's key", foreign, false, nil},
			{"a subject that only looks like a key subject", upper, false, nil},
		} {
			g, err := s.APIKeyGrantByHash(ctx, tc.k.Hash)
			if err != nil {
				t.Fatalf("%s: %v", tc.name, err)
			}
			if g.Key.ID != tc.k.ID || g.OwnerKeyFound != tc.wantFound || !cmp.Equal(g.OwnerKeyRoles, tc.wantRoles) || g.MemberRole != "" {
				t.Errorf("%s: grant = %+v, want key %s, owner key found %v with roles %v", tc.name, g, tc.k.ID, tc.wantFound, tc.wantRoles)
			}
		}
		if err := s.DeleteAPIKey(ctx, "acme", "t1"); err != nil {
			t.Fatal(err)
		}
		if g, err := s.APIKeyGrantByHash(ctx, minted.Hash); err != nil || g.OwnerKeyFound {
			t.Errorf("after deleting the owner key: grant = %+v, %v; want no owner key", g, err)
		}
	}},
}

var memberCases = []Case{
	{"identity/member_put_get_and_update", func(t *testing.T, s store.Store) {
		ctx := t.Context()
		want := store.Member{Workspace: "acme", Subject: "user:alice", Role: "member", Email: "alice@example.com", AddedAt: norm(t0)}
		got := putMember(t, s, store.Member{Workspace: "acme", Subject: "user:alice", Role: "member", Email: "alice@example.com", AddedAt: t0})
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("PutMember (-want +got):\n%s", diff)
		}
		// An update changes role and email and keeps the first AddedAt.
		want.Role, want.Email = "admin", ""
		got = putMember(t, s, store.Member{Workspace: "acme", Subject: "user:alice", Role: "admin", AddedAt: t0.Add(time.Hour)})
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("PutMember update (-want +got):\n%s", diff)
		}
		stored, err := s.GetMember(ctx, "acme", "user:alice")
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, stored); diff != "" {
			t.Errorf("GetMember (-want +got):\n%s", diff)
		}
		for _, tc := range []struct{ workspace, subject string }{{"globex", "user:alice"}, {"acme", "user:bob"}} {
			_, err := s.GetMember(ctx, tc.workspace, tc.subject)
			wantErr(t, fmt.Sprintf("GetMember(%q, %q)", tc.workspace, tc.subject), err, derrors.ErrNotFound)
		}
	}},
	{"identity/member_added_at_defaults_to_now", func(t *testing.T, s store.Store) {
		before := time.Now().UTC().Truncate(time.Microsecond)
		got := putMember(t, s, store.Member{Workspace: "acme", Subject: "user:alice", Role: "viewer"})
		if got.AddedAt.Before(before) || got.AddedAt.Location() != time.UTC || got.AddedAt.Nanosecond()%1000 != 0 {
			t.Errorf("AddedAt = %v, want now (after %v), UTC, to the microsecond", got.AddedAt, before)
		}
	}},
	{"identity/ensure_member_keeps_an_existing_membership", func(t *testing.T, s store.Store) {
		ctx := t.Context()
		first, err := s.EnsureMember(ctx, store.Member{Workspace: "acme", Subject: "user:alice", Role: "admin", Email: "a@x", AddedAt: t0})
		if err != nil {
			t.Fatal(err)
		}
		want := store.Member{Workspace: "acme", Subject: "user:alice", Role: "admin", Email: "a@x", AddedAt: norm(t0)}
		if diff := cmp.Diff(want, first); diff != "" {
			t.Errorf("EnsureMember of a new member (-want +got):\n%s", diff)
		}
		again, err := s.EnsureMember(ctx, store.Member{Workspace: "acme", Subject: "user:alice", Role: "viewer", AddedAt: t0.Add(time.Hour)})
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, again); diff != "" {
			t.Errorf("EnsureMember of an existing member did not return it unchanged (-want +got):\n%s", diff)
		}
		if n := countAdmins(t, s, "acme"); n != 1 {
			t.Errorf("CountAdmins = %d after EnsureMember(viewer) of an admin, want 1", n)
		}
	}},
	{"identity/members_and_memberships_are_ordered", func(t *testing.T, s store.Store) {
		ctx := t.Context()
		for _, m := range []struct{ workspace, subject string }{
			{"acme", "user:carol"}, {"acme", "user:alice"}, {"globex", "user:alice"}, {"acme", "user:Bob"}, {"_shared", "user:alice"},
		} {
			putMember(t, s, store.Member{Workspace: m.workspace, Subject: m.subject, Role: "member"})
		}
		members, err := s.ListMembers(ctx, "acme")
		if err != nil {
			t.Fatal(err)
		}
		var subjects []string
		for _, m := range members {
			subjects = append(subjects, m.Subject)
			if m.Workspace != "acme" {
				t.Errorf("ListMembers(acme) has a member of %q", m.Workspace)
			}
		}
		// Byte order, whatever the database's collation.
		if diff := cmp.Diff([]string{"user:Bob", "user:alice", "user:carol"}, subjects); diff != "" {
			t.Errorf("ListMembers(acme) subjects (-want +got):\n%s", diff)
		}
		ms, err := s.ListMemberships(ctx, "user:alice")
		if err != nil {
			t.Fatal(err)
		}
		var workspaces []string
		for _, m := range ms {
			workspaces = append(workspaces, m.Workspace)
		}
		if diff := cmp.Diff([]string{"_shared", "acme", "globex"}, workspaces); diff != "" {
			t.Errorf("ListMemberships(alice) workspaces (-want +got):\n%s", diff)
		}
		for _, list := range []func() ([]store.Member, error){
			func() ([]store.Member, error) { return s.ListMembers(ctx, "initech") },
			func() ([]store.Member, error) { return s.ListMemberships(ctx, "user:nobody") },
		} {
			got, err := list()
			if err != nil || got == nil || len(got) != 0 {
				t.Errorf("an empty list = %#v, %v; want an empty, non-nil slice", got, err)
			}
		}
	}},
	{"identity/member_delete_is_scoped_and_idempotent", func(t *testing.T, s store.Store) {
		ctx := t.Context()
		putMember(t, s, store.Member{Workspace: "acme", Subject: "user:alice", Role: "admin"})
		putMember(t, s, store.Member{Workspace: "globex", Subject: "user:alice", Role: "admin"})
		if err := s.DeleteMember(ctx, "initech", "user:alice"); err != nil {
			t.Errorf("DeleteMember in another workspace = %v, want a no-op", err)
		}
		if err := s.DeleteMember(ctx, "acme", "user:alice"); err != nil {
			t.Fatal(err)
		}
		if err := s.DeleteMember(ctx, "acme", "user:alice"); err != nil {
			t.Errorf("second DeleteMember = %v, want a no-op", err)
		}
		_, err := s.GetMember(ctx, "acme", "user:alice")
		wantErr(t, "GetMember after delete", err, derrors.ErrNotFound)
		if _, err := s.GetMember(ctx, "globex", "user:alice"); err != nil {
			t.Errorf("the globex membership went with the acme one: %v", err)
		}
	}},
	{"identity/member_delete_removes_team_memberships_of_that_workspace", func(t *testing.T, s store.Store) {
		ctx := t.Context()
		for _, ws := range []string{"acme", "globex"} {
			putMember(t, s, store.Member{Workspace: ws, Subject: "user:alice", Role: "member"})
			putMember(t, s, store.Member{Workspace: ws, Subject: "user:bob", Role: "member"})
			createTeam(t, s, ws, "red")
			createTeam(t, s, ws, "blue")
			addTeamMember(t, s, ws, "red", "user:alice")
			addTeamMember(t, s, ws, "blue", "user:alice")
			addTeamMember(t, s, ws, "red", "user:bob")
		}
		if err := s.DeleteMember(ctx, "acme", "user:alice"); err != nil {
			t.Fatal(err)
		}
		if got := teamsOf(t, s, "acme", "user:alice"); len(got) != 0 {
			t.Errorf("TeamsOf(acme, alice) after DeleteMember = %v, want none", got)
		}
		if diff := cmp.Diff([]string{"blue", "red"}, teamsOf(t, s, "globex", "user:alice")); diff != "" {
			t.Errorf("TeamsOf(globex, alice) (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff([]string{"red"}, teamsOf(t, s, "acme", "user:bob")); diff != "" {
			t.Errorf("TeamsOf(acme, bob) (-want +got):\n%s", diff)
		}
	}},
	{"identity/count_admins", func(t *testing.T, s store.Store) {
		ctx := t.Context()
		if n := countAdmins(t, s, "acme"); n != 0 {
			t.Errorf("CountAdmins of an empty workspace = %d, want 0", n)
		}
		putMember(t, s, store.Member{Workspace: "acme", Subject: "user:alice", Role: "admin"})
		putMember(t, s, store.Member{Workspace: "acme", Subject: "user:bob", Role: "admin"})
		putMember(t, s, store.Member{Workspace: "acme", Subject: "user:carol", Role: "member"})
		putMember(t, s, store.Member{Workspace: "globex", Subject: "user:dave", Role: "admin"})
		steps := []struct {
			name string
			do   func() error
			want int
		}{
			{"two admins", func() error { return nil }, 2},
			{"demote bob", func() error {
				_, err := s.PutMember(ctx, store.Member{Workspace: "acme", Subject: "user:bob", Role: "member"})
				return err
			}, 1},
			{"promote carol", func() error {
				_, err := s.PutMember(ctx, store.Member{Workspace: "acme", Subject: "user:carol", Role: "admin"})
				return err
			}, 2},
			{"delete alice", func() error { return s.DeleteMember(ctx, "acme", "user:alice") }, 1},
			{"delete carol", func() error { return s.DeleteMember(ctx, "acme", "user:carol") }, 0},
		}
		for _, st := range steps {
			if err := st.do(); err != nil {
				t.Fatalf("%s: %v", st.name, err)
			}
			if n := countAdmins(t, s, "acme"); n != st.want {
				t.Errorf("after %s: CountAdmins(acme) = %d, want %d", st.name, n, st.want)
			}
		}
		if n := countAdmins(t, s, "globex"); n != 1 {
			t.Errorf("CountAdmins(globex) = %d, want 1", n)
		}
	}},
	{"identity/last_admin_guard_holds_under_concurrency", func(t *testing.T, s store.Store) {
		// The handlers' guard: in one transaction, count the admins and
		// demote only if another would remain. Two admins demoting each
		// other at once must leave one admin (on PostgreSQL this is write
		// skew, which only SERIALIZABLE catches).
		ctx := t.Context()
		for _, sub := range []string{"user:alice", "user:bob"} {
			putMember(t, s, store.Member{Workspace: "acme", Subject: sub, Role: "admin"})
		}
		errLast := errors.New("last admin")
		var wg sync.WaitGroup
		errs := make([]error, 2)
		for i, sub := range []string{"user:alice", "user:bob"} {
			wg.Go(func() {
				errs[i] = s.Transact(ctx, func(tx store.Tx) error {
					n, err := tx.CountAdmins(ctx, "acme")
					if err != nil {
						return err
					}
					if n <= 1 {
						return errLast
					}
					_, err = tx.PutMember(ctx, store.Member{Workspace: "acme", Subject: sub, Role: "member"})
					return err
				})
			})
		}
		wg.Wait()
		refused := 0
		for _, err := range errs {
			switch {
			case errors.Is(err, errLast):
				refused++
			case err != nil:
				t.Errorf("Transact: %v", err)
			}
		}
		if n := countAdmins(t, s, "acme"); n != 1 || refused != 1 {
			t.Errorf("after two concurrent demotions: %d admins, %d refused; want 1 and 1", n, refused)
		}
	}},
	{"identity/member_invalid", func(t *testing.T, s store.Store) {
		for _, tc := range []struct {
			name string
			m    store.Member
		}{
			{"no workspace", store.Member{Subject: "user:alice", Role: "member"}},
			{"no subject", store.Member{Workspace: "acme", Role: "member"}},
			{"no role", store.Member{Workspace: "acme", Subject: "user:alice"}},
			{"NUL in email", store.Member{Workspace: "acme", Subject: "user:alice", Role: "member", Email: "a\x00b"}},
		} {
			_, err := s.PutMember(t.Context(), tc.m)
			wantErr(t, "PutMember("+tc.name+")", err, derrors.ErrInvalid)
			_, err = s.EnsureMember(t.Context(), tc.m)
			wantErr(t, "EnsureMember("+tc.name+")", err, derrors.ErrInvalid)
		}
	}},
	{"identity/member_removal_put_get_delete", func(t *testing.T, s store.Store) {
		ctx := t.Context()
		_, err := s.GetMemberRemoval(ctx, "acme", "user:alice")
		wantErr(t, "GetMemberRemoval before any removal", err, derrors.ErrNotFound)
		r := store.MemberRemoval{Workspace: "acme", Subject: "user:alice", RemovedBy: "user:bob", RemovedAt: t0}
		if err := s.PutMemberRemoval(ctx, r); err != nil {
			t.Fatal(err)
		}
		got, err := s.GetMemberRemoval(ctx, "acme", "user:alice")
		if err != nil {
			t.Fatal(err)
		}
		want := r
		want.RemovedAt = norm(t0)
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("GetMemberRemoval (-want +got):\n%s", diff)
		}
		// A second removal replaces the first.
		r2 := store.MemberRemoval{Workspace: "acme", Subject: "user:alice", RemovedBy: "user:carol", RemovedAt: t0.Add(time.Hour)}
		if err := s.PutMemberRemoval(ctx, r2); err != nil {
			t.Fatal(err)
		}
		if got, err := s.GetMemberRemoval(ctx, "acme", "user:alice"); err != nil || got.RemovedBy != "user:carol" || !got.RemovedAt.Equal(norm(r2.RemovedAt)) {
			t.Errorf("after a second removal: %+v, %v; want removed by user:carol at %v", got, err, norm(r2.RemovedAt))
		}
		// Scoped to the workspace.
		_, err = s.GetMemberRemoval(ctx, "globex", "user:alice")
		wantErr(t, "GetMemberRemoval in another workspace", err, derrors.ErrNotFound)
		if err := s.DeleteMemberRemoval(ctx, "globex", "user:alice"); err != nil {
			t.Fatal(err)
		}
		if _, err := s.GetMemberRemoval(ctx, "acme", "user:alice"); err != nil {
			t.Errorf("another workspace's delete removed the record: %v", err)
		}
		for range 2 { // idempotent
			if err := s.DeleteMemberRemoval(ctx, "acme", "user:alice"); err != nil {
				t.Fatal(err)
			}
		}
		_, err = s.GetMemberRemoval(ctx, "acme", "user:alice")
		wantErr(t, "GetMemberRemoval after delete", err, derrors.ErrNotFound)
		for _, bad := range []store.MemberRemoval{{Subject: "user:alice"}, {Workspace: "acme"}, {Workspace: "acme", Subject: "a\x00b"}} {
			wantErr(t, fmt.Sprintf("PutMemberRemoval(%+v)", bad), s.PutMemberRemoval(ctx, bad), derrors.ErrInvalid)
		}
	}},
}

var inviteCases = []Case{
	{"identity/invite_round_trip", func(t *testing.T, s store.Store) {
		in := store.Invite{ID: "inv1", Workspace: "acme", Role: "member", Hash: hashOf("inv_tok"), ExpiresAt: t0.Add(48 * time.Hour), CreatedBy: "user:alice", CreatedAt: t0}
		want := in
		want.ExpiresAt, want.CreatedAt = norm(in.ExpiresAt), norm(t0)
		if diff := cmp.Diff(want, createInvite(t, s, in)); diff != "" {
			t.Errorf("CreateInvite (-want +got):\n%s", diff)
		}
		got, err := s.InviteByHash(t.Context(), hashOf("inv_tok"))
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("InviteByHash (-want +got):\n%s", diff)
		}
		_, err = s.InviteByHash(t.Context(), hashOf("inv_other"))
		wantErr(t, "InviteByHash(unknown)", err, derrors.ErrNotFound)
	}},
	{"identity/invite_duplicate_id_or_hash_is_conflict", func(t *testing.T, s store.Store) {
		ctx := t.Context()
		createInvite(t, s, invite("acme", "i1", t0, t0.Add(time.Hour)))
		sameID := invite("acme", "i1", t0, t0.Add(time.Hour))
		sameID.Hash = hashOf("different")
		sameHash := invite("globex", "i2", t0, t0.Add(time.Hour))
		sameHash.Hash = hashOf("inv_i1")
		for name, inv := range map[string]store.Invite{"same id": sameID, "same hash": sameHash} {
			_, err := s.CreateInvite(ctx, inv)
			wantErr(t, "CreateInvite("+name+")", err, derrors.ErrConflict)
		}
		got, err := s.InviteByHash(ctx, hashOf("inv_i1"))
		if err != nil {
			t.Fatal(err)
		}
		if got.Workspace != "acme" || got.ID != "i1" {
			t.Errorf("InviteByHash = %s/%s, want the first invite acme/i1", got.Workspace, got.ID)
		}
	}},
	{"identity/invite_invalid", func(t *testing.T, s store.Store) {
		for _, tc := range []struct {
			name string
			edit func(*store.Invite)
		}{
			{"no id", func(i *store.Invite) { i.ID = "" }},
			{"no workspace", func(i *store.Invite) { i.Workspace = "" }},
			{"no role", func(i *store.Invite) { i.Role = "" }},
			{"no expiry", func(i *store.Invite) { i.ExpiresAt = time.Time{} }},
			{"short hash", func(i *store.Invite) { i.Hash = i.Hash[:16] }},
		} {
			inv := invite("acme", "i", t0, t0.Add(time.Hour))
			tc.edit(&inv)
			_, err := s.CreateInvite(t.Context(), inv)
			wantErr(t, "CreateInvite("+tc.name+")", err, derrors.ErrInvalid)
		}
	}},
	{"identity/list_invites_skips_expired_revoked_and_foreign", func(t *testing.T, s store.Store) {
		ctx := t.Context()
		now := t0.Add(24 * time.Hour)
		createInvite(t, s, invite("acme", "later", t0.Add(2*time.Hour), now.Add(time.Hour)))
		createInvite(t, s, invite("acme", "earlier", t0.Add(time.Hour), now.Add(time.Microsecond)))
		createInvite(t, s, invite("acme", "expired", t0, now.Add(-time.Hour)))
		createInvite(t, s, invite("acme", "expires_now", t0, now))
		createInvite(t, s, invite("acme", "revoked", t0, now.Add(time.Hour)))
		createInvite(t, s, invite("globex", "foreign", t0, now.Add(time.Hour)))
		if err := s.RevokeInvite(ctx, "acme", "revoked", t0.Add(3*time.Hour)); err != nil {
			t.Fatal(err)
		}
		got, err := s.ListInvites(ctx, "acme", now)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff([]string{"earlier", "later"}, inviteIDs(got)); diff != "" {
			t.Errorf("ListInvites(acme) ids (-want +got):\n%s", diff)
		}
		// The same instant in another zone is the same now.
		got, err = s.ListInvites(ctx, "acme", now.In(time.FixedZone("PST", -8*3600)))
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff([]string{"earlier", "later"}, inviteIDs(got)); diff != "" {
			t.Errorf("ListInvites(acme, now in PST) ids (-want +got):\n%s", diff)
		}
		got, err = s.ListInvites(ctx, "initech", now)
		if err != nil || got == nil || len(got) != 0 {
			t.Errorf("ListInvites(initech) = %#v, %v; want an empty, non-nil slice", got, err)
		}
	}},
	{"identity/revoke_invite_is_scoped", func(t *testing.T, s store.Store) {
		ctx := t.Context()
		createInvite(t, s, invite("acme", "i1", t0, t0.Add(time.Hour)))
		for _, tc := range []struct{ workspace, id string }{{"globex", "i1"}, {"acme", "unknown"}} {
			err := s.RevokeInvite(ctx, tc.workspace, tc.id, t0)
			wantErr(t, fmt.Sprintf("RevokeInvite(%q, %q)", tc.workspace, tc.id), err, derrors.ErrNotFound)
		}
		if got, err := s.InviteByHash(ctx, hashOf("inv_i1")); err != nil || got.RevokedAt != nil {
			t.Fatalf("InviteByHash after foreign revokes = %+v, %v; want it not revoked", got, err)
		}
		at := t0.Add(time.Minute)
		if err := s.RevokeInvite(ctx, "acme", "i1", at); err != nil {
			t.Fatal(err)
		}
		if err := s.RevokeInvite(ctx, "acme", "i1", at.Add(time.Hour)); err != nil {
			t.Errorf("second RevokeInvite = %v, want success", err)
		}
		got, err := s.InviteByHash(ctx, hashOf("inv_i1"))
		if err != nil {
			t.Fatal(err)
		}
		if want := norm(at); got.RevokedAt == nil || *got.RevokedAt != want {
			t.Errorf("RevokedAt = %v, want the first revocation's %v", got.RevokedAt, want)
		}
	}},
	{"identity/invite_acceptances_count_under_concurrency", func(t *testing.T, s store.Store) {
		ctx := t.Context()
		createInvite(t, s, invite("acme", "i1", t0, t0.Add(time.Hour)))
		createInvite(t, s, invite("acme", "i2", t0, t0.Add(time.Hour)))
		const n = 10
		var wg sync.WaitGroup
		errs := make([]error, n)
		for i := range n {
			wg.Go(func() { errs[i] = s.CountInviteAcceptance(ctx, "i1") })
		}
		wg.Wait()
		for i, err := range errs {
			if err != nil {
				t.Errorf("CountInviteAcceptance #%d: %v", i, err)
			}
		}
		for id, want := range map[string]int{"i1": n, "i2": 0} {
			got, err := s.InviteByHash(ctx, hashOf("inv_"+id))
			if err != nil {
				t.Fatal(err)
			}
			if got.AcceptedCount != want {
				t.Errorf("%s: AcceptedCount = %d, want %d", id, got.AcceptedCount, want)
			}
		}
		err := s.CountInviteAcceptance(ctx, "unknown")
		wantErr(t, "CountInviteAcceptance(unknown)", err, derrors.ErrNotFound)
	}},
}

var teamCases = []Case{
	{"identity/team_create_get_list", func(t *testing.T, s store.Store) {
		ctx := t.Context()
		in := store.Team{ID: "red", Workspace: "acme", Name: "Red", Private: true, CreatedBy: "user:alice", CreatedAt: t0}
		want := in
		want.CreatedAt = norm(t0)
		got, err := s.CreateTeam(ctx, in)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("CreateTeam (-want +got):\n%s", diff)
		}
		stored, err := s.GetTeam(ctx, "acme", "red")
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, stored); diff != "" {
			t.Errorf("GetTeam (-want +got):\n%s", diff)
		}
		_, err = s.GetTeam(ctx, "globex", "red")
		wantErr(t, "GetTeam(globex, red)", err, derrors.ErrNotFound)
		// The same id in another workspace is another team.
		createTeam(t, s, "globex", "red")
		createTeam(t, s, "acme", "Blue")
		createTeam(t, s, "acme", "amber")
		teams, err := s.ListTeams(ctx, "acme")
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, tm := range teams {
			ids = append(ids, tm.Workspace+"/"+tm.ID)
		}
		if diff := cmp.Diff([]string{"acme/Blue", "acme/amber", "acme/red"}, ids); diff != "" {
			t.Errorf("ListTeams(acme) (-want +got):\n%s", diff)
		}
	}},
	{"identity/team_duplicate_id_is_conflict", func(t *testing.T, s store.Store) {
		first := createTeam(t, s, "acme", "red")
		_, err := s.CreateTeam(t.Context(), store.Team{ID: "red", Workspace: "acme", Name: "Other"})
		wantErr(t, "second CreateTeam", err, derrors.ErrConflict)
		got, err := s.GetTeam(t.Context(), "acme", "red")
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(first, got); diff != "" {
			t.Errorf("the stored team changed (-want +got):\n%s", diff)
		}
	}},
	{"identity/team_update", func(t *testing.T, s store.Store) {
		ctx := t.Context()
		first := createTeam(t, s, "acme", "red")
		want := first
		want.Name, want.Private = "Crimson", true
		got, err := s.UpdateTeam(ctx, store.Team{ID: "red", Workspace: "acme", Name: "Crimson", Private: true, CreatedBy: "user:mallory", CreatedAt: t0})
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("UpdateTeam (only name and private change) (-want +got):\n%s", diff)
		}
		stored, err := s.GetTeam(ctx, "acme", "red")
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, stored); diff != "" {
			t.Errorf("GetTeam after update (-want +got):\n%s", diff)
		}
		for _, tc := range []struct{ workspace, id string }{{"globex", "red"}, {"acme", "unknown"}} {
			_, err := s.UpdateTeam(ctx, store.Team{ID: tc.id, Workspace: tc.workspace, Name: "X"})
			wantErr(t, fmt.Sprintf("UpdateTeam(%q, %q)", tc.workspace, tc.id), err, derrors.ErrNotFound)
		}
		if _, err := s.GetTeam(ctx, "globex", "red"); !errors.Is(err, derrors.ErrNotFound) {
			t.Errorf("UpdateTeam of a foreign id created a team: GetTeam err = %v", err)
		}
	}},
	{"identity/team_members", func(t *testing.T, s store.Store) {
		ctx := t.Context()
		createTeam(t, s, "acme", "red")
		createTeam(t, s, "acme", "blue")
		first, err := s.AddTeamMember(ctx, store.TeamMember{Workspace: "acme", TeamID: "red", Subject: "user:carol", AddedAt: t0})
		if err != nil {
			t.Fatal(err)
		}
		wantCarol := store.TeamMember{Workspace: "acme", TeamID: "red", Subject: "user:carol", AddedAt: norm(t0)}
		if diff := cmp.Diff(wantCarol, first); diff != "" {
			t.Errorf("AddTeamMember (-want +got):\n%s", diff)
		}
		again, err := s.AddTeamMember(ctx, store.TeamMember{Workspace: "acme", TeamID: "red", Subject: "user:carol", AddedAt: t0.Add(time.Hour)})
		if err != nil {
			t.Fatalf("second AddTeamMember: %v", err)
		}
		if diff := cmp.Diff(wantCarol, again); diff != "" {
			t.Errorf("second AddTeamMember did not return the stored membership (-want +got):\n%s", diff)
		}
		alice := addTeamMember(t, s, "acme", "red", "user:alice")
		addTeamMember(t, s, "acme", "blue", "user:alice")
		got, err := s.ListTeamMembers(ctx, "acme", "red")
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff([]store.TeamMember{alice, wantCarol}, got); diff != "" {
			t.Errorf("ListTeamMembers(acme, red) (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff([]string{"blue", "red"}, teamsOf(t, s, "acme", "user:alice")); diff != "" {
			t.Errorf("TeamsOf(acme, alice) (-want +got):\n%s", diff)
		}
		if err := s.RemoveTeamMember(ctx, "acme", "red", "user:alice"); err != nil {
			t.Fatal(err)
		}
		if err := s.RemoveTeamMember(ctx, "acme", "red", "user:alice"); err != nil {
			t.Errorf("second RemoveTeamMember = %v, want a no-op", err)
		}
		if diff := cmp.Diff([]string{"blue"}, teamsOf(t, s, "acme", "user:alice")); diff != "" {
			t.Errorf("TeamsOf(acme, alice) after remove (-want +got):\n%s", diff)
		}
		if err := s.RemoveTeamMember(ctx, "acme", "blue", "user:alice"); err != nil {
			t.Fatal(err)
		}
		if empty, err := s.ListTeamMembers(ctx, "acme", "blue"); err != nil || empty == nil || len(empty) != 0 {
			t.Errorf("ListTeamMembers of an empty team = %#v, %v; want an empty, non-nil slice", empty, err)
		}
		if got := teamsOf(t, s, "acme", "user:nobody"); got == nil || len(got) != 0 {
			t.Errorf("TeamsOf(nobody) = %#v, want an empty, non-nil slice", got)
		}
	}},
	{"identity/team_members_are_scoped_to_the_workspace", func(t *testing.T, s store.Store) {
		ctx := t.Context()
		createTeam(t, s, "acme", "red")
		addTeamMember(t, s, "acme", "red", "user:alice")
		// globex has no team red: adding, listing and removing through it
		// must neither see nor touch acme's.
		_, err := s.AddTeamMember(ctx, store.TeamMember{Workspace: "globex", TeamID: "red", Subject: "user:mallory"})
		wantErr(t, "AddTeamMember(globex, red)", err, derrors.ErrNotFound)
		_, err = s.ListTeamMembers(ctx, "globex", "red")
		wantErr(t, "ListTeamMembers(globex, red)", err, derrors.ErrNotFound)
		_, err = s.ListTeamMembers(ctx, "acme", "unknown")
		wantErr(t, "ListTeamMembers(acme, unknown)", err, derrors.ErrNotFound)
		if err := s.RemoveTeamMember(ctx, "globex", "red", "user:alice"); err != nil {
			t.Errorf("RemoveTeamMember(globex, red, alice) = %v, want a no-op", err)
		}
		if err := s.DeleteTeam(ctx, "globex", "red"); err != nil {
			t.Errorf("DeleteTeam(globex, red) = %v, want a no-op", err)
		}
		if got := teamsOf(t, s, "globex", "user:mallory"); len(got) != 0 {
			t.Errorf("TeamsOf(globex, mallory) = %v, want none", got)
		}
		got, err := s.ListTeamMembers(ctx, "acme", "red")
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 1 || got[0].Subject != "user:alice" {
			t.Errorf("ListTeamMembers(acme, red) = %+v, want only alice", got)
		}
	}},
	{"identity/team_delete_removes_its_members", func(t *testing.T, s store.Store) {
		ctx := t.Context()
		createTeam(t, s, "acme", "red")
		createTeam(t, s, "acme", "blue")
		addTeamMember(t, s, "acme", "red", "user:alice")
		addTeamMember(t, s, "acme", "blue", "user:alice")
		if err := s.DeleteTeam(ctx, "acme", "red"); err != nil {
			t.Fatal(err)
		}
		if err := s.DeleteTeam(ctx, "acme", "red"); err != nil {
			t.Errorf("second DeleteTeam = %v, want a no-op", err)
		}
		_, err := s.GetTeam(ctx, "acme", "red")
		wantErr(t, "GetTeam after delete", err, derrors.ErrNotFound)
		if diff := cmp.Diff([]string{"blue"}, teamsOf(t, s, "acme", "user:alice")); diff != "" {
			t.Errorf("TeamsOf(acme, alice) after delete (-want +got):\n%s", diff)
		}
		// A new team with the old id starts empty.
		createTeam(t, s, "acme", "red")
		got, err := s.ListTeamMembers(ctx, "acme", "red")
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 0 {
			t.Errorf("a re-created team has members %+v, want none", got)
		}
	}},
}

var identityTxCases = []Case{
	{"identity/multi_statement_methods_inside_transact", func(t *testing.T, s store.Store) {
		// The methods that run several statements must use the caller's
		// transaction, not begin their own (on SQLite that would wait for
		// the one writer the transaction holds), and roll back with it.
		ctx := t.Context()
		createTeam(t, s, "acme", "red")
		putMember(t, s, store.Member{Workspace: "acme", Subject: "user:alice", Role: "admin"})
		addTeamMember(t, s, "acme", "red", "user:alice")
		err := s.Transact(ctx, func(tx store.Tx) error {
			if _, err := tx.UpdateTeam(ctx, store.Team{Workspace: "acme", ID: "red", Name: "Crimson"}); err != nil {
				return err
			}
			if _, err := tx.AddTeamMember(ctx, store.TeamMember{Workspace: "acme", TeamID: "red", Subject: "user:bob"}); err != nil {
				return err
			}
			if err := tx.DeleteMember(ctx, "acme", "user:alice"); err != nil {
				return err
			}
			if err := tx.DeleteTeam(ctx, "acme", "red"); err != nil {
				return err
			}
			if _, err := tx.CreateAPIKey(ctx, key("acme", "k1", t0)); err != nil {
				return err
			}
			return errAbort
		})
		wantErr(t, "Transact", err, errAbort)
		team, err := s.GetTeam(ctx, "acme", "red")
		if err != nil {
			t.Fatalf("GetTeam after rollback: %v", err)
		}
		if team.Name != "Team red" {
			t.Errorf("team name after rollback = %q, want the original", team.Name)
		}
		if diff := cmp.Diff([]string{"red"}, teamsOf(t, s, "acme", "user:alice")); diff != "" {
			t.Errorf("TeamsOf(alice) after rollback (-want +got):\n%s", diff)
		}
		if got := teamsOf(t, s, "acme", "user:bob"); len(got) != 0 {
			t.Errorf("TeamsOf(bob) after rollback = %v, want none", got)
		}
		if _, err := s.GetMember(ctx, "acme", "user:alice"); err != nil {
			t.Errorf("GetMember(alice) after rollback: %v", err)
		}
		if _, err := s.APIKeyByHash(ctx, key("acme", "k1", t0).Hash); !errors.Is(err, derrors.ErrNotFound) {
			t.Errorf("APIKeyByHash after rollback: err = %v, want ErrNotFound", err)
		}
	}},
}
