package auth_test

import (
	"errors"
	"testing"

	"svc/auth"
	"svc/internal/platform/derrors"
)

var (
	tmMember = auth.Principal{Subject: "alice", Workspace: "ws", Via: auth.ViaOIDC, Roles: []auth.Role{auth.RoleMember}}
	tmAdmin  = auth.Principal{Subject: "root", Workspace: "ws", Via: auth.ViaOIDC, Roles: []auth.Role{auth.RoleAdmin}}
	tmKey    = auth.Principal{Subject: "ci", Workspace: "ws", Via: auth.ViaAPIKey, Roles: []auth.Role{auth.RoleMember}}
	tmRunner = auth.Principal{Subject: "r1", Workspace: "ws", Via: auth.ViaRunner, Roles: []auth.Role{auth.RoleMember}}
	inRed    = []string{"red"}
)

// check compares err with want: nil, or the sentinel err must wrap.
func check(t *testing.T, what string, err, want error) {
	t.Helper()
	if want == nil && err != nil || want != nil && !errors.Is(err, want) {
		t.Errorf("%s = %v; want %v", what, err, want)
	}
}

func TestCanWriteTeamAsset(t *testing.T) {
	tests := []struct {
		name  string
		p     auth.Principal
		team  string
		teams []string
		want  error
	}{
		{"own team", tmMember, "red", inRed, nil},
		{"other team", tmMember, "blue", inRed, derrors.ErrForbidden},
		{"no teams at all", tmMember, "blue", nil, derrors.ErrForbidden},
		{"workspace-owned asset", tmMember, "", nil, nil},
		{"admin reaches every team", tmAdmin, "blue", nil, nil},
		{"api key reaches every team", tmKey, "blue", nil, nil},
		{"runner reaches every team", tmRunner, "blue", nil, nil},
	}
	for _, tt := range tests {
		check(t, tt.name, auth.CanWriteTeamAsset(tt.p, tt.team, tt.teams), tt.want)
	}
}

func TestCanReadTeamAsset(t *testing.T) {
	tests := []struct {
		name    string
		p       auth.Principal
		team    string
		private bool
		teams   []string
		want    error
	}{
		{"public team, outsider", tmMember, "blue", false, inRed, nil},
		{"private team, member", tmMember, "red", true, inRed, nil},
		{"private team, outsider is 404", tmMember, "blue", true, inRed, derrors.ErrNotFound},
		{"private team, admin", tmAdmin, "blue", true, nil, nil},
		{"private team, api key", tmKey, "blue", true, nil, nil},
		{"private team, runner", tmRunner, "blue", true, nil, nil},
		{"workspace-owned", tmMember, "", true, nil, nil},
	}
	for _, tt := range tests {
		err := auth.CanReadTeamAsset(tt.p, tt.team, tt.private, tt.teams)
		check(t, tt.name, err, tt.want)
		if errors.Is(err, derrors.ErrForbidden) {
			t.Errorf("%s: a refused read must be 404, never 403", tt.name)
		}
	}
}

func TestCheckExplicitTeam(t *testing.T) {
	tests := []struct {
		name  string
		p     auth.Principal
		team  string
		teams []string
		want  error
	}{
		{"none named", tmMember, "", inRed, nil},
		{"own team", tmMember, "red", inRed, nil},
		{"other team refused, not redirected", tmMember, "blue", inRed, derrors.ErrForbidden},
		{"admin", tmAdmin, "blue", nil, nil},
		{"api key", tmKey, "blue", nil, nil},
	}
	for _, tt := range tests {
		check(t, tt.name, auth.CheckExplicitTeam(tt.p, tt.team, tt.teams), tt.want)
	}
}

func TestCheckTeamMove(t *testing.T) {
	both := []string{"red", "green"}
	tests := []struct {
		name            string
		p               auth.Principal
		owner, from, to string
		teams           []string
		want            error
	}{
		{"between own teams", tmMember, "ws", "red", "green", both, nil},
		{"from workspace to own team", tmMember, "ws", "", "red", inRed, nil},
		{"to workspace-owned", tmMember, "ws", "red", "", inRed, nil},
		{"source not writable", tmMember, "ws", "blue", "red", inRed, derrors.ErrForbidden},
		{"destination not writable", tmMember, "ws", "red", "blue", inRed, derrors.ErrForbidden},
		{"no-op move", tmMember, "ws", "red", "red", inRed, derrors.ErrConflict},
		{"shared asset", tmAdmin, "_shared", "red", "blue", nil, derrors.ErrNotFound},
		{"admin anywhere", tmAdmin, "ws", "blue", "green", nil, nil},
	}
	for _, tt := range tests {
		check(t, tt.name, auth.CheckTeamMove(tt.p, tt.owner, tt.from, tt.to, tt.teams), tt.want)
	}
}
