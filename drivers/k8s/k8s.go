// Package k8s talks to a Kubernetes cluster named by a runtime of kind k8s.
//
// It holds the connection (NewClient, which applies the spec's auth
// precedence), the reachability probe behind POST /runtimes/probe, and
// Driver, which runs each attempt of a case as a batch/v1 Job (see
// docs/runtimes.md). The driver builds on the same NewClient so that
// probing and running can never disagree about which credentials a runtime
// uses.
package k8s

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/version"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"svc/drivers/probe"
	"svc/internal/platform/netguard"
)

// Kind is the runtime kind this package serves, as it appears in a RuntimeSpec and a probe Result.
const Kind = "k8s"

// ProbeTimeout is the longest a probe may take (interface spec: runtime probe, 10 s cap).
const ProbeTimeout = probe.Timeout

// The auth paths of the spec's precedence (§2.6), as named in Client.Auth and a probe's Detail.
const (
	// AuthKubeconfigSecret: a whole kubeconfig stored as a workspace secret.
	AuthKubeconfigSecret = "kubeconfigSecret"
	// AuthServerToken: the runtime's server URL with the bearer token stored as authSecret.
	AuthServerToken = "server+authSecret"
	// AuthContext: a context of the control plane's own kubeconfig (KUBECONFIG or ~/.kube/config).
	AuthContext = "context"
)

// Config is how the control plane reaches one cluster. Token and
// Kubeconfig are the resolved values of the runtime's authSecret and
// kubeconfigSecret: credentials, never logged or put into a Result or an
// error, and sent only to a server AllowedHosts permits.
type Config struct {
	Server     string // https URL of the API server (with Token)
	Token      string // bearer token, the value of authSecret (with Server)
	CAData     []byte // optional PEM CA for Server; the host's trust store when empty
	Kubeconfig []byte // the value of kubeconfigSecret; wins over everything else
	Context    string // a context name: in Kubeconfig when set, else in the control plane's kubeconfig
	Namespace  string // optional; else the context's namespace, else "default"
	// AllowedHosts are the allowedHosts of the secret the credential came
	// from (Kubeconfig's, else Token's; netguard's rules): the server the
	// client talks to must be among them.
	AllowedHosts []string
	// Guard is what every connection dials through (SVC_PROBE_ALLOW); nil
	// means probe.DefaultGuard. The context path is guarded too: an
	// operator who lets runtimes use the control plane's own cluster allows
	// its API server's address in SVC_PROBE_ALLOW.
	Guard *netguard.Guard
	// OperatorNamespaces (SVC_K8S_OPERATOR_NAMESPACES) are the namespaces a
	// runtime without credentials of its own (the context path: the control
	// plane's kubeconfig or in-cluster identity) may use: "ns" in the
	// current context, "ctx/ns" in context ctx. Empty: the context path is
	// off, since any member may register a runtime (spec §5.7) and
	// would otherwise act as the control plane in a namespace of their choice.
	OperatorNamespaces []string
}

// ProbeConfig is what Probe needs; it is the connection Config so the API
// builds one value for probing and, later, for running.
type ProbeConfig = Config

// Client is a resolved connection to one cluster.
type Client struct {
	// REST is the client-go configuration; build typed clients from it
	// (kubernetes.NewForConfig) rather than re-resolving the runtime.
	REST *rest.Config
	// Namespace is where jobs go: Config.Namespace, else the context's, else "default".
	Namespace string
	// Auth says which path of the precedence was taken, e.g. "kubeconfigSecret"
	// or "context prod"; safe to show.
	Auth string
}

