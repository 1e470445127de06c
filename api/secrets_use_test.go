package api_test

import (
	"net/http"
	"strings"
	"testing"

	"svc/auth"
)

// TestViewerCannotUseSecrets (issue 11, finding 2): a harness whose
// secretEnv names workspace secrets hands their values to every job it
// runs, so a viewer may not register one (secrets:use is member+, and so is
// the route's harnesses:register); a member may, and their runs record
// each use as a secret.used event (tested in package activities).
func TestViewerCannotUseSecrets(t *testing.T) {
	e := newEnv(t, withOIDC())
	a := e.tenant(t, "secrets-use")
	viewer := e.join(t, a, "vera", auth.RoleViewer)
	member := e.join(t, a, "mia", auth.RoleMember)
	in := selectWorkspace(a.ws)

	const harness = `{"id":"with-secret","version":"1.0.0","kind":"process","command":["run"],"secretEnv":{"API_KEY":"openai-key"}}`
	const template = `{"id":"tmpl-secret","version":"1.0.0","harness":{"kind":"process","command":["run"],"secretEnv":{"API_KEY":"openai-key"}}}`
	for _, tc := range []struct{ path, body string }{{"/harnesses", harness}, {"/harness-templates", template}} {
		res := e.do(t, http.MethodPost, tc.path, tc.body, bearer(viewer), in)
		want(t, res, http.StatusForbidden, "POST "+tc.path+" with secretEnv as a viewer")
		if msg := res.ErrorInfo(t).Message; !strings.Contains(msg, "member") {
			t.Errorf("POST %s as a viewer: message %q does not say a member role is needed", tc.path, msg)
		}
		want(t, e.do(t, http.MethodPost, tc.path, tc.body, bearer(member), in), http.StatusCreated, "POST "+tc.path+" with secretEnv as a member")
	}
}
