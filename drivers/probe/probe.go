// Package probe holds what the runtime drivers' reachability probes share
// (POST /runtimes/probe): the result shape, the 10 s cap and its options,
// the address guard (SVC_PROBE_ALLOW) the nomad and k8s clients dial
// through, and the wording of failures.
//
// A probe's Detail is written in the service's own words: it may say which
// HTTP status came back, never what the server sent, so that the probe
// cannot be used to read an internal service's answers.
package probe

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"syscall"
	"time"

	"svc/internal/platform/netguard"
)

// Setting is the operator setting that allow-lists private probe targets.
const Setting = netguard.ProbeSetting

// NewGuard parses allow (SVC_PROBE_ALLOW) into the guard that runtime
// probes and the nomad and k8s clients dial through
// (netguard.NewProbeGuard).
func NewGuard(allow string) (*netguard.Guard, error) {
	return netguard.NewProbeGuard(allow)
}

// DefaultGuard is the guard with an empty allow list: no loopback,
// private, link-local or reserved address. Clients given no guard use it,
// so forgetting to pass one fails closed.
func DefaultGuard() *netguard.Guard {
	g, err := NewGuard("")
	if err != nil {
		panic(err) // an empty list always parses
	}
	return g
}

// Describe says in the service's own words why a request to a runtime
// failed before any HTTP answer: refused by the guard or by the secret's
// binding, DNS, connection, TLS. It never returns text a server sent; an
// error it does not recognise is "the request failed".
func Describe(err error) string {
	var refused *netguard.RefusedError
	var unbound *netguard.UnboundError
	var dnsErr *net.DNSError
	var unknownCA x509.UnknownAuthorityError
	var badHost x509.HostnameError
	var badCert x509.CertificateInvalidError
	var record tls.RecordHeaderError
	var alert tls.AlertError
	var netErr net.Error
	switch {
	case errors.As(err, &refused):
		if refused.Host != "" && refused.Host != refused.Addr.String() {
			return fmt.Sprintf("refused: %s resolves to %s, %s; an operator can allow it with %s", refused.Host, refused.Addr, refused.Kind, refused.Setting)
		}
		return fmt.Sprintf("refused: %s is %s; an operator can allow it with %s", refused.Addr, refused.Kind, refused.Setting)
	case errors.As(err, &unbound):
		return unbound.Error()
	case errors.As(err, &dnsErr):
		if dnsErr.IsNotFound {
			return fmt.Sprintf("host %q does not resolve", dnsErr.Name)
		}
		return fmt.Sprintf("looking up host %q failed", dnsErr.Name)
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection refused"
	case errors.Is(err, syscall.ECONNRESET):
		return "the connection was reset"
	case errors.Is(err, syscall.EHOSTUNREACH), errors.Is(err, syscall.ENETUNREACH):
		return "no route to the host"
	case errors.As(err, &unknownCA):
		return "TLS handshake failed: the server's certificate is signed by an unknown authority (x509); give its CA in the kubeconfig or use a publicly trusted certificate"
	case errors.As(err, &badHost):
		return "TLS handshake failed: the server's certificate is not valid for this host name"
	case errors.As(err, &badCert):
		return "TLS handshake failed: the server's certificate is invalid (expired, not yet valid, or not for serving)"
	case errors.As(err, &record):
		return "TLS handshake failed: the server does not speak TLS; is addr http:// rather than https://?"
	case errors.As(err, &alert):
		return "TLS handshake failed: the server refused the handshake"
	case errors.As(err, &netErr) && netErr.Timeout():
		return "timed out"
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return "the server closed the connection without a complete answer"
	}
	return "the request failed without an answer (an https:// address served by a plain-HTTP server fails this way)"
}

// Status says in the service's own words that a server answered HTTP
// code where an answer of kind was expected ("the Nomad agent's HTTP
// address"); the body is never read into it.
func Status(code int, expected string) string {
	return fmt.Sprintf("the server answered HTTP %d; is it %s?", code, expected)
}

// Timeout is the cap on one probe (spec §8: runtime probe 10 s).
const Timeout = 10 * time.Second

// Result is the answer of POST /runtimes/probe.
type Result struct {
	Kind      string `json:"kind"`
	Reachable bool   `json:"reachable"`
	Detail    string `json:"detail"`
}

// Option adjusts a probe.
type Option func(*options)

type options struct {
	timeout time.Duration
}

// WithTimeout replaces the Timeout cap (tests use a short one).
func WithTimeout(d time.Duration) Option {
	return func(o *options) {
		if d > 0 {
			o.timeout = d
		}
	}
}

// Limit applies opts and returns the cap and a context bounded by it, plus
// the effective limit (the earlier of ctx's deadline and the cap) for
// telling the user how long the probe waited.
func Limit(ctx context.Context, opts ...Option) (context.Context, context.CancelFunc, time.Duration) {
	o := options{timeout: Timeout}
	for _, opt := range opts {
		opt(&o)
	}
	limit := o.timeout
	if dl, ok := ctx.Deadline(); ok {
		if d := time.Until(dl); d < limit {
			limit = d.Round(time.Millisecond)
		}
	}
	ctx, cancel := context.WithTimeout(ctx, o.timeout)
	return ctx, cancel, limit
}

// GaveUp says why a request ended when it was the probe's context, not the
// server, that ended it: the cap running out or the caller giving up.
func GaveUp(ctx context.Context, limit time.Duration) (string, bool) {
	switch {
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		return "no answer within " + limit.String(), true
	case errors.Is(ctx.Err(), context.Canceled):
		return "probe canceled", true
	}
	return "", false
}

// maxDetail bounds what a remote server can make us echo back.
const maxDetail = 512

// Clean keeps a Detail a short single line and scrubs the credentials, in
// case a server or proxy reflects one in an error body.
func Clean(s string, creds ...string) string {
	for _, v := range creds {
		if v != "" {
			s = strings.ReplaceAll(s, v, "[redacted]")
		}
	}
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > maxDetail {
		s = strings.ToValidUTF8(s[:maxDetail], "") + "..."
	}
	return s
}
