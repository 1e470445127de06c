package api_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"svc/api"
	"svc/api/apitest"
	"svc/auth"
	"svc/internal/platform/config"
)

// anyPath fills every path parameter with a value no record has.
func anyPath(path string) string {
	return regexp.MustCompile(`:[A-Za-z_][A-Za-z0-9_]*`).ReplaceAllString(path, "no-such-record")
}

// bodyFor is the body the matrix tests send: an empty object where a body
// may be expected, which handlers refuse with 400 after authorization.
func bodyFor(method string) string {
	switch method {
	case http.MethodPost, http.MethodPut, http.MethodPatch:
		return "{}"
	}
	return ""
}

var roleOrder = []auth.Role{auth.RoleViewer, auth.RoleMember, auth.RoleAdmin}
var scopeOrder = []auth.Scope{auth.ScopeRead, auth.ScopeWrite, auth.ScopeAdmin}

func rank[T comparable](order []T, v T) int {
	for i, o := range order {
		if o == v {
			return i
		}
	}
	panic(fmt.Sprintf("unknown %v", v))
}

// TestRoleMatrix derives from the route table: on every role-gated route, a
// person whose role is below the action's minimum gets 403, the minimum
// role passes authorization (any answer but 401 and 403), and a key whose
// scope is narrower than the action's gets 403 whatever its role.
func TestRoleMatrix(t *testing.T) {
	e := newEnv(t, withOIDC())
	w := e.tenant(t, "matrix")
	people := map[auth.Role]string{}
	for _, r := range roleOrder {
		people[r] = e.person(t, string(r)+"-person", map[string]any{"workspace": w.ws, "roles": []string{string(r)}})
	}
	keys := map[auth.Scope]string{}
	for _, sc := range scopeOrder {
		keys[sc] = e.createKey(t, w.key, fmt.Sprintf(`{"scopes":[%q]}`, sc)).APIKey
	}

	gated := 0
	for _, r := range e.srv.Routes() {
		rule, ok := auth.RuleFor(r.Action)
		if !ok {
			continue // public, internal or authenticated-only: no role gate
		}
		gated++
		path, body := anyPath(r.Path), bodyFor(r.Method)
		t.Run(r.Method+" "+r.Path, func(t *testing.T) {
			for _, role := range roleOrder {
				res := e.do(t, r.Method, path, body, bearer(people[role]))
				switch {
				case rank(roleOrder, role) < rank(roleOrder, rule.MinRole):
					if res.Status != http.StatusForbidden || res.ErrorInfo(t).Code != api.CodeForbidden {
						t.Errorf("%s (needs %s) as %s: status %d, want 403 FORBIDDEN; body %s", r.Action, rule.MinRole, role, res.Status, res.Body)
					}
				case res.Status == http.StatusForbidden || res.Status == http.StatusUnauthorized:
					t.Errorf("%s (needs %s) as %s: status %d, want authorization to pass; body %s", r.Action, rule.MinRole, role, res.Status, res.Body)
				}
			}
			for _, sc := range scopeOrder {
				res := e.do(t, r.Method, path, body, bearer(keys[sc]))
				narrower := rank(scopeOrder, sc) < rank(scopeOrder, rule.Scope)
				switch {
				case narrower && res.Status != http.StatusForbidden:
					t.Errorf("%s (scope %s) with a %s key: status %d, want 403; body %s", r.Action, rule.Scope, sc, res.Status, res.Body)
				case !narrower && (res.Status == http.StatusForbidden || res.Status == http.StatusUnauthorized):
					t.Errorf("%s (scope %s) with a %s key: status %d, want authorization to pass; body %s", r.Action, rule.Scope, sc, res.Status, res.Body)
				}
			}
		})
	}
	if gated == 0 {
		t.Fatal("no role-gated route in the table")
	}
}

// TestEveryRouteNamesAKnownAction: a typo in a route's action would
// otherwise be refused for everyone (auth fails closed) without a test
// saying why.
func TestEveryRouteNamesAKnownAction(t *testing.T) {
	e := newEnv(t)
	for _, r := range e.srv.Routes() {
		switch r.Action {
		case auth.Public, auth.Authenticated, auth.Internal, auth.Runner:
			if strings.HasPrefix(r.Path, "/runner/") != (r.Action == auth.Runner) {
				t.Errorf("%s %s: /runner/ paths, and only they, take the Runner action", r.Method, r.Path)
			}
			continue
		}
		if _, ok := auth.RuleFor(r.Action); !ok {
			t.Errorf("%s %s names action %q, which auth's action table lacks", r.Method, r.Path, r.Action)
		}
		if strings.HasPrefix(r.Path, "/internal/") != (r.Action == auth.Internal) {
			t.Errorf("%s %s: /internal/ paths, and only they, take the Internal action", r.Method, r.Path)
		}
	}
}

// ownCredential are the public routes that take a credential of their own
// rather than the API's: the judge model proxy's run-scoped token.
var ownCredential = map[string]bool{"POST /judge-proxy/v1/chat/completions": true, "POST /model-proxy/v1/chat/completions": true}

