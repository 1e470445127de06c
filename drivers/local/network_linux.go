//go:build linux

package local

// The driver's side of the isolated network (Network; the shim's side is
// shim/network_linux.go). The shim, the job server or a job's supervisor,
// starts in a network namespace of its own (CLONE_NEWNET). Before it gets
// its configuration, the driver starts slirp4netns for it, once per
// namespace, with --disable-host-loopback: the namespace gets a tap device,
// a default route to the outside and a resolver (10.0.2.3), and the host's
// loopback stays out of reach (10.0.2.2, slirp's alias of it, refuses).
// The shim then adds the routes that refuse what jobs may not reach (the
// networks the address guard does not class as public and the host's own
// addresses, but Network.Reach), listens at the Forward addresses inside
// and hands the listening sockets to the driver, which accepts on them
// here, in the host's namespace, and relays each connection to the same
// address on the host: the only way from a job to a host loopback port,
// or to a service of a refused network that the operator allowed by port.

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"svc/drivers/local/shim"
	"svc/internal/platform/netguard"
)

// Bounds of the isolated network's set-up and relays.
const (
	// slirpReadyTimeout bounds slirp4netns's start.
	slirpReadyTimeout = 15 * time.Second
	// listenersTimeout bounds the wait for a job's supervisor to hand over
	// its listening sockets.
	listenersTimeout = 15 * time.Second
	// relayDialTimeout bounds a relayed connection's dial of the host
	// address.
	relayDialTimeout = 10 * time.Second
)

// netState is what a driver keeps of its isolated network: the plan of its
// forwards, the resolver file, and whether slirp4netns's sandbox works.
type netState struct {
	once    sync.Once
	err     error
	listen  []string                  // where shims listen, inside
	dial    map[netip.AddrPort]string // by where a shim listens: the host address relayed to
	resolv  string                    // the jobs' /etc/resolv.conf, or ""
	noSandx atomic.Bool               // slirp4netns's --enable-sandbox failed here
}

// netIsolated reports whether jobs get the isolated network.
func (d *Driver) netIsolated() bool {
	return d.isolate != nil && d.isolate.Network != nil && !d.isolate.NoNetwork
}

// network returns the driver's isolated network's plan, made once; nil
// when jobs do not get one.
func (d *Driver) network() (*netState, error) {
	if !d.netIsolated() {
		return nil, nil
	}
	n := &d.net
	n.once.Do(func() {
		n.listen, n.dial, n.err = planForwards(context.Background(), d.isolate.Network.Forward)
		if n.err == nil {
			refuse, _ := routePlan(d.isolate.Network.Reach, HostAddrs())
			reached := func(a netip.Addr) bool {
				return a.Is4() && !slices.ContainsFunc(refuse, func(p netip.Prefix) bool { return p.Contains(a) })
			}
			n.resolv, n.err = d.writeResolvConf(hostResolvConf, reached)
		}
	})
	return n, n.err
}

// planForwards returns where the shim listens for the forwarded addresses
// fwd ("host:port", host an IP or a name) and, by where it listens, the
// host address each relays to. A name listens at each address it
// resolves to (localhost: 127.0.0.1 and ::1). An address of slirp4netns's
// network inside the namespace, an unspecified or a multicast one, and one
// address and port for two forwards are refused.
func planForwards(ctx context.Context, fwd []string) (listen []string, dial map[netip.AddrPort]string, err error) {
	dial = map[netip.AddrPort]string{}
	for _, f := range fwd {
		host, ps, err := net.SplitHostPort(f)
		if err != nil {
			return nil, nil, fmt.Errorf("forwarded address %q: want host:port", f)
		}
		port, err := strconv.Atoi(ps)
		if err != nil || port <= 0 || port > 65535 {
			return nil, nil, fmt.Errorf("forwarded address %q: invalid port", f)
		}
		var ips []netip.Addr
		switch ip, perr := netip.ParseAddr(host); {
		case perr == nil:
			ips = []netip.Addr{ip}
		case strings.EqualFold(host, "localhost"):
			ips = []netip.Addr{netip.MustParseAddr("127.0.0.1"), netip.IPv6Loopback()}
		default:
			if ips, err = net.DefaultResolver.LookupNetIP(ctx, "ip", host); err != nil {
				return nil, nil, fmt.Errorf("forwarded address %q: %v", f, err)
			}
		}
		for _, ip := range ips {
			ip = ip.WithZone("").Unmap()
			switch {
			case ip.IsUnspecified() || ip.IsMulticast():
				return nil, nil, fmt.Errorf("forwarded address %q is not a unicast address (%s)", f, ip)
			case slirpNet.Contains(ip):
				return nil, nil, fmt.Errorf("forwarded address %q is in %s, slirp4netns's own network in the jobs' namespace (%s)", f, slirpNet, ip)
			}
			at := netip.AddrPortFrom(ip, uint16(port))
			if prev, ok := dial[at]; ok {
				if prev == f {
					continue
				}
				return nil, nil, fmt.Errorf("forwarded addresses %q and %q are both %s: jobs could not tell them apart", prev, f, at)
			}
			dial[at] = f
			listen = append(listen, at.String())
		}
	}
	if len(listen) > shim.MaxListen {
		return nil, nil, fmt.Errorf("%d forwarded addresses for jobs, at most %d", len(listen), shim.MaxListen)
	}
	return listen, dial, nil
}

