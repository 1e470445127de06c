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
// relayed connection goes.

import (
	"errors"
	"fmt"
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

// ParseLoopback parses "127.0.0.1:8080" or "[::1]:8080", a TCP address on
// a loopback interface, into a socket address.
func ParseLoopback(addr string) (syscall.Sockaddr, error) {
	i := strings.LastIndexByte(addr, ':')
	if i < 0 {
		return nil, fmt.Errorf("address %q has no port", addr)
	}
	host, ps := addr[:i], addr[i+1:]
	port, err := strconv.Atoi(ps)
	if err != nil || port <= 0 || port > 65535 || ps[0] == '0' || ps[0] == '+' {
		return nil, fmt.Errorf("address %q has an invalid port", addr)
	}
	if host == "[::1]" {
		return &syscall.SockaddrInet6{Port: port, Addr: [16]byte{15: 1}}, nil
	}
	parts := strings.Split(host, ".")
	if len(parts) != 4 {
		return nil, fmt.Errorf("address %q is not a loopback address", addr)
	}
	var ip [4]byte
	for k, p := range parts {
		n, err := strconv.Atoi(p)
		if err != nil || n < 0 || n > 255 || p != strconv.Itoa(n) {
			return nil, fmt.Errorf("address %q is not a loopback address", addr)
		}
		ip[k] = byte(n)
	}
	if ip[0] != 127 {
		return nil, fmt.Errorf("address %q is not a loopback address", addr)
	}
	return &syscall.SockaddrInet4{Port: port, Addr: ip}, nil
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

// listenOn opens one listening socket at the loopback address addr.
func listenOn(addr string) (int, error) {
	sa, err := ParseLoopback(addr)
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
