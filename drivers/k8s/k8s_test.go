package k8s_test

import (
	"encoding/json"
	"encoding/pem"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/version"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"svc/drivers/internal/drivertest"
	"svc/drivers/k8s"
	"svc/drivers/probe"
)

// local fills in what a workspace's credentials need to reach a test
// server on loopback: a guard allowing 127.0.0.1 and a binding to it.
func local(t *testing.T, cfg k8s.Config) k8s.Config {
	t.Helper()
	cfg.Guard, cfg.AllowedHosts = drivertest.LoopbackGuard(t), []string{"127.0.0.1"}
	return cfg
}

// fakeAPIServer is a TLS server that answers GET /version like a
// kube-apiserver 1.36 and, like one, refuses a wrong bearer token with a 401
// Status before looking at the path.
type fakeAPIServer struct {
	*httptest.Server
	CA    []byte // PEM of the server's certificate, the CA a kubeconfig would carry
	calls atomic.Int32
}

func newFakeAPIServer(t *testing.T, token string) *fakeAPIServer {
	t.Helper()
	f := &fakeAPIServer{}
	f.Server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.calls.Add(1)
		w.Header().Set("Content-Type", "application/json")
		if r.Header.Get("Authorization") != "Bearer "+token {
			w.WriteHeader(http.StatusUnauthorized)
			json.NewEncoder(w).Encode(metav1.Status{
				TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"},
				Status:   metav1.StatusFailure, Message: "Unauthorized", Reason: metav1.StatusReasonUnauthorized, Code: 401,
			})
			return
		}
		if r.Method != http.MethodGet || r.URL.Path != "/version" {
			http.NotFound(w, r)
			return
		}
		json.NewEncoder(w).Encode(version.Info{
			Major: "1", Minor: "36", EmulationMajor: "1", EmulationMinor: "36",
			MinCompatibilityMajor: "1", MinCompatibilityMinor: "35",
			GitVersion: "v1.36.4", GitCommit: "0123456789abcdef0123456789abcdef01234567", GitTreeState: "clean",
			BuildDate: "2026-09-10T12:00:00Z", GoVersion: "go1.26.8", Compiler: "gc", Platform: "linux/amd64",
		})
	}))
	// The untrusted-CA case makes the server log a handshake error; keep test output clean.
	f.Config.ErrorLog = log.New(io.Discard, "", 0)
	f.StartTLS()
	t.Cleanup(f.Close)
	f.CA = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: f.Certificate().Raw})
	return f
}

// kctx is one context of a generated kubeconfig.
type kctx struct {
	name, server, token, tokenFile, namespace string
	ca                                        []byte
}

// kubeconfig writes a real kubeconfig document (clientcmd's own encoder).
func kubeconfig(t *testing.T, current string, ctxs ...kctx) []byte {
	t.Helper()
	c := clientcmdapi.NewConfig()
	c.CurrentContext = current
	for _, k := range ctxs {
		c.Clusters[k.name] = &clientcmdapi.Cluster{Server: k.server, CertificateAuthorityData: k.ca}
		c.AuthInfos[k.name] = &clientcmdapi.AuthInfo{Token: k.token, TokenFile: k.tokenFile}
		c.Contexts[k.name] = &clientcmdapi.Context{Cluster: k.name, AuthInfo: k.name, Namespace: k.namespace}
	}
	b, err := clientcmd.Write(*c)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// useControlPlaneKubeconfig points KUBECONFIG at a file holding b and rules out in-cluster config.
func useControlPlaneKubeconfig(t *testing.T, b []byte) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "config")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("KUBECONFIG", path)
	t.Setenv("KUBERNETES_SERVICE_HOST", "")
}

