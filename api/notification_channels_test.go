package api_test

import (
	"net/http"
	"testing"
)

// The cross-tenant fixtures of the notification channels (issue 33): a
// channel is its member's; another workspace's caller (and another
// member) gets 404 and changes nothing.
func init() {
	seeded := func(t *testing.T, e *testEnv, a tenant) map[string]string {
		res := e.do(t, http.MethodPost, "/notification-channels", `{"type":"slack","url":"https://93.184.215.14/hook","kinds":["run_failed"]}`, bearer(a.key))
		want(t, res, http.StatusCreated, "POST /notification-channels")
		return map[string]string{"id": decode[map[string]any](t, res)["id"].(string)}
	}
	snapshot := func(t *testing.T, e *testEnv, a tenant, p map[string]string) any {
		res := e.do(t, http.MethodGet, "/notification-channels", "", bearer(a.key))
		want(t, res, http.StatusOK, "GET /notification-channels")
		return decode[any](t, res)
	}
	registerCrossTenant("DELETE /notification-channels/:id", crossTenantFixture{Setup: seeded, Snapshot: snapshot})
	registerCrossTenant("POST /notification-channels/:id/enable", crossTenantFixture{Setup: seeded, Snapshot: snapshot})
}
