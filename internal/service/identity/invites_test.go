package identity_test

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"svc/auth"
	"svc/internal/platform/derrors"
	"svc/internal/service/identity"
)

func TestCreateInviteExpiry(t *testing.T) {
	hours := func(h int) *int { return &h }
	tests := []struct {
		name    string
		hours   *int
		want    time.Time
		wantErr error
	}{
		{name: "a week by default", want: t0.Add(168 * time.Hour)},
		{name: "one hour", hours: hours(1), want: t0.Add(time.Hour)},
		{name: "a year", hours: hours(8760), want: t0.Add(8760 * time.Hour)},
		{name: "zero", hours: hours(0), wantErr: derrors.ErrInvalid},
		{name: "past a year", hours: hours(8761), wantErr: derrors.ErrInvalid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			inv, err := e.svc.CreateInvite(t.Context(), person("alice", "acme", auth.RoleAdmin),
				identity.CreateInviteRequest{Role: "member", ExpiresInHours: tt.hours})
			wantErr(t, err, tt.wantErr, nil)
			if err != nil {
				return
			}
			if !inv.ExpiresAt.Equal(tt.want) {
				t.Errorf("expiresAt = %v, want %v", inv.ExpiresAt, tt.want)
			}
			if inv.Token == "" {
				t.Error("the created invite carries no token")
			}
		})
	}
}

func TestAcceptInvite(t *testing.T) {
	tests := []struct {
		name     string
		caller   auth.Principal
		existing auth.Role // the caller's role in acme before; "" for none
		removed  bool      // the caller was removed from acme before
		token    func(e *env, live, revoked, expired string) string
		wantErr  error
		details  map[string]any
		want     identity.AcceptedInvite
		count    int // acceptedCount of the live invite afterwards
	}{
		{name: "a newcomer joins with the invite's role", caller: person("nina", "home", auth.RoleAdmin),
			want: identity.AcceptedInvite{Workspace: "acme", Role: "member"}, count: 1},
		{name: "a removed person is re-admitted", caller: person("nina", "home", auth.RoleAdmin), removed: true,
			want: identity.AcceptedInvite{Workspace: "acme", Role: "member"}, count: 1},
		{name: "a lower role is raised", caller: person("nina", "acme", auth.RoleViewer), existing: auth.RoleViewer,
			want: identity.AcceptedInvite{Workspace: "acme", Role: "member"}, count: 1},
		{name: "a higher role is never downgraded", caller: person("nina", "acme", auth.RoleAdmin), existing: auth.RoleAdmin,
			want: identity.AcceptedInvite{Workspace: "acme", Role: "admin"}, count: 0},
		{name: "the same role counts nothing", caller: person("nina", "acme", auth.RoleMember), existing: auth.RoleMember,
			want: identity.AcceptedInvite{Workspace: "acme", Role: "member"}, count: 0},
		{name: "an API key may not accept", caller: apiKey("acme"), wantErr: derrors.ErrForbidden},
		{name: "no subject", caller: auth.Principal{Via: auth.ViaOIDC}, wantErr: derrors.ErrUnauthenticated},
		{name: "no token", caller: person("nina", "home", auth.RoleAdmin),
			token: func(*env, string, string, string) string { return "" }, wantErr: derrors.ErrInvalid},
		{name: "not an invite token", caller: person("nina", "home", auth.RoleAdmin),
			token:   func(*env, string, string, string) string { return "ak_not-an-invite" },
			wantErr: derrors.ErrInvalid, details: map[string]any{"field": "token"}},
		{name: "an unknown token", caller: person("nina", "home", auth.RoleAdmin),
			token: func(*env, string, string, string) string {
				tok, _ := auth.NewInviteToken()
				return tok
			}, wantErr: derrors.ErrNotFound},
		{name: "a revoked invite", caller: person("nina", "home", auth.RoleAdmin),
			token: func(_ *env, _, revoked, _ string) string { return revoked }, wantErr: derrors.ErrNotFound},
		{name: "an expired invite", caller: person("nina", "home", auth.RoleAdmin),
			token: func(_ *env, _, _, expired string) string { return expired }, wantErr: derrors.ErrNotFound},
		{name: "expiry is exclusive", caller: person("nina", "home", auth.RoleAdmin),
			token: func(e *env, live, _, _ string) string {
				e.now = t0.Add(168 * time.Hour)
				return live
			}, wantErr: derrors.ErrNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			ctx := t.Context()
			admin := person("alice", "acme", auth.RoleAdmin)
			e.member(t, "acme", "alice", auth.RoleAdmin)
			if tt.existing != "" {
				e.member(t, "acme", "nina", tt.existing)
			}
			if tt.removed {
				e.member(t, "acme", "nina", auth.RoleViewer)
				if err := e.svc.RemoveMember(ctx, admin, "nina"); err != nil {
					t.Fatal(err)
				}
			}
			create := func(hours int) identity.Invite {
				inv, err := e.svc.CreateInvite(ctx, admin, identity.CreateInviteRequest{Role: "member", ExpiresInHours: &hours})
				if err != nil {
					t.Fatal(err)
				}
				return inv
			}
			live := create(168)
			revoked := create(168)
			if err := e.svc.RevokeInvite(ctx, admin, revoked.ID); err != nil {
				t.Fatal(err)
			}
			e.now = t0.Add(-2 * time.Hour)
			expired := create(1)
			e.now = t0
			token := live.Token
			if tt.token != nil {
				token = tt.token(e, live.Token, revoked.Token, expired.Token)
			}

			got, err := e.svc.AcceptInvite(ctx, tt.caller, identity.AcceptInviteRequest{Token: token})
			wantErr(t, err, tt.wantErr, tt.details)
			if err != nil {
				if r := e.roles(t, "acme")["nina"]; r != string(tt.existing) {
					t.Errorf("a refused acceptance changed nina's role to %q", r)
				}
				return
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("AcceptInvite (-want +got):\n%s", diff)
			}
			if r := e.roles(t, "acme")["nina"]; r != tt.want.Role {
				t.Errorf("stored role = %q, want %q", r, tt.want.Role)
			}
			e.now = t0
			invs, err := e.svc.ListInvites(ctx, admin)
			if err != nil {
				t.Fatal(err)
			}
			if len(invs) != 1 || invs[0].ID != live.ID || invs[0].AcceptedCount != tt.count {
				t.Errorf("active invites = %+v, want only %s with acceptedCount %d", invs, live.ID, tt.count)
			}
			// An accepted person is a member for good: the next token
			// claim does not find a removal.
			if member, err := e.svc.EnsureMembership(ctx, "acme", "nina", auth.RoleViewer); err != nil || !member {
				t.Errorf("EnsureMembership after accepting = %v, %v; want true", member, err)
			}
		})
	}
}