func TestProbeAuthPrecedence(t *testing.T) {
	const token = "cluster-token-123"
	api := newFakeAPIServer(t, token)
	dead := "https://" + drivertest.DeadAddr(t)
	good := kctx{name: "good", server: api.URL, ca: api.CA, token: token}
	broken := kctx{name: "broken", server: dead, ca: api.CA, token: token}

	tokenFile := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tokenFile, []byte(token), 0o600); err != nil {
		t.Fatal(err)
	}
	// The operator's own kubeconfig: "ops" reaches the cluster through a token
	// file, which only the control plane's kubeconfig may use.
	operator := kubeconfig(t, "ops",
		kctx{name: "ops", server: api.URL, ca: api.CA, tokenFile: tokenFile},
		kctx{name: "elsewhere", server: dead, ca: api.CA, token: token})

	for _, tc := range []struct {
		name string
		cfg  k8s.ProbeConfig
		want k8s.Result
	}{
		{
			name: "kubeconfigSecret wins over server+authSecret and context",
			cfg: k8s.ProbeConfig{
				Kubeconfig: kubeconfig(t, "good", good),
				Server:     dead, Token: "wrong", Context: "",
			},
			want: k8s.Result{Kind: "k8s", Reachable: true, Detail: "kubeconfigSecret; v1.36.4"},
		},
		{
			name: "context selects within kubeconfigSecret",
			cfg:  k8s.ProbeConfig{Kubeconfig: kubeconfig(t, "broken", broken, good), Context: "good"},
			want: k8s.Result{Kind: "k8s", Reachable: true, Detail: "kubeconfigSecret (context good); v1.36.4"},
		},
		{
			name: "server+authSecret wins over context",
			cfg:  k8s.ProbeConfig{Server: api.URL, Token: token, CAData: api.CA, Context: "elsewhere"},
			want: k8s.Result{Kind: "k8s", Reachable: true, Detail: "server+authSecret; v1.36.4"},
		},
		{
			name: "context from the control plane's kubeconfig",
			cfg:  k8s.ProbeConfig{Context: "ops", OperatorNamespaces: []string{"ops/default"}},
			want: k8s.Result{Kind: "k8s", Reachable: true, Detail: "context ops; v1.36.4"},
		},
		{
			name: "current context of the control plane's kubeconfig",
			cfg:  k8s.ProbeConfig{OperatorNamespaces: []string{"default"}},
			want: k8s.Result{Kind: "k8s", Reachable: true, Detail: "context (current); v1.36.4"},
		},
		{
			// Issue 30, finding 4: any member may register a runtime, so
			// without the operator's opt-in a runtime with no credentials
			// of its own never acts as the control plane.
			name: "no credentials and no operator namespaces is refused",
			cfg:  k8s.ProbeConfig{Context: "ops"},
			want: k8s.Result{Kind: "k8s", Detail: k8s.ErrNoOperatorContext.Error()},
		},
		{
			name: "a namespace the operator did not offer is refused",
			cfg:  k8s.ProbeConfig{Namespace: "kube-system", OperatorNamespaces: []string{"default"}},
			want: k8s.Result{Kind: "k8s", Detail: `context (current): namespace "kube-system" is not one the operator offers to runtimes (SVC_K8S_OPERATOR_NAMESPACES: default); set namespace (and context) to one of them`},
		},
		{
			// A context may reach another cluster: offering a namespace
			// of the current context offers it in no other context.
			name: "another context than the one offered is refused",
			cfg:  k8s.ProbeConfig{Context: "ops", OperatorNamespaces: []string{"default"}},
			want: k8s.Result{Kind: "k8s", Detail: `context ops: namespace "ops/default" is not one the operator offers to runtimes (SVC_K8S_OPERATOR_NAMESPACES: default); set namespace (and context) to one of them`},
		},
		{
			name: "context that does not exist",
			cfg:  k8s.ProbeConfig{Context: "nope", OperatorNamespaces: []string{"nope/default"}},
			want: k8s.Result{Kind: "k8s", Detail: `context nope: context "nope" does not exist`},
		},
		{
			name: "wrong token is not reachable",
			cfg:  k8s.ProbeConfig{Server: api.URL, Token: "wrong-token", CAData: api.CA},
			want: k8s.Result{Kind: "k8s", Detail: "server+authSecret: the API server refused the credentials (401 Unauthorized)"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			useControlPlaneKubeconfig(t, operator)
			got := k8s.Probe(t.Context(), local(t, tc.cfg))
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Probe (-want +got):\n%s", diff)
			}
			if strings.Contains(got.Detail, token) || (tc.cfg.Token != "" && strings.Contains(got.Detail, tc.cfg.Token)) {
				t.Errorf("Detail %q leaks a token", got.Detail)
			}
		})
	}
}