// slirpGateway is slirp4netns's gateway in the namespace: the way out.
const slirpGateway = "10.0.2.2"

// slirpRefused is slirp4netns's network in the namespace but its gateway
// and resolver (10.0.2.2/31): every other address there is slirp's alias
// of the host's loopback, which --disable-host-loopback drops, so that a
// connection would wait for its timeout rather than fail. (The
// namespace's own 10.0.2.100 is a local address, which no route covers.)
var slirpRefused = []netip.Prefix{
	netip.MustParsePrefix("10.0.2.0/31"),
	netip.MustParsePrefix("10.0.2.4/30"),
	netip.MustParsePrefix("10.0.2.8/29"),
	netip.MustParsePrefix("10.0.2.16/28"),
	netip.MustParsePrefix("10.0.2.32/27"),
	netip.MustParsePrefix("10.0.2.64/26"),
	netip.MustParsePrefix("10.0.2.128/25"),
}

// routePlan returns the routes of a jobs' namespace: refuse, the IPv4
// networks jobs may not reach (a prohibit route each), and reach, the
// networks routed through the gateway though a refused one covers them.
// Refused are the networks the address guard does not class as public
// (but the loopback, the namespace's own) and each of the host's own IPv4
// addresses (own), unless a network of allow covers it; then the
// operator's allowing it is what counts, the host's addresses in it
// included. reach are the networks of allow inside a refused one (the
// others are routed already). slirp4netns's network but its gateway and
// resolver is refused whatever allow says. refuse holds no network that
// another of it covers.
func routePlan(allow []netip.Prefix, own []netip.Addr) (refuse, reach []netip.Prefix) {
	covers := func(p, q netip.Prefix) bool { return p.Bits() <= q.Bits() && p.Contains(q.Addr()) }
	var cand []netip.Prefix
	for _, p := range netguard.NotPublic4() {
		if !p.Addr().IsLoopback() {
			cand = append(cand, p)
		}
	}
	for _, a := range own {
		if a = a.Unmap(); a.Is4() && !a.IsLoopback() && !slirpNet.Contains(a) {
			cand = append(cand, netip.PrefixFrom(a, 32))
		}
	}
	for _, c := range cand {
		if !slices.ContainsFunc(allow, func(a netip.Prefix) bool { return covers(a, c) }) {
			refuse = append(refuse, c)
		}
	}
	// A network inside another refused one needs no route of its own.
	refuse = slices.DeleteFunc(slices.Clone(refuse), func(c netip.Prefix) bool {
		return slices.ContainsFunc(refuse, func(r netip.Prefix) bool { return r != c && covers(r, c) })
	})
	for _, a := range allow {
		if slices.ContainsFunc(refuse, func(r netip.Prefix) bool { return covers(r, a) }) && !slices.Contains(reach, a) {
			reach = append(reach, a)
		}
	}
	refuse = append(refuse, slirpRefused...)
	sortPrefixes(refuse)
	sortPrefixes(reach)
	return slices.Compact(refuse), reach
}

// sortPrefixes orders ps by address, then by length.
func sortPrefixes(ps []netip.Prefix) {
	slices.SortFunc(ps, func(a, b netip.Prefix) int {
		return cmp.Or(a.Addr().Compare(b.Addr()), a.Bits()-b.Bits())
	})
}