func TestAcceptInviteCreatesWorkspace(t *testing.T) {
	// An invite minted with a tenant key of a workspace that has no record
	// yet (the record appears on first use) still lands somewhere listed.
	e := newEnv(t)
	ctx := t.Context()
	inv, err := e.svc.CreateInvite(ctx, apiKey("ghost"), identity.CreateInviteRequest{Role: "viewer"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.svc.AcceptInvite(ctx, person("nina", "home", auth.RoleAdmin), identity.AcceptInviteRequest{Token: inv.Token}); err != nil {
		t.Fatal(err)
	}
	ws, err := e.svc.ListWorkspaces(ctx, person("nina", "", ""))
	if err != nil {
		t.Fatal(err)
	}
	if len(ws) != 1 || ws[0].ID != "ghost" || ws[0].Role != auth.RoleViewer {
		t.Errorf("ListWorkspaces = %+v, want ghost as viewer", ws)
	}
}

func TestRevokeInvite(t *testing.T) {
	e := newEnv(t)
	ctx := t.Context()
	inv, err := e.svc.CreateInvite(ctx, person("alice", "acme", auth.RoleAdmin), identity.CreateInviteRequest{Role: "member"})
	if err != nil {
		t.Fatal(err)
	}
	// Another workspace's admin cannot revoke it, and learns nothing.
	err = e.svc.RevokeInvite(ctx, person("olga", "other", auth.RoleAdmin), inv.ID)
	wantErr(t, err, derrors.ErrNotFound, map[string]any{"id": inv.ID})
	if err := e.svc.RevokeInvite(ctx, person("alice", "acme", auth.RoleAdmin), inv.ID); err != nil {
		t.Fatal(err)
	}
	invs, err := e.svc.ListInvites(ctx, person("alice", "acme", auth.RoleAdmin))
	if err != nil || len(invs) != 0 {
		t.Errorf("ListInvites after revoking = %+v, %v; want none", invs, err)
	}
}
