package api_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"svc/api/apitest"
	"svc/internal/platform/config"
)

// tokenTrap is a loopback listener that records every X-Nomad-Token and
// Authorization header it is sent, and answers every path with status and
// body.
type tokenTrap struct {
	URL    string
	status int
	body   string

	mu   sync.Mutex
	seen []string // credentials received; "" for requests without one
	hits int
}

func newTokenTrap(t *testing.T, status int, body string) *tokenTrap {
	t.Helper()
	tr := &tokenTrap{status: status, body: body}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tr.mu.Lock()
		tr.hits++
		tr.seen = append(tr.seen, r.Header.Get("X-Nomad-Token")+r.Header.Get("Authorization"))
		tr.mu.Unlock()
		w.WriteHeader(tr.status)
		fmt.Fprint(w, tr.body)
	}))
	t.Cleanup(srv.Close)
	tr.URL = srv.URL
	return tr
}

// sawToken reports whether any request carried tok.
func (tr *tokenTrap) sawToken(tok string) bool {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	for _, s := range tr.seen {
		if strings.Contains(s, tok) {
			return true
		}
	}
	return false
}

func (tr *tokenTrap) calls() int {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return tr.hits
}

// probeJSON is POST /runtimes/probe's body.
type probeJSON struct {
	Kind      string `json:"kind"`
	Reachable bool   `json:"reachable"`
	Detail    string `json:"detail"`
}

// probe posts spec to /runtimes/probe with key, wants 200, and returns the
// decoded result with the answer as sent (to search for what must not leak).
func (e *testEnv) probe(t *testing.T, key, spec, what string) (probeJSON, *apitest.Response) {
	t.Helper()
	res := e.do(t, http.MethodPost, "/runtimes/probe", spec, bearer(key))
	want(t, res, http.StatusOK, what)
	var got probeJSON
	res.JSON(t, &got)
	return got, res
}

// putSecret stores name with value and allowedHosts (nil: the field is left out).
func (e *testEnv) putSecret(t *testing.T, key, name, value string, allowedHosts []string) {
	t.Helper()
	body := map[string]any{"value": value}
	if allowedHosts != nil {
		body["allowedHosts"] = allowedHosts
	}
	b, _ := json.Marshal(body)
	want(t, e.do(t, http.MethodPut, "/secrets/"+name, string(b), bearer(key)), http.StatusNoContent, "PUT /secrets/"+name)
}

func nomadProbeSpec(addr, secret string) string {
	if secret == "" {
		return fmt.Sprintf(`{"id":"n","version":"1","kind":"nomad","addr":%q,"image":"img"}`, addr)
	}
	return fmt.Sprintf(`{"id":"n","version":"1","kind":"nomad","addr":%q,"image":"img","authSecret":%q}`, addr, secret)
}

// TestProbeSendsSecretsOnlyToBoundHosts is finding 3 of issue 11: a caller
// who may probe (any member) pointed a runtime at their own listener and got
// the admin-stored token sent to it.
func TestProbeSendsSecretsOnlyToBoundHosts(t *testing.T) {
	const token = "admin-stored-nomad-token-4711"
	trap := newTokenTrap(t, http.StatusOK, `"127.0.0.1:4647"`)

	for _, tc := range []struct {
		name         string
		probeAllow   string
		allowedHosts []string // nil: the secret is stored without allowedHosts
		wantMention  []string // in the 400's message
	}{
		{"secret bound nowhere, address not allowed", "", nil, []string{`"nomad-token"`, "127.0.0.1", "allowedHosts"}},
		{"secret bound nowhere, address allowed", "127.0.0.1", nil, []string{`"nomad-token"`, "127.0.0.1", "allowedHosts", "admin"}},
		{"secret bound elsewhere, address allowed", "127.0.0.1", []string{"nomad.example.com"}, []string{`"nomad-token"`, "127.0.0.1", "allowedHosts"}},
		{"secret bound to another port", "127.0.0.1", []string{"127.0.0.1:1"}, []string{`"nomad-token"`, "127.0.0.1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, withConfig(func(c *config.Config) { c.ProbeAllow = tc.probeAllow }))
			a := e.tenant(t, "bind")
			e.putSecret(t, a.key, "nomad-token", token, tc.allowedHosts)
			res := e.do(t, http.MethodPost, "/runtimes/probe", nomadProbeSpec(trap.URL, "nomad-token"), bearer(a.key))
			want(t, res, http.StatusBadRequest, "probe with an unbound secret")
			msg := res.ErrorInfo(t).Message
			for _, m := range tc.wantMention {
				if !strings.Contains(msg, m) {
					t.Errorf("message %q does not mention %s", msg, m)
				}
			}
			if trap.sawToken(token) {
				t.Fatal("the listener received the stored token")
			}
		})
	}

	// Bound to the listener's host and allowed by the operator: the token goes.
	e := newEnv(t, withConfig(func(c *config.Config) { c.ProbeAllow = "127.0.0.1" }))
	a := e.tenant(t, "bind")
	e.putSecret(t, a.key, "nomad-token", token, []string{"127.0.0.1"})
	res := e.do(t, http.MethodPost, "/runtimes/probe", nomadProbeSpec(trap.URL, "nomad-token"), bearer(a.key))
	want(t, res, http.StatusOK, "probe with a bound secret")
	if !trap.sawToken(token) {
		t.Error("the listener never received the token it is bound to")
	}
	if strings.Contains(string(res.Body), token) {
		t.Errorf("the answer holds the token: %s", res.Body)
	}
}