// TestRequireAuth: with SVC_REQUIRE_AUTH every route but the public ones
// answers 401 to a request without a credential.
func TestRequireAuth(t *testing.T) {
	e := newEnv(t, withRequireAuth())
	for _, r := range e.srv.Routes() {
		res := e.do(t, r.Method, anyPath(r.Path), bodyFor(r.Method))
		if r.Action == auth.Public {
			if ownCredential[r.Method+" "+r.Path] {
				continue // 401 without its own token, by design
			}
			if res.Status == http.StatusUnauthorized {
				t.Errorf("public %s %s answered 401", r.Method, r.Path)
			}
			continue
		}
		if res.Status != http.StatusUnauthorized || res.ErrorInfo(t).Code != api.CodeUnauthenticated {
			t.Errorf("%s %s without a credential: status %d, want 401 UNAUTHENTICATED; body %s", r.Method, r.Path, res.Status, res.Body)
		}
		if res.Header.Get("WWW-Authenticate") == "" {
			t.Errorf("%s %s: 401 without WWW-Authenticate", r.Method, r.Path)
		}
	}
	// Garbage credentials are 401 too, never the dev principal.
	for _, v := range []string{"Bearer ak_nope", "Bearer x.y.z", "Basic dXNlcjpwYXNz", "Bearer"} {
		res := e.do(t, http.MethodGet, "/me", "", header{"Authorization", v})
		want(t, res, http.StatusUnauthorized, "Authorization: "+v)
	}
}

// TestMalformedCredentialNeverFallsBack: without SVC_REQUIRE_AUTH, a bad
// credential is still 401, not the dev principal.
func TestMalformedCredentialNeverFallsBack(t *testing.T) {
	e := newEnv(t)
	unknown, _ := auth.NewAPIKey(auth.APIKeyPrefix)
	for _, v := range []string{"Bearer " + unknown, "Bearer ak_short", "Bearer a.b.c", "Token abc", ""} {
		res := e.do(t, http.MethodGet, "/me", "", header{"Authorization", v})
		want(t, res, http.StatusUnauthorized, fmt.Sprintf("Authorization: %q", v))
	}
}

// clientFrom returns a client of the same server whose connections come
// from the loopback address ip, so a test can play two source addresses.
func clientFrom(t *testing.T, base *apitest.Client, ip string) *apitest.Client {
	t.Helper()
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}}
	tr := &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		return d.DialContext(ctx, network, addr)
	}}
	t.Cleanup(tr.CloseIdleConnections)
	c := *base
	c.HTTP = &http.Client{Transport: tr}
	return &c
}

// TestFailedAuthRateLimit: past SVC_AUTH_FAIL_LIMIT failures from one
// address, failing attempts get 429 RATE_LIMITED with Retry-After, but a
// valid credential from the same address still works (behind a NAT or a
// proxy, one guesser must not lock everyone out). Failed operator tokens
// count too, and the valid operator token still passes.
func TestFailedAuthRateLimit(t *testing.T) {
	const limit = 20
	e := newEnv(t, withFailLimit(limit))
	good := e.tenant(t, "limited").key
	one := clientFrom(t, e.client, "127.0.0.1")
	two := clientFrom(t, e.client, "127.0.0.2")
	send := func(c *apitest.Client, path string, h header) *apitest.Response {
		req := c.NewRequest(t, http.MethodGet, path, nil)
		if path == "/internal/tenant-keys" {
			req = c.NewRequest(t, http.MethodPost, path, strings.NewReader(`{"workspace":"w"}`))
		}
		req.Header.Set(h.name, h.value)
		return c.Do(t, req)
	}
	newBad := func() string { k, _ := auth.NewAPIKey(auth.APIKeyPrefix); return k }

	for i := range limit {
		want(t, send(one, "/me", bearer(newBad())), http.StatusUnauthorized, fmt.Sprintf("failure %d", i+1))
	}
	for range 5 {
		res := send(one, "/me", bearer(newBad()))
		want(t, res, http.StatusTooManyRequests, "a bad key after the limit")
		if res.Header.Get("Retry-After") == "" {
			t.Error("429 without Retry-After")
		}
		want(t, send(one, "/me", bearer(good)), http.StatusOK, "a valid key from the limited address")
	}
	want(t, send(one, "/internal/tenant-keys", header{auth.InternalTokenHeader, "guess"}), http.StatusTooManyRequests, "a wrong operator token from a limited address")
	want(t, send(one, "/internal/tenant-keys", header{auth.InternalTokenHeader, internalToken}), http.StatusCreated, "the operator token from a limited address")

	// Another address is unaffected, then limited by its own operator-token guesses.
	want(t, send(two, "/me", bearer(newBad())), http.StatusUnauthorized, "another address")
	for range limit - 1 {
		want(t, send(two, "/internal/tenant-keys", header{auth.InternalTokenHeader, "guess"}), http.StatusUnauthorized, "a wrong operator token")
	}
	want(t, send(two, "/internal/tenant-keys", header{auth.InternalTokenHeader, "guess"}), http.StatusTooManyRequests, "after guessing the operator token")
	want(t, send(two, "/me", bearer(good)), http.StatusOK, "a valid key after guessing the operator token")

	// Requests without any credential are not guesses.
	e3 := newEnv(t, withFailLimit(1), withRequireAuth())
	for range 3 {
		want(t, e3.do(t, http.MethodGet, "/me", ""), http.StatusUnauthorized, "no credential")
	}
}

