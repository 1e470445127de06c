package registries_test

import (
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"

	"svc/auth"
	"svc/drivers/probe"
	"svc/internal/app/probers"
	"svc/internal/domain/registry"
	"svc/internal/platform/derrors"
	"svc/internal/platform/netguard"
	"svc/internal/platform/secrets"
	"svc/internal/service/registries"
)

// newSecretService is a Service on SQLite with a sealer; allow is
// SVC_PROBE_ALLOW.
func newSecretService(t *testing.T, allow string) (*registries.Service, auth.Principal) {
	t.Helper()
	sealer, err := secrets.NewSealer("MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=")
	if err != nil {
		t.Fatal(err)
	}
	g, err := probe.NewGuard(allow)
	if err != nil {
		t.Fatal(err)
	}
	svc := registries.New(backends[0].open(t), sealer, nil, registries.WithProbeGuard(g), registries.WithProbers(probers.Drivers()))
	return svc, auth.Principal{Subject: "alice", Workspace: "ws1", Roles: []auth.Role{auth.RoleAdmin}, Via: auth.ViaAPIKey}
}

// countingServer counts requests and whether any carried token.
func countingServer(t *testing.T, token string) (url string, calls, leaks *atomic.Int32) {
	t.Helper()
	calls, leaks = &atomic.Int32{}, &atomic.Int32{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		if strings.Contains(r.Header.Get("X-Nomad-Token")+r.Header.Get("Authorization"), token) {
			leaks.Add(1)
		}
		fmt.Fprint(w, `"127.0.0.1:4647"`)
	}))
	t.Cleanup(srv.Close)
	return srv.URL, calls, leaks
}

func TestPutSecretAllowedHosts(t *testing.T) {
	svc, p := newSecretService(t, "")
	ctx := t.Context()
	if err := svc.PutSecret(ctx, p, "tok", "v", []string{"Nomad.Example.com", "*.corp.example:6443", "nomad.example.com"}); err != nil {
		t.Fatal(err)
	}
	if err := svc.PutSecret(ctx, p, "plain", "v", nil); err != nil {
		t.Fatal(err)
	}
	ss, err := svc.ListSecrets(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string][]string{}
	for _, s := range ss {
		got[s.Name] = s.AllowedHosts
	}
	want := map[string][]string{"plain": {}, "tok": {"nomad.example.com", "*.corp.example:6443"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ListSecrets hosts (-want +got):\n%s", diff)
	}
	for _, bad := range [][]string{{"https://x.example"}, {"10.0.0.0/8"}, {"*"}, {""}} {
		if err := svc.PutSecret(ctx, p, "tok", "v", bad); !errors.Is(err, derrors.ErrInvalid) || !strings.Contains(err.Error(), "allowedHosts[0]") {
			t.Errorf("PutSecret(%q) = %v, want ErrInvalid naming allowedHosts[0]", bad, err)
		}
	}
}

// TestProbeBinding is finding 3 of issue 11 where the logic lives: a probe
// sends a secret only to a host the secret is bound to, and refuses with a
// 400 naming both otherwise, before any connection.
func TestProbeBinding(t *testing.T) {
	const token = "admin-token-4711"
	url, calls, leaks := countingServer(t, token)
	nomadRT := fmt.Sprintf(`{"id":"n","version":"1","kind":"nomad","addr":%q,"image":"i","authSecret":"tok"}`, url)
	for _, tc := range []struct {
		name, allow string
		hosts       []string
		wantErr     bool
		wantCalls   int32
		wantLeaks   int32
	}{
		{"bound nowhere", "127.0.0.1", nil, true, 0, 0},
		{"bound elsewhere", "127.0.0.1", []string{"nomad.example.com"}, true, 0, 0},
		{"bound by name, not the IP written", "127.0.0.1", []string{"localhost"}, true, 0, 0},
		{"bound but the guard refuses loopback", "", []string{"127.0.0.1"}, false, 0, 0},
		{"bound and allowed", "127.0.0.1", []string{"127.0.0.1"}, false, 2, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			calls.Store(0)
			leaks.Store(0)
			svc, p := newSecretService(t, tc.allow)
			if err := svc.PutSecret(t.Context(), p, "tok", token, tc.hosts); err != nil {
				t.Fatal(err)
			}
			res, err := svc.Probe(t.Context(), p, []byte(nomadRT))
			var ue *netguard.UnboundError
			if tc.wantErr {
				if !errors.Is(err, derrors.ErrInvalid) || !errors.As(err, &ue) || !strings.Contains(err.Error(), `authSecret "tok"`) ||
					!strings.Contains(err.Error(), "127.0.0.1") || !strings.Contains(err.Error(), "an admin must add") {
					t.Errorf("Probe = %+v, %v; want a 400 naming the secret and the host", res, err)
				}
			} else if err != nil {
				t.Errorf("Probe = %v", err)
			}
			if calls.Load() != tc.wantCalls || leaks.Load() != tc.wantLeaks {
				t.Errorf("server saw %d requests, %d with the token; want %d, %d", calls.Load(), leaks.Load(), tc.wantCalls, tc.wantLeaks)
			}
			if strings.Contains(res.Detail, token) {
				t.Errorf("Detail %q holds the token", res.Detail)
			}
		})
	}
}