func TestProbeUntrustedCA(t *testing.T) {
	api := newFakeAPIServer(t, "tok")
	got := k8s.Probe(t.Context(), local(t, k8s.ProbeConfig{Server: api.URL, Token: "tok"})) // no CAData: the host's trust store
	if got.Reachable || !strings.HasPrefix(got.Detail, "server+authSecret: ") ||
		!strings.Contains(got.Detail, "TLS handshake failed: the server's certificate is signed by an unknown authority") {
		t.Errorf("Probe = %+v, want not reachable, unknown authority", got)
	}
}

func TestProbeRefusesUnsafeKubeconfigSecret(t *testing.T) {
	api := newFakeAPIServer(t, "tok")
	base := func() *clientcmdapi.Config {
		c := clientcmdapi.NewConfig()
		c.CurrentContext = "c"
		c.Clusters["c"] = &clientcmdapi.Cluster{Server: api.URL, CertificateAuthorityData: api.CA}
		c.AuthInfos["c"] = &clientcmdapi.AuthInfo{Token: "tok"}
		c.Contexts["c"] = &clientcmdapi.Context{Cluster: "c", AuthInfo: "c"}
		return c
	}
	for _, tc := range []struct {
		name   string
		mutate func(*clientcmdapi.Config)
		want   string
	}{
		{"exec plugin", func(c *clientcmdapi.Config) {
			c.AuthInfos["c"] = &clientcmdapi.AuthInfo{Exec: &clientcmdapi.ExecConfig{Command: "/bin/sh", APIVersion: "client.authentication.k8s.io/v1", InteractiveMode: clientcmdapi.NeverExecInteractiveMode}}
		}, "exec credential plugin"},
		{"auth provider", func(c *clientcmdapi.Config) {
			c.AuthInfos["c"] = &clientcmdapi.AuthInfo{AuthProvider: &clientcmdapi.AuthProviderConfig{Name: "oidc"}}
		}, "auth-provider plugin"},
		{"token file", func(c *clientcmdapi.Config) {
			c.AuthInfos["c"] = &clientcmdapi.AuthInfo{TokenFile: "/var/run/secrets/kubernetes.io/serviceaccount/token"}
		}, "names a file"},
		{"client certificate file", func(c *clientcmdapi.Config) {
			c.AuthInfos["c"] = &clientcmdapi.AuthInfo{ClientCertificate: "/etc/ssl/client.crt", ClientKey: "/etc/ssl/client.key"}
		}, "names a file"},
		{"CA file", func(c *clientcmdapi.Config) {
			c.Clusters["c"].CertificateAuthorityData = nil
			c.Clusters["c"].CertificateAuthority = "/etc/ssl/ca.crt"
		}, "names a CA file"},
		{"proxy", func(c *clientcmdapi.Config) {
			c.Clusters["c"].ProxyURL = "http://proxy.example:3128"
		}, "proxy-url"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := base()
			tc.mutate(c)
			b, err := clientcmd.Write(*c)
			if err != nil {
				t.Fatal(err)
			}
			before := api.calls.Load()
			got := k8s.Probe(t.Context(), local(t, k8s.ProbeConfig{Kubeconfig: b}))
			if got.Reachable || !strings.HasPrefix(got.Detail, "kubeconfigSecret: ") || !strings.Contains(got.Detail, tc.want) {
				t.Errorf("Probe = %+v, want not reachable, kubeconfigSecret, %q", got, tc.want)
			}
			if api.calls.Load() != before {
				t.Error("the server was called with a refused kubeconfig")
			}
		})
	}
}

func TestProbeBadConfig(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  k8s.ProbeConfig
		want string
	}{
		{"server without authSecret", k8s.ProbeConfig{Server: "https://127.0.0.1:6443"}, "server is set without authSecret"},
		{"authSecret without server", k8s.ProbeConfig{Token: "t0ken-value"}, "authSecret is set without server"},
		{"plain http server", k8s.ProbeConfig{Server: "http://127.0.0.1:6443", Token: "t0ken-value"}, "want an https:// URL"},
		{"server with credentials", k8s.ProbeConfig{Server: "https://u:hunter2@127.0.0.1:6443", Token: "t0ken-value"}, "must not carry credentials"},
		// A YAML type error quotes the value it choked on; the detail must not.
		{"kubeconfig that does not parse", k8s.ProbeConfig{Kubeconfig: []byte("apiVersion: v1\nkind: Config\nclusters: secret-looking-value\n")}, "kubeconfigSecret: not a valid kubeconfig"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := k8s.Probe(t.Context(), tc.cfg)
			if got.Reachable || !strings.Contains(got.Detail, tc.want) {
				t.Errorf("Probe = %+v, want not reachable with %q", got, tc.want)
			}
			for _, leak := range []string{"t0ken-value", "hunter2", "secret-looking-value"} {
				if strings.Contains(got.Detail, leak) {
					t.Errorf("Detail %q leaks %q", got.Detail, leak)
				}
			}
		})
	}
}

