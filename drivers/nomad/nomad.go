// Package nomad talks to a Nomad cluster named by a runtime of kind nomad.
//
// It holds the connection (NewClient), the reachability probe behind POST
// /runtimes/probe, and Driver, which runs each attempt of a case as a
// Nomad batch job (see docs/runtimes.md, "Nomad: how a case runs"). Both
// build on the same NewClient, so probing and running see a runtime's
// address and credentials the same way.
package nomad

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/netip"
	"net/url"
	"regexp"
	"time"

	"github.com/hashicorp/nomad/api"

	"svc/drivers/probe"
	"svc/internal/platform/netguard"
)

// Kind is the runtime kind this package serves, as it appears in a RuntimeSpec and a probe Result.
const Kind = "nomad"

// ProbeTimeout is the longest a probe may take (interface spec: runtime probe, 10 s cap).
const ProbeTimeout = probe.Timeout

// Config is how the control plane reaches one Nomad cluster: the runtime's
// addr, region and namespace, and Token, the resolved value of its
// authSecret. Token is a credential: it is sent only as X-Nomad-Token, only
// to a host AllowedHosts permits, and is never logged or put into a Result
// or an error.
type Config struct {
	Addr      string // http(s)://host:port of a Nomad agent
	Region    string // optional; the agent's own region when empty
	Namespace string // optional; "default" when empty
	Token     string // optional ACL token (the value of authSecret)
	// AllowedHosts are the allowedHosts of the secret Token came from
	// (netguard's rules); with a Token, Addr's host must be among them.
	AllowedHosts []string
	// Guard is what every connection dials through (SVC_PROBE_ALLOW);
	// nil means probe.DefaultGuard, which refuses every private address.
	Guard *netguard.Guard
}

// ProbeConfig is what Probe needs; it is the connection Config so the API
// builds one value for probing and, later, for running.
type ProbeConfig = Config

// NewClient returns a Nomad API client for cfg.
//
// Unlike api.DefaultConfig it reads nothing from the environment: a
// runtime belongs to a workspace, and the control plane's own NOMAD_TOKEN,
// NOMAD_ADDR, proxy or TLS files must never leak into a tenant's
// connection. It refuses a Token that Addr's host is not bound to, dials
// through cfg.Guard (checked again at connect time, so DNS rebinding
// cannot reach a refused address), and refuses redirects, because
// X-Nomad-Token is a custom header that Go's HTTP client would carry to
// whatever host a redirect names.
func NewClient(cfg Config) (*api.Client, error) {
	if err := checkAddr(cfg.Addr); err != nil {
		return nil, err
	}
	if cfg.Token != "" {
		if err := netguard.CheckBound(cfg.AllowedHosts, cfg.Addr); err != nil {
			return nil, err
		}
	}
	g := cfg.Guard
	if g == nil {
		g = probe.DefaultGuard()
	}
	tr := g.Transport()
	// The Nomad API is HTTP/1 (its exec and log streams need it), as in api.defaultClient.
	tr.ForceAttemptHTTP2 = false
	tr.TLSClientConfig = &tls.Config{MinVersion: tls.VersionTLS12} // api.ConfigureTLS fills it in
	hc := &http.Client{
		Transport: tr,
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return errRedirect
		},
	}
	if err := api.ConfigureTLS(hc, &api.TLSConfig{}); err != nil {
		return nil, fmt.Errorf("nomad: configuring TLS for %s: %w", cfg.Addr, err)
	}
	c, err := api.NewClient(&api.Config{
		Address:    cfg.Addr,
		Region:     cfg.Region,
		Namespace:  cfg.Namespace,
		SecretID:   cfg.Token,
		HttpClient: hc,
	})
	if err != nil {
		return nil, fmt.Errorf("nomad: client for %s: %w", cfg.Addr, err)
	}
	return c, nil
}

// errRedirect ends a request that was answered with a redirect.
var errRedirect = errors.New("the server answered with a redirect, which is not followed; give the agent's own address")

// checkAddr accepts only absolute http(s) URLs without credentials: a
// tenant-supplied unix:// socket would reach the control plane's own host,
// and a password in the URL would bypass the secret store.
func checkAddr(addr string) error {
	if addr == "" {
		return errors.New("addr is empty")
	}
	u, err := url.Parse(addr)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") {
		return fmt.Errorf("addr %q: want an http:// or https:// URL", addr)
	}
	if u.Host == "" {
		return fmt.Errorf("addr %q has no host", addr)
	}
	if u.User != nil {
		return fmt.Errorf("addr %s must not carry credentials; put the token in authSecret", u.Redacted())
	}
	return nil
}

// Result is the answer of POST /runtimes/probe.
type Result = probe.Result

// Option adjusts a probe.
type Option = probe.Option

// WithTimeout replaces the ProbeTimeout cap (tests use a short one).
func WithTimeout(d time.Duration) Option { return probe.WithTimeout(d) }