// TestProbeRefusesPrivateAddresses is finding 4 of issue 11: the probe was
// an SSRF into the service's own network.
func TestProbeRefusesPrivateAddresses(t *testing.T) {
	trap := newTokenTrap(t, http.StatusOK, `"127.0.0.1:4647"`)
	e := newEnv(t)
	a := e.tenant(t, "ssrf")
	for _, tc := range []struct{ addr, kind string }{
		{trap.URL, "loopback"},
		{"http://localhost:" + strings.Split(trap.URL, ":")[2], "loopback"},
		{"http://169.254.169.254", "link-local"},
		{"http://10.0.0.5:4646", "private"},
		{"http://[::1]:4646", "loopback"},
	} {
		got, _ := e.probe(t, a.key, nomadProbeSpec(tc.addr, ""), "probe "+tc.addr)
		if got.Reachable || !strings.Contains(got.Detail, tc.kind) || !strings.Contains(got.Detail, "SVC_PROBE_ALLOW") {
			t.Errorf("probe %s = %+v, want unreachable, %s, naming SVC_PROBE_ALLOW", tc.addr, got, tc.kind)
		}
	}
	// k8s too: the server of server+authSecret.
	e.putSecret(t, a.key, "k8s-token", "k8s-token-value", []string{"10.0.0.6"})
	got, _ := e.probe(t, a.key, `{"id":"k","version":"1","kind":"k8s","image":"img","server":"https://10.0.0.6:6443","authSecret":"k8s-token"}`, "k8s probe")
	if got.Reachable || !strings.Contains(got.Detail, "private") || !strings.Contains(got.Detail, "SVC_PROBE_ALLOW") {
		t.Errorf("k8s probe = %+v, want unreachable, private, naming SVC_PROBE_ALLOW", got)
	}
	if n := trap.calls(); n != 0 {
		t.Errorf("the loopback listener got %d requests, want none", n)
	}
}

// TestProbeDoesNotReflectTheTarget: what a probed server answers never
// comes back in detail (finding 4: read-back of internal services).
func TestProbeDoesNotReflectTheTarget(t *testing.T) {
	const distinctive = "INTERNAL-ONLY-Body-7c1e"
	e := newEnv(t, withConfig(func(c *config.Config) { c.ProbeAllow = "127.0.0.1" }))
	a := e.tenant(t, "reflect")
	for _, status := range []int{http.StatusNotFound, http.StatusInternalServerError, http.StatusForbidden, http.StatusOK} {
		trap := newTokenTrap(t, status, distinctive)
		got, res := e.probe(t, a.key, nomadProbeSpec(trap.URL, ""), "probe")
		if got.Reachable || strings.Contains(string(res.Body), distinctive) || strings.Contains(string(res.Body), "INTERNAL") {
			t.Errorf("status %d: probe = %s, want unreachable without the target's body", status, res.Body)
		}
		if status != http.StatusOK && !strings.Contains(got.Detail, fmt.Sprint(status)) {
			t.Errorf("status %d: detail %q does not say which status came back", status, got.Detail)
		}
	}
	// k8s (server+authSecret over TLS): the same.
	srv := httptestServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, distinctive, http.StatusNotFound)
	}), true)
	e.putSecret(t, a.key, "k8s-token", "k8s-token-value", []string{"127.0.0.1"})
	e.putSecret(t, a.key, "kc", srv.kubeconfig("tok"), []string{"127.0.0.1"})
	got, res := e.probe(t, a.key, `{"id":"k","version":"1","kind":"k8s","image":"img","kubeconfigSecret":"kc"}`, "k8s probe")
	if got.Reachable || strings.Contains(string(res.Body), distinctive) || !strings.Contains(got.Detail, "404") {
		t.Errorf("k8s probe = %s, want unreachable, 404, without the target's body", res.Body)
	}
}

