package api

import (
	"crypto/rand"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/labstack/echo/v4"

	"svc/auth"
	"svc/derrors"
)

func (s *Server) identityRoutes() []Route {
	return []Route{
		{Method: http.MethodGet, Path: "/me", Action: auth.Authenticated,
			Summary: "The caller: subject, active workspace, roles and how they authenticated", Handler: s.getMe},
	}
}

// getMe returns the principal as the middleware resolved it (spec §2.1):
// the active workspace is the one x-svc-workspace selected, or the default.
func (s *Server) getMe(c echo.Context) error {
	p := principal(c)
	if p.Roles == nil {
		p.Roles = []auth.Role{}
	}
	return c.JSON(http.StatusOK, p)
}

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

// checkTeamID vets the id of a new team.
func checkTeamID(id string) error {
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

// maxParamLen bounds a path parameter: ids and subjects are far shorter.
const maxParamLen = 512

// pathParam returns the path parameter name, unescaped. Echo leaves a
// parameter escaped when the request path needed RawPath (a subject with
// "%2F" in it), and unescaped otherwise; this makes both read the same. A
// value that no record can have (bad escaping, invalid UTF-8, control
// characters, too long) is 400, so junk never reaches the store.
func pathParam(c echo.Context, name string) (string, error) {
	v := c.Param(name)
	if c.Request().URL.RawPath != "" {
		u, err := url.PathUnescape(v)
		if err != nil {
			return "", derrors.Invalidf("path parameter %s is not validly %%-escaped", name)
		}
		v = u
	}
	switch {
	case v == "":
		return "", derrors.Invalidf("path parameter %s is empty", name)
	case len(v) > maxParamLen:
		return "", derrors.Invalidf("path parameter %s is %d bytes long; the limit is %d", name, len(v), maxParamLen)
	case !utf8.ValidString(v) || strings.IndexFunc(v, unicode.IsControl) >= 0:
		return "", derrors.Invalidf("path parameter %s must be valid UTF-8 without control characters", name)
	}
	return v, nil
}

// newID returns a fresh random id with a kind prefix ("key_", "inv_id_"),
// 130 bits from crypto/rand: unguessable, so an id never leaks existence.
func newID(prefix string) string {
	return prefix + strings.ToLower(rand.Text())
}
