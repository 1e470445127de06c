// Package netguard keeps the service's outgoing calls to tenant-supplied
// addresses (webhook deliveries, runtime probes and the nomad and k8s
// clients) out of the service's own network, and decides which hosts a
// workspace secret may be sent to (HostList).
//
// A Guard refuses loopback, private, link-local (cloud metadata), multicast
// and reserved addresses unless an operator allow-lists them, both when a
// URL is checked and again at connect time, so a name that re-resolves
// to an internal address (DNS rebinding) is refused too. An IPv6 address
// that carries an IPv4 address (IPv4-mapped, -compatible or -translated,
// NAT64, 6to4, Teredo) is judged by the IPv4 address it carries.
package netguard

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"syscall"
	"time"

	"svc/internal/platform/derrors"
)

// Resolver looks up a host's addresses; *net.Resolver satisfies it, and tests
// inject a fake so no real DNS is needed.
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// Guard decides whether the service may call a URL. It refuses addresses
// inside the service's own network unless its allow list (an operator
// setting such as SVC_WEBHOOK_ALLOW) names the host or the address. A Guard
// is safe for concurrent use once built.
type Guard struct {
	// Resolver resolves host names in CheckURL; nil means net.DefaultResolver.
	// Set it before the Guard is shared.
	Resolver Resolver

	names    Names
	prefixes []prefixRule
	hosts    []hostRule // name rules only: a host by exact name or, with wildcard, any of its subdomains
}

// Names are the words a Guard's errors use, so that each caller's
// refusals name its own field and setting.
type Names struct {
	// Setting is the operator setting holding the allow list: SVC_WEBHOOK_ALLOW.
	Setting string
	// Field names the URL in CheckURL's errors: "webhookUrl".
	Field string
	// Target names what is dialled in dial-time errors: "webhook".
	Target string
	// UserinfoHint follows the refusal of user:password@ in a URL: where
	// credentials go instead.
	UserinfoHint string
}

// prefixRule allows addresses in prefix, on port (0 = any port).
type prefixRule struct {
	prefix netip.Prefix
	port   int
}

// New parses allow (the setting n.Setting): comma-separated CIDRs
// ("10.0.0.0/8"), IP addresses, host names ("hooks.internal"), suffix
// wildcards ("*.internal.example", subdomains only) and any of the last three
// with a port ("hooks.internal:8443", "[::1]:9000"). An empty list allows no
// private address. A bad entry is an error that names it.
func New(allow string, n Names) (*Guard, error) {
	g := &Guard{names: n}
	for _, entry := range strings.Split(allow, ",") {
		entry = strings.TrimSpace(entry)
		if entry == "" {
			continue // tolerate "a,,b" and trailing commas from shell-built lists
		}
		if err := g.addEntry(entry); err != nil {
			return nil, derrors.Invalidf("%s entry %q: %v; use a CIDR (10.0.0.0/8), an IP, a host name, *.suffix, or any of those but a CIDR with :port", n.Setting, entry, err)
		}
	}
	return g, nil
}

func (g *Guard) addEntry(entry string) error {
	if strings.Contains(entry, "/") {
		p, err := netip.ParsePrefix(entry)
		if err != nil {
			return errors.New("not a valid CIDR")
		}
		g.prefixes = append(g.prefixes, prefixRule{prefix: p.Masked()})
		return nil
	}
	if a, err := netip.ParseAddr(strings.TrimSuffix(strings.TrimPrefix(entry, "["), "]")); err == nil {
		g.prefixes = append(g.prefixes, prefixRule{prefix: hostPrefix(a)})
		return nil
	}
	// The rest is written as a secret's allowedHosts entry is (hosts.go).
	r, err := parseHostRule(entry)
	if err != nil {
		return err
	}
	if r.addr.IsValid() {
		g.prefixes = append(g.prefixes, prefixRule{prefix: hostPrefix(r.addr), port: r.port})
		return nil
	}
	g.hosts = append(g.hosts, r)
	return nil
}

