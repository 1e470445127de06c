package auth_test

import (
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"svc/auth"
	"svc/internal/platform/derrors"
)

var update = flag.Bool("update", false, "rewrite golden files under testdata/")

// wantRules is the expected action table, written out by hand from spec §4,
// §5.4 and §5.7 (and the documented project choices) instead of derived from
// the code under test. A new action in the code without a row here fails.
type rule struct{ Role, Scope string }

var wantRules = map[auth.Action]rule{
	// Minimum roles stated by the spec.
	"runs:read":        {"viewer", "read"},
	"harnesses:read":   {"viewer", "read"},
	"judges:read":      {"viewer", "read"},
	"datasets:read":    {"viewer", "read"},
	"scorecards:read":  {"viewer", "read"},
	"runtimes:read":    {"viewer", "read"},
	"members:read":     {"viewer", "read"},
	"issues:read":      {"viewer", "read"},
	"datasets:write":   {"member", "write"},
	"judges:write":     {"member", "write"},
	"scorecards:run":   {"member", "write"},
	"runtimes:write":   {"viewer", "write"},
	"keys:read":        {"admin", "admin"},
	"keys:write":       {"admin", "admin"},
	"members:write":    {"admin", "admin"},
	"runtimes:control": {"admin", "admin"},
	"invites:write":    {"admin", "admin"},
	// Left open by the spec; the project's choices.
	"runs:submit":        {"member", "write"},
	"harnesses:register": {"member", "write"},
	"datasets:delete":    {"member", "write"},
	"issues:write":       {"member", "write"},
	"settings:write":     {"admin", "admin"},
	"images:push":        {"member", "write"},
	"agents:read":        {"viewer", "read"},
	"agents:write":       {"member", "write"},
	"repos:write":        {"member", "write"},
	"secrets:read":       {"admin", "admin"},
	"secrets:write":      {"admin", "admin"},
	"secrets:use":        {"member", "write"},
	"teams:read":         {"viewer", "read"},
	"teams:write":        {"admin", "admin"},
	"events:read":        {"admin", "read"},
}

// Independent orderings for the expectation (not the package's rank methods).
var (
	roleOrder  = []string{"", "viewer", "member", "admin"}
	scopeOrder = []string{"", "read", "write", "admin"}
)

func index(list []string, s string) int {
	for i, v := range list {
		if v == s {
			return i
		}
	}
	return -1
}

func TestActionTableMatchesSpec(t *testing.T) {
	got := map[auth.Action]rule{}
	for _, r := range auth.Actions() {
		got[r.Action] = rule{string(r.MinRole), string(r.Scope)}
	}
	if diff := cmp.Diff(wantRules, got); diff != "" {
		t.Errorf("action table differs from the spec (-want +got):\n%s", diff)
	}
}

func TestAuthorizeMatrix(t *testing.T) {
	type scopeCase struct {
		name   string
		scopes []auth.Scope
		rank   int // -1: unrestricted key (no scopes); 0: only invalid scopes
	}
	scopeCases := []scopeCase{
		{"unrestricted", nil, -1},
		{"read", []auth.Scope{"read"}, 1},
		{"write", []auth.Scope{"write"}, 2},
		{"admin", []auth.Scope{"admin"}, 3},
		{"read+write", []auth.Scope{"read", "write"}, 2},
		{"invalid", []auth.Scope{"everything"}, 0},
	}
	for _, rule := range auth.Actions() {
		want, ok := wantRules[rule.Action]
		if !ok {
			t.Errorf("%s: no expectation in wantRules", rule.Action)
			continue
		}
		for _, role := range roleOrder {
			for _, sc := range scopeCases {
				p := auth.Principal{Subject: "u1", Workspace: "ws", Via: auth.ViaAPIKey, Scopes: sc.scopes}
				if role != "" {
					p.Roles = []auth.Role{auth.Role(role)}
				}
				roleOK := index(roleOrder, role) >= index(roleOrder, want.Role)
				scopeOK := sc.rank == -1 || sc.rank >= index(scopeOrder, want.Scope)
				wantAllowed := roleOK && scopeOK

				err := auth.Authorize(p, rule.Action)
				if (err == nil) != wantAllowed {
					t.Errorf("Authorize(role=%q, scopes=%s, %s) = %v; want allowed=%v", role, sc.name, rule.Action, err, wantAllowed)
					continue
				}
				if err != nil {
					if !errors.Is(err, derrors.ErrForbidden) {
						t.Errorf("Authorize(role=%q, scopes=%s, %s) = %v; want ErrForbidden", role, sc.name, rule.Action, err)
					}
					if !strings.Contains(err.Error(), string(rule.Action)) {
						t.Errorf("error %q does not name the action %s", err, rule.Action)
					}
					missing := want.Role
					if roleOK {
						missing = want.Scope
					}
					if !strings.Contains(err.Error(), missing) {
						t.Errorf("error %q does not name the missing role or scope %q", err, missing)
					}
				}
			}
		}
	}
}

