package api

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"svc/auth"
)

// Workspace secrets hold the credentials runtimes name (authSecret,
// kubeconfigSecret) and harnesses inject (secretEnv). Values go in and are
// never read back: GET lists names, allowed hosts and dates only. A
// secret's allowedHosts, set with its value, are the only hosts a probe
// or driver sends it to.

func (s *Server) secretRoutes() []Route {
	return []Route{
		{Method: http.MethodPut, Path: "/secrets/:name", Action: auth.SecretsWrite,
			Summary: "Store a workspace secret", Handler: s.putSecret},
		{Method: http.MethodGet, Path: "/secrets", Action: auth.SecretsRead,
			Summary: "List the workspace's secret names", Handler: s.listSecrets},
		{Method: http.MethodDelete, Path: "/secrets/:name", Action: auth.SecretsWrite,
			Summary: "Delete a workspace secret", Handler: s.deleteSecret},
	}
}

// putSecretRequest is the body of PUT /secrets/:name.
type putSecretRequest struct {
	Value string `json:"value"`
	// AllowedHosts are the hosts the secret may be sent to
	// (netguard.NormalizeHosts's rules); absent or empty, none.
	AllowedHosts []string `json:"allowedHosts"`
}

func (s *Server) putSecret(c echo.Context) error {
	name, err := pathParam(c, "name")
	if err != nil {
		return err
	}
	var req putSecretRequest
	if err := Bind(c, &req); err != nil {
		return err
	}
	// Without SVC_SECRET_KEY this is derrors.ErrNoSecretKey, a 503 whose
	// text tells the operator what to set.
	err = s.registries.PutSecret(c.Request().Context(), principal(c), name, req.Value, req.AllowedHosts)
	if err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

func (s *Server) listSecrets(c echo.Context) error {
	ss, err := s.registries.ListSecrets(c.Request().Context(), principal(c))
	if err != nil {
		return err
	}
	return listJSON(c, ss)
}

func (s *Server) deleteSecret(c echo.Context) error {
	name, err := pathParam(c, "name")
	if err != nil {
		return err
	}
	if err := s.registries.DeleteSecret(c.Request().Context(), principal(c), name); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}