// NewClient resolves cfg with the spec's precedence: Kubeconfig (from
// kubeconfigSecret), then Server with Token (authSecret), then Context in the
// control plane's own kubeconfig (its current context, or in-cluster
// credentials, when Context is empty).
//
// A kubeconfig from a workspace secret is tenant input, so it may not name
// exec or auth-provider plugins, files or a proxy: they would let a tenant
// run a program or read a file on the control plane, or hide where requests
// go. The control plane's own kubeconfig is the operator's and may use them.
//
// On the two tenant paths the server must be one the secret is bound to
// (AllowedHosts), and every connection dials through Guard, which refuses
// the service's own network again at connect time (DNS rebinding).
func NewClient(cfg Config) (*Client, error) {
	switch {
	case len(cfg.Kubeconfig) > 0:
		c, err := fromKubeconfigSecret(cfg)
		if err != nil {
			return nil, err
		}
		return guarded(c, cfg)
	case cfg.Server != "" && cfg.Token != "":
		c, err := fromServerToken(cfg)
		if err != nil {
			return nil, err
		}
		return guarded(c, cfg)
	case cfg.Server != "":
		return nil, errors.New("server is set without authSecret; set authSecret to a secret holding a bearer token, or drop server to use a context")
	case cfg.Token != "":
		return nil, errors.New("authSecret is set without server; set server to the API server's https URL")
	default:
		return fromOperatorContext(cfg)
	}
}

// ErrNoOperatorContext says why a runtime with no credentials of its own
// cannot use the control plane's: the operator has not opted in.
var ErrNoOperatorContext = errors.New("the runtime names neither kubeconfigSecret nor server with authSecret, and the control plane's own cluster credentials are not offered to runtimes; " +
	"store the cluster's kubeconfig as a workspace secret and name it in kubeconfigSecret, or an operator lists the namespaces runtimes may use with SVC_K8S_OPERATOR_NAMESPACES")

// fromOperatorContext is the context path: the control plane's own
// kubeconfig (or in-cluster identity), offered only in the namespaces the
// operator listed, and dialled through the guard like every other path.
func fromOperatorContext(cfg Config) (*Client, error) {
	if len(cfg.OperatorNamespaces) == 0 {
		return nil, ErrNoOperatorContext
	}
	c, err := fromContext(cfg)
	if err != nil {
		return nil, err
	}
	// An entry "ns" offers namespace ns of the current context (or the
	// in-cluster identity); "ctx/ns" offers it in context ctx. A context
	// is the operator's to offer: it may reach another cluster.
	want := c.Namespace
	if cfg.Context != "" {
		want = cfg.Context + "/" + c.Namespace
	}
	if !slices.Contains(cfg.OperatorNamespaces, want) {
		return nil, fmt.Errorf("%s: namespace %q is not one the operator offers to runtimes (SVC_K8S_OPERATOR_NAMESPACES: %s); set namespace (and context) to one of them",
			c.Auth, want, strings.Join(cfg.OperatorNamespaces, ", "))
	}
	g := cfg.Guard
	if g == nil {
		g = probe.DefaultGuard()
	}
	c.REST.Dial = g.DialContext
	return c, nil
}

// guarded finishes a client built from a workspace's credentials: it
// refuses a server the secret is not bound to and makes every connection
// go through the guard, without a proxy.
func guarded(c *Client, cfg Config) (*Client, error) {
	if err := netguard.CheckBound(cfg.AllowedHosts, serverURL(c.REST.Host)); err != nil {
		return nil, fmt.Errorf("%s: %w", c.Auth, err)
	}
	g := cfg.Guard
	if g == nil {
		g = probe.DefaultGuard()
	}
	c.REST.Dial = g.DialContext
	c.REST.Proxy = func(*http.Request) (*url.URL, error) { return nil, nil } // not the environment's
	return c, nil
}

// serverURL gives a kubeconfig server without a scheme the https:// that
// client-go gives it.
func serverURL(s string) string {
	if !strings.Contains(s, "://") {
		return "https://" + s
	}
	return s
}

// KubeconfigServer returns the API server URL that a kubeconfig (the value
// of a kubeconfigSecret) names for context ("" is its current context):
// the host its credentials would be sent to. Errors never quote the
// document.
func KubeconfigServer(kubeconfig []byte, context string) (string, error) {
	kc, err := clientcmd.Load(kubeconfig)
	if err != nil {
		return "", errors.New("not a valid kubeconfig")
	}
	name := context
	if name == "" {
		name = kc.CurrentContext
	}
	kctx, ok := kc.Contexts[name]
	if !ok || kctx == nil {
		return "", fmt.Errorf("the kubeconfig has no context %q", name)
	}
	cl, ok := kc.Clusters[kctx.Cluster]
	if !ok || cl == nil || cl.Server == "" {
		return "", fmt.Errorf("context %q names no cluster with a server", name)
	}
	return serverURL(cl.Server), nil
}

