package netguard

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"strings"
	"testing"
)

// oneDNS resolves every name to addrs.
type oneDNS []netip.Addr

func (d oneDNS) LookupNetIP(context.Context, string, string) ([]netip.Addr, error) { return d, nil }

// refusals are the guard's three verdicts on a: the URL with a as its IP
// literal, a name that resolves to a, and the connect-time check of a dial
// of that name. Each is the error, nil when accepted.
func refusals(t testing.TB, g *Guard, a netip.Addr) [3]error {
	t.Helper()
	g.Resolver = oneDNS{a}
	ctx := context.Background()
	literal := net.JoinHostPort(a.String(), "80")
	return [3]error{
		g.CheckURL(ctx, "http://"+strings.ReplaceAll(literal, "%", "%25")+"/hook"),
		g.CheckURL(ctx, "http://h.example/hook"),
		g.checkConnect("h.example", netip.AddrPortFrom(a, 80).String()),
	}
}

// TestGuardRefusesEmbeddedIPv4: an IPv6 address that carries an IPv4
// address is judged by that address, at URL check and at connect time
// (issue 30, finding 7). Before, each refused row here was accepted.
func TestGuardRefusesEmbeddedIPv4(t *testing.T) {
	for _, tc := range []struct {
		name, addr string
		allow      string
		want       string // a substring of the refusal; "" = accepted
	}{
		{"IPv4-compatible loopback", "::127.0.0.1", "", "IPv4-compatible address whose IPv4 address 127.0.0.1 is a loopback address"},
		{"IPv4-compatible private", "::10.1.2.3", "", "10.1.2.3 is a private address"},
		{"IPv4-compatible metadata", "::169.254.169.254", "", "link-local"},
		{"IPv4-compatible public is judged as its IPv4 address", "::8.8.8.8", "", ""},
		{"IPv4-mapped loopback", "::ffff:127.0.0.1", "", "a loopback address"},
		{"IPv4-mapped metadata", "::ffff:169.254.169.254", "", "link-local"},
		{"IPv4-translated private", "::ffff:0:10.0.0.1", "", "IPv4-translated address whose IPv4 address 10.0.0.1 is a private address"},
		{"NAT64 loopback", "64:ff9b::127.0.0.1", "", "NAT64 address whose IPv4 address 127.0.0.1 is a loopback address"},
		{"NAT64 metadata", "64:ff9b::a9fe:a9fe", "", "169.254.169.254 is a link-local address"},
		{"NAT64 CGNAT", "64:ff9b::100.64.0.1", "", "carrier-grade NAT"},
		{"NAT64 public", "64:ff9b::8.8.8.8", "", ""},
		{"local-use NAT64", "64:ff9b:1::a00:1", "", "local-use NAT64"},
		{"local-use NAT64 with a public-looking tail", "64:ff9b:1:808:8:800::", "", "local-use NAT64"},
		{"rest of ::/8", "0:1::1", "", "a reserved IPv6 address"},
		{"6to4 loopback", "2002:7f00:1::1", "", "6to4 address whose IPv4 address 127.0.0.1 is a loopback address"},
		{"6to4 private", "2002:c0a8:101::", "", "192.168.1.1 is a private address"},
		{"6to4 public", "2002:808:808::1", "", ""},
		{"Teredo private server", "2001:0:a00:1:8000:63bf:3fff:fdd2", "", "Teredo address whose IPv4 server address 10.0.0.1 is a private address"},
		{"Teredo loopback client", "2001:0:4136:e378:8000:63bf:80ff:fffe", "", "Teredo address whose IPv4 client address 127.0.0.1 is a loopback address"},
		{"Teredo public", "2001:0:4136:e378:8000:63bf:3fff:fdd2", "", ""},
		{"plain loopback v6 is itself", "::1", "", "a loopback address"},
		{"plain unspecified v6 is itself", "::", "", "an unspecified address"},
		{"public v6", "2606:4700::1111", "", ""},

		{"allow list reads the carried IPv4", "64:ff9b::10.0.0.1", "10.0.0.0/8", ""},
		{"allow list: other range still refused", "64:ff9b::127.0.0.1", "10.0.0.0/8", "loopback"},
		{"allow list: 6to4 read too", "2002:a00:1::", "10.0.0.0/8", ""},
		{"allow list: Teredo only as written", "2001:0:a00:1:8000:63bf:3fff:fdd2", "10.0.0.0/8", "Teredo"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g, err := New(tc.allow, probeNames)
			if err != nil {
				t.Fatal(err)
			}
			a := netip.MustParseAddr(tc.addr)
			for i, err := range refusals(t, g, a) {
				path := []string{"IP literal", "resolved name", "connect"}[i]
				if tc.want == "" {
					if err != nil {
						t.Errorf("%s %s: %v, want it accepted", path, a, err)
					}
					continue
				}
				var re *RefusedError
				if !errors.As(err, &re) || re.Addr != a {
					t.Errorf("%s %s: %v, want a *RefusedError of %s", path, a, err, a)
					continue
				}
				if !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "SVC_PROBE_ALLOW") {
					t.Errorf("%s %s: %q, want it to contain %q and the setting", path, a, err, tc.want)
				}
			}
		})
	}
}