func TestRegisterRuntimeBinding(t *testing.T) {
	svc, p := newSecretService(t, "")
	ctx := t.Context()
	if err := svc.PutSecret(ctx, p, "tok", "v", []string{"nomad.example.com"}); err != nil {
		t.Fatal(err)
	}
	kc := `{"apiVersion":"v1","kind":"Config","current-context":"c","clusters":[{"name":"c","cluster":{"server":"https://evil.example:6443"}}],
		"users":[{"name":"u","user":{"token":"t"}}],"contexts":[{"name":"c","context":{"cluster":"c","user":"u"}}]}`
	if err := svc.PutSecret(ctx, p, "kc", kc, []string{"k8s.example"}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		spec    string
		wantErr string // "" = registered
	}{
		{`{"id":"n","version":"1","kind":"nomad","addr":"https://nomad.example.com:4646","image":"i","authSecret":"tok"}`, ""},
		{`{"id":"n","version":"2","kind":"nomad","addr":"https://other.example:4646","image":"i","authSecret":"tok"}`, `authSecret "tok" may not be sent to other.example:4646`},
		{`{"id":"n","version":"3","kind":"nomad","addr":"https://other.example","image":"i","authSecret":"absent"}`, ""},
		{`{"id":"k","version":"1","kind":"k8s","image":"i","server":"https://nomad.example.com","authSecret":"tok"}`, ""},
		{`{"id":"k","version":"2","kind":"k8s","image":"i","server":"https://k8s.example","authSecret":"tok"}`, `authSecret "tok" may not be sent to k8s.example:443`},
		{`{"id":"k","version":"3","kind":"k8s","image":"i","kubeconfigSecret":"kc"}`, `kubeconfigSecret "kc" may not be sent to evil.example:6443`},
		// The kubeconfig wins over server+authSecret, so only its server counts.
		{`{"id":"k","version":"4","kind":"k8s","image":"i","kubeconfigSecret":"kc","server":"https://nomad.example.com","authSecret":"tok"}`, `kubeconfigSecret "kc"`},
	} {
		_, err := svc.Register(ctx, p, registry.Runtime, []byte(tc.spec), nil)
		switch {
		case tc.wantErr == "" && err != nil:
			t.Errorf("Register(%s) = %v, want registered", tc.spec, err)
		case tc.wantErr != "" && (!errors.Is(err, derrors.ErrInvalid) || !strings.Contains(err.Error(), tc.wantErr)):
			t.Errorf("Register(%s) = %v, want ErrInvalid with %q", tc.spec, err, tc.wantErr)
		}
	}
}
