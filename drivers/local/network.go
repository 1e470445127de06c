package local

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"time"
)

// SlirpName is the program that gives the isolated network its way out
// (Debian's and most distributions' package of the same name).
const SlirpName = "slirp4netns"

// Network is the isolated network (SVC_LOCAL_NETWORK=isolated): jobs in
// a network namespace of their own (one per job server, shared by its
// jobs; one per job under a supervisor per job) that slirp4netns connects
// to the outside with no way to the host's loopback, so that a job cannot
// reach the service's own listeners there (Temporal's frontend, the
// PostgreSQL of the host, pprof, other local services). The addresses in
// Forward are the exception: the API's, which jobs are told to send their
// spans and model calls to.
type Network struct {
	// Slirp is the slirp4netns program (see FindSlirp).
	Slirp string
	// Forward are host loopback addresses ("127.0.0.1:8080",
	// "localhost:8080", "[::1]:8080") that jobs reach at the same address
	// inside their namespace: the driver relays each connection there to
	// the address on the host, and to nothing else.
	Forward []string
}

// FindSlirp returns the slirp4netns program on PATH, or "" when there is
// none.
func FindSlirp() string {
	p, err := exec.LookPath(SlirpName)
	if err != nil {
		return ""
	}
	return p
}

// LoopbackForwards returns, for Network.Forward, the address of each of
// targets (URLs such as http://127.0.0.1:8080/judge-proxy/v1, or
// host:port) that is on the host's loopback: an IP literal of it, or a
// name (localhost, a name of /etc/hosts) that resolves only to it. The
// others are reached through the isolated network's way out, like any
// host. Empty targets are skipped; duplicates are dropped.
func LoopbackForwards(ctx context.Context, targets ...string) ([]string, error) {
	var out []string
	for _, t := range targets {
		t = strings.TrimSpace(t)
		if t == "" {
			continue
		}
		host, port, err := targetHostPort(t)
		if err != nil {
			return nil, err
		}
		loop, err := onLoopback(ctx, host)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", t, err)
		}
		if !loop {
			continue
		}
		if a := net.JoinHostPort(host, port); !slices.Contains(out, a) {
			out = append(out, a)
		}
	}
	return out, nil
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

// onLoopback reports whether host is a loopback address, or a name whose
// every address is one.
func onLoopback(ctx context.Context, host string) (bool, error) {
	if ip := net.ParseIP(host); ip != nil {
		return ip.IsLoopback(), nil
	}
	if strings.EqualFold(host, "localhost") {
		return true, nil
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	addrs, err := net.DefaultResolver.LookupIPAddr(ctx, host)
	if err != nil || len(addrs) == 0 {
		// Not resolvable here now: jobs resolve it themselves, outside.
		return false, nil
	}
	for _, a := range addrs {
		if !a.IP.IsLoopback() {
			return false, nil
		}
	}
	return true, nil
}
