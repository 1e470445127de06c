package identity_test

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"svc/auth"
	"svc/internal/platform/derrors"
	"svc/internal/service/identity"
	"svc/store"
)

// teamsEnv is acme with admin alice, members bob (in team "secret") and
// carol (in no team), a public team "open" and a private team "secret".
func teamsEnv(t *testing.T) *env {
	t.Helper()
	e := newEnv(t)
	e.member(t, "acme", "alice", auth.RoleAdmin)
	e.member(t, "acme", "bob", auth.RoleMember)
	e.member(t, "acme", "carol", auth.RoleMember)
	e.member(t, "other", "olga", auth.RoleAdmin)
	admin := person("alice", "acme", auth.RoleAdmin)
	for _, req := range []identity.CreateTeamRequest{{ID: "open"}, {ID: "secret", Name: "Secret squad", Private: true}} {
		if _, err := e.svc.CreateTeam(t.Context(), admin, req); err != nil {
			t.Fatal(err)
		}
	}
	if err := e.svc.AddTeamMember(t.Context(), admin, "secret", "bob"); err != nil {
		t.Fatal(err)
	}
	return e
}

func TestTeamVisibility(t *testing.T) {
	tests := []struct {
		name   string
		caller auth.Principal
		want   []string // the teams listed and readable
	}{
		{name: "admin sees all", caller: person("alice", "acme", auth.RoleAdmin), want: []string{"open", "secret"}},
		{name: "a member of the private team", caller: person("bob", "acme", auth.RoleMember), want: []string{"open", "secret"}},
		{name: "a member outside it", caller: person("carol", "acme", auth.RoleMember), want: []string{"open"}},
		{name: "an API key sees all", caller: apiKey("acme"), want: []string{"open", "secret"}},
		{name: "another workspace", caller: person("olga", "other", auth.RoleAdmin), want: []string{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := teamsEnv(t)
			ctx := t.Context()
			teams, err := e.svc.ListTeams(ctx, tt.caller)
			if err != nil {
				t.Fatal(err)
			}
			got := []string{}
			for _, tm := range teams {
				got = append(got, tm.ID)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("ListTeams (-want +got):\n%s", diff)
			}
			for _, id := range []string{"open", "secret"} {
				visible := false
				for _, w := range tt.want {
					visible = visible || w == id
				}
				_, err := e.svc.GetTeam(ctx, tt.caller, id)
				_, lerr := e.svc.ListTeamMembers(ctx, tt.caller, id)
				if visible {
					wantErr(t, err, nil, nil)
					wantErr(t, lerr, nil, nil)
				} else {
					// Hidden looks exactly like absent.
					wantErr(t, err, derrors.ErrNotFound, map[string]any{"id": id})
					wantErr(t, lerr, derrors.ErrNotFound, map[string]any{"id": id})
				}
			}
		})
	}
}