// hostPrefix is the single-address prefix of a, without zone so that it can
// match; IPv4-mapped IPv6 is unmapped to match how addresses are checked.
func hostPrefix(a netip.Addr) netip.Prefix {
	a = a.WithZone("").Unmap()
	return netip.PrefixFrom(a, a.BitLen())
}

func parsePort(p string) (int, error) {
	n, err := strconv.Atoi(p)
	if err != nil || n < 1 || n > 65535 {
		return 0, fmt.Errorf("port %q is not 1-65535", p)
	}
	return n, nil
}

// normalizeHost folds case and drops the root dot, since "Hooks.Internal." and
// "hooks.internal" are the same DNS name.
func normalizeHost(h string) string {
	return strings.TrimSuffix(strings.ToLower(h), ".")
}

// validHostName accepts DNS labels of letters, digits, '-' and '_' (some
// internal names use '_'), not starting or ending with '-'; it rejects stray
// '*' and empty labels.
func validHostName(h string) bool {
	if h == "" || len(h) > 253 {
		return false
	}
	for _, label := range strings.Split(h, ".") {
		if label == "" || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return false
		}
		for _, r := range label {
			if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-' || r == '_') {
				return false
			}
		}
	}
	return true
}

// hostAllowed reports whether a name rule permits host (already normalized) on port.
func (g *Guard) hostAllowed(host string, port int) bool {
	for _, r := range g.hosts {
		if r.matches(host, netip.Addr{}, port) {
			return true
		}
	}
	return false
}

// addrAllowed reports whether a prefix rule permits a on port. The address,
// its unmapped IPv4 form and, for an IPv6 form that carries one IPv4
// address (NAT64, 6to4, IPv4-compatible or -translated), that IPv4 address
// are tried, so "::ffff:10.0.0.1", "64:ff9b::10.0.0.1" and "10.0.0.1" are
// one address to the allow list, as classify judges them as one. A Teredo
// address carries two and is allowed only as written.
func (g *Guard) addrAllowed(a netip.Addr, port int) bool {
	a = a.WithZone("")
	forms := []netip.Addr{a, a.Unmap()}
	if e, ok := embeddedIPv4(a); ok && !e.teredo {
		forms = append(forms, e.addrs[0])
	}
	for _, r := range g.prefixes {
		if r.port != 0 && r.port != port {
			continue
		}
		for _, f := range forms {
			if r.prefix.Contains(f) {
				return true
			}
		}
	}
	return false
}

// blockedRanges are the networks a guarded call may not reach by default: the
// service's own host and networks, and ranges no public endpoint lives in.
// IsLoopback/IsPrivate and friends cover most; these add what they lack.
var blockedRanges = []struct {
	prefix netip.Prefix
	kind   string
}{
	{netip.MustParsePrefix("0.0.0.0/8"), "an unspecified (this-network) address"},
	{netip.MustParsePrefix("100.64.0.0/10"), "a carrier-grade NAT (shared) address"},
	{netip.MustParsePrefix("192.0.0.0/24"), "an IETF protocol (reserved) address"},
	{netip.MustParsePrefix("198.18.0.0/15"), "a benchmarking (reserved) address"},
	{netip.MustParsePrefix("240.0.0.0/4"), "a reserved or broadcast address"},
	{netip.MustParsePrefix("fec0::/10"), "a site-local (private) address"},
	// What is left of ::/8 once the forms embedding an IPv4 address are
	// read (embeddedIPv4): no public host lives there, and 64:ff9b:1::/48
	// (local-use NAT64, RFC 8215) is in it, whose IPv4 address sits where
	// the operator's prefix length puts it, so it cannot be located.
	{netip.MustParsePrefix("64:ff9b:1::/48"), "a local-use NAT64 address (its embedded IPv4 address cannot be located)"},
	{netip.MustParsePrefix("::/8"), "a reserved IPv6 address"},
}

