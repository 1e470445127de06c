package api_test

import (
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"svc/auth"
)

// The cross-tenant matrix (spec §1): for every route that takes an id, a
// record made in workspace A is requested from workspace B, and the answer
// is 404 with the record unchanged. The routes come from the live route
// table, so a route a later issue adds is covered the day it is added: the
// test fails until its resource's _test.go registers a fixture.

// crossTenantFixture makes a record a route can reach and observes it.
type crossTenantFixture struct {
	// Setup creates the record in workspace a, through the API as a, and
	// returns the route's path parameters (name without the colon).
	Setup func(t *testing.T, e *testEnv, a tenant) map[string]string
	// Body is the request body to send, for routes that take one. Make it
	// valid, so that only tenancy can refuse the request.
	Body string
	// Snapshot reads, through the API as a, everything the route could
	// change. It must be equal before and after B's requests.
	Snapshot func(t *testing.T, e *testEnv, a tenant, params map[string]string) any
	// ForeignNoop is set only where the spec says a foreign id is an
	// idempotent no-op (DELETE /keys/:id, DELETE /members/:subject): there
	// 204 is allowed, but the record must still be unchanged.
	ForeignNoop bool
	// OwnStatus is what A's own request answers afterwards (the check that
	// the fixture made a record the route finds); 2xx when zero.
	OwnStatus int
}

// crossTenantFixtures is keyed by "METHOD /path/:param", as in the route table.
var crossTenantFixtures = map[string]crossTenantFixture{}

// registerCrossTenant adds the fixture of one route; call it from an init
// function in the route's resource _test.go file.
func registerCrossTenant(route string, f crossTenantFixture) {
	if _, dup := crossTenantFixtures[route]; dup {
		panic("cross-tenant fixture registered twice: " + route)
	}
	if f.Setup == nil || f.Snapshot == nil {
		panic("cross-tenant fixture " + route + " needs Setup and Snapshot")
	}
	crossTenantFixtures[route] = f
}

var pathParamPattern = regexp.MustCompile(`:([A-Za-z_][A-Za-z0-9_]*)`)

// fillPath substitutes params into an Echo path, escaping each value.
func fillPath(t *testing.T, path string, params map[string]string) string {
	t.Helper()
	return pathParamPattern.ReplaceAllStringFunc(path, func(m string) string {
		v, ok := params[m[1:]]
		if !ok {
			t.Fatalf("the fixture of %s returned no value for %s", path, m)
		}
		return url.PathEscape(v)
	})
}

// resourceFile names the test file a route's fixture belongs in.
func resourceFile(path string) string {
	first, _, _ := strings.Cut(strings.TrimPrefix(path, "/"), "/")
	return "api/" + first + "_test.go"
}

// crossTenantEnv are options of TestCrossTenant's env that a resource's
// fixtures need (the world store of api/worlds_test.go).
var crossTenantEnv []envOption

func TestCrossTenant(t *testing.T) {
	e := newEnv(t, append([]envOption{withOIDC()}, crossTenantEnv...)...)
	routes := 0
	for _, r := range e.srv.Routes() {
		// Public routes have no tenant; internal ones are the operator's,
		// who acts across tenants by design.
		if !strings.Contains(r.Path, ":") || r.Action == auth.Public || r.Action == auth.Internal {
			continue
		}
		routes++
		key := r.Method + " " + r.Path
		t.Run(key, func(t *testing.T) {
			f, ok := crossTenantFixtures[key]
			if !ok {
				t.Fatalf("route %s takes an id but has no cross-tenant fixture: add registerCrossTenant(%q, crossTenantFixture{...}) in an init function of %s", key, key, resourceFile(r.Path))
			}
			a, b := e.tenant(t, "a"), e.tenant(t, "b")
			params := f.Setup(t, e, a)
			path := fillPath(t, r.Path, params)
			before := f.Snapshot(t, e, a, params)

			// B's admin person, whose token names B, asks for A as well.
			bAdmin := e.person(t, "admin-of-"+b.ws, map[string]any{"workspace": b.ws, "roles": []string{"admin"}})
			callers := []struct {
				name string
				hs   []header
			}{
				{"B's admin key", []header{bearer(b.key)}},
				{"B's admin key selecting A", []header{bearer(b.key), selectWorkspace(a.ws)}},
				{"B's admin person selecting A", []header{bearer(bAdmin), selectWorkspace(a.ws)}},
			}
			for _, c := range callers {
				res := e.do(t, r.Method, path, f.Body, c.hs...)
				switch {
				case res.Status == http.StatusNotFound:
					want(t, res, http.StatusNotFound, c.name)
				case f.ForeignNoop && res.Status == http.StatusNoContent:
				default:
					t.Errorf("%s %s as %s: status %d, want 404; body %s", r.Method, path, c.name, res.Status, res.Body)
				}
			}
			if diff := cmp.Diff(before, f.Snapshot(t, e, a, params)); diff != "" {
				t.Errorf("requests from workspace B changed A's record (-before +after):\n%s", diff)
			}

			// Only now, A itself: proves the 404s were about tenancy and not
			// a fixture that made nothing the route can find.
			res := e.do(t, r.Method, path, f.Body, bearer(a.key))
			if f.OwnStatus != 0 {
				if res.Status != f.OwnStatus {
					t.Errorf("%s %s as A: status %d, want %d; body %s", r.Method, path, res.Status, f.OwnStatus, res.Body)
				}
			} else if res.Status < 200 || res.Status > 299 {
				t.Errorf("%s %s as A: status %d, want 2xx (does the fixture create the record?); body %s", r.Method, path, res.Status, res.Body)
			}
		})
	}
	if routes == 0 {
		t.Fatal("no route takes an id: the route table is not what this test expects")
	}
}

// TestFixturesMatchRoutes: a fixture for a route that no longer exists is
// dead code that hides a renamed route.
func TestFixturesMatchRoutes(t *testing.T) {
	e := newEnv(t)
	live := map[string]bool{}
	for _, r := range e.srv.Routes() {
		live[r.Method+" "+r.Path] = true
	}
	for key := range crossTenantFixtures {
		if !live[key] {
			t.Errorf("cross-tenant fixture %s matches no route; rename or remove it", key)
		}
	}
}