// Probe reports whether the Nomad cluster in cfg answers: it asks
// /v1/status/leader (is there a leader to schedule jobs) and then
// /v1/agent/self (which Nomad version). It never returns an error: every
// failure is a Result with Reachable false and the reason in Detail. It
// gives up at the earlier of ctx's deadline and the cap.
//
// A leader but a refused /v1/agent/self (a token without agent:read is
// common for job submitters) is still reachable; Detail says why the
// version is unknown.
func Probe(ctx context.Context, cfg ProbeConfig, opts ...Option) Result {
	ctx, cancel, limit := probe.Limit(ctx, opts...)
	defer cancel()

	res := Result{Kind: Kind}
	c, err := NewClient(cfg)
	if err != nil {
		res.Detail = probe.Clean(err.Error(), cfg.Token)
		return res
	}
	defer c.Close()

	// Status().Leader() and Agent().Self() take no options and so no
	// context; the same endpoints through Raw carry ctx, which is what
	// lets the cap cut a hanging agent off.
	q := (&api.QueryOptions{}).WithContext(ctx)
	var leader string
	if _, err := c.Raw().Query("/v1/status/leader", &leader, q); err != nil {
		res.Detail = probe.Clean("asking "+cfg.Addr+" for the leader: "+reason(ctx, limit, "/v1/status/leader", err), cfg.Token)
		return res
	}
	if leader == "" {
		res.Detail = probe.Clean(fmt.Sprintf("%s answered but the cluster has no leader", cfg.Addr), cfg.Token)
		return res
	}
	// The leader is shown only in the form a Nomad agent gives it, an
	// IP:port, so the probe cannot read other strings back.
	if _, err := netip.ParseAddrPort(leader); err != nil {
		res.Detail = probe.Clean(fmt.Sprintf("%s answered /v1/status/leader with something that is not a Nomad leader address; is addr the Nomad agent's HTTP address?", cfg.Addr), cfg.Token)
		return res
	}
	res.Reachable = true

	var self api.AgentSelf
	if _, err := c.Raw().Query("/v1/agent/self", &self, q); err != nil {
		res.Detail = probe.Clean(fmt.Sprintf("leader %s, nomad version unknown (%s)", leader, reason(ctx, limit, "/v1/agent/self", err)), cfg.Token)
		return res
	}
	res.Detail = probe.Clean(fmt.Sprintf("leader %s, nomad %s", leader, agentVersion(&self)), cfg.Token)
	return res
}

// versionRE is what a Nomad version looks like (1.9.3, 1.10.0-beta.1,
// 1.9.3+ent); anything else is not shown.
var versionRE = regexp.MustCompile(`^v?[0-9]{1,4}\.[0-9]{1,4}\.[0-9]{1,4}(-[0-9A-Za-z.]{1,32})?(\+[0-9A-Za-z.]{1,32})?$`)

// agentVersion reads the version the way `nomad version` prints it
// (1.9.3, 1.10.0-beta.1, 1.9.3+ent) from config.Version, falling back to
// the member's build tag, which older agents also set.
func agentVersion(self *api.AgentSelf) string {
	if v, ok := self.Config["Version"].(map[string]any); ok {
		s, _ := v["Version"].(string)
		if s != "" {
			if pre, _ := v["VersionPrerelease"].(string); pre != "" {
				s += "-" + pre
			}
			if meta, _ := v["VersionMetadata"].(string); meta != "" {
				s += "+" + meta
			}
			if versionRE.MatchString(s) {
				return s
			}
		}
	}
	if b := self.Member.Tags["build"]; versionRE.MatchString(b) {
		return b
	}
	return "version unknown"
}

// reason says in the service's own words why a request to path failed,
// naming the cap when it was the cap that ran out rather than the caller
// giving up. It says which status came back but never the body, since
// the target may be any internal service.
func reason(ctx context.Context, limit time.Duration, path string, err error) string {
	if why, ok := probe.GaveUp(ctx, limit); ok {
		return why
	}
	var status api.UnexpectedResponseError
	var syntax *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &status) && status.HasStatusCode():
		switch code := status.StatusCode(); {
		case code == http.StatusForbidden && path == "/v1/agent/self":
			return "HTTP 403: the token was refused or lacks agent:read"
		case code == http.StatusForbidden || code == http.StatusUnauthorized:
			return fmt.Sprintf("HTTP %d: the agent refused the token", code)
		case code == http.StatusInternalServerError && path == "/v1/status/leader":
			return "the server answered HTTP 500, as a Nomad agent does when the cluster has no leader"
		case code >= 300 && code < 400:
			return fmt.Sprintf("the server answered HTTP %d, a redirect, which is not followed; give the agent's own address", code)
		default:
			return probe.Status(code, "the Nomad agent's HTTP address")
		}
	case errors.Is(err, errRedirect):
		return errRedirect.Error()
	case errors.As(err, &syntax), errors.As(err, &typ):
		return "the server's answer is not Nomad's JSON; is addr the Nomad agent's HTTP address?"
	}
	return probe.Describe(err)
}