func TestProbeNoControlPlaneKubeconfig(t *testing.T) {
	t.Setenv("KUBECONFIG", filepath.Join(t.TempDir(), "missing"))
	t.Setenv("KUBERNETES_SERVICE_HOST", "")
	got := k8s.Probe(t.Context(), k8s.ProbeConfig{OperatorNamespaces: []string{"default"}})
	if got.Reachable || !strings.HasPrefix(got.Detail, "context (current): ") {
		t.Errorf("Probe = %+v, want not reachable on the context path", got)
	}
}

func TestProbeUnreachable(t *testing.T) {
	dead := "https://" + drivertest.DeadAddr(t)
	got := k8s.Probe(t.Context(), local(t, k8s.ProbeConfig{Server: dead, Token: "tok-abc"}))
	if got.Reachable || !strings.HasPrefix(got.Detail, "server+authSecret: ") || !strings.Contains(got.Detail, "connection refused") {
		t.Errorf("Probe = %+v, want not reachable, connection refused", got)
	}
}

func TestProbeTimeout(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select { // accept the connection and never answer
		case <-r.Context().Done():
		case <-release:
		}
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(release) })
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})

	got := k8s.Probe(t.Context(), local(t, k8s.ProbeConfig{Server: srv.URL, Token: "tok", CAData: ca}), k8s.WithTimeout(100*time.Millisecond))
	want := k8s.Result{Kind: "k8s", Detail: "server+authSecret: no answer within 100ms"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Probe (-want +got):\n%s", diff)
	}
}

func TestNewClientNamespace(t *testing.T) {
	api := newFakeAPIServer(t, "tok")
	kc := kubeconfig(t, "a",
		kctx{name: "a", server: api.URL, ca: api.CA, token: "tok", namespace: "team-a"},
		kctx{name: "b", server: api.URL, ca: api.CA, token: "tok"})
	for _, tc := range []struct {
		name string
		cfg  k8s.Config
		want string
	}{
		{"context namespace", k8s.Config{Kubeconfig: kc}, "team-a"},
		{"runtime namespace wins", k8s.Config{Kubeconfig: kc, Namespace: "evals"}, "evals"},
		{"default", k8s.Config{Kubeconfig: kc, Context: "b"}, "default"},
		{"server+authSecret default", k8s.Config{Server: api.URL, Token: "tok"}, "default"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := k8s.NewClient(local(t, tc.cfg))
			if err != nil {
				t.Fatal(err)
			}
			if c.Namespace != tc.want {
				t.Errorf("Namespace = %q, want %q", c.Namespace, tc.want)
			}
		})
	}
}

