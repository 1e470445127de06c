package local

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"time"

	"svc/internal/platform/netguard"
)

// SlirpName is the program that gives the isolated network its way out
// (Debian's and most distributions' package of the same name).
const SlirpName = "slirp4netns"

// Network is the isolated network (SVC_LOCAL_NETWORK=isolated): jobs in
// a network namespace of their own (one per job server, shared by its
// jobs; one per job under a supervisor per job) that slirp4netns connects
// to the outside with no way to the host's loopback, so that a job cannot
// reach the service's own listeners there (Temporal's frontend, the
// PostgreSQL of the host, pprof, other local services). Of the rest, the
// networks the service's address guard does not class as public (the
// private ranges, carrier-grade NAT, link-local with the cloud metadata
// service; netguard.NotPublic4) and the host's own addresses are refused
// by routes in the namespace, but for Reach. The addresses in Forward are
// the exception: the API's, which jobs are told to send their spans and
// model calls to, and the services the operator allowed one by one.
type Network struct {
	// Slirp is the slirp4netns program (see FindSlirp).
	Slirp string
	// Forward are addresses ("127.0.0.1:8080", "localhost:8080",
	// "[::1]:8080", "10.1.2.3:8000") that jobs reach at the same address
	// inside their namespace: the driver relays each connection there to
	// the address on the host, and to nothing else. Each is on the host's
	// loopback, in a network jobs may not reach, or one of the host's own
	// (see Forwards).
	Forward []string
	// Reach are IPv4 networks jobs reach, every port, though the address
	// guard does not class them as public or they hold the host's own
	// addresses (SVC_LOCAL_NETWORK_ALLOW's CIDRs): routed through
	// slirp4netns like the outside.
	Reach []netip.Prefix
}

// slirpNet is slirp4netns's network inside the jobs' namespace: its
// gateway (10.0.2.2), resolver (10.0.2.3) and the namespace's own address
// (10.0.2.100). An address of it is never one of the outside.
var slirpNet = netip.MustParsePrefix("10.0.2.0/24")

// FindSlirp returns the slirp4netns program on PATH, or "" when there is
// none.
func FindSlirp() string {
	p, err := exec.LookPath(SlirpName)
	if err != nil {
		return ""
	}
	return p
}

// Forwards returns, for Network.Forward, the address of each of targets
// (URLs such as http://127.0.0.1:8080/judge-proxy/v1, or host:port) that
// jobs in the isolated network do not reach through its way out: an IP
// literal or a name (localhost, a name of /etc/hosts or of DNS) with an
// address on the host's loopback, in a network the address guard does not
// class as public (netguard.NotPublic4), among the host's own addresses,
// or, written as an IPv6 literal, any IPv6 address (the way out has no
// IPv6). The others are reached through the way out, like any host; so is
// a name that does not resolve now. Empty targets are skipped; duplicates
// are dropped.
func Forwards(ctx context.Context, targets ...string) ([]string, error) {
	var out []string
	var own []netip.Addr
	ownDone := false
	for _, t := range targets {
		t = strings.TrimSpace(t)
		if t == "" {
			continue
		}
		host, port, err := targetHostPort(t)
		if err != nil {
			return nil, err
		}
		addrs, err := hostAddrsOf(ctx, host)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", t, err)
		}
		if !ownDone {
			own, ownDone = HostAddrs(), true
		}
		if !slices.ContainsFunc(addrs, func(a netip.Addr) bool { return !outside(a, own) }) {
			continue
		}
		if a := net.JoinHostPort(host, port); !slices.Contains(out, a) {
			out = append(out, a)
		}
	}
	return out, nil
}