// IPv6 forms that carry an IPv4 address (RFC 4291 §2.5.5, RFC 6052,
// RFC 3056, RFC 4380, RFC 2765). A connection to one reaches, or is
// routed through, the IPv4 address it carries: a NAT64 gateway translates
// 64:ff9b::7f00:1 to 127.0.0.1, a 6to4 relay tunnels 2002:0a00:1:: to
// 10.0.0.1, and a host with the deprecated IPv4-compatible form configured
// reaches ::127.0.0.1 on its own loopback.
var (
	mappedPrefix     = netip.MustParsePrefix("::ffff:0:0/96")
	translatedPrefix = netip.MustParsePrefix("::ffff:0:0:0/96")
	compatPrefix     = netip.MustParsePrefix("::/96")
	nat64Prefix      = netip.MustParsePrefix("64:ff9b::/96")
	sixToFourPrefix  = netip.MustParsePrefix("2002::/16")
	teredoPrefix     = netip.MustParsePrefix("2001::/32")
)

// embedded is the IPv4 content of an IPv6 address: its form ("NAT64") and
// the IPv4 addresses it carries (a Teredo address: server, then client).
type embedded struct {
	form   string
	addrs  []netip.Addr
	teredo bool
}

// embeddedIPv4 returns the IPv4 addresses a carries, when a is one of the
// IPv6 forms above. :: and ::1 are themselves (unspecified, loopback), not
// IPv4-compatible forms of 0.0.0.0 and 0.0.0.1.
func embeddedIPv4(a netip.Addr) (embedded, bool) {
	if !a.Is6() || a.IsUnspecified() || a.IsLoopback() {
		return embedded{}, false
	}
	b := a.As16()
	v4 := func(i int) netip.Addr { return netip.AddrFrom4([4]byte{b[i], b[i+1], b[i+2], b[i+3]}) }
	switch {
	case mappedPrefix.Contains(a):
		return embedded{form: "IPv4-mapped", addrs: []netip.Addr{v4(12)}}, true
	case translatedPrefix.Contains(a):
		return embedded{form: "IPv4-translated", addrs: []netip.Addr{v4(12)}}, true
	case compatPrefix.Contains(a):
		return embedded{form: "IPv4-compatible", addrs: []netip.Addr{v4(12)}}, true
	case nat64Prefix.Contains(a):
		return embedded{form: "NAT64", addrs: []netip.Addr{v4(12)}}, true
	case sixToFourPrefix.Contains(a):
		return embedded{form: "6to4", addrs: []netip.Addr{v4(2)}}, true
	case teredoPrefix.Contains(a):
		// The server is bits 32-63; the client is the last 32 bits, inverted.
		client := netip.AddrFrom4([4]byte{^b[12], ^b[13], ^b[14], ^b[15]})
		return embedded{form: "Teredo", addrs: []netip.Addr{v4(4), client}, teredo: true}, true
	}
	return embedded{}, false
}

// classify names why a is refused, or returns "" when a is public. An IPv6
// form that carries an IPv4 address is judged by that address (each of
// them, for Teredo's server and client), since connecting to
// ::ffff:127.0.0.1 reaches 127.0.0.1 and 64:ff9b::a00:1 reaches 10.0.0.1
// through a NAT64 gateway.
func classify(a netip.Addr) string {
	a = a.WithZone("")
	if e, ok := embeddedIPv4(a); ok {
		for i, v4 := range e.addrs {
			if kind := classify4or6(v4); kind != "" {
				what := ""
				if e.teredo {
					what = []string{" server", " client"}[i]
				}
				if e.form == "IPv4-mapped" {
					return kind // reads as the IPv4 address's own refusal
				}
				return fmt.Sprintf("a %s address whose IPv4%s address %s is %s", e.form, what, v4, kind)
			}
		}
		return ""
	}
	return classify4or6(a)
}