func fromKubeconfigSecret(cfg Config) (*Client, error) {
	auth := AuthKubeconfigSecret
	if cfg.Context != "" {
		auth += " (context " + cfg.Context + ")"
	}
	kc, err := clientcmd.Load(cfg.Kubeconfig)
	if err != nil {
		// Parser errors can quote the document (a YAML type error prints the
		// offending value), so keep only where it failed.
		where := ""
		if m := lineRE.FindString(err.Error()); m != "" {
			where = " (" + m + ")"
		}
		return nil, fmt.Errorf("%s: not a valid kubeconfig%s", auth, where)
	}
	if err := checkTenantKubeconfig(kc); err != nil {
		return nil, fmt.Errorf("%s: %w", auth, err)
	}
	cc := clientcmd.NewNonInteractiveClientConfig(*kc, cfg.Context, &clientcmd.ConfigOverrides{}, nil)
	return finish(cc, cfg, auth)
}

var lineRE = regexp.MustCompile(`line \d+`)

// checkTenantKubeconfig refuses what would act on the control plane's host.
func checkTenantKubeconfig(kc *clientcmdapi.Config) error {
	const inline = "inline the credential (token, client-certificate-data, client-key-data, certificate-authority-data)"
	for name, u := range kc.AuthInfos {
		switch {
		case u.Exec != nil:
			return fmt.Errorf("user %q uses an exec credential plugin, which would run a program on the control plane; %s", name, inline)
		case u.AuthProvider != nil:
			return fmt.Errorf("user %q uses an auth-provider plugin, which the control plane does not run for workspaces; %s", name, inline)
		case u.TokenFile != "", u.ClientCertificate != "", u.ClientKey != "":
			return fmt.Errorf("user %q names a file, which would be read from the control plane's disk; %s", name, inline)
		}
	}
	for name, c := range kc.Clusters {
		switch {
		case c.CertificateAuthority != "":
			return fmt.Errorf("cluster %q names a CA file, which would be read from the control plane's disk; %s", name, inline)
		case c.ProxyURL != "":
			return fmt.Errorf("cluster %q names a proxy-url, which would hide where the control plane connects; remove it", name)
		}
	}
	return nil
}

func fromServerToken(cfg Config) (*Client, error) {
	u, err := url.Parse(cfg.Server)
	switch {
	case err != nil || u.Scheme != "https" || u.Host == "":
		// Plain http would send the bearer token in the clear.
		return nil, fmt.Errorf("%s: server %q: want an https:// URL", AuthServerToken, cfg.Server)
	case u.User != nil:
		return nil, fmt.Errorf("%s: server %s must not carry credentials", AuthServerToken, u.Redacted())
	}
	ns := cfg.Namespace
	if ns == "" {
		ns = "default"
	}
	return &Client{
		REST: &rest.Config{
			Host:            cfg.Server,
			BearerToken:     cfg.Token,
			TLSClientConfig: rest.TLSClientConfig{CAData: cfg.CAData},
		},
		Namespace: ns,
		Auth:      AuthServerToken,
	}, nil
}

func fromContext(cfg Config) (*Client, error) {
	auth := AuthContext + " (current)"
	if cfg.Context != "" {
		auth = AuthContext + " " + cfg.Context
	}
	cc := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(
		clientcmd.NewDefaultClientConfigLoadingRules(),
		&clientcmd.ConfigOverrides{CurrentContext: cfg.Context})
	return finish(cc, cfg, auth)
}

func finish(cc clientcmd.ClientConfig, cfg Config, auth string) (*Client, error) {
	rc, err := cc.ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", auth, err)
	}
	ns := cfg.Namespace
	if ns == "" {
		if ns, _, err = cc.Namespace(); err != nil {
			return nil, fmt.Errorf("%s: namespace: %w", auth, err)
		}
	}
	if ns == "" {
		ns = "default"
	}
	return &Client{REST: rc, Namespace: ns, Auth: auth}, nil
}