// TestProbeGuardAndBinding: a workspace's server is dialled through the
// guard (SVC_PROBE_ALLOW) and gets credentials only when the secret is
// bound to its host; nothing reaches the server otherwise.
func TestProbeGuardAndBinding(t *testing.T) {
	const token = "bound-token"
	api := newFakeAPIServer(t, token)
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(api.URL, "https://"))
	closed, err := probe.NewGuard("")
	if err != nil {
		t.Fatal(err)
	}
	open, err := probe.NewGuard("127.0.0.1,localhost")
	if err != nil {
		t.Fatal(err)
	}
	kc := kubeconfig(t, "c", kctx{name: "c", server: api.URL, ca: api.CA, token: token})
	for _, tc := range []struct {
		name string
		cfg  k8s.ProbeConfig
		want string
	}{
		{"loopback refused", k8s.ProbeConfig{Server: api.URL, Token: token, CAData: api.CA, Guard: closed, AllowedHosts: []string{"127.0.0.1"}},
			"server+authSecret: refused: 127.0.0.1 is a loopback address; an operator can allow it with SVC_PROBE_ALLOW"},
		{"loopback by name refused at dial", k8s.ProbeConfig{Server: "https://localhost:" + port, Token: token, CAData: api.CA, AllowedHosts: []string{"localhost"}},
			"refused: localhost resolves to"},
		{"metadata refused", k8s.ProbeConfig{Server: "https://169.254.169.254", Token: token, AllowedHosts: []string{"169.254.169.254"}},
			"link-local"},
		{"token not bound", k8s.ProbeConfig{Server: api.URL, Token: token, CAData: api.CA, Guard: open, AllowedHosts: []string{"k8s.example"}},
			"server+authSecret: the credential may not be sent to 127.0.0.1:" + port},
		{"token bound nowhere", k8s.ProbeConfig{Server: api.URL, Token: token, CAData: api.CA, Guard: open},
			"is bound to no host"},
		{"kubeconfig server not bound", k8s.ProbeConfig{Kubeconfig: kc, Guard: open, AllowedHosts: []string{"localhost"}},
			"kubeconfigSecret: the credential may not be sent to 127.0.0.1:" + port},
		{"kubeconfig server refused", k8s.ProbeConfig{Kubeconfig: kc, Guard: closed, AllowedHosts: []string{"127.0.0.1"}},
			"kubeconfigSecret: refused: 127.0.0.1 is a loopback address"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := k8s.Probe(t.Context(), tc.cfg, k8s.WithTimeout(2*time.Second))
			if got.Reachable || !strings.Contains(got.Detail, tc.want) {
				t.Errorf("Probe = %+v, want not reachable with %q", got, tc.want)
			}
		})
	}
	if n := api.calls.Load(); n != 0 {
		t.Errorf("the API server got %d requests, want none", n)
	}
}

// TestProbeDoesNotReflectTheServer: the answer of whatever server is
// probed never comes back in Detail, only its status.
func TestProbeDoesNotReflectTheServer(t *testing.T) {
	drivertest.CheckAnswers(t, true, []drivertest.Answer{
		{Status: http.StatusNotFound, CType: "text/plain", Want: "the server answered HTTP 404; is it the Kubernetes API server's URL?"},
		{Status: http.StatusInternalServerError, CType: "text/plain", Want: "HTTP 500"},
		{Status: http.StatusTeapot, CType: "application/json", Want: "HTTP 418"},
		{Status: http.StatusForbidden, CType: "text/plain", Want: "403"},
		{Status: http.StatusOK, CType: "application/json", Want: "not a Kubernetes version"},
		{Status: http.StatusOK, CType: "text/html", Want: "not a Kubernetes version"},
	}, func(srv *httptest.Server) k8s.Result {
		ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
		return k8s.Probe(t.Context(), local(t, k8s.ProbeConfig{Server: srv.URL, Token: "tok", CAData: ca}))
	})
	// A gitVersion that does not look like one is not shown either.
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		json.NewEncoder(w).Encode(version.Info{GitVersion: drivertest.Body})
	}))
	t.Cleanup(srv.Close)
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	if got := k8s.Probe(t.Context(), local(t, k8s.ProbeConfig{Server: srv.URL, Token: "tok", CAData: ca})); got.Reachable || drivertest.Echoes(got.Detail) {
		t.Errorf("Probe = %+v, want not reachable without the gitVersion", got)
	}
}

func TestKubeconfigServer(t *testing.T) {
	kc := kubeconfig(t, "a",
		kctx{name: "a", server: "https://a.example:6443", token: "t"},
		kctx{name: "b", server: "b.example:443", token: "t"})
	for _, tc := range []struct{ context, want string }{
		{"", "https://a.example:6443"},
		{"b", "https://b.example:443"},
	} {
		got, err := k8s.KubeconfigServer(kc, tc.context)
		if err != nil || got != tc.want {
			t.Errorf("KubeconfigServer(%q) = %q, %v; want %q", tc.context, got, err, tc.want)
		}
	}
	if _, err := k8s.KubeconfigServer(kc, "nope"); err == nil {
		t.Error("KubeconfigServer of an absent context succeeded")
	}
	if _, err := k8s.KubeconfigServer([]byte("clusters: secret-looking-value"), ""); err == nil || strings.Contains(err.Error(), "secret-looking") {
		t.Errorf("KubeconfigServer of a bad document = %v, want an error without its text", err)
	}
}
