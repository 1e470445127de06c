package nomad_test

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"svc/drivers/internal/drivertest"
	"svc/drivers/nomad"
	"svc/drivers/probe"
)

// at fills in what every loopback probe needs: the address, the guard
// allowing it, and a binding of the token to it.
func at(t *testing.T, cfg nomad.ProbeConfig, url string) nomad.ProbeConfig {
	t.Helper()
	cfg.Addr, cfg.Guard, cfg.AllowedHosts = url, drivertest.LoopbackGuard(t), []string{"127.0.0.1"}
	return cfg
}

// fakeNomad answers /v1/status/leader and /v1/agent/self with the JSON a
// Nomad 1.9 agent sends. Like a real agent with ACLs on, the leader endpoint
// is open and agent/self needs a token with agent:read.
type fakeNomad struct {
	leader     string // JSON-encoded as a string; "" answers 500 "No cluster leader"
	version    map[string]any
	buildTag   string
	token      string // when set, agent/self refuses any other X-Nomad-Token
	reflectTok bool   // a misbehaving server that echoes the token it got in its 403 body

	mu   sync.Mutex
	seen []*http.Request
}

func (f *fakeNomad) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	f.seen = append(f.seen, r.Clone(context.WithoutCancel(r.Context())))
	f.mu.Unlock()
	if r.Method != http.MethodGet {
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	// Blocking-query headers every Nomad read endpoint sets.
	w.Header().Set("X-Nomad-Index", "42")
	w.Header().Set("X-Nomad-KnownLeader", "true")
	w.Header().Set("X-Nomad-LastContact", "0")
	w.Header().Set("Content-Type", "application/json")
	switch r.URL.Path {
	case "/v1/status/leader":
		if f.leader == "" {
			http.Error(w, "No cluster leader", http.StatusInternalServerError)
			return
		}
		json.NewEncoder(w).Encode(f.leader)
	case "/v1/agent/self":
		if got := r.Header.Get("X-Nomad-Token"); f.token != "" && got != f.token {
			msg := "Permission denied"
			if f.reflectTok {
				msg = "ACL token " + got + " not found"
			}
			http.Error(w, msg, http.StatusForbidden)
			return
		}
		json.NewEncoder(w).Encode(map[string]any{
			"config": map[string]any{
				"Region":     "global",
				"Datacenter": "dc1",
				"Version":    f.version,
			},
			"member": map[string]any{
				"Name": "server-1.global", "Addr": "127.0.0.1", "Port": 4648,
				"Tags":   map[string]string{"build": f.buildTag, "region": "global", "dc": "dc1", "role": "nomad"},
				"Status": "alive", "ProtocolMin": 1, "ProtocolMax": 5, "ProtocolCur": 2,
				"DelegateMin": 2, "DelegateMax": 5, "DelegateCur": 4,
			},
			"stats": map[string]map[string]string{"nomad": {"leader": "true"}},
		})
	default:
		http.NotFound(w, r)
	}
}

func (f *fakeNomad) requests() []*http.Request {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.seen
}

func v(version, pre, meta string) map[string]any {
	return map[string]any{"Revision": "abc123", "Version": version, "VersionPrerelease": pre, "VersionMetadata": meta}
}

