// Package auth holds the Principal, the authenticators (OIDC, API keys, the
// dev fallback) and the role x scope x team checks.
//
// It is pure: it reaches storage only through its own narrow interfaces
// (KeyLookup, Memberships), so the API and the store packages can be built
// and tested apart from it.
package auth

import (
	"fmt"
	"slices"
	"strings"

	"svc/internal/platform/derrors"
)

// Action is what a route requires of its caller, e.g. "runs:read". Every
// route in the API's route table names one.
type Action string

// Pseudo-actions for routes that are not gated by a role.
const (
	// Public routes need no credential at all (healthz, readyz, metrics, openapi.json).
	Public Action = ""
	// Authenticated routes need any valid principal, with no role gate (GET /me).
	Authenticated Action = "authenticated"
	// Internal routes need the operator token header x-internal-token.
	Internal Action = "internal"
	// Runner routes are the self-hosted runners' machine routes. They
	// take a runner key (rnr_) and no other credential, which the runners
	// service checks after looking the job up (so a foreign job is 404
	// whoever asks); Authorize admits any principal to them. A runner key
	// opens no other route: Authorize refuses it on every other action.
	Runner Action = "runner"
)

// Role-gated actions. The spec (§4, §5.7) names most of them; the rest are
// the project's own choices, each explained in its rule's Note.
const (
	RunsRead          Action = "runs:read"
	RunsSubmit        Action = "runs:submit"
	HarnessesRead     Action = "harnesses:read"
	HarnessesRegister Action = "harnesses:register"
	DatasetsRead      Action = "datasets:read"
	DatasetsWrite     Action = "datasets:write"
	DatasetsDelete    Action = "datasets:delete"
	JudgesRead        Action = "judges:read"
	JudgesWrite       Action = "judges:write"
	ScorecardsRead    Action = "scorecards:read"
	ScorecardsRun     Action = "scorecards:run"
	RuntimesRead      Action = "runtimes:read"
	RuntimesWrite     Action = "runtimes:write"
	RuntimesControl   Action = "runtimes:control"
	MembersRead       Action = "members:read"
	MembersWrite      Action = "members:write"
	InvitesWrite      Action = "invites:write"
	KeysRead          Action = "keys:read"
	KeysWrite         Action = "keys:write"
	IssuesRead        Action = "issues:read"
	IssuesWrite       Action = "issues:write"
	SettingsWrite     Action = "settings:write"
	ImagesPush        Action = "images:push"
	AgentsRead        Action = "agents:read"
	AgentsWrite       Action = "agents:write"
	ReposWrite        Action = "repos:write"
	SecretsRead       Action = "secrets:read"
	SecretsWrite      Action = "secrets:write"
	TeamsRead         Action = "teams:read"
	TeamsWrite        Action = "teams:write"
	EventsRead        Action = "events:read"

	// SecretsUse is having a job handed workspace secret values: required
	// to register a harness (or harness template) whose secretEnv names
	// workspace secrets. It is checked in the registry service, not on a
	// route.
	SecretsUse Action = "secrets:use"
)

// ActionRule is one row of the action table: the least role that may perform
// the action and the least API-key scope that may (spec §5.4, §5.7).
type ActionRule struct {
	Action  Action
	MinRole Role
	// Scope is the scope class of the action: read (data reads), write
	// (content mutations) or admin (keys, members, settings, secrets,
	// runtime control). A scoped key needs at least this scope.
	Scope Scope
	// Spec is true when the spec states the minimum role; false when the
	// project chose it (Note says why).
	Spec bool
	// Note is a one-line reason, shown in the docs table.
	Note string
}