// writeResolvConf writes, when the host's resolver file (at hostPath)
// names a nameserver that the jobs' namespace does not reach (on the
// loopback, or that reached refuses: a private address, say), the jobs'
// own beside the work areas: the same with slirp4netns's resolver
// (10.0.2.3, which forwards to the host's) in its place. It returns its
// path, or "" when the host's serves as it is.
func (d *Driver) writeResolvConf(hostPath string, reached func(netip.Addr) bool) (string, error) {
	b, err := os.ReadFile(hostPath)
	if err != nil {
		return "", nil // none, or unreadable: the jobs see what the host has
	}
	out, changed := jobResolvConf(b, reached)
	if !changed {
		return "", nil
	}
	if err := os.MkdirAll(d.root, 0o711); err != nil {
		return "", fmt.Errorf("local driver: creating %s: %w", d.root, err)
	}
	// A dot name: never taken for a work area.
	path := filepath.Join(d.root, ".resolv.conf")
	tmp := path + ".new"
	if err := os.WriteFile(tmp, out, 0o644); err != nil {
		return "", fmt.Errorf("local driver: writing the jobs' resolver file: %w", err)
	}
	if err := os.Chmod(tmp, 0o644); err != nil {
		return "", fmt.Errorf("local driver: writing the jobs' resolver file: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return "", fmt.Errorf("local driver: writing the jobs' resolver file: %w", err)
	}
	return path, nil
}

// hostResolvConf is the host's resolver file; a variable for the tests.
var hostResolvConf = "/etc/resolv.conf"

// slirpDNS is slirp4netns's built-in resolver, in the namespace.
const slirpDNS = "10.0.2.3"

// jobResolvConf returns the resolver file jobs get for the host's b:
// every nameserver that is not reached (on the loopback, or not
// reached(a)) replaced by slirp4netns's resolver (once), the rest kept;
// changed is false when b names none.
func jobResolvConf(b []byte, reached func(netip.Addr) bool) (out []byte, changed bool) {
	var buf bytes.Buffer
	added := false
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		line := sc.Text()
		f := strings.Fields(line)
		if len(f) >= 2 && f[0] == "nameserver" {
			if a, err := netip.ParseAddr(strings.SplitN(f[1], "%", 2)[0]); err == nil && (a.IsLoopback() || !reached(a.Unmap())) {
				changed = true
				if !added {
					added = true
					buf.WriteString("nameserver " + slirpDNS + "\n")
				}
				continue
			}
		}
		buf.WriteString(line + "\n")
	}
	return buf.Bytes(), changed
}

// netIsolation adds to iso what the shim sets up for the isolated network:
// the addresses it listens on and the resolver file. It is a no-op when
// jobs do not get the isolated network.
func (d *Driver) netIsolation(iso *shim.Isolation) error {
	n, err := d.network()
	if n == nil || err != nil {
		return err
	}
	iso.Listen = n.listen
	iso.ResolvConf = n.resolv
	// The host's addresses as they are now: once per job server, or per
	// job under a supervisor of its own.
	refuse, reach := routePlan(d.isolate.Network.Reach, HostAddrs())
	iso.Refuse, iso.Reach = prefixStrings(refuse), prefixStrings(reach)
	if len(reach) > 0 {
		iso.Gateway = slirpGateway
	}
	return nil
}

// prefixStrings returns each of ps written out.
func prefixStrings(ps []netip.Prefix) []string {
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = p.String()
	}
	return out
}

// slirp is one running slirp4netns.
type slirp struct {
	cmd    *exec.Cmd
	exitW  *os.File // closing it ends slirp4netns (--exit-fd)
	exited <-chan error
}

// startSlirp connects the network namespace of process pid (in a user
// namespace of its own when userns) to the outside, and returns once the
// namespace is configured.
func (d *Driver) startSlirp(pid int, userns bool) (*slirp, error) {
	n := &d.net
	if !n.noSandx.Load() {
		s, err := d.startSlirpWith(pid, userns, true)
		if err == nil {
			return s, nil
		}
		// The sandbox needs, among others, an /etc/resolv.conf that is not
		// a link out of /etc and /run: try once without it, and keep to
		// that if it works.
		s, err2 := d.startSlirpWith(pid, userns, false)
		if err2 != nil {
			return nil, err
		}
		n.noSandx.Store(true)
		d.log.Warn("local driver: slirp4netns runs without its sandbox (--enable-sandbox, --enable-seccomp) here", "err", err)
		return s, nil
	}
	return d.startSlirpWith(pid, userns, false)
}

