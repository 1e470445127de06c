package identity_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"svc/auth"
	"svc/internal/platform/derrors"
	"svc/internal/service/identity"
)

func TestCreateWorkspace(t *testing.T) {
	tests := []struct {
		name    string
		caller  auth.Principal
		req     identity.CreateWorkspaceRequest
		want    identity.WorkspaceEntry
		wantErr error
		details map[string]any
	}{
		{name: "a person founds a workspace", caller: person("alice", "home", auth.RoleAdmin),
			req:  identity.CreateWorkspaceRequest{ID: "acme", Name: "Acme Inc."},
			want: identity.WorkspaceEntry{ID: "acme", Name: "Acme Inc.", Role: auth.RoleAdmin, CreatedAt: t0}},
		{name: "the name defaults to the id", caller: person("alice", "acme", auth.RoleAdmin),
			req:  identity.CreateWorkspaceRequest{ID: "acme"},
			want: identity.WorkspaceEntry{ID: "acme", Name: "acme", Role: auth.RoleAdmin, Active: true, CreatedAt: t0}},
		{name: "an existing id", caller: person("alice", "home", auth.RoleAdmin),
			req: identity.CreateWorkspaceRequest{ID: "taken"}, wantErr: derrors.ErrConflict, details: map[string]any{"id": "taken"}},
		{name: "an API key may not", caller: apiKey("home"),
			req: identity.CreateWorkspaceRequest{ID: "acme"}, wantErr: derrors.ErrForbidden},
		{name: "no id", caller: person("alice", "home", auth.RoleAdmin), wantErr: derrors.ErrInvalid},
		{name: "bad id", caller: person("alice", "home", auth.RoleAdmin),
			req: identity.CreateWorkspaceRequest{ID: "-acme"}, wantErr: derrors.ErrInvalid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			e.member(t, "taken", "olga", auth.RoleAdmin)
			got, err := e.svc.CreateWorkspace(t.Context(), tt.caller, tt.req)
			wantErr(t, err, tt.wantErr, tt.details)
			if err != nil {
				if diff := cmp.Diff(map[string]string{"olga": "admin"}, e.roles(t, "taken")); diff != "" {
					t.Errorf("a refused create touched another workspace (-want +got):\n%s", diff)
				}
				return
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("CreateWorkspace (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(map[string]string{"alice": "admin"}, e.roles(t, tt.req.ID)); diff != "" {
				t.Errorf("the founder is the admin (-want +got):\n%s", diff)
			}
		})
	}
}

func TestListWorkspaces(t *testing.T) {
	tests := []struct {
		name   string
		caller auth.Principal
		want   []identity.WorkspaceEntry
	}{
		{name: "a person sees every membership", caller: person("alice", "acme", auth.RoleAdmin),
			want: []identity.WorkspaceEntry{
				{ID: "acme", Name: "acme", Role: auth.RoleAdmin, Active: true, CreatedAt: t0},
				{ID: "beta", Name: "beta", Role: auth.RoleViewer, CreatedAt: t0},
			}},
		{name: "an API key sees only its own workspace", caller: apiKey("acme"),
			want: []identity.WorkspaceEntry{{ID: "acme", Name: "acme", Role: auth.RoleAdmin, Active: true, CreatedAt: t0}}},
		{name: "the active workspace is listed without a membership row", caller: person("bob", "gamma", auth.RoleMember),
			want: []identity.WorkspaceEntry{{ID: "gamma", Name: "gamma", Role: auth.RoleMember, Active: true, CreatedAt: t0}}},
		{name: "nobody's workspaces", caller: person("nobody", "", ""), want: []identity.WorkspaceEntry{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			e.member(t, "acme", "alice", auth.RoleAdmin)
			e.member(t, "beta", "alice", auth.RoleViewer)
			e.member(t, "gamma", "carol", auth.RoleAdmin)
			got, err := e.svc.ListWorkspaces(t.Context(), tt.caller)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("ListWorkspaces (-want +got):\n%s", diff)
			}
		})
	}
}
