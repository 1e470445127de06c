package identity_test

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"svc/auth"
	"svc/internal/platform/derrors"
	"svc/internal/service/identity"
)

func TestCreateKey(t *testing.T) {
	tests := []struct {
		name       string
		req        identity.CreateKeyRequest
		wantScopes []string
		wantErr    error
	}{
		{name: "full access", req: identity.CreateKeyRequest{Label: "ci"}},
		{name: "scopes are de-duplicated, narrowest first",
			req:        identity.CreateKeyRequest{Scopes: []string{"admin", "read", "admin"}},
			wantScopes: []string{"read", "admin"}},
		{name: "unknown scope", req: identity.CreateKeyRequest{Scopes: []string{"root"}}, wantErr: derrors.ErrInvalid},
		{name: "control characters in the label", req: identity.CreateKeyRequest{Label: "a\nb"}, wantErr: derrors.ErrInvalid},
		{name: "label too long", req: identity.CreateKeyRequest{Label: strings.Repeat("é", 101)}, wantErr: derrors.ErrInvalid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			ctx := t.Context()
			alice := person("alice", "acme", auth.RoleAdmin)
			got, err := e.svc.CreateKey(ctx, alice, tt.req)
			wantErr(t, err, tt.wantErr, nil)
			if err != nil {
				return
			}
			if !strings.HasPrefix(got.APIKey, auth.APIKeyPrefix) || !strings.HasPrefix(got.APIKey, got.Prefix) {
				t.Errorf("plaintext %q, prefix %q: want an %s... key that starts with its prefix", got.APIKey, got.Prefix, auth.APIKeyPrefix)
			}
			want := identity.KeyMetadata{Label: tt.req.Label, Scopes: tt.wantScopes, Owner: "alice", CreatedBy: "alice", CreatedAt: t0}
			if diff := cmp.Diff(want, got.KeyMetadata, cmpopts.IgnoreFields(identity.KeyMetadata{}, "ID", "Prefix")); diff != "" {
				t.Errorf("CreateKey (-want +got):\n%s", diff)
			}
			list, err := e.svc.ListKeys(ctx, alice)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff([]identity.KeyMetadata{got.KeyMetadata}, list); diff != "" {
				t.Errorf("ListKeys (-want +got):\n%s", diff)
			}
			// The stored key is an admin key that acts as alice.
			g, err := e.st.APIKeyGrantByHash(ctx, auth.HashKey(got.APIKey))
			if err != nil {
				t.Fatal(err)
			}
			if g.Key.Subject != "alice" || !cmp.Equal(g.Key.Roles, []string{"admin"}) || g.Key.Kind != string(auth.KeyKindAPI) {
				t.Errorf("stored key = %+v; want subject alice, roles [admin], kind %s", g.Key, auth.KeyKindAPI)
			}
		})
	}
}

func TestRevokeKey(t *testing.T) {
	e := newEnv(t)
	ctx := t.Context()
	alice := person("alice", "acme", auth.RoleAdmin)
	k, err := e.svc.CreateKey(ctx, alice, identity.CreateKeyRequest{})
	if err != nil {
		t.Fatal(err)
	}
	// Another workspace's admin, and an unknown id: no-ops, no error.
	for _, tc := range []struct {
		p  auth.Principal
		id string
	}{{person("olga", "other", auth.RoleAdmin), k.ID}, {alice, "key_unknown"}} {
		if err := e.svc.RevokeKey(ctx, tc.p, tc.id); err != nil {
			t.Errorf("RevokeKey(%s, %s) = %v, want nil", tc.p.Workspace, tc.id, err)
		}
	}
	if list, _ := e.svc.ListKeys(ctx, alice); len(list) != 1 {
		t.Fatalf("the key went away on a foreign revoke: %+v", list)
	}
	if err := e.svc.RevokeKey(ctx, alice, k.ID); err != nil {
		t.Fatal(err)
	}
	if list, _ := e.svc.ListKeys(ctx, alice); len(list) != 0 {
		t.Errorf("ListKeys after revoking = %+v, want none", list)
	}
}

func TestCreateTenantKey(t *testing.T) {
	tests := []struct {
		name      string
		req       identity.TenantKeyRequest
		wantLabel string
		wantErr   error
	}{
		{name: "default label", req: identity.TenantKeyRequest{Workspace: "acme"}, wantLabel: "tenant key"},
		{name: "labelled", req: identity.TenantKeyRequest{Workspace: "acme", Label: "bootstrap"}, wantLabel: "bootstrap"},
		{name: "no workspace", req: identity.TenantKeyRequest{}, wantErr: derrors.ErrInvalid},
		{name: "bad workspace id", req: identity.TenantKeyRequest{Workspace: "a/b"}, wantErr: derrors.ErrInvalid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			ctx := t.Context()
			got, err := e.svc.CreateTenantKey(ctx, tt.req)
			wantErr(t, err, tt.wantErr, nil)
			if err != nil {
				return
			}
			w, err := e.st.GetWorkspace(ctx, "acme")
			if err != nil || w.CreatedBy != auth.LegacyOperatorSubject {
				t.Errorf("workspace record = %+v, %v; want one created by the operator", w, err)
			}
			if ms, _ := e.st.ListMembers(ctx, "acme"); len(ms) != 0 {
				t.Errorf("the operator route made members: %+v", ms)
			}
			list, err := e.svc.ListKeys(ctx, apiKey("acme"))
			if err != nil {
				t.Fatal(err)
			}
			want := []identity.KeyMetadata{{ID: got.ID, Label: tt.wantLabel, Owner: auth.KeySubject(got.ID), CreatedBy: auth.LegacyOperatorSubject, CreatedAt: t0}}
			if diff := cmp.Diff(want, list, cmpopts.IgnoreFields(identity.KeyMetadata{}, "Prefix")); diff != "" {
				t.Errorf("the tenant key acts as itself (-want +got):\n%s", diff)
			}
			// A second tenant key for the same workspace keeps its record.
			if _, err := e.svc.CreateTenantKey(ctx, identity.TenantKeyRequest{Workspace: "acme"}); err != nil {
				t.Errorf("a second tenant key: %v", err)
			}
		})
	}
}