// TestAuthorizeLowestRole states the brief's property directly: for every
// action the lowest role passes and the role below it fails.
func TestAuthorizeLowestRole(t *testing.T) {
	for a, want := range wantRules {
		lo := index(roleOrder, want.Role)
		p := auth.Principal{Subject: "u1", Workspace: "ws", Via: auth.ViaOIDC, Roles: []auth.Role{auth.Role(want.Role)}}
		if err := auth.Authorize(p, a); err != nil {
			t.Errorf("%s with role %s: %v; want allowed", a, want.Role, err)
		}
		if lo > 1 {
			p.Roles = []auth.Role{auth.Role(roleOrder[lo-1])}
			if err := auth.Authorize(p, a); !errors.Is(err, derrors.ErrForbidden) {
				t.Errorf("%s with role %s: %v; want ErrForbidden", a, roleOrder[lo-1], err)
			}
		}
	}
}

// TestScopedKeyNeverExceedsRole: an admin-scoped key with a viewer role is
// still a viewer.
func TestScopedKeyNeverExceedsRole(t *testing.T) {
	p := auth.Principal{Subject: "k", Workspace: "ws", Via: auth.ViaAPIKey, Roles: []auth.Role{auth.RoleViewer}, Scopes: []auth.Scope{auth.ScopeAdmin}}
	for _, a := range []auth.Action{auth.KeysWrite, auth.ScorecardsRun, auth.MembersWrite} {
		if err := auth.Authorize(p, a); !errors.Is(err, derrors.ErrForbidden) {
			t.Errorf("Authorize(viewer key with admin scope, %s) = %v; want ErrForbidden", a, err)
		}
	}
	if err := auth.Authorize(p, auth.RunsRead); err != nil {
		t.Errorf("Authorize(viewer key, runs:read) = %v; want nil", err)
	}
}

func TestAuthorizePseudoActionsAndEdges(t *testing.T) {
	admin := auth.Principal{Subject: "u1", Workspace: "ws", Via: auth.ViaOIDC, Roles: []auth.Role{auth.RoleAdmin}}
	tests := []struct {
		name string
		p    auth.Principal
		a    auth.Action
		want error // nil, or the sentinel the error must wrap
	}{
		{"public needs nothing", auth.Principal{}, auth.Public, nil},
		{"authenticated needs a subject", auth.Principal{}, auth.Authenticated, derrors.ErrUnauthenticated},
		{"authenticated with any principal", auth.Principal{Subject: "u", Via: auth.ViaOIDC}, auth.Authenticated, nil},
		{"authenticated without workspace", auth.Principal{Subject: "u", Via: auth.ViaOIDC, Roles: []auth.Role{auth.RoleViewer}}, auth.Authenticated, nil},
		{"internal never by principal", admin, auth.Internal, derrors.ErrForbidden},
		{"unknown action fails closed", admin, "runs:obliterate", derrors.ErrForbidden},
		{"empty principal on gated action", auth.Principal{}, auth.RunsRead, derrors.ErrUnauthenticated},
		{"no workspace", auth.Principal{Subject: "u", Via: auth.ViaOIDC, Roles: []auth.Role{auth.RoleAdmin}}, auth.RunsRead, derrors.ErrForbidden},
		{"no roles", auth.Principal{Subject: "u", Workspace: "ws", Via: auth.ViaAPIKey}, auth.RunsRead, derrors.ErrForbidden},
		{"unknown role only", auth.Principal{Subject: "u", Workspace: "ws", Via: auth.ViaOIDC, Roles: []auth.Role{"owner"}}, auth.RunsRead, derrors.ErrForbidden},
		{"cumulative: highest of several", auth.Principal{Subject: "u", Workspace: "ws", Via: auth.ViaOIDC, Roles: []auth.Role{auth.RoleViewer, auth.RoleAdmin}}, auth.KeysWrite, nil},
		{"runner key on a runner route", auth.Principal{Subject: "key:r", Workspace: "ws", Via: auth.ViaRunner}, auth.Runner, nil},
		{"runner key on an authenticated route", auth.Principal{Subject: "key:r", Workspace: "ws", Via: auth.ViaRunner}, auth.Authenticated, derrors.ErrForbidden},
		{"runner key with a role still only runner routes", auth.Principal{Subject: "key:r", Workspace: "ws", Via: auth.ViaRunner, Roles: []auth.Role{auth.RoleAdmin}}, auth.RunsRead, derrors.ErrForbidden},
		{"others reach a runner route, whose service refuses them after its lookup", admin, auth.Runner, nil},
		{"no principal on a runner route", auth.Principal{}, auth.Runner, derrors.ErrUnauthenticated},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := auth.Authorize(tt.p, tt.a)
			if tt.want == nil && err != nil || tt.want != nil && !errors.Is(err, tt.want) {
				t.Errorf("Authorize = %v; want %v", err, tt.want)
			}
		})
	}
}