// startSlirpWith starts slirp4netns for pid, with its sandbox or not.
func (d *Driver) startSlirpWith(pid int, userns, sandbox bool) (*slirp, error) {
	readyR, readyW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("local driver: slirp4netns's pipes: %w", err)
	}
	defer readyR.Close()
	exitR, exitW, err := os.Pipe()
	if err != nil {
		closeFiles(readyW)
		return nil, fmt.Errorf("local driver: slirp4netns's pipes: %w", err)
	}
	args := []string{SlirpName, "--configure", "--mtu=65520", "--disable-host-loopback", "--ready-fd=3", "--exit-fd=4"}
	if sandbox {
		args = append(args, "--enable-sandbox", "--enable-seccomp")
	}
	if userns {
		args = append(args, "--userns-path=/proc/"+strconv.Itoa(pid)+"/ns/user")
	}
	args = append(args, strconv.Itoa(pid), "tap0")
	var stderr capped
	cmd := &exec.Cmd{
		Path:       d.isolate.Network.Slirp,
		Args:       args,
		Env:        []string{"PATH=/usr/sbin:/usr/bin:/sbin:/bin"},
		Dir:        "/",
		ExtraFiles: []*os.File{readyW, exitR},
		Stderr:     &stderr,
		SysProcAttr: &syscall.SysProcAttr{
			Setsid:    true,
			Pdeathsig: syscall.SIGKILL,
		},
	}
	exited, err := startHeld(cmd)
	closeFiles(readyW, exitR)
	if err != nil {
		closeFiles(exitW)
		return nil, fmt.Errorf("local driver: starting %s: %w", cmd.Path, err)
	}
	s := &slirp{cmd: cmd, exitW: exitW, exited: exited}
	ready := make(chan error, 1)
	go func() {
		var b [1]byte
		_, err := io.ReadFull(readyR, b[:])
		ready <- err
	}()
	timer := time.NewTimer(slirpReadyTimeout)
	defer timer.Stop()
	select {
	case err := <-ready:
		if err == nil {
			return s, nil
		}
		// slirp4netns closed its end without a word: it failed.
		closeFiles(exitW)
		var werr error
		select {
		case werr = <-exited:
		case <-time.After(2 * time.Second):
			_ = cmd.Process.Kill()
			werr = <-exited
		}
		return nil, fmt.Errorf("local driver: %s could not connect the jobs' network namespace (%v): %s", SlirpName, werr, stderr.text())
	case <-timer.C:
		s.stop()
		return nil, fmt.Errorf("local driver: %s did not configure the jobs' network namespace within %v: %s", SlirpName, slirpReadyTimeout, stderr.text())
	}
}

// stop ends slirp4netns and waits for it.
func (s *slirp) stop() {
	if s == nil {
		return
	}
	_ = s.exitW.Close()
	if s.exited == nil {
		return
	}
	select {
	case <-s.exited:
	case <-time.After(2 * time.Second):
		_ = s.cmd.Process.Kill()
		<-s.exited
	}
	s.exited = nil
}

// capped keeps the first 4 KiB written to it (slirp4netns's complaints).
type capped struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (c *capped) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if room := 4096 - c.buf.Len(); room > 0 {
		c.buf.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

func (c *capped) text() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return strings.Join(strings.Fields(c.buf.String()), " ")
}

// relay accepts connections on listening sockets of a jobs' namespace and
// relays each to the host address its port is forwarded to.
type relay struct {
	log  *slog.Logger
	dial map[netip.AddrPort]string
	wg   sync.WaitGroup

	mu       sync.Mutex
	closed   bool
	ls       []net.Listener
	conns    map[net.Conn]struct{}
	lastFull time.Time // when noteFull last logged
}