// hostAddrsOf returns the addresses of host: an IP literal's own,
// localhost's loopback ones, a name's as it resolves now (none when it
// does not: jobs resolve it themselves, outside).
func hostAddrsOf(ctx context.Context, host string) ([]netip.Addr, error) {
	if a, err := netip.ParseAddr(host); err == nil {
		return []netip.Addr{a.WithZone("")}, nil
	}
	if strings.EqualFold(host, "localhost") {
		return []netip.Addr{netip.MustParseAddr("127.0.0.1"), netip.IPv6Loopback()}, nil
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	addrs, err := net.DefaultResolver.LookupNetIP(ctx, "ip", host)
	if err != nil {
		return nil, nil
	}
	return addrs, nil
}

// outside reports whether jobs reach a through the isolated network's
// way out: a public IPv4 address that is not one of the host's own (own).
func outside(a netip.Addr, own []netip.Addr) bool {
	a = a.Unmap()
	if !a.Is4() {
		return false
	}
	for _, p := range netguard.NotPublic4() {
		if p.Contains(a) {
			return false
		}
	}
	return !slices.Contains(own, a)
}

// HostAddrs returns the host's own addresses, every interface's but the
// loopback's (IPv4 unmapped).
func HostAddrs() []netip.Addr {
	ifAddrs, err := net.InterfaceAddrs()
	if err != nil {
		return nil
	}
	var out []netip.Addr
	for _, ia := range ifAddrs {
		ipn, ok := ia.(*net.IPNet)
		if !ok {
			continue
		}
		a, ok := netip.AddrFromSlice(ipn.IP)
		if a = a.Unmap(); ok && !a.IsLoopback() && !slices.Contains(out, a) {
			out = append(out, a)
		}
	}
	return out
}

// ParseAllow parses SVC_LOCAL_NETWORK_ALLOW, comma-separated: what jobs
// in the isolated network reach besides the API. host:port (a loopback
// service such as 127.0.0.1:11434, or a private one such as
// 10.1.2.3:8000) is forwarded, that port only (fwd); an IPv4 address or
// network (10.1.2.3, 10.1.0.0/16) is routed to, every port (reach). An
// address jobs reach without the setting (a public one), IPv6 networks
// (the way out has none: name an IPv6 service with its port), a loopback
// address or network without a port and slirp4netns's own network
// (10.0.2.0/24) are refused, saying so. A network that holds the loopback
// (0.0.0.0/0) is accepted: the host's loopback is reached by port only.
func ParseAllow(ctx context.Context, list string) (fwd []string, reach []netip.Prefix, err error) {
	for _, e := range strings.Split(list, ",") {
		e = strings.TrimSpace(e)
		if e == "" {
			continue
		}
		p, isNet, err := allowNet(e)
		if err != nil {
			return nil, nil, err
		}
		if isNet {
			if !slices.Contains(reach, p) {
				reach = append(reach, p)
			}
			continue
		}
		got, err := Forwards(ctx, e)
		if err != nil {
			return nil, nil, err
		}
		if len(got) == 0 {
			return nil, nil, fmt.Errorf("%s is a public address (or a name that does not resolve here): jobs reach the outside without it", e)
		}
		if !slices.Contains(fwd, got[0]) {
			fwd = append(fwd, got[0])
		}
	}
	return fwd, reach, nil
}

// allowNet parses an allow entry that is an IP address or a network; ok
// is false for any other (host:port).
func allowNet(e string) (p netip.Prefix, ok bool, err error) {
	if strings.Contains(e, "/") {
		if p, err = netip.ParsePrefix(e); err != nil {
			return p, false, fmt.Errorf("%q is not a network (10.1.0.0/16)", e)
		}
	} else if a, perr := netip.ParseAddr(strings.Trim(e, "[]")); perr == nil {
		p = netip.PrefixFrom(a.WithZone("").Unmap(), a.Unmap().BitLen())
	} else {
		return p, false, nil
	}
	p = p.Masked()
	switch {
	case !p.Addr().Is4():
		return p, false, fmt.Errorf("%s: the isolated network has no IPv6 way out; name an IPv6 service with its port ([fd00::5]:8000) to have it relayed", e)
	case p.Bits() >= 8 && netip.MustParsePrefix("127.0.0.0/8").Contains(p.Addr()):
		return p, false, fmt.Errorf("%s: name each loopback service with its port (127.0.0.1:11434)", e)
	case p.Bits() >= slirpNet.Bits() && slirpNet.Contains(p.Addr()):
		return p, false, fmt.Errorf("%s: 10.0.2.0/24 is slirp4netns's own network in the jobs' namespace, where no outside address is reached; name the service with its port to have it relayed", e)
	}
	return p, true, nil
}

// targetHostPort returns the host and port of a URL (the scheme's port
// when it names none) or of host:port.
func targetHostPort(t string) (host, port string, err error) {
	if strings.Contains(t, "://") {
		u, err := url.Parse(t)
		if err != nil || u.Host == "" {
			return "", "", fmt.Errorf("%q is not a URL with a host", t)
		}
		host, port = u.Hostname(), u.Port()
		if port == "" {
			switch u.Scheme {
			case "http":
				port = "80"
			case "https":
				port = "443"
			default:
				return "", "", fmt.Errorf("%q names no port", t)
			}
		}
		return host, port, nil
	}
	host, port, err = net.SplitHostPort(t)
	if err != nil {
		return "", "", fmt.Errorf("%q is not host:port", t)
	}
	if n, err := strconv.Atoi(port); err != nil || n <= 0 || n > 65535 {
		return "", "", fmt.Errorf("%q has an invalid port", t)
	}
	return host, port, nil
}
