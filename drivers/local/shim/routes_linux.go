//go:build linux

package shim

// The routes of the isolated network's namespace. slirp4netns connects
// the namespace to the outside with a default route through its gateway
// and makes every destination a connection from the host: left at that, a
// job reaches whatever the host reaches, the cloud metadata service, the
// operator's private network and the host's own addresses included. The
// driver names the networks jobs may not reach (Isolation.Refuse) and the
// exceptions the operator allowed (Isolation.Reach); the shim, root of the
// namespace, sets them up with rtnetlink before any job starts: a prohibit
// route for each refused network, so that a connection there fails at once
// with EACCES, and, more specific, a route through the gateway for each
// allowed one. A job has no capability in the namespace and cannot change
// them.

import (
	"encoding/binary"
	"fmt"
	"net/netip"
	"syscall"
)

// loopbackIndex is the loopback device's index in every network namespace.
const loopbackIndex = 1

// configureNetwork adds to the namespace the addresses of iso.Listen that
// are not on the loopback (to its loopback device, so that the listeners
// there are what a job reaches) and the routes of iso.Refuse and
// iso.Reach. It does nothing outside the isolated network.
func configureNetwork(iso *Isolation) error {
	var b nlBatch
	for _, l := range iso.Listen {
		ap, err := netip.ParseAddrPort(l)
		if err != nil {
			return fmt.Errorf("listen address %q: %w", l, err)
		}
		if a := ap.Addr(); !a.IsLoopback() {
			b.addAddr(a)
		}
	}
	var gw netip.Addr
	if len(iso.Reach) > 0 {
		var err error
		if gw, err = netip.ParseAddr(iso.Gateway); err != nil || !gw.Is4() {
			return fmt.Errorf("the isolated network's gateway %q is not an IPv4 address", iso.Gateway)
		}
	}
	for _, r := range iso.Refuse {
		p, err := parsePrefix4(r)
		if err != nil {
			return err
		}
		b.addRoute(p, syscall.RTN_PROHIBIT, netip.Addr{})
	}
	for _, r := range iso.Reach {
		p, err := parsePrefix4(r)
		if err != nil {
			return err
		}
		b.addRoute(p, syscall.RTN_UNICAST, gw)
	}
	if len(b.what) == 0 {
		return nil
	}
	return b.do()
}

// parsePrefix4 parses an IPv4 network written in its canonical form.
func parsePrefix4(s string) (netip.Prefix, error) {
	p, err := netip.ParsePrefix(s)
	if err != nil || !p.Addr().Is4() || p.Masked() != p {
		return netip.Prefix{}, fmt.Errorf("%q is not an IPv4 network (10.0.0.0/8)", s)
	}
	return p, nil
}

// nlBatch is a series of rtnetlink requests sent as one write, each
// acknowledged.
type nlBatch struct {
	buf  []byte
	what []string // by sequence number - 1: what the request does, for errors
}

// add appends one request of type typ with the fixed header hdr and the
// attributes attrs (type, value).
func (b *nlBatch) add(what string, typ uint16, hdr []byte, attrs ...nlAttr) {
	b.what = append(b.what, what)
	start := len(b.buf)
	b.buf = append(b.buf, make([]byte, syscall.NLMSG_HDRLEN)...)
	b.buf = append(b.buf, hdr...)
	for _, a := range attrs {
		n := syscall.SizeofRtAttr + len(a.val)
		b.buf = binary.NativeEndian.AppendUint16(b.buf, uint16(n))
		b.buf = binary.NativeEndian.AppendUint16(b.buf, a.typ)
		b.buf = append(b.buf, a.val...)
		b.buf = append(b.buf, make([]byte, nlAlign(n)-n)...)
	}
	h := b.buf[start:]
	binary.NativeEndian.PutUint32(h[0:], uint32(len(h)))
	binary.NativeEndian.PutUint16(h[4:], typ)
	binary.NativeEndian.PutUint16(h[6:], syscall.NLM_F_REQUEST|syscall.NLM_F_ACK|syscall.NLM_F_CREATE|syscall.NLM_F_EXCL)
	binary.NativeEndian.PutUint32(h[8:], uint32(len(b.what))) // sequence number
}

// nlAttr is one rtnetlink attribute.
type nlAttr struct {
	typ uint16
	val []byte
}

func nlAlign(n int) int { return (n + syscall.NLMSG_ALIGNTO - 1) &^ (syscall.NLMSG_ALIGNTO - 1) }