// startRelay relays from the listening sockets fds (each is taken over,
// and closed on error).
func startRelay(fds []int, dial map[netip.AddrPort]string, log *slog.Logger) (*relay, error) {
	r := &relay{log: log, dial: dial, conns: map[net.Conn]struct{}{}}
	var lerr error
	for _, fd := range fds {
		f := os.NewFile(uintptr(fd), "jobs' listener")
		l, err := net.FileListener(f)
		_ = f.Close()
		if err != nil {
			lerr = cmp.Or(lerr, fmt.Errorf("local driver: a listening socket of the jobs' namespace: %w", err))
			continue
		}
		if dial[listenAddr(l)] == "" {
			_ = l.Close()
			lerr = cmp.Or(lerr, fmt.Errorf("local driver: the jobs' namespace listens on %v, which is not forwarded", l.Addr()))
			continue
		}
		r.ls = append(r.ls, l)
	}
	if lerr != nil {
		r.close()
		return nil, lerr
	}
	for _, l := range r.ls {
		r.wg.Add(1)
		go r.accept(l, dial[listenAddr(l)])
	}
	return r, nil
}

// listenAddr is where l listens (IPv4 unmapped).
func listenAddr(l net.Listener) netip.AddrPort {
	a, ok := l.Addr().(*net.TCPAddr)
	if !ok {
		return netip.AddrPort{}
	}
	ap := a.AddrPort()
	return netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port())
}

// accept relays every connection l accepts to target until l is closed.
func (r *relay) accept(l net.Listener, target string) {
	defer r.wg.Done()
	for {
		c, err := l.Accept()
		if err != nil {
			if !errors.Is(err, net.ErrClosed) {
				r.log.Warn("local driver: accepting a job's connection to the service", "err", err)
			}
			return
		}
		if r.full() {
			// A job holding many connections open must not exhaust the
			// service's descriptors: past the cap, connections are
			// refused (closed at once) until some end.
			_ = c.Close()
			r.noteFull()
			continue
		}
		if !r.track(c) {
			_ = c.Close()
			return
		}
		go r.pipe(c, target)
	}
}

// maxRelayConns bounds the connections one relay holds open (each is a
// job's end and the service's: two descriptors of the svc process, and the
// API's own socket when it runs in the same process).
var maxRelayConns = 512

// full reports whether the relay holds maxRelayConns connections of jobs.
func (r *relay) full() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.conns) >= 2*maxRelayConns
}

// noteFull logs, at most once a minute, that connections were refused.
func (r *relay) noteFull() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if now := time.Now(); now.Sub(r.lastFull) > time.Minute {
		r.lastFull = now
		r.log.Warn("local driver: jobs hold the most connections to the service the relay keeps open; refusing more until some end", "max", maxRelayConns)
	}
}

// track records an open connection, unless the relay is closed.
func (r *relay) track(c net.Conn) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return false
	}
	r.conns[c] = struct{}{}
	return true
}

func (r *relay) untrack(c net.Conn) {
	r.mu.Lock()
	delete(r.conns, c)
	r.mu.Unlock()
}

// pipe copies between the job's connection c and a new connection to
// target, each way until its end, then closes both.
func (r *relay) pipe(c net.Conn, target string) {
	defer r.untrack(c)
	defer c.Close()
	up, err := net.DialTimeout("tcp", target, relayDialTimeout)
	if err != nil {
		return // the job sees its connection closed, as the service's refusal
	}
	if !r.track(up) {
		_ = up.Close()
		return
	}
	defer r.untrack(up)
	defer up.Close()
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = io.Copy(up, c)
		closeWrite(up)
	}()
	_, _ = io.Copy(c, up)
	closeWrite(c)
	<-done
}

// closeWrite half-closes a TCP connection: the peer reads EOF.
func closeWrite(c net.Conn) {
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.CloseWrite()
	}
}

// close stops accepting and closes every relayed connection.
func (r *relay) close() {
	if r == nil {
		return
	}
	r.mu.Lock()
	r.closed = true
	for _, l := range r.ls {
		_ = l.Close()
	}
	for c := range r.conns {
		_ = c.Close()
	}
	r.mu.Unlock()
	r.wg.Wait()
}

// jobNet is the isolated network of one job under a supervisor of its
// own: its slirp4netns, and the relay from its listening sockets.
type jobNet struct {
	d      *Driver
	n      *netState
	userns bool
	conn   *net.UnixConn // the driver's end of the socket the listeners come on
	theirs *os.File      // the supervisor's end (ListenFD), until it has started
	slirp  *slirp
	relay  *relay
	got    chan struct{} // closed when receive is done; nil when it never ran
}

