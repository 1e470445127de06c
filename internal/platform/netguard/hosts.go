package netguard

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"strconv"
	"strings"

	"svc/internal/platform/derrors"
)

// A workspace secret's allowedHosts are the hosts an admin bound it to: a
// probe or a driver sends the secret only to a URL whose host one entry
// matches. The rules:
//
//   - "nomad.example.com" matches that host name on any port; names are
//     compared lower-cased and without a trailing dot, as DNS does.
//   - "nomad.example.com:4646" matches that name on port 4646 only; a URL
//     without a port is on 80 (http) or 443 (https).
//   - "*.corp.example" matches every subdomain of corp.example (not
//     corp.example itself), optionally with a port: "*.corp.example:6443".
//   - "10.0.0.5", "10.0.0.5:4646", "::1", "[::1]:9000" match that IP
//     address written as an IP in the URL (IPv4-mapped IPv6 is its IPv4
//     address); an IP entry never matches a name that resolves to it, nor
//     the reverse: binding is by what the runtime names, and which
//     addresses may be reached at all is the Guard's business.
//
// No CIDRs, schemes, paths or user info: an entry names one host or one
// DNS subtree.

// MaxAllowedHosts bounds the allowedHosts of one secret.
const MaxAllowedHosts = 64

// hostRule is one parsed allowedHosts entry.
type hostRule struct {
	addr     netip.Addr // valid for an IP entry
	name     string     // a host name; for a wildcard, the suffix with its leading dot
	wildcard bool
	port     int // 0 = any port
}

const hostsHint = "use a host name (nomad.example.com), an IP address (10.0.0.5, [::1]), either optionally with :port, or *.suffix for every subdomain of suffix"

// NormalizeHosts checks a secret's allowedHosts and returns them in their
// stored form: lower case, no trailing dot, IPs as Go prints them, with
// duplicates dropped and the order kept. nil and empty are an empty list. A
// bad entry is an ErrInvalid naming it and its index.
func NormalizeHosts(entries []string) ([]string, error) {
	if len(entries) > MaxAllowedHosts {
		return nil, derrors.Invalidf("allowedHosts has %d entries; the limit is %d (use *.suffix for a whole domain)", len(entries), MaxAllowedHosts)
	}
	out := make([]string, 0, len(entries))
	seen := map[string]bool{}
	for i, e := range entries {
		r, err := parseHostRule(e)
		if err != nil {
			return nil, derrors.Invalidf("allowedHosts[%d] %q: %v; %s", i, clipEntry(e), err, hostsHint)
		}
		s := r.String()
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out, nil
}

func clipEntry(s string) string {
	if len(s) > 80 {
		return strings.ToValidUTF8(s[:80], "") + "..."
	}
	return s
}

func parseHostRule(entry string) (hostRule, error) {
	e := strings.TrimSpace(entry)
	switch {
	case e == "":
		return hostRule{}, errors.New("empty")
	case strings.Contains(e, "://"):
		return hostRule{}, errors.New("a URL, not a host")
	case strings.ContainsAny(e, "/@?#"):
		return hostRule{}, errors.New("not a host (no CIDRs, paths or user@)")
	}
	if a, err := netip.ParseAddr(e); err == nil { // 10.0.0.5, ::1
		return ipRule(a, 0)
	}
	host, port := e, 0
	if strings.HasPrefix(e, "[") && strings.HasSuffix(e, "]") { // [::1]
		host = e[1 : len(e)-1]
	} else if strings.Contains(e, ":") {
		h, p, err := net.SplitHostPort(e)
		if err != nil {
			return hostRule{}, errors.New("not host or host:port")
		}
		if port, err = parsePort(p); err != nil {
			return hostRule{}, err
		}
		host = h
	}
	if a, err := netip.ParseAddr(host); err == nil {
		return ipRule(a, port)
	}
	if strings.Contains(host, ":") || strings.HasPrefix(e, "[") {
		return hostRule{}, errors.New("not a valid IPv6 address")
	}
	host = normalizeHost(host)
	r := hostRule{port: port}
	if strings.HasPrefix(host, "*.") {
		r.wildcard = true
		host = host[1:] // keep the dot so "evilcorp.example" cannot match "*.corp.example"
	}
	if !validHostName(strings.TrimPrefix(host, ".")) {
		return hostRule{}, errors.New("not a valid host name")
	}
	r.name = host
	return r, nil
}

func ipRule(a netip.Addr, port int) (hostRule, error) {
	if a.Zone() != "" {
		return hostRule{}, errors.New("an IPv6 zone is not allowed")
	}
	return hostRule{addr: a.Unmap(), port: port}, nil
}

// String is the entry's stored form.
func (r hostRule) String() string {
	var h string
	switch {
	case r.addr.IsValid():
		if r.port != 0 {
			return netip.AddrPortFrom(r.addr, uint16(r.port)).String()
		}
		return r.addr.String()
	case r.wildcard:
		h = "*" + r.name
	default:
		h = r.name
	}
	if r.port != 0 {
		h += ":" + strconv.Itoa(r.port)
	}
	return h
}

// matches reports whether r allows host (normalized, or an IP) on port.
func (r hostRule) matches(host string, addr netip.Addr, port int) bool {
	if r.port != 0 && r.port != port {
		return false
	}
	switch {
	case r.addr.IsValid():
		return addr.IsValid() && r.addr == addr
	case addr.IsValid():
		return false
	case r.wildcard:
		return strings.HasSuffix(host, r.name)
	}
	return host == r.name
}

// Target is the host and port a URL dials, as binding checks and their
// messages see it ("nomad.example.com:4646", "[::1]:9000").
type Target struct {
	Host string // lower case, no trailing dot, no brackets
	Port int
}

// String is host:port, or the host alone when the port is unknown.
func (t Target) String() string {
	if t.Port == 0 {
		return t.Host
	}
	return net.JoinHostPort(t.Host, strconv.Itoa(t.Port))
}

// URLTarget returns the Target of an absolute http(s) URL.
func URLTarget(raw string) (Target, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return Target{}, derrors.Invalidf("not a valid URL: %v", UnwrapURLError(err))
	}
	if u.Hostname() == "" {
		return Target{}, derrors.Invalidf("URL %s has no host", u.Redacted())
	}
	port, err := URLPort(u)
	if err != nil {
		return Target{}, derrors.Invalidf("URL %s: %v", u.Redacted(), err)
	}
	return Target{Host: normalizeHost(u.Hostname()), Port: port}, nil
}

