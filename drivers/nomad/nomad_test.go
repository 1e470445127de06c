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

	"svc/drivers/nomad"
)

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
				Detail: "leader 127.0.0.1:4647, nomad version unknown (agent/self: Unexpected response code: 403 (Permission denied))"},
		},
		{
			name: "server echoing the token is redacted",
			fake: &fakeNomad{leader: "127.0.0.1:4647", token: "right", reflectTok: true},
			cfg:  nomad.ProbeConfig{Token: "wrong-token-value"},
			want: nomad.Result{Kind: "nomad", Reachable: true,
				Detail: "leader 127.0.0.1:4647, nomad version unknown (agent/self: Unexpected response code: 403 (ACL token [redacted] not found))"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(tc.fake)
			t.Cleanup(srv.Close)
			cfg := tc.cfg
			cfg.Addr = srv.URL
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
	got := nomad.Probe(t.Context(), nomad.ProbeConfig{Addr: srv.URL, Region: "eu-west", Namespace: "team-a"})
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
	got := nomad.Probe(t.Context(), nomad.ProbeConfig{Addr: srv.URL})
	want := nomad.Result{Kind: "nomad", Detail: "asking " + srv.URL + " for the leader: Unexpected response code: 500 (No cluster leader)"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Probe (-want +got):\n%s", diff)
	}
}

func TestProbeUnreachable(t *testing.T) {
	// A port the OS just handed out and that nobody listens on any more.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := "http://" + ln.Addr().String()
	ln.Close()

	got := nomad.Probe(t.Context(), nomad.ProbeConfig{Addr: addr, Token: "secret-token"})
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

	got := nomad.Probe(t.Context(), nomad.ProbeConfig{Addr: srv.URL}, nomad.WithTimeout(100*time.Millisecond))
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
	got := nomad.Probe(ctx, nomad.ProbeConfig{Addr: srv.URL})
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
	if got := nomad.Probe(t.Context(), nomad.ProbeConfig{Addr: srv.URL}); !got.Reachable {
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

	got := nomad.Probe(t.Context(), nomad.ProbeConfig{Addr: srv.URL, Token: "tok"})
	if got.Reachable {
		t.Errorf("Probe = %+v, want not reachable through a redirect", got)
	}
	if _, ok := leaked.Load("tok"); ok {
		t.Error("the token followed a redirect to another server")
	}
}