// prepareJobNet readies the isolated network of a job whose supervisor is
// cmd, isolated as iso: a socket for its listeners as ListenFD. It returns
// nil when the job gets no isolated network. Call started once cmd has
// started (or failed to), and close when the job has ended.
func (d *Driver) prepareJobNet(cmd *exec.Cmd, iso *shim.Isolation) (*jobNet, error) {
	n, err := d.network()
	if n == nil || err != nil || iso == nil {
		return nil, err
	}
	jn := &jobNet{d: d, n: n, userns: iso.UserNS}
	if len(iso.Listen) == 0 {
		return jn, nil
	}
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_SEQPACKET|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("local driver: creating the socket for the job's listeners: %w", err)
	}
	mine := os.NewFile(uintptr(fds[0]), "job listeners")
	c, err := net.FileConn(mine)
	_ = mine.Close()
	if err != nil {
		_ = syscall.Close(fds[1])
		return nil, fmt.Errorf("local driver: the socket for the job's listeners: %w", err)
	}
	jn.conn = c.(*net.UnixConn)
	jn.theirs = os.NewFile(uintptr(fds[1]), "job listeners (supervisor)")
	for len(cmd.ExtraFiles) < shim.ListenFD-3 {
		cmd.ExtraFiles = append(cmd.ExtraFiles, nil)
	}
	cmd.ExtraFiles = append(cmd.ExtraFiles[:shim.ListenFD-3], jn.theirs)
	return jn, nil
}

// started closes the supervisor's end of the listeners' socket, which it
// now holds (or never will).
func (jn *jobNet) started() {
	if jn != nil {
		closeFiles(jn.theirs)
		jn.theirs = nil
	}
}

// connect starts slirp4netns for the supervisor pid, before the
// supervisor gets its job, and starts receiving its listeners.
func (jn *jobNet) connect(pid int) error {
	if jn == nil {
		return nil
	}
	s, err := jn.d.startSlirp(pid, jn.userns)
	if err != nil {
		return err
	}
	jn.slirp = s
	if jn.conn != nil {
		jn.got = make(chan struct{})
		go jn.receive()
	}
	return nil
}

// receive takes the supervisor's listening sockets and relays from them.
func (jn *jobNet) receive() {
	defer close(jn.got)
	_ = jn.conn.SetReadDeadline(time.Now().Add(listenersTimeout))
	fds, err := recvListeners(jn.conn)
	if err != nil {
		// The supervisor failed before listening, and says why on its
		// status pipe; or the job ended first.
		return
	}
	r, err := startRelay(fds, jn.n.dial, jn.d.log)
	if err != nil {
		jn.d.log.Warn("local driver: relaying a job's connections to the service", "err", err)
		return
	}
	jn.relay = r
}

// close stops the relay and slirp4netns of a job that has ended.
func (jn *jobNet) close() {
	if jn == nil {
		return
	}
	closeFiles(jn.theirs)
	if jn.conn != nil {
		_ = jn.conn.Close()
	}
	if jn.got != nil {
		<-jn.got
	}
	jn.relay.close()
	jn.slirp.stop()
}

// recvListeners reads one "listening N" message and its N descriptors
// from the socket c.
func recvListeners(c *net.UnixConn) ([]int, error) {
	buf := make([]byte, 64)
	oob := make([]byte, syscall.CmsgSpace(4*shim.MaxListen))
	n, oobn, _, _, err := c.ReadMsgUnix(buf, oob)
	if err != nil {
		return nil, err
	}
	fds := parseFDs(oob[:oobn])
	want, err := strconv.Atoi(strings.TrimPrefix(string(buf[:n]), "listening "))
	if err != nil || want != len(fds) {
		closeFDs(fds)
		return nil, fmt.Errorf("a malformed listeners' message %q with %d descriptors", buf[:n], len(fds))
	}
	return fds, nil
}

// parseFDs returns the descriptors an SCM_RIGHTS control message carries.
func parseFDs(oob []byte) []int {
	msgs, err := syscall.ParseSocketControlMessage(oob)
	if err != nil {
		return nil
	}
	var fds []int
	for _, m := range msgs {
		if got, err := syscall.ParseUnixRights(&m); err == nil {
			fds = append(fds, got...)
		}
	}
	return fds
}

// closeFDs closes every descriptor of fds.
func closeFDs(fds []int) {
	for _, fd := range fds {
		_ = syscall.Close(fd)
	}
}