// actionTable is the single source of truth: Authorize, the docs table and
// the tests all derive from it.
var actionTable = []ActionRule{
	{RunsRead, RoleViewer, ScopeRead, true, "§5.7"},
	{RunsSubmit, RoleMember, ScopeWrite, false, "spec leaves it open; submitting spends the tenant's budget, like scorecards:run (member+)"},
	{HarnessesRead, RoleViewer, ScopeRead, true, "§5.7"},
	{HarnessesRegister, RoleMember, ScopeWrite, false, "spec leaves it open; registering content matches datasets:write and judges:write (member+)"},
	{DatasetsRead, RoleViewer, ScopeRead, true, "§5.7"},
	{DatasetsWrite, RoleMember, ScopeWrite, true, "§5.7"},
	{DatasetsDelete, RoleMember, ScopeWrite, false, "§4.3 names it; the creator-or-admin check (CheckCreatorOrAdmin) applies on top"},
	{JudgesRead, RoleViewer, ScopeRead, true, "§5.7; also rubrics reads and judge preview"},
	{JudgesWrite, RoleMember, ScopeWrite, true, "§5.7; also rubrics writes"},
	{ScorecardsRead, RoleViewer, ScopeRead, true, "§5.7; also groups reads"},
	{ScorecardsRun, RoleMember, ScopeWrite, true, "§5.7; also groups, ingest, re-score, cancel, judge try"},
	{RuntimesRead, RoleViewer, ScopeRead, true, "§5.7; also driver-ops reads"},
	{RuntimesWrite, RoleViewer, ScopeWrite, true, "§5.7: open to every member, viewers included"},
	{RuntimesControl, RoleAdmin, ScopeAdmin, true, "§5.7; driver-ops cancel"},
	{MembersRead, RoleViewer, ScopeRead, true, "§5.7"},
	{MembersWrite, RoleAdmin, ScopeAdmin, true, "§5.7; §4.10 also gates the invite routes with it"},
	{InvitesWrite, RoleAdmin, ScopeAdmin, true, "§5.7 'invites admin'; the §4.10 routes use members:write, which is the same gate"},
	{KeysRead, RoleAdmin, ScopeAdmin, true, "§5.7 keys:*"},
	{KeysWrite, RoleAdmin, ScopeAdmin, true, "§5.7 keys:*"},
	{IssuesRead, RoleViewer, ScopeRead, true, "§5.7; also the workspace pulse"},
	{IssuesWrite, RoleMember, ScopeWrite, false, "spec leaves it open; issue edits and team moves are content mutations (member+)"},
	{SettingsWrite, RoleAdmin, ScopeAdmin, false, "spec leaves it open; workspace-wide settings (trace thresholds, ingestion quota) are an admin's call; §5.4 keeps settings out of read and write scopes"},
	{ImagesPush, RoleMember, ScopeWrite, false, "spec leaves it open; a world snapshot publishes a new image version (member+)"},
	{AgentsRead, RoleViewer, ScopeRead, false, "spec leaves it open; the approval queue is a data read (viewer+)"},
	{AgentsWrite, RoleMember, ScopeWrite, false, "spec leaves it open; deciding an agent's parked action changes content (member+)"},
	{ReposWrite, RoleMember, ScopeWrite, false, "§4.8 'repository-write permission' for sandbox git push; creator-or-admin applies on top"},
	{SecretsRead, RoleAdmin, ScopeAdmin, false, "spec leaves it open; §5.4 keeps secrets out of read scope; lists secret names, never values"},
	{SecretsWrite, RoleAdmin, ScopeAdmin, false, "spec leaves it open; storing cluster credentials is an admin's call"},
	{SecretsUse, RoleMember, ScopeWrite, false, "spec leaves it open; registering a harness whose secretEnv names workspace secrets hands their values to its jobs (member+); each run given them appends secret.used"},
	{TeamsRead, RoleViewer, ScopeRead, false, "spec leaves it open; team lists are data reads (viewer+)"},
	{TeamsWrite, RoleAdmin, ScopeAdmin, false, "spec leaves it open; team structure decides who writes what, like members:write (admin)"},
	{EventsRead, RoleAdmin, ScopeRead, false, "beyond the spec (issue 33): the workspace's event log, GET /events, is an admin's read; a read-scoped admin key may read it"},
}

// actionIndex maps an action to its rule; built once from actionTable.
var actionIndex = func() map[Action]ActionRule {
	m := make(map[Action]ActionRule, len(actionTable))
	for _, r := range actionTable {
		if _, dup := m[r.Action]; dup {
			panic("auth: duplicate action " + string(r.Action))
		}
		m[r.Action] = r
	}
	return m
}()

// Actions returns every role-gated action with its rule, sorted by action,
// so the route table's tests and the docs derive from the same list.
func Actions() []ActionRule {
	out := slices.Clone(actionTable)
	slices.SortFunc(out, func(a, b ActionRule) int { return strings.Compare(string(a.Action), string(b.Action)) })
	return out
}

// RuleFor returns the rule of a role-gated action; false for pseudo-actions
// and unknown actions.
func RuleFor(a Action) (ActionRule, bool) {
	r, ok := actionIndex[a]
	return r, ok
}

// Authorize reports whether p may perform a: nil, or an error wrapping
// derrors.ErrForbidden (ErrUnauthenticated for an empty principal) that names
// the action and what is missing.
//
// A scoped key needs both its role and its scope to permit the action, so it
// never exceeds its role; a principal without scopes is limited by role only.
// Unknown actions are refused (fail closed). Internal is always refused here:
// internal routes are gated by CheckInternalToken, not by a principal. A
// runner principal may perform Runner and nothing else.
func Authorize(p Principal, a Action) error {
	switch a {
	case Public:
		return nil
	case Internal:
		return derrors.Forbiddenf("internal routes take the operator token, not a user credential")
	}
	if p.Subject == "" {
		return fmt.Errorf("%w: no principal", derrors.ErrUnauthenticated)
	}
	if a == Runner {
		// Any principal passes here: the runners service looks the job up
		// in the caller's workspace before it refuses a caller that is not
		// a runner, so another workspace's job is 404 whoever asks.
		return nil
	}
	if p.Via == ViaRunner {
		return derrors.Forbiddenf("a runner key (rnr_) opens only the runner routes (/runner/...); use an API key or a user token here")
	}
	if a == Authenticated {
		return nil
	}
	rule, ok := actionIndex[a]
	if !ok {
		return derrors.Forbiddenf("unknown action %q", a)
	}
	if p.Workspace == "" {
		return derrors.Forbiddenf("%s needs an active workspace; select one with the x-svc-workspace header", a)
	}
	if have := p.HighestRole(); have.rank() < rule.MinRole.rank() {
		return derrors.Forbiddenf("%s needs role %s or above; the caller has %s", a, rule.MinRole, roleName(have))
	}
	if len(p.Scopes) > 0 {
		if have := highestScope(p.Scopes); have.rank() < rule.Scope.rank() {
			return derrors.Forbiddenf("%s needs key scope %s or above; this key has %s", a, rule.Scope, scopeName(have))
		}
	}
	return nil
}

func roleName(r Role) string {
	if r == "" {
		return "no role"
	}
	return string(r)
}

func scopeName(s Scope) string {
	if s == "" {
		return "no valid scope"
	}
	return string(s)
}

// MarkdownTable renders the action table for docs/: one row per action with
// its minimum role, scope class and source.
func MarkdownTable() string {
	var b strings.Builder
	b.WriteString("| action | minimum role | key scope needed | source |\n")
	b.WriteString("|---|---|---|---|\n")
	for _, r := range Actions() {
		src := "spec"
		if !r.Spec {
			src = "project choice"
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s: %s |\n", r.Action, r.MinRole, r.Scope, src, r.Note)
	}
	return b.String()
}
