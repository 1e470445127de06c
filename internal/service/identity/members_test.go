package identity_test

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"svc/auth"
	"svc/internal/platform/derrors"
	"svc/internal/service/identity"
)

func TestChangeMemberRole(t *testing.T) {
	tests := []struct {
		name    string
		admins  []string // admins of "acme" besides "alice" (admin)
		subject string
		role    string
		wantErr error
		details map[string]any
		want    map[string]string
	}{
		{name: "demote the last admin", subject: "alice", role: "member",
			wantErr: derrors.ErrConflict, details: map[string]any{"subject": "alice"},
			want: map[string]string{"alice": "admin", "bob": "viewer"}},
		{name: "demote an admin when another remains", admins: []string{"carol"}, subject: "alice", role: "viewer",
			want: map[string]string{"alice": "viewer", "bob": "viewer", "carol": "admin"}},
		{name: "the last admin keeps admin", subject: "alice", role: "admin",
			want: map[string]string{"alice": "admin", "bob": "viewer"}},
		{name: "promote", subject: "bob", role: "admin",
			want: map[string]string{"alice": "admin", "bob": "admin"}},
		{name: "not a member", subject: "mallory", role: "member",
			wantErr: derrors.ErrNotFound, details: map[string]any{"subject": "mallory"},
			want: map[string]string{"alice": "admin", "bob": "viewer"}},
		{name: "a member of another workspace", subject: "olga", role: "member",
			wantErr: derrors.ErrNotFound, details: map[string]any{"subject": "olga"},
			want: map[string]string{"alice": "admin", "bob": "viewer"}},
		{name: "unknown role", subject: "bob", role: "owner", wantErr: derrors.ErrInvalid,
			want: map[string]string{"alice": "admin", "bob": "viewer"}},
		{name: "no role", subject: "bob", wantErr: derrors.ErrInvalid,
			want: map[string]string{"alice": "admin", "bob": "viewer"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			e.member(t, "acme", "alice", auth.RoleAdmin)
			e.member(t, "acme", "bob", auth.RoleViewer)
			e.member(t, "other", "olga", auth.RoleAdmin)
			for _, a := range tt.admins {
				e.member(t, "acme", a, auth.RoleAdmin)
			}
			err := e.svc.ChangeMemberRole(t.Context(), person("alice", "acme", auth.RoleAdmin), tt.subject, identity.PatchMemberRequest{Role: tt.role})
			wantErr(t, err, tt.wantErr, tt.details)
			if diff := cmp.Diff(tt.want, e.roles(t, "acme")); diff != "" {
				t.Errorf("members (-want +got):\n%s", diff)
			}
		})
	}
}

func TestRemoveMember(t *testing.T) {
	tests := []struct {
		name    string
		subject string
		wantErr error
		want    map[string]string
		removed bool // a tombstone keeps the subject out afterwards
	}{
		{name: "a member", subject: "bob", want: map[string]string{"alice": "admin"}, removed: true},
		{name: "the last admin", subject: "alice", wantErr: derrors.ErrConflict,
			want: map[string]string{"alice": "admin", "bob": "viewer"}},
		{name: "not a member is a no-op that still keeps them out", subject: "mallory",
			want: map[string]string{"alice": "admin", "bob": "viewer"}, removed: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			e.member(t, "acme", "alice", auth.RoleAdmin)
			e.member(t, "acme", "bob", auth.RoleViewer)
			err := e.svc.RemoveMember(t.Context(), person("alice", "acme", auth.RoleAdmin), tt.subject)
			wantErr(t, err, tt.wantErr, nil)
			if diff := cmp.Diff(tt.want, e.roles(t, "acme")); diff != "" {
				t.Errorf("members (-want +got):\n%s", diff)
			}
			member, err := e.svc.EnsureMembership(t.Context(), "acme", tt.subject, auth.RoleMember)
			if err != nil {
				t.Fatal(err)
			}
			if member == tt.removed {
				t.Errorf("EnsureMembership after the removal: member = %v, want %v", member, !tt.removed)
			}
		})
	}
}

func TestEnsureMembership(t *testing.T) {
	e := newEnv(t)
	ctx := t.Context()
	// A token's claim names a workspace nobody has created yet.
	member, err := e.svc.EnsureMembership(ctx, "fresh", "alice", auth.RoleMember)
	if err != nil || !member {
		t.Fatalf("EnsureMembership = %v, %v; want true, nil", member, err)
	}
	if _, err := e.st.GetWorkspace(ctx, "fresh"); err != nil {
		t.Errorf("the workspace record was not created: %v", err)
	}
	// A second claim with another role leaves the role alone.
	if _, err := e.svc.EnsureMembership(ctx, "fresh", "alice", auth.RoleAdmin); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]string{"alice": "member"}, e.roles(t, "fresh")); diff != "" {
		t.Errorf("members (-want +got):\n%s", diff)
	}
}

func TestEnsureMemberIgnoresRemoval(t *testing.T) {
	e := newEnv(t)
	e.member(t, "dev", "boss", auth.RoleAdmin)
	if err := e.svc.RemoveMember(t.Context(), person("boss", "dev", auth.RoleAdmin), "dev"); err != nil {
		t.Fatal(err)
	}
	if err := e.svc.EnsureMember(t.Context(), memberOf("dev", "dev", auth.RoleAdmin), "dev"); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]string{"boss": "admin", "dev": "admin"}, e.roles(t, "dev")); diff != "" {
		t.Errorf("members (-want +got):\n%s", diff)
	}
}

func TestGetMember(t *testing.T) {
	e := newEnv(t)
	e.member(t, "acme", "alice", auth.RoleAdmin)
	e.member(t, "other", "olga", auth.RoleAdmin)
	p := person("alice", "acme", auth.RoleAdmin)
	m, err := e.svc.GetMember(t.Context(), p, "alice")
	if err != nil || m.Role != "admin" {
		t.Errorf("GetMember(alice) = %+v, %v; want role admin", m, err)
	}
	_, err = e.svc.GetMember(t.Context(), p, "olga")
	wantErr(t, err, derrors.ErrNotFound, map[string]any{"subject": "olga"})
	var ie *derrors.Public
	if errors.As(err, &ie) && ie.Msg != `"olga" is not a member of this workspace; GET /members lists them` {
		t.Errorf("message = %q", ie.Msg)
	}
}