func TestProbe(t *testing.T) {
	for _, tc := range []struct {
		name string
		fake *fakeNomad
		cfg  nomad.ProbeConfig // Addr is filled in with the fake's URL
		want nomad.Result
	}{
		{
			name: "no ACLs",
			fake: &fakeNomad{leader: "127.0.0.1:4647", version: v("1.9.3", "", ""), buildTag: "1.9.3"},
			want: nomad.Result{Kind: "nomad", Reachable: true, Detail: "leader 127.0.0.1:4647, nomad 1.9.3"},
		},
		{
			name: "token accepted",
			fake: &fakeNomad{leader: "10.0.0.1:4647", version: v("1.9.3", "", "ent"), token: "tok-123"},
			cfg:  nomad.ProbeConfig{Token: "tok-123"},
			want: nomad.Result{Kind: "nomad", Reachable: true, Detail: "leader 10.0.0.1:4647, nomad 1.9.3+ent"},
		},
		{
			name: "prerelease",
			fake: &fakeNomad{leader: "127.0.0.1:4647", version: v("1.10.0", "beta.1", "")},
			want: nomad.Result{Kind: "nomad", Reachable: true, Detail: "leader 127.0.0.1:4647, nomad 1.10.0-beta.1"},
		},
		{
			name: "old agent: version only in the build tag",
			fake: &fakeNomad{leader: "127.0.0.1:4647", buildTag: "1.4.14"},
			want: nomad.Result{Kind: "nomad", Reachable: true, Detail: "leader 127.0.0.1:4647, nomad 1.4.14"},
		},
		{
			name: "token refused on agent/self: reachable, version unknown",
			fake: &fakeNomad{leader: "127.0.0.1:4647", version: v("1.9.3", "", ""), token: "right"},
			cfg:  nomad.ProbeConfig{Token: "wrong-token-value"},
			want: nomad.Result{Kind: "nomad", Reachable: true,
				Detail: "leader 127.0.0.1:4647, nomad version unknown (HTTP 403: the token was refused or lacks agent:read)"},
		},
		{
			name: "server echoing the token: its body is never shown",
			fake: &fakeNomad{leader: "127.0.0.1:4647", token: "right", reflectTok: true},
			cfg:  nomad.ProbeConfig{Token: "wrong-token-value"},
			want: nomad.Result{Kind: "nomad", Reachable: true,
				Detail: "leader 127.0.0.1:4647, nomad version unknown (HTTP 403: the token was refused or lacks agent:read)"},
		},
		{
			name: "a version that does not look like one is not shown",
			fake: &fakeNomad{leader: "127.0.0.1:4647", version: v("<html>", "", ""), buildTag: "internal data"},
			want: nomad.Result{Kind: "nomad", Reachable: true, Detail: "leader 127.0.0.1:4647, nomad version unknown"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(tc.fake)
			t.Cleanup(srv.Close)
			cfg := at(t, tc.cfg, srv.URL)
			got := nomad.Probe(t.Context(), cfg)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Probe (-want +got):\n%s", diff)
			}
			reqs := tc.fake.requests()
			if len(reqs) != 2 {
				t.Fatalf("server saw %d requests, want 2 (leader, agent/self)", len(reqs))
			}
			for _, r := range reqs {
				if got := r.Header.Get("X-Nomad-Token"); got != cfg.Token {
					t.Errorf("%s: X-Nomad-Token = %q, want %q", r.URL.Path, got, cfg.Token)
				}
			}
		})
	}
}

func TestProbeRegionAndNamespace(t *testing.T) {
	fake := &fakeNomad{leader: "127.0.0.1:4647", version: v("1.9.3", "", "")}
	srv := httptest.NewServer(fake)
	t.Cleanup(srv.Close)
	got := nomad.Probe(t.Context(), at(t, nomad.ProbeConfig{Region: "eu-west", Namespace: "team-a"}, srv.URL))
	if !got.Reachable {
		t.Fatalf("Probe = %+v, want reachable", got)
	}
	for _, r := range fake.requests() {
		q := r.URL.Query()
		if q.Get("region") != "eu-west" || q.Get("namespace") != "team-a" {
			t.Errorf("%s: query %q, want region=eu-west and namespace=team-a", r.URL.Path, r.URL.RawQuery)
		}
	}
}

func TestProbeNoLeader(t *testing.T) {
	srv := httptest.NewServer(&fakeNomad{})
	t.Cleanup(srv.Close)
	got := nomad.Probe(t.Context(), at(t, nomad.ProbeConfig{}, srv.URL))
	want := nomad.Result{Kind: "nomad", Detail: "asking " + srv.URL + " for the leader: the server answered HTTP 500, as a Nomad agent does when the cluster has no leader"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Probe (-want +got):\n%s", diff)
	}
}

func TestProbeUnreachable(t *testing.T) {
	addr := "http://" + drivertest.DeadAddr(t)
	got := nomad.Probe(t.Context(), at(t, nomad.ProbeConfig{Token: "secret-token"}, addr))
	if got.Reachable || got.Kind != "nomad" {
		t.Errorf("Probe = %+v, want kind nomad, not reachable", got)
	}
	if !strings.Contains(got.Detail, "connection refused") || !strings.Contains(got.Detail, addr) {
		t.Errorf("Detail = %q, want the address and the reason", got.Detail)
	}
	if strings.Contains(got.Detail, "secret-token") {
		t.Errorf("Detail = %q leaks the token", got.Detail)
	}
}

