package registries_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"svc/auth"
	"svc/internal/domain/registry"
	"svc/internal/platform/derrors"
	"svc/internal/service/registries"
)

// TestRegisterSecretsUse: registering a harness (or template, or an
// instance of one) whose secretEnv names workspace secrets needs
// secrets:use (member+), whatever gate the caller passed before; other
// harnesses are not affected.
func TestRegisterSecretsUse(t *testing.T) {
	st := backends[0].open(t) // sqlite: the rule is in the service, not the store
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	svc := registries.New(st, nil, func() time.Time { return now })
	ctx := t.Context()
	as := func(role auth.Role, scopes ...auth.Scope) auth.Principal {
		return auth.Principal{Subject: string(role) + "-1", Workspace: "ws1", Roles: []auth.Role{role}, Scopes: scopes, Via: auth.ViaAPIKey}
	}
	admin := as(auth.RoleAdmin)
	const withSecretsTemplate = `{"id":"tmpl-s","version":"1.0.0","parameters":[{"path":"model"}],
		"harness":{"kind":"process","command":["agent"],"secretEnv":{"API_KEY":"openai-key"}}}`
	if _, err := svc.Register(ctx, admin, registry.HarnessTemplate, []byte(withSecretsTemplate), nil); err != nil {
		t.Fatalf("registering the template as admin: %v", err)
	}

	tests := []struct {
		name string
		p    auth.Principal
		kind registry.Kind
		spec string
		ok   bool
	}{
		{"viewer, secretEnv", as(auth.RoleViewer), registry.Harness,
			`{"id":"h1","version":"1.0.0","kind":"process","command":["run"],"secretEnv":{"API_KEY":"openai-key"}}`, false},
		{"viewer, a service's secretEnv", as(auth.RoleViewer), registry.Harness,
			`{"id":"h2","version":"1.0.0","kind":"service","services":{"web":{"image":"x","ports":[80],"secretEnv":{"K":"k"}}},"frontDoor":{"service":"web","port":80}}`, false},
		{"viewer, template with secretEnv", as(auth.RoleViewer), registry.HarnessTemplate,
			`{"id":"tmpl-v","version":"1.0.0","harness":{"kind":"process","command":["a"],"secretEnv":{"K":"k"}}}`, false},
		{"viewer, instance of a template with secretEnv", as(auth.RoleViewer), registry.Harness,
			`{"id":"h3","version":"1.0.0","template":{"id":"tmpl-s","version":"1.0.0"},"pins":{"model":"m1"}}`, false},
		{"member with a read-scoped key", as(auth.RoleMember, auth.ScopeRead), registry.Harness,
			`{"id":"h4","version":"1.0.0","kind":"process","command":["run"],"secretEnv":{"API_KEY":"openai-key"}}`, false},
		{"viewer, no secrets", as(auth.RoleViewer), registry.Harness,
			`{"id":"h5","version":"1.0.0","kind":"process","command":["run"]}`, true},
		{"member, secretEnv", as(auth.RoleMember), registry.Harness,
			`{"id":"h6","version":"1.0.0","kind":"process","command":["run"],"secretEnv":{"API_KEY":"openai-key"}}`, true},
		{"member, instance of a template with secretEnv", as(auth.RoleMember), registry.Harness,
			`{"id":"h7","version":"1.0.0","template":{"id":"tmpl-s","version":"1.0.0"},"pins":{"model":"m1"}}`, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := svc.Register(ctx, tt.p, tt.kind, []byte(tt.spec), nil)
			if tt.ok {
				if err != nil {
					t.Fatalf("Register = %v; want it registered", err)
				}
				return
			}
			if !errors.Is(err, derrors.ErrForbidden) {
				t.Fatalf("Register = %v; want ErrForbidden", err)
			}
			for _, want := range []string{"workspace secrets", "member role", string(auth.SecretsUse)} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not say %q", err, want)
				}
			}
		})
	}
}