// refRefuses is the reference classification the fuzz test holds the
// guard to: written apart from classify, byte by byte, on net/netip's Is*
// methods over the IPv4 address an IPv6 form carries.
func refRefuses(a netip.Addr) bool {
	a = a.WithZone("")
	if a.Is4() {
		return refRefuses4(a.As4())
	}
	b := a.As16()
	zero := func(s []byte) bool {
		for _, c := range s {
			if c != 0 {
				return false
			}
		}
		return true
	}
	tail := [4]byte(b[12:16])
	switch {
	case a == netip.IPv6Loopback() || a == netip.IPv6Unspecified():
		return true
	case zero(b[:10]) && b[10] == 0xff && b[11] == 0xff: // ::ffff:a.b.c.d
		return refRefuses4(tail)
	case zero(b[:8]) && b[8] == 0xff && b[9] == 0xff && zero(b[10:12]): // ::ffff:0:a.b.c.d
		return refRefuses4(tail)
	case zero(b[:12]): // ::a.b.c.d
		return refRefuses4(tail)
	case b[0] == 0 && b[1] == 0x64 && b[2] == 0xff && b[3] == 0x9b && zero(b[4:12]): // 64:ff9b::/96
		return refRefuses4(tail)
	case b[0] == 0: // the rest of ::/8, local-use NAT64 included
		return true
	case b[0] == 0x20 && b[1] == 0x02: // 2002::/16
		return refRefuses4([4]byte(b[2:6]))
	case b[0] == 0x20 && b[1] == 0x01 && b[2] == 0 && b[3] == 0: // 2001::/32
		return refRefuses4([4]byte(b[4:8])) || refRefuses4([4]byte{^b[12], ^b[13], ^b[14], ^b[15]})
	}
	return a.IsLoopback() || a.IsPrivate() || a.IsLinkLocalUnicast() || a.IsMulticast() || a.IsUnspecified() ||
		b[0] == 0xfe && b[1]&0xc0 == 0xc0 // fec0::/10, site-local
}

// refRefuses4 is the reference for an IPv4 address: netip's Is* methods
// and the ranges they leave out.
func refRefuses4(b [4]byte) bool {
	a := netip.AddrFrom4(b)
	return a.IsLoopback() || a.IsPrivate() || a.IsLinkLocalUnicast() || a.IsMulticast() || a.IsUnspecified() ||
		b[0] == 0 || // 0.0.0.0/8
		b[0] == 100 && b[1]&0xc0 == 64 || // 100.64.0.0/10
		b[0] == 192 && b[1] == 0 && b[2] == 0 || // 192.0.0.0/24
		b[0] == 198 && b[1]&0xfe == 18 || // 198.18.0.0/15
		b[0] >= 240 // 240.0.0.0/4
}

// FuzzGuardMatchesReference: for any address, written as an IP literal,
// resolved from a name or dialled, the guard refuses exactly what the
// reference classification refuses (issue 30, finding 7).
func FuzzGuardMatchesReference(f *testing.F) {
	for _, s := range []string{
		"127.0.0.1", "10.0.0.1", "8.8.8.8", "169.254.169.254", "100.64.0.1", "198.19.255.255", "255.255.255.255", "0.1.2.3",
		"::1", "::", "::127.0.0.1", "::8.8.8.8", "::ffff:127.0.0.1", "::ffff:8.8.8.8", "::ffff:0:10.0.0.1", "::ffff:0:8.8.8.8",
		"64:ff9b::127.0.0.1", "64:ff9b::8.8.8.8", "64:ff9b:1::a00:1", "64:ff9b:0:1::", "0:1::",
		"2002:7f00:1::", "2002:808:808::", "2002:a9fe:a9fe:1::",
		"2001:0:4136:e378:8000:63bf:3fff:fdd2", "2001:0:4136:e378:8000:63bf:80ff:fffe", "2001:0:a00:1::", "2001:1::1",
		"fe80::1", "fec0::1", "fd00::1", "ff02::1", "2606:4700::1111", "2001:db8::1",
	} {
		f.Add(netip.MustParseAddr(s).AsSlice())
	}
	guard, err := New("", probeNames)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		var a netip.Addr
		switch {
		case len(raw) == 4:
			a = netip.AddrFrom4([4]byte(raw))
		case len(raw) >= 16:
			a = netip.AddrFrom16([16]byte(raw[:16]))
		default:
			var b [16]byte
			copy(b[:], raw)
			a = netip.AddrFrom16(b)
		}
		want := refRefuses(a)
		for i, err := range refusals(t, guard, a) {
			var re *RefusedError
			got := errors.As(err, &re)
			if err != nil && !got {
				t.Fatalf("path %d, %s: %v, want a *RefusedError or nil", i, a, err)
			}
			if got != want {
				t.Fatalf("path %d, %s: guard refuses %v (%v), reference refuses %v", i, a, got, err, want)
			}
		}
	})
}