func TestProbeBadAddr(t *testing.T) {
	for _, tc := range []struct {
		addr, wantDetail string
	}{
		{"", "addr is empty"},
		{"127.0.0.1:4646", "want an http:// or https:// URL"},
		{"unix:///var/run/nomad.sock", "want an http:// or https:// URL"},
		{"http://", "has no host"},
		{"http://ops:hunter2@127.0.0.1:4646", "must not carry credentials"},
	} {
		got := nomad.Probe(t.Context(), nomad.ProbeConfig{Addr: tc.addr})
		if got.Reachable || !strings.Contains(got.Detail, tc.wantDetail) {
			t.Errorf("Probe(%q) = %+v, want not reachable with %q", tc.addr, got, tc.wantDetail)
		}
		if strings.Contains(got.Detail, "hunter2") {
			t.Errorf("Probe(%q) Detail = %q leaks the password", tc.addr, got.Detail)
		}
	}
}

func TestProbeTimeout(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select { // hang like an agent behind a black-holing proxy
		case <-r.Context().Done():
		case <-release:
		}
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(release) })

	got := nomad.Probe(t.Context(), at(t, nomad.ProbeConfig{}, srv.URL), nomad.WithTimeout(100*time.Millisecond))
	want := nomad.Result{Kind: "nomad", Detail: "asking " + srv.URL + " for the leader: no answer within 100ms"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Probe (-want +got):\n%s", diff)
	}
}

func TestProbeCanceled(t *testing.T) {
	srv := httptest.NewServer(&fakeNomad{leader: "127.0.0.1:4647"})
	t.Cleanup(srv.Close)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	got := nomad.Probe(ctx, at(t, nomad.ProbeConfig{}, srv.URL))
	if got.Reachable || !strings.Contains(got.Detail, "probe canceled") {
		t.Errorf("Probe = %+v, want not reachable, canceled", got)
	}
}

func TestNewClientIgnoresEnvironment(t *testing.T) {
	// The control plane's own Nomad credentials must not reach a tenant's cluster.
	t.Setenv("NOMAD_TOKEN", "operator-token")
	t.Setenv("NOMAD_NAMESPACE", "ops")
	fake := &fakeNomad{leader: "127.0.0.1:4647", version: v("1.9.3", "", "")}
	srv := httptest.NewServer(fake)
	t.Cleanup(srv.Close)
	if got := nomad.Probe(t.Context(), at(t, nomad.ProbeConfig{}, srv.URL)); !got.Reachable {
		t.Fatalf("Probe = %+v, want reachable", got)
	}
	for _, r := range fake.requests() {
		if tok, ns := r.Header.Get("X-Nomad-Token"), r.URL.Query().Get("namespace"); tok != "" || ns != "" {
			t.Errorf("%s: token %q namespace %q from the environment, want none", r.URL.Path, tok, ns)
		}
	}
}

func TestNoRedirects(t *testing.T) {
	// A token must not follow a redirect to another host.
	var leaked sync.Map
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		leaked.Store(r.Header.Get("X-Nomad-Token"), true)
		json.NewEncoder(w).Encode("127.0.0.1:4647")
	}))
	t.Cleanup(other.Close)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, other.URL+r.URL.Path, http.StatusTemporaryRedirect)
	}))
	t.Cleanup(srv.Close)

	got := nomad.Probe(t.Context(), at(t, nomad.ProbeConfig{Token: "tok"}, srv.URL))
	if got.Reachable {
		t.Errorf("Probe = %+v, want not reachable through a redirect", got)
	}
	if _, ok := leaked.Load("tok"); ok {
		t.Error("the token followed a redirect to another server")
	}
}