func TestTeamWrites(t *testing.T) {
	name := func(s string) *string { return &s }
	yes := true
	tests := []struct {
		name    string
		do      func(e *env, p auth.Principal) error
		wantErr error
		details map[string]any
	}{
		{name: "create a duplicate id", do: func(e *env, p auth.Principal) error {
			_, err := e.svc.CreateTeam(t.Context(), p, identity.CreateTeamRequest{ID: "open"})
			return err
		}, wantErr: derrors.ErrConflict, details: map[string]any{"id": "open"}},
		{name: "create with a bad id", do: func(e *env, p auth.Principal) error {
			_, err := e.svc.CreateTeam(t.Context(), p, identity.CreateTeamRequest{ID: "Open Team"})
			return err
		}, wantErr: derrors.ErrInvalid},
		{name: "update an unknown team", do: func(e *env, p auth.Principal) error {
			_, err := e.svc.UpdateTeam(t.Context(), p, "nope", identity.PatchTeamRequest{Private: &yes})
			return err
		}, wantErr: derrors.ErrNotFound, details: map[string]any{"id": "nope"}},
		{name: "update with nothing to change", do: func(e *env, p auth.Principal) error {
			_, err := e.svc.UpdateTeam(t.Context(), p, "open", identity.PatchTeamRequest{})
			return err
		}, wantErr: derrors.ErrInvalid},
		{name: "rename to empty", do: func(e *env, p auth.Principal) error {
			_, err := e.svc.UpdateTeam(t.Context(), p, "open", identity.PatchTeamRequest{Name: name("")})
			return err
		}, wantErr: derrors.ErrInvalid},
		{name: "delete an unknown team", do: func(e *env, p auth.Principal) error {
			return e.svc.DeleteTeam(t.Context(), p, "nope")
		}, wantErr: derrors.ErrNotFound, details: map[string]any{"id": "nope"}},
		{name: "delete another workspace's team", do: func(e *env, _ auth.Principal) error {
			return e.svc.DeleteTeam(t.Context(), person("olga", "other", auth.RoleAdmin), "open")
		}, wantErr: derrors.ErrNotFound, details: map[string]any{"id": "open"}},
		{name: "add a non-member", do: func(e *env, p auth.Principal) error {
			return e.svc.AddTeamMember(t.Context(), p, "open", "olga")
		}, wantErr: derrors.ErrNotFound, details: map[string]any{"subject": "olga"}},
		{name: "add to an unknown team", do: func(e *env, p auth.Principal) error {
			return e.svc.AddTeamMember(t.Context(), p, "nope", "bob")
		}, wantErr: derrors.ErrNotFound, details: map[string]any{"id": "nope"}},
		{name: "add twice", do: func(e *env, p auth.Principal) error {
			return e.svc.AddTeamMember(t.Context(), p, "secret", "bob")
		}},
		{name: "remove from an unknown team", do: func(e *env, p auth.Principal) error {
			return e.svc.RemoveTeamMember(t.Context(), p, "nope", "bob")
		}, wantErr: derrors.ErrNotFound, details: map[string]any{"id": "nope"}},
		{name: "remove someone not in the team", do: func(e *env, p auth.Principal) error {
			return e.svc.RemoveTeamMember(t.Context(), p, "open", "bob")
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := teamsEnv(t)
			wantErr(t, tt.do(e, person("alice", "acme", auth.RoleAdmin)), tt.wantErr, tt.details)
		})
	}
}

func TestTeamLifecycle(t *testing.T) {
	e := teamsEnv(t)
	ctx := t.Context()
	admin := person("alice", "acme", auth.RoleAdmin)
	carol := person("carol", "acme", auth.RoleMember)

	open, err := e.svc.GetTeam(ctx, admin, "open")
	if err != nil {
		t.Fatal(err)
	}
	want := store.Team{ID: "open", Workspace: "acme", Name: "open", CreatedBy: "alice", CreatedAt: t0}
	if diff := cmp.Diff(want, open); diff != "" {
		t.Errorf("a team's name defaults to its id (-want +got):\n%s", diff)
	}

	// Making "open" private hides it from carol; adding her shows it again.
	yes := true
	got, err := e.svc.UpdateTeam(ctx, admin, "open", identity.PatchTeamRequest{Private: &yes})
	if err != nil || !got.Private || got.Name != "open" {
		t.Fatalf("UpdateTeam = %+v, %v; want private, name kept", got, err)
	}
	if _, err := e.svc.GetTeam(ctx, carol, "open"); !errors.Is(err, derrors.ErrNotFound) {
		t.Errorf("GetTeam by an outsider of a private team: err = %v, want not found", err)
	}
	if err := e.svc.AddTeamMember(ctx, admin, "open", "carol"); err != nil {
		t.Fatal(err)
	}
	ms, err := e.svc.ListTeamMembers(ctx, carol, "open")
	if err != nil || len(ms) != 1 || ms[0].Subject != "carol" {
		t.Errorf("ListTeamMembers = %+v, %v; want carol", ms, err)
	}
	if err := e.svc.RemoveTeamMember(ctx, admin, "open", "carol"); err != nil {
		t.Fatal(err)
	}
	if _, err := e.svc.GetTeam(ctx, carol, "open"); !errors.Is(err, derrors.ErrNotFound) {
		t.Errorf("GetTeam after leaving a private team: err = %v, want not found", err)
	}

	if err := e.svc.DeleteTeam(ctx, admin, "open"); err != nil {
		t.Fatal(err)
	}
	if _, err := e.svc.GetTeam(ctx, admin, "open"); !errors.Is(err, derrors.ErrNotFound) {
		t.Errorf("GetTeam after deleting: err = %v, want not found", err)
	}
}
