//go:build linux

package shim

// The shim's side of the isolated network (SVC_LOCAL_NETWORK=isolated):
// the driver starts the shim in a network namespace of its own, which
// slirp4netns connects to the outside with no way to the host's loopback.
// The only host loopback addresses jobs reach are the ones the driver
// names in Isolation.Listen (the API's, where jobs are told to send spans
// and model calls): the shim listens there, in its namespace, before any
// job starts, and hands the listening sockets to the driver, which
// accepts on them from the host's side and relays each connection to the
// same address on the host. Nothing in the namespace can choose where a
// relayed connection goes. The networks the service's address guard does
// not class as public (private, link-local with the cloud metadata
// service, carrier-grade NAT, ...) and the host's own addresses are
// refused by routes in the namespace (routes_linux.go); the Listen
// addresses among them are the namespace's own.

import (
	"errors"
	"fmt"
	"net/netip"
	"strconv"
	"strings"
	"syscall"
)

// MaxListen bounds Isolation.Listen: the descriptors travel in one
// message.
const MaxListen = 16

// ListenFD is the descriptor on which a shim supervising one job sends
// its listening sockets (a job server sends them with its Ready event).
const ListenFD = 5

// ParseListen parses "127.0.0.1:8080", "[::1]:8080" or "10.1.2.3:8000",
// an address and port to listen at in the jobs' namespace, into a socket
// address. The address is a unicast one written in its canonical form
// (no zone, no IPv4-mapped form); the port is 1-65535, without leading
// zeros.
func ParseListen(addr string) (syscall.Sockaddr, error) {
	ap, err := netip.ParseAddrPort(addr)
	if err != nil {
		return nil, fmt.Errorf("address %q is not an IP address and port", addr)
	}
	a := ap.Addr()
	if ap.String() != addr {
		return nil, fmt.Errorf("address %q is not written as %s", addr, ap)
	}
	if ap.Port() == 0 {
		return nil, fmt.Errorf("address %q has an invalid port", addr)
	}
	if a.Is4In6() || a.Zone() != "" || a.IsUnspecified() || a.IsMulticast() {
		return nil, fmt.Errorf("address %q is not a unicast address to listen at", addr)
	}
	if a.Is4() {
		return &syscall.SockaddrInet4{Port: int(ap.Port()), Addr: a.As4()}, nil
	}
	return &syscall.SockaddrInet6{Port: int(ap.Port()), Addr: a.As16()}, nil
}

// listenAll opens a listening TCP socket at each address, in this
// process's network namespace: the sockets the driver relays from (an
// IPv6 address is skipped where the kernel has no IPv6). On an error none
// is left open.
func listenAll(addrs []string) ([]int, error) {
	if len(addrs) > MaxListen {
		return nil, fmt.Errorf("%d addresses to listen on, at most %d", len(addrs), MaxListen)
	}
	var fds []int
	for _, a := range addrs {
		fd, err := listenOn(a)
		if strings.HasPrefix(a, "[") && (errors.Is(err, syscall.EAFNOSUPPORT) || errors.Is(err, syscall.EADDRNOTAVAIL)) {
			// A kernel without IPv6: jobs reach the address over IPv4.
			continue
		}
		if err != nil {
			closeFDs(fds)
			return nil, fmt.Errorf("listening on %s in the jobs' network namespace: %w", a, err)
		}
		fds = append(fds, fd)
	}
	return fds, nil
}

// listenOn opens one listening socket at addr (see ParseListen).
func listenOn(addr string) (int, error) {
	sa, err := ParseListen(addr)
	if err != nil {
		return -1, err
	}
	family := syscall.AF_INET
	if _, ok := sa.(*syscall.SockaddrInet6); ok {
		family = syscall.AF_INET6
	}
	fd, err := syscall.Socket(family, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return -1, err
	}
	if family == syscall.AF_INET6 {
		_ = syscall.SetsockoptInt(fd, syscall.IPPROTO_IPV6, syscall.IPV6_V6ONLY, 1)
	}
	if err := syscall.Bind(fd, sa); err != nil {
		_ = syscall.Close(fd)
		return -1, err
	}
	if err := syscall.Listen(fd, syscall.SOMAXCONN); err != nil {
		_ = syscall.Close(fd)
		return -1, err
	}
	return fd, nil
}

// sendListeners sends fds (possibly none) on the socket sock as one
// message, "listening N".
func sendListeners(sock int, fds []int) error {
	var oob []byte
	if len(fds) > 0 {
		oob = syscall.UnixRights(fds...)
	}
	for {
		err := syscall.Sendmsg(sock, []byte("listening "+strconv.Itoa(len(fds))), oob, nil, syscall.MSG_NOSIGNAL)
		if err != syscall.EINTR {
			return err
		}
	}
}

// bindResolvConf mounts the file path over /etc/resolv.conf, read-only:
// the jobs' resolver, when the host's names a loopback server that the
// namespace cannot reach.
func bindResolvConf(path string) error {
	const target = "/etc/resolv.conf"
	if err := syscall.Mount(path, target, "", syscall.MS_BIND, ""); err != nil {
		if errors.Is(err, syscall.ENOENT) {
			return nil // no resolver configured on the host either
		}
		return fmt.Errorf("mounting the jobs' %s: %w", target, err)
	}
	if err := syscall.Mount("", target, "", syscall.MS_REMOUNT|syscall.MS_BIND|syscall.MS_RDONLY|syscall.MS_NOSUID|syscall.MS_NODEV, ""); err != nil {
		return fmt.Errorf("making the jobs' %s read-only: %w", target, err)
	}
	return nil
}