// TestRegisterRuntimeWithSecretBoundElsewhere: registration refuses a
// runtime whose existing secret may not be sent to its address.
func TestRegisterRuntimeWithSecretBoundElsewhere(t *testing.T) {
	e := newEnv(t)
	a := e.tenant(t, "reg")
	e.putSecret(t, a.key, "bound", "tok", []string{"nomad.example.com", "*.corp.example:6443"})
	e.putSecret(t, a.key, "unbound", "tok", nil)
	kc := `apiVersion: v1
kind: Config
clusters:
- name: c
  cluster: {server: "https://evil.example:6443"}
users:
- name: u
  user: {token: tok}
contexts:
- name: ctx
  context: {cluster: c, user: u}
current-context: ctx
`
	e.putSecret(t, a.key, "kc-elsewhere", kc, []string{"k8s.corp.example"})
	e.putSecret(t, a.key, "kc-bound", kc, []string{"evil.example"})
	nomadRT := func(v, addr, secret string) string {
		return fmt.Sprintf(`{"id":"n","version":%q,"kind":"nomad","addr":%q,"image":"img","authSecret":%q}`, v, addr, secret)
	}
	for _, tc := range []struct {
		name, spec string
		status     int
		mention    []string
	}{
		{"nomad addr not bound", nomadRT("1", "https://attacker.example:4646", "bound"), http.StatusBadRequest, []string{`"bound"`, "attacker.example", "allowedHosts"}},
		{"secret bound nowhere", nomadRT("2", "https://nomad.example.com:4646", "unbound"), http.StatusBadRequest, []string{`"unbound"`, "nomad.example.com", "allowedHosts"}},
		{"nomad addr bound", nomadRT("3", "https://NOMAD.example.com:4646", "bound"), http.StatusCreated, nil},
		{"missing secret does not block", nomadRT("4", "https://anywhere.example", "absent"), http.StatusCreated, nil},
		{"k8s server under the wildcard", `{"id":"k","version":"1","kind":"k8s","image":"img","server":"https://api.corp.example:6443","authSecret":"bound"}`, http.StatusCreated, nil},
		{"k8s wildcard port differs", `{"id":"k","version":"2","kind":"k8s","image":"img","server":"https://api.corp.example:443","authSecret":"bound"}`, http.StatusBadRequest, []string{"api.corp.example"}},
		{"kubeconfig server not bound", `{"id":"k","version":"3","kind":"k8s","image":"img","kubeconfigSecret":"kc-elsewhere"}`, http.StatusBadRequest, []string{`"kc-elsewhere"`, "evil.example"}},
		{"kubeconfig server bound", `{"id":"k","version":"4","kind":"k8s","image":"img","kubeconfigSecret":"kc-bound"}`, http.StatusCreated, nil},
	} {
		res := e.do(t, http.MethodPost, "/runtimes", tc.spec, bearer(a.key))
		want(t, res, tc.status, tc.name)
		if tc.status >= 400 {
			msg := res.ErrorInfo(t).Message
			for _, m := range tc.mention {
				if !strings.Contains(msg, m) {
					t.Errorf("%s: message %q does not mention %s", tc.name, msg, m)
				}
			}
		}
	}
}

func TestSecretAllowedHosts(t *testing.T) {
	e := newEnv(t)
	a := e.tenant(t, "hosts")
	e.putSecret(t, a.key, "nomad-token", "v", []string{"Nomad.Example.com.", "10.0.0.5:4646", "*.corp.example", "[::1]:9000", "nomad.example.com"})
	e.putSecret(t, a.key, "plain", "v", nil)
	res := e.do(t, http.MethodGet, "/secrets", "", bearer(a.key))
	want(t, res, http.StatusOK, "GET /secrets")
	type secretJSON struct {
		Name         string    `json:"name"`
		AllowedHosts []string  `json:"allowedHosts"`
		CreatedBy    string    `json:"createdBy,omitempty"`
		UpdatedAt    time.Time `json:"updatedAt"`
	}
	var got []secretJSON
	res.JSON(t, &got)
	wantList := []secretJSON{
		{Name: "nomad-token", AllowedHosts: []string{"nomad.example.com", "10.0.0.5:4646", "*.corp.example", "[::1]:9000"}},
		{Name: "plain", AllowedHosts: []string{}},
	}
	if diff := cmp.Diff(wantList, got, cmp.FilterPath(func(p cmp.Path) bool {
		n := p.Last().String()
		return n == ".CreatedBy" || n == ".UpdatedAt"
	}, cmp.Ignore())); diff != "" {
		t.Errorf("GET /secrets (-want +got):\n%s", diff)
	}
	for _, bad := range []string{
		`"https://nomad.example.com"`, `"nomad example"`, `"*"`, `"*."`, `"a.*.example"`, `"host:0"`, `"host:99999"`,
		`"10.0.0.0/8"`, `""`, `"user@host"`, `"host/path"`, `1`,
	} {
		body := `{"value":"v","allowedHosts":[` + bad + `]}`
		res := e.do(t, http.MethodPut, "/secrets/x", body, bearer(a.key))
		want(t, res, http.StatusBadRequest, body)
		if !strings.Contains(res.ErrorInfo(t).Message, "allowedHosts") {
			t.Errorf("%s: message %q does not name allowedHosts", body, res.ErrorInfo(t).Message)
		}
	}
}