// Result is the answer of POST /runtimes/probe.
type Result = probe.Result

// Option adjusts a probe.
type Option = probe.Option

// WithTimeout replaces the ProbeTimeout cap (tests use a short one).
func WithTimeout(d time.Duration) Option { return probe.WithTimeout(d) }

// Probe reports whether the cluster in cfg answers GET /version with the
// credentials NewClient picks. It never returns an error: every failure,
// including refused credentials, is a Result with Reachable false and the
// reason in Detail, which also names the auth path taken
// ("kubeconfigSecret; v1.36.4"). It gives up at the earlier of ctx's
// deadline and the cap.
func Probe(ctx context.Context, cfg ProbeConfig, opts ...Option) Result {
	ctx, cancel, limit := probe.Limit(ctx, opts...)
	defer cancel()

	res := Result{Kind: Kind}
	creds := []string{cfg.Token}
	c, err := NewClient(cfg)
	if err != nil {
		res.Detail = probe.Clean(err.Error(), cfg.Token)
		return res
	}
	creds = append(creds, c.REST.BearerToken, c.REST.Password)

	info, err := serverVersion(ctx, c.REST)
	if err != nil {
		res.Detail = probe.Clean(c.Auth+": "+reason(ctx, limit, err), creds...)
		return res
	}
	res.Reachable = true
	res.Detail = probe.Clean(c.Auth+"; "+info.GitVersion, creds...)
	return res
}

// serverVersion is discovery's ServerVersion with a context: the discovery
// method sends context.TODO(), which no cap could interrupt.
func serverVersion(ctx context.Context, rc *rest.Config) (*version.Info, error) {
	dc, err := discovery.NewDiscoveryClientForConfig(rc)
	if err != nil {
		return nil, err
	}
	body, err := dc.RESTClient().Get().AbsPath("/version").Do(ctx).Raw()
	if err != nil {
		return nil, err
	}
	var info version.Info
	if err := json.Unmarshal(body, &info); err != nil {
		// The decoder's error quotes the body; say it in our words.
		return nil, errNotVersion
	}
	if !gitVersionRE.MatchString(info.GitVersion) {
		return nil, errNoGitVersion
	}
	return &info, nil
}

// gitVersionRE is what a Kubernetes gitVersion looks like (v1.36.4,
// v1.30.2-gke.1587003, v1.29.0+k3s1); only such a string is shown.
var gitVersionRE = regexp.MustCompile(`^v[0-9]{1,4}\.[0-9]{1,4}\.[0-9]{1,4}([-+][0-9A-Za-z.+-]{1,48})?$`)

// serverVersion's own errors for an answer that is not a version; their
// text holds nothing the server sent.
var (
	errNotVersion   = errors.New("GET /version answered something that is not a Kubernetes version; is this a Kubernetes API server?")
	errNoGitVersion = errors.New("GET /version answered without a Kubernetes gitVersion; is this a Kubernetes API server?")
)

// reason says in the service's own words why the request failed, naming
// the cap when it was the cap that ran out rather than the caller giving
// up. A status is named, a body never: client-go's errors quote it.
func reason(ctx context.Context, limit time.Duration, err error) string {
	if why, ok := probe.GaveUp(ctx, limit); ok {
		return why
	}
	var status apierrors.APIStatus
	switch {
	case apierrors.IsUnauthorized(err):
		// client-go's text ("the server has asked for the client to provide
		// credentials") hides that this is about the runtime's own secret.
		return "the API server refused the credentials (401 Unauthorized)"
	case apierrors.IsForbidden(err):
		return "the API server refused access to /version (403 Forbidden)"
	case errors.As(err, &status) && status.Status().Code != 0:
		return probe.Status(int(status.Status().Code), "the Kubernetes API server's URL")
	case errors.Is(err, errNotVersion), errors.Is(err, errNoGitVersion):
		return err.Error()
	}
	return probe.Describe(err)
}
