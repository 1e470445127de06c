package api

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"svc/internal/platform/derrors"
	"svc/ui"
)

// The web view's OIDC sign-in: two public answers beside the assets,
// outside the route table like them (they are not API operations and read
// no workspace's data).
//
//	GET  /ui/oidc/config  where the page sends the user: issuer, client id,
//	                      authorization endpoint, scopes (404 when
//	                      SVC_UI_OIDC_CLIENT_ID is not set)
//	POST /ui/oidc/token   redeems the code the issuer sent back to /ui/
//	                      (code, PKCE verifier, nonce, redirect URI) for an
//	                      access token, after checking the ID token
//
// The code is exchanged here rather than by the page so the view's
// Content-Security-Policy keeps connect-src 'self' and the issuer needs no
// CORS for its token endpoint (see docs/ui.md).
const (
	uiOIDCConfigPath = ui.Prefix + "oidc/config"
	uiOIDCTokenPath  = ui.Prefix + "oidc/token"
)

// mountUI serves the web view's assets and its OIDC sign-in answers.
func (s *Server) mountUI(e *echo.Echo) error {
	view := echo.WrapHandler(ui.New())
	for _, p := range []string{"/ui", ui.Prefix + "*"} {
		e.GET(p, view)
		e.HEAD(p, view)
	}
	var client *ui.OIDC
	if s.cfg.UIOIDCClientID != "" {
		var err error
		client, err = ui.NewOIDC(ui.OIDCConfig{
			Issuer: s.cfg.OIDCIssuer, ClientID: s.cfg.UIOIDCClientID, Scopes: strings.Fields(s.cfg.UIOIDCScopes),
		})
		if err != nil {
			return fmt.Errorf("api: SVC_UI_OIDC_CLIENT_ID: %w", err)
		}
	}
	e.GET(uiOIDCConfigPath, func(c echo.Context) error {
		if client == nil {
			return derrors.NotFoundf("the web view has no OIDC sign-in: set OIDC_ISSUER and SVC_UI_OIDC_CLIENT_ID")
		}
		cc, err := client.ClientConfig(c.Request().Context())
		if err != nil {
			return err
		}
		c.Response().Header().Set("Cache-Control", "no-store")
		return c.JSON(http.StatusOK, cc)
	})
	e.POST(uiOIDCTokenPath, func(c echo.Context) error {
		if client == nil {
			return derrors.NotFoundf("the web view has no OIDC sign-in: set OIDC_ISSUER and SVC_UI_OIDC_CLIENT_ID")
		}
		if err := requireJSON(c.Request()); err != nil {
			return err
		}
		body, err := readBody(c.Request())
		if err != nil {
			return err
		}
		req, err := ui.DecodeTokenRequest(body)
		if err != nil {
			return err
		}
		tok, err := client.Exchange(c.Request().Context(), req)
		if err != nil {
			return err
		}
		c.Response().Header().Set("Cache-Control", "no-store")
		return c.JSON(http.StatusOK, tok)
	})
	return nil
}