// addRoute asks for a route of type typ (RTN_PROHIBIT, or RTN_UNICAST
// through gw) to the IPv4 network p in the main table.
func (b *nlBatch) addRoute(p netip.Prefix, typ uint8, gw netip.Addr) {
	hdr := make([]byte, syscall.SizeofRtMsg)
	hdr[0] = syscall.AF_INET
	hdr[1] = uint8(p.Bits()) // rtm_dst_len
	hdr[4] = syscall.RT_TABLE_MAIN
	hdr[5] = syscall.RTPROT_STATIC
	hdr[6] = syscall.RT_SCOPE_UNIVERSE
	hdr[7] = typ
	dst := p.Addr().As4()
	attrs := []nlAttr{{syscall.RTA_DST, dst[:]}}
	what := "a prohibit route to " + p.String()
	if gw.IsValid() {
		g := gw.As4()
		attrs = append(attrs, nlAttr{syscall.RTA_GATEWAY, g[:]})
		what = "a route to " + p.String() + " via " + gw.String()
	}
	b.add(what, syscall.RTM_NEWROUTE, hdr, attrs...)
}

// addAddr asks for a on the loopback device.
func (b *nlBatch) addAddr(a netip.Addr) {
	hdr := make([]byte, syscall.SizeofIfAddrmsg)
	hdr[0], hdr[1] = syscall.AF_INET, 32
	raw := a.AsSlice()
	if a.Is6() {
		hdr[0], hdr[1] = syscall.AF_INET6, 128
		hdr[2] = syscall.IFA_F_NODAD
	}
	hdr[3] = syscall.RT_SCOPE_HOST
	binary.NativeEndian.PutUint32(hdr[4:], loopbackIndex)
	b.add("the address "+a.String()+" on the loopback", syscall.RTM_NEWADDR, hdr,
		nlAttr{syscall.IFA_LOCAL, raw}, nlAttr{syscall.IFA_ADDRESS, raw})
}

// do sends the batch and reads every acknowledgement; it returns the
// first refusal, naming what was refused. An IPv6 address where the
// kernel has no IPv6 is not an error: its listener is skipped too.
func (b *nlBatch) do() error {
	fd, err := syscall.Socket(syscall.AF_NETLINK, syscall.SOCK_RAW|syscall.SOCK_CLOEXEC, syscall.NETLINK_ROUTE)
	if err != nil {
		return fmt.Errorf("opening a route socket: %w", err)
	}
	defer syscall.Close(fd)
	if err := syscall.Bind(fd, &syscall.SockaddrNetlink{Family: syscall.AF_NETLINK}); err != nil {
		return fmt.Errorf("binding a route socket: %w", err)
	}
	if err := syscall.Sendto(fd, b.buf, 0, &syscall.SockaddrNetlink{Family: syscall.AF_NETLINK}); err != nil {
		return fmt.Errorf("setting up the jobs' routes: %w", err)
	}
	var first error
	acked := 0
	rb := make([]byte, 1<<16)
	for acked < len(b.what) {
		n, _, err := syscall.Recvfrom(fd, rb, 0)
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return fmt.Errorf("reading the kernel's answer to the jobs' routes: %w", err)
		}
		msgs, err := syscall.ParseNetlinkMessage(rb[:n])
		if err != nil {
			return fmt.Errorf("reading the kernel's answer to the jobs' routes: %w", err)
		}
		for _, m := range msgs {
			if m.Header.Type != syscall.NLMSG_ERROR || len(m.Data) < 4 {
				continue
			}
			seq := int(m.Header.Seq)
			if seq < 1 || seq > len(b.what) {
				continue
			}
			acked++
			errno := -int32(binary.NativeEndian.Uint32(m.Data))
			if errno == 0 || first != nil {
				continue
			}
			e := syscall.Errno(errno)
			if (e == syscall.EAFNOSUPPORT || e == syscall.EOPNOTSUPP) && b.is6addr(seq) {
				continue
			}
			first = fmt.Errorf("adding %s: %w", b.what[seq-1], e)
		}
	}
	return first
}

// is6addr reports whether request seq adds an IPv6 address.
func (b *nlBatch) is6addr(seq int) bool {
	off := 0
	for i := 1; i < seq; i++ {
		off += int(binary.NativeEndian.Uint32(b.buf[off:]))
	}
	return binary.NativeEndian.Uint16(b.buf[off+4:]) == syscall.RTM_NEWADDR && b.buf[off+syscall.NLMSG_HDRLEN] == syscall.AF_INET6
}