// classify4or6 is classify for an address that carries no other.
func classify4or6(a netip.Addr) string {
	switch {
	case !a.IsValid():
		return "an invalid address"
	case a.IsLoopback():
		return "a loopback address"
	case a.IsUnspecified():
		return "an unspecified address"
	case a.IsPrivate():
		return "a private address"
	case a.IsLinkLocalUnicast():
		return "a link-local address (this includes cloud metadata endpoints)"
	case a.IsMulticast():
		return "a multicast address"
	}
	for _, r := range blockedRanges {
		if r.prefix.Contains(a) {
			return r.kind
		}
	}
	return ""
}

// RefusedError is the refusal of an address inside the service's network.
// It wraps derrors.ErrInvalid; callers that word refusals their own way
// (the runtime probe) read its fields.
type RefusedError struct {
	// What leads the message: `webhookUrl host "x" resolves to`.
	What string
	// Host is the host name that led to Addr; "" for an IP literal.
	Host string
	// Addr is the refused address.
	Addr netip.Addr
	// Kind says what Addr is: "a loopback address".
	Kind string
	// Setting is the operator setting that can allow it.
	Setting string
}

// Error says what was refused and how to permit it.
func (e *RefusedError) Error() string {
	return fmt.Sprintf("%s %s, %s; the service refuses to call its own network (set %s to permit it)", e.What, e.Addr, e.Kind, e.Setting)
}

// Unwrap makes errors.Is(err, derrors.ErrInvalid) hold.
func (e *RefusedError) Unwrap() error { return derrors.ErrInvalid }

// refusal is the error for a refused address; it says how to permit it.
func (g *Guard) refusal(what, host string, a netip.Addr, kind string) error {
	return &RefusedError{What: what, Host: host, Addr: a, Kind: kind, Setting: g.names.Setting}
}

// CheckURL validates a URL before it is accepted: http or https, a
// host, no userinfo, and no resolved address inside the service's network
// unless the allow list permits the host or the address. Errors wrap
// derrors.ErrInvalid, except a DNS failure other than "no such host", which
// wraps derrors.ErrUnavailable because the caller is not at fault.
func (g *Guard) CheckURL(ctx context.Context, raw string) error {
	u, err := url.Parse(raw)
	if err != nil {
		return derrors.Invalidf("%s is not a valid URL: %v", g.names.Field, UnwrapURLError(err))
	}
	switch strings.ToLower(u.Scheme) {
	case "http", "https":
	default:
		return derrors.Invalidf("%s scheme %q is not allowed; use http or https", g.names.Field, u.Scheme)
	}
	if u.User != nil {
		return derrors.Invalidf("%s must not contain user:password@; %s", g.names.Field, g.names.UserinfoHint)
	}
	host := u.Hostname()
	if host == "" {
		return derrors.Invalidf("%s has no host; give an absolute URL such as https://example.com/hook", g.names.Field)
	}
	port, err := g.urlPort(u)
	if err != nil {
		return err
	}

	if a, err := netip.ParseAddr(host); err == nil {
		if kind := classify(a); kind != "" && !g.addrAllowed(a, port) {
			return g.refusal(g.names.Field+" address is", "", a, kind)
		}
		return nil
	}
	host = normalizeHost(host)
	if g.hostAllowed(host, port) {
		return nil // an operator vouched for the name, whatever it resolves to
	}
	addrs, err := g.resolver().LookupNetIP(ctx, "ip", host)
	if err != nil {
		var dnsErr *net.DNSError
		if errors.As(err, &dnsErr) && dnsErr.IsNotFound {
			return derrors.Invalidf("%s host %q does not resolve; check the host name", g.names.Field, host)
		}
		if ctx.Err() != nil {
			return fmt.Errorf("%s host %q: %w", g.names.Field, host, ctx.Err())
		}
		return fmt.Errorf("%w: %s host %q could not be resolved now: %v", derrors.ErrUnavailable, g.names.Field, host, err)
	}
	if len(addrs) == 0 {
		return derrors.Invalidf("%s host %q has no addresses", g.names.Field, host)
	}
	for _, a := range addrs {
		if kind := classify(a); kind != "" && !g.addrAllowed(a, port) {
			return g.refusal(fmt.Sprintf("%s host %q resolves to", g.names.Field, host), host, a, kind)
		}
	}
	return nil
}