// TestProbeGuard: a probe refuses the service's own network unless
// SVC_PROBE_ALLOW permits it, also when a name resolves there at dial time
// (the check that DNS rebinding cannot slip past), and nothing is sent.
func TestProbeGuard(t *testing.T) {
	fake := &fakeNomad{leader: "127.0.0.1:4647", version: v("1.9.3", "", "")}
	srv := httptest.NewServer(fake)
	t.Cleanup(srv.Close)
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(srv.URL, "http://"))
	byName := "http://localhost:" + port
	for _, tc := range []struct {
		name, allow, addr, want string
	}{
		{"loopback", "", srv.URL, "refused: 127.0.0.1 is a loopback address; an operator can allow it with SVC_PROBE_ALLOW"},
		{"loopback by name, checked at dial", "", byName, "refused: localhost resolves to"},
		{"private range does not cover loopback", "10.0.0.0/8", srv.URL, "loopback"},
		{"metadata", "", "http://169.254.169.254", "refused: 169.254.169.254 is a link-local address"},
		{"private", "", "http://10.1.2.3:4646", "refused: 10.1.2.3 is a private address"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g, err := probe.NewGuard(tc.allow)
			if err != nil {
				t.Fatal(err)
			}
			got := nomad.Probe(t.Context(), nomad.ProbeConfig{Addr: tc.addr, Guard: g}, nomad.WithTimeout(2*time.Second))
			if got.Reachable || !strings.Contains(got.Detail, tc.want) {
				t.Errorf("Probe(%s) = %+v, want not reachable with %q", tc.addr, got, tc.want)
			}
		})
	}
	if n := len(fake.requests()); n != 0 {
		t.Errorf("the agent got %d requests, want none", n)
	}
	// A nil guard is the closed one.
	if got := nomad.Probe(t.Context(), nomad.ProbeConfig{Addr: srv.URL}); got.Reachable || !strings.Contains(got.Detail, "loopback") {
		t.Errorf("Probe without a guard = %+v, want loopback refused", got)
	}
	// Allowed by name, the name is dialled as is.
	g, err := probe.NewGuard("localhost")
	if err != nil {
		t.Fatal(err)
	}
	if got := nomad.Probe(t.Context(), nomad.ProbeConfig{Addr: byName, Guard: g}); !got.Reachable {
		t.Errorf("Probe(%s) allowed by name = %+v, want reachable", byName, got)
	}
}

// TestProbeTokenOnlyToBoundHosts: a token goes only to a host its
// secret's allowedHosts permit; else nothing is sent.
func TestProbeTokenOnlyToBoundHosts(t *testing.T) {
	fake := &fakeNomad{leader: "127.0.0.1:4647"}
	srv := httptest.NewServer(fake)
	t.Cleanup(srv.Close)
	for _, hosts := range [][]string{nil, {"nomad.example.com"}, {"127.0.0.1:1"}, {"*.0.0.1"}} {
		got := nomad.Probe(t.Context(), nomad.ProbeConfig{Addr: srv.URL, Token: "tok", Guard: drivertest.LoopbackGuard(t), AllowedHosts: hosts})
		if got.Reachable || !strings.Contains(got.Detail, "may not be sent to 127.0.0.1:") || !strings.Contains(got.Detail, "allowedHosts") {
			t.Errorf("Probe with allowedHosts %q = %+v, want refused naming the host", hosts, got)
		}
	}
	if n := len(fake.requests()); n != 0 {
		t.Errorf("the agent got %d requests, want none", n)
	}
}

// TestProbeDoesNotReflectTheServer: whatever a server answers, Detail is in
// the probe's own words.
func TestProbeDoesNotReflectTheServer(t *testing.T) {
	drivertest.CheckAnswers(t, false, []drivertest.Answer{
		{Status: http.StatusNotFound, CType: "text/plain", Want: "the server answered HTTP 404; is it the Nomad agent's HTTP address?"},
		{Status: http.StatusBadGateway, CType: "text/plain", Want: "HTTP 502"},
		{Status: http.StatusUnauthorized, CType: "text/plain", Want: "HTTP 401: the agent refused the token"},
		{Status: http.StatusOK, CType: "text/html", Want: "not Nomad's JSON"},
		{Status: http.StatusOK, CType: "application/json", Want: "not Nomad's JSON"},
	}, func(srv *httptest.Server) nomad.Result {
		return nomad.Probe(t.Context(), at(t, nomad.ProbeConfig{}, srv.URL))
	})
	// A JSON string that is not an IP:port is not shown as the leader.
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		json.NewEncoder(w).Encode(drivertest.Body)
	}))
	t.Cleanup(srv.Close)
	if got := nomad.Probe(t.Context(), at(t, nomad.ProbeConfig{}, srv.URL)); got.Reachable || drivertest.Echoes(got.Detail) {
		t.Errorf("Probe = %+v, want not reachable without the answer", got)
	}
}