func TestRequireHumanAndCreatorOrAdmin(t *testing.T) {
	key := auth.Principal{Subject: "k", Workspace: "ws", Via: auth.ViaAPIKey, Roles: []auth.Role{auth.RoleAdmin}}
	runner := auth.Principal{Subject: "r", Workspace: "ws", Via: auth.ViaRunner, Roles: []auth.Role{auth.RoleMember}}
	person := auth.Principal{Subject: "alice", Workspace: "ws", Via: auth.ViaOIDC, Roles: []auth.Role{auth.RoleMember}}
	if err := auth.RequireHuman(key); !errors.Is(err, derrors.ErrForbidden) {
		t.Errorf("RequireHuman(api key) = %v; want ErrForbidden", err)
	}
	if err := auth.RequireHuman(runner); !errors.Is(err, derrors.ErrForbidden) {
		t.Errorf("RequireHuman(runner) = %v; want ErrForbidden", err)
	}
	if err := auth.RequireHuman(person); err != nil {
		t.Errorf("RequireHuman(person) = %v; want nil", err)
	}
	if err := auth.RequireHuman(auth.Principal{}); !errors.Is(err, derrors.ErrUnauthenticated) {
		t.Errorf("RequireHuman(empty) = %v; want ErrUnauthenticated", err)
	}
	tests := []struct {
		p       auth.Principal
		creator string
		ok      bool
	}{
		{person, "alice", true},
		{person, "bob", false},
		{person, "", false},
		{key, "bob", true}, // an admin key
		{runner, "bob", false},
		{auth.Principal{}, "", false},
	}
	for _, tt := range tests {
		err := auth.CheckCreatorOrAdmin(tt.p, tt.creator)
		if (err == nil) != tt.ok || err != nil && !errors.Is(err, derrors.ErrForbidden) {
			t.Errorf("CheckCreatorOrAdmin(%s/%v, %q) = %v; want ok=%v", tt.p.Subject, tt.p.Roles, tt.creator, err, tt.ok)
		}
	}
}

func TestParseRoleAndScope(t *testing.T) {
	for _, s := range []string{"viewer", "member", "admin"} {
		if r, err := auth.ParseRole(s); err != nil || string(r) != s {
			t.Errorf("ParseRole(%q) = %q, %v", s, r, err)
		}
	}
	for _, s := range []string{"read", "write", "admin"} {
		if sc, err := auth.ParseScope(s); err != nil || string(sc) != s {
			t.Errorf("ParseScope(%q) = %q, %v", s, sc, err)
		}
	}
	for _, s := range []string{"", "Admin", "owner", "read "} {
		if _, err := auth.ParseRole(s); !errors.Is(err, derrors.ErrInvalid) {
			t.Errorf("ParseRole(%q) = %v; want ErrInvalid", s, err)
		}
		if _, err := auth.ParseScope(s); !errors.Is(err, derrors.ErrInvalid) {
			t.Errorf("ParseScope(%q) = %v; want ErrInvalid", s, err)
		}
	}
}

// TestActionsDocTable keeps testdata/actions.md, the table docs/ shows, in
// step with the code; refresh it with -update.
func TestActionsDocTable(t *testing.T) {
	golden := filepath.Join("testdata", "actions.md")
	got := auth.MarkdownTable()
	if *update {
		if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("reading golden (run with -update to create): %v", err)
	}
	if diff := cmp.Diff(string(want), got); diff != "" {
		t.Errorf("%s is stale; run go test ./auth -run TestActionsDocTable -update (-want +got):\n%s", golden, diff)
	}
	// The user docs carry the same table.
	doc, err := os.ReadFile(filepath.Join("..", "docs", "identity.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(doc), got) {
		t.Errorf("docs/identity.md does not contain the current action table; paste testdata/actions.md into it")
	}
}
