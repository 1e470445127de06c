package identity

import (
	"regexp"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"svc/auth"
	"svc/internal/platform/derrors"
)

// maxLabelLen bounds the free-text names people give keys, workspaces and
// teams: long enough for a sentence, short enough for a table cell.
const maxLabelLen = 100

// checkLabel vets a free-text field: at most maxLabelLen characters of
// valid UTF-8 with no control characters (they would corrupt terminals and
// log lines that show it).
func checkLabel(field, v string) error {
	if !utf8.ValidString(v) {
		return derrors.Invalidf("%s must be valid UTF-8", field)
	}
	if n := utf8.RuneCountInString(v); n > maxLabelLen {
		return derrors.Invalidf("%s is %d characters long; the limit is %d", field, n, maxLabelLen)
	}
	if strings.IndexFunc(v, unicode.IsControl) >= 0 {
		return derrors.Invalidf("%s must not contain control characters such as newlines or tabs", field)
	}
	return nil
}

// parseRole validates a role named in a body; it is required.
func parseRole(v string) (auth.Role, error) {
	if v == "" {
		return "", derrors.Invalidf("role is required: one of viewer, member, admin")
	}
	return auth.ParseRole(v)
}

// parseScopes validates the scopes of a new key and returns them de-duplicated,
// narrowest first, so that equal sets are stored alike.
func parseScopes(vs []string) ([]string, error) {
	var out []auth.Scope
	for _, v := range vs {
		sc, err := auth.ParseScope(v)
		if err != nil {
			return nil, err
		}
		if !slices.Contains(out, sc) {
			out = append(out, sc)
		}
	}
	order := map[auth.Scope]int{auth.ScopeRead: 1, auth.ScopeWrite: 2, auth.ScopeAdmin: 3}
	slices.SortFunc(out, func(a, b auth.Scope) int { return order[a] - order[b] })
	strs := make([]string, 0, len(out))
	for _, sc := range out {
		strs = append(strs, string(sc))
	}
	return strs, nil
}

// teamIDPattern is what a team id may be: it appears in paths and in every
// asset's teamId, so it is kept to URL-safe characters.
var teamIDPattern = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,62}$`)

// CheckTeamID vets the id of a new team, or of a team named as an asset's
// owner.
func CheckTeamID(id string) error {
	if !teamIDPattern.MatchString(id) {
		return derrors.Invalidf("team id %q: use 1 to 63 lowercase letters, digits, '.', '_' or '-', starting with a letter or digit", clip(id))
	}
	return nil
}

// checkWorkspaceID vets the id of a workspace named in a body.
func checkWorkspaceID(id string) error {
	if !auth.ValidWorkspaceID(id) {
		return derrors.Invalidf("workspace id %q: use 1 to 128 letters, digits, '.', '_' or '-', starting with a letter or digit", clip(id))
	}
	return nil
}

// roleRank orders stored role names; an unknown one ranks below viewer.
func roleRank(r string) int {
	switch auth.Role(r) {
	case auth.RoleViewer:
		return 1
	case auth.RoleMember:
		return 2
	case auth.RoleAdmin:
		return 3
	}
	return 0
}