func (g *Guard) resolver() Resolver {
	if g.Resolver != nil {
		return g.Resolver
	}
	return net.DefaultResolver
}

// urlPort is the port a request to u dials.
func (g *Guard) urlPort(u *url.URL) (int, error) {
	n, err := URLPort(u)
	if err != nil {
		return 0, derrors.Invalidf("%s %v", g.names.Field, err)
	}
	return n, nil
}

// URLPort is the port a request to u dials: its explicit port, else 443
// for https and 80 otherwise.
func URLPort(u *url.URL) (int, error) {
	if p := u.Port(); p != "" {
		return parsePort(p)
	}
	if strings.EqualFold(u.Scheme, "https") {
		return 443, nil
	}
	return 80, nil
}

// UnwrapURLError drops url.Error's copy of the raw URL, which may hold a token.
func UnwrapURLError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

// DefaultClientTimeout bounds a whole request when Client is given no timeout,
// so a slow receiver cannot hold a worker forever.
const DefaultClientTimeout = 10 * time.Second

// Client returns an http.Client for guarded calls. Its dialer re-checks every
// address at connect time (net.Dialer.Control), so a name that resolved to a
// public address in CheckURL and to a private one at delivery (DNS rebinding)
// is refused; it follows no redirects, since a redirect is another URL nobody
// checked; and it ignores proxy settings from the environment, since a proxy
// would hide the real target from the dial-time check. timeout <= 0 means
// DefaultClientTimeout.
func (g *Guard) Client(timeout time.Duration) *http.Client {
	if timeout <= 0 {
		timeout = DefaultClientTimeout
	}
	return &http.Client{
		Transport: g.Transport(),
		Timeout:   timeout,
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		},
	}
}

// Transport returns an http.Transport that dials through DialContext and
// uses no proxy (a proxy would hide the real target from the dial-time
// check). Callers that need other transport settings (HTTP/1 only, TLS)
// change the copy they get.
func (g *Guard) Transport() *http.Transport {
	return &http.Transport{
		Proxy:                 nil,
		DialContext:           g.DialContext,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          100,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ExpectContinueTimeout: time.Second,
	}
}

// DialContext dials addr ("host:port" from the URL). A host the allow list
// names is dialled as is; any other host has each address it resolves to
// checked by Control just before connect, which is the only check DNS
// rebinding cannot slip past. A refused address is a *RefusedError.
func (g *Guard) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	host, portText, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, derrors.Invalidf("%s dial address %q: %v", g.names.Target, addr, err)
	}
	port, err := parsePort(portText)
	if err != nil {
		return nil, derrors.Invalidf("%s dial address %q: %v", g.names.Target, addr, err)
	}
	d := &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}
	if _, err := netip.ParseAddr(host); err != nil && g.hostAllowed(normalizeHost(host), port) {
		return d.DialContext(ctx, network, addr)
	}
	d.Control = func(_, address string, _ syscall.RawConn) error {
		return g.checkConnect(host, address)
	}
	return d.DialContext(ctx, network, addr)
}

// checkConnect is the connect-time check of address ("ip:port", what the
// dialer is about to connect to) for a dial of host.
func (g *Guard) checkConnect(host, address string) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return derrors.Invalidf("%s target %q is not an IP address and port", g.names.Target, address)
	}
	if kind := classify(ap.Addr()); kind != "" && !g.addrAllowed(ap.Addr(), int(ap.Port())) {
		return g.refusal(fmt.Sprintf("%s host %q connects to", g.names.Target, host), host, ap.Addr(), kind)
	}
	return nil
}
