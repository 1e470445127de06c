package api

import (
	"net/http"
	"net/url"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/labstack/echo/v4"

	"svc/auth"
	"svc/internal/platform/derrors"
	"svc/internal/service/identity"
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

// checkTeamID vets a team id named in a body; the rule is the identity
// service's, where teams are made.
func checkTeamID(id string) error { return identity.CheckTeamID(id) }

// identityService is the service behind the identity routes (keys,
// members, invites, teams, workspaces), built in NewServer.
func (s *Server) identityService() *identity.Service { return s.identity }

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