// TestFailedAuthRateLimitPerKeyPrefix: failures against one key prefix are
// limited across addresses, so spreading guesses at one key over many
// addresses does not escape the limit; the key itself still works.
func TestFailedAuthRateLimitPerKeyPrefix(t *testing.T) {
	const limit = 4
	e := newEnv(t, withFailLimit(limit))
	good := e.tenant(t, "prefix").key
	// A guess shares the good key's display prefix (ak_ + 6 characters) and
	// differs after it.
	guess := func(i int) string {
		b := []byte(good)
		pos := len("ak_") + 10 + i // well inside the body, past the prefix
		if b[pos] == 'A' {
			b[pos] = 'B'
		} else {
			b[pos] = 'A'
		}
		return string(b)
	}
	for i := range limit {
		c := clientFrom(t, e.client, fmt.Sprintf("127.0.1.%d", i+1))
		res := c.Do(t, withHeader(c.NewRequest(t, http.MethodGet, "/me", nil), bearer(guess(i))))
		want(t, res, http.StatusUnauthorized, fmt.Sprintf("guess %d from its own address", i+1))
	}
	c := clientFrom(t, e.client, "127.0.1.99")
	res := c.Do(t, withHeader(c.NewRequest(t, http.MethodGet, "/me", nil), bearer(guess(limit))))
	want(t, res, http.StatusTooManyRequests, "a guess at the same prefix from a fresh address")
	res = c.Do(t, withHeader(c.NewRequest(t, http.MethodGet, "/me", nil), bearer(good)))
	want(t, res, http.StatusOK, "the key whose prefix is being guessed")
	other, _ := auth.NewAPIKey(auth.APIKeyPrefix)
	res = c.Do(t, withHeader(c.NewRequest(t, http.MethodGet, "/me", nil), bearer(other)))
	want(t, res, http.StatusUnauthorized, "a bad key with another prefix from the fresh address")
}

// TestTrustedProxyClientAddress: with SVC_TRUSTED_PROXIES naming the proxy,
// the failure limiter counts the right-most address of X-Forwarded-For that
// is not a trusted proxy; without it, X-Forwarded-For is ignored, so a client
// cannot pick a fresh address for every guess.
func TestTrustedProxyClientAddress(t *testing.T) {
	const limit = 3
	fail := func(t *testing.T, e *testEnv, xff string) *apitest.Response {
		bad, _ := auth.NewAPIKey(auth.APIKeyPrefix)
		return e.do(t, http.MethodGet, "/me", "", bearer(bad), header{"X-Forwarded-For", xff})
	}
	t.Run("trusted proxy", func(t *testing.T) {
		e := newEnv(t, withFailLimit(limit), withConfig(func(c *config.Config) { c.TrustedProxies = "127.0.0.0/8, 10.0.0.1" }))
		for i := range limit {
			// The client forged the left-most entry; 10.0.0.1 is a second trusted hop.
			want(t, fail(t, e, fmt.Sprintf("198.51.100.%d, 203.0.113.7, 10.0.0.1", i)), http.StatusUnauthorized, "failure from 203.0.113.7")
		}
		want(t, fail(t, e, "198.51.100.200, 203.0.113.7"), http.StatusTooManyRequests, "203.0.113.7 after the limit")
		want(t, fail(t, e, "203.0.113.8"), http.StatusUnauthorized, "another client behind the same proxy")
	})
	t.Run("no trusted proxy", func(t *testing.T) {
		e := newEnv(t, withFailLimit(limit))
		for i := range limit {
			want(t, fail(t, e, fmt.Sprintf("203.0.113.%d", i)), http.StatusUnauthorized, "failure with a forged X-Forwarded-For")
		}
		want(t, fail(t, e, "203.0.113.99"), http.StatusTooManyRequests, "a fresh forged X-Forwarded-For does not escape the limit")
	})
	t.Run("bad setting", func(t *testing.T) {
		cfg := config.Defaults()
		cfg.TrustedProxies = "10.0.0.0/33"
		if _, err := api.NewServer(api.Options{Config: cfg}); err == nil || !strings.Contains(err.Error(), "SVC_TRUSTED_PROXIES") {
			t.Fatalf("NewServer with SVC_TRUSTED_PROXIES=10.0.0.0/33: err = %v, want one naming the setting", err)
		}
	})
}

// withHeader sets h on req and returns it.
func withHeader(req *http.Request, h header) *http.Request {
	req.Header.Set(h.name, h.value)
	return req
}