// HostsAllow reports whether allowedHosts (as NormalizeHosts returns them)
// permit sending a secret to t. An entry that does not parse matches
// nothing.
func HostsAllow(allowedHosts []string, t Target) bool {
	addr, err := netip.ParseAddr(t.Host)
	if err == nil {
		addr = addr.WithZone("").Unmap()
	} else {
		addr = netip.Addr{}
	}
	for _, e := range allowedHosts {
		r, err := parseHostRule(e)
		if err == nil && r.matches(t.Host, addr, t.Port) {
			return true
		}
	}
	return false
}

// UnboundError is the refusal to send a credential to a host its secret is
// not bound to. It wraps derrors.ErrInvalid.
type UnboundError struct {
	// Secret names the secret when the caller knows it ("" in a driver,
	// which gets only the value); Field is the runtime field naming it
	// ("authSecret").
	Field, Secret string
	// Target is where the credential would have gone.
	Target Target
	// AllowedHosts are the secret's bound hosts.
	AllowedHosts []string
}

// Error names the secret and the host and says who can allow it.
func (e *UnboundError) Error() string {
	what := "the credential"
	if e.Secret != "" {
		what = fmt.Sprintf("%s %q", e.Field, e.Secret)
	}
	bound := "is bound to no host"
	if len(e.AllowedHosts) > 0 {
		bound = "is bound only to " + strings.Join(e.AllowedHosts, ", ")
	}
	fix := "an admin must add the host to the secret's allowedHosts"
	if e.Secret != "" {
		fix = fmt.Sprintf("an admin must add %s to the secret's allowedHosts (PUT /secrets/%s with the value and allowedHosts)", e.Target.Host, e.Secret)
	}
	return fmt.Sprintf("%s may not be sent to %s: it %s; %s", what, e.Target, bound, fix)
}

// Unwrap makes errors.Is(err, derrors.ErrInvalid) hold.
func (e *UnboundError) Unwrap() error { return derrors.ErrInvalid }

// CheckBound is nil when allowedHosts permit sending a credential to the
// URL raw, else an *UnboundError (or ErrInvalid when raw is not a URL).
func CheckBound(allowedHosts []string, raw string) error {
	t, err := URLTarget(raw)
	if err != nil {
		return err
	}
	if !HostsAllow(allowedHosts, t) {
		return &UnboundError{Target: t, AllowedHosts: allowedHosts}
	}
	return nil
}
