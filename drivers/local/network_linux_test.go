//go:build linux

package local

import (
	"bufio"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"svc/drivers"
	"svc/internal/testing/testbin"
	"svc/internal/testing/testwait"
)

// networkDriver returns an isolated driver (on the job server when pool)
// whose jobs get the isolated network with fwd forwarded. It fails in CI,
// and skips elsewhere, when slirp4netns is missing or jobs cannot be
// isolated.
func networkDriver(t *testing.T, pool bool, fwd ...string) *Driver {
	t.Helper()
	return networkDriverWith(t, pool, Network{Forward: fwd})
}

// networkDriverWith is networkDriver for the isolated network n (its
// Slirp found here).
func networkDriverWith(t *testing.T, pool bool, n Network) *Driver {
	t.Helper()
	slirp := FindSlirp()
	if slirp == "" {
		if os.Getenv("CI") != "" {
			t.Fatalf("%s is not installed on this CI machine (.ci/run installs it)", SlirpName)
		}
		t.Skipf("%s is not installed", SlirpName)
	}
	if pool && os.Geteuid() != 0 {
		t.Skip("the job server needs root")
	}
	dataDir := t.TempDir()
	iso := &Isolation{UIDs: &DefaultUIDs, Hide: []string{dataDir}}
	if !pool {
		uid, gid, err := ResolveUser("")
		if err != nil {
			t.Fatalf("ResolveUser: %v", err)
		}
		iso = &Isolation{UID: uid, GID: gid, Hide: []string{dataDir}}
	}
	n.Slirp = slirp
	iso.Network = &n
	root, _ := DefaultRoot(dataDir)
	if strings.HasPrefix(root, shmDir+"/") {
		t.Cleanup(func() { _ = os.RemoveAll(root) })
	}
	d := newDriver(t, Options{Root: root, Isolate: iso})
	if err := d.Check(t.Context()); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("this CI machine cannot give jobs the isolated network: %v", err)
		}
		t.Skipf("this machine cannot give jobs the isolated network: %v", err)
	}
	return d
}

// hostAddress returns a non-loopback IPv4 address of this host, or "".
func hostAddress() string {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return ""
	}
	for _, a := range addrs {
		if ipn, ok := a.(*net.IPNet); ok && ipn.IP.To4() != nil && !ipn.IP.IsLoopback() && !ipn.IP.IsLinkLocalUnicast() {
			return ipn.IP.String()
		}
	}
	return ""
}

// probeScript is a harness that tries, for each NAME=HOST:PORT argument,
// a TCP connection within 2 s and prints how it went: NAME-open, or
// NAME-denied (EACCES: a prohibit route of the namespace), -unreachable
// (no route; or no IPv6), -refused (nothing listens), -timeout. With the
// prefix out: it prints NAME-out when the connection was not denied (it
// went out: where to is the machine's business). route:NAME=ADDR prints
// what the namespace's routes do with ADDR (ip route get): NAME-routed
// through slirp4netns's gateway, or NAME-denied. del:NAME=NET tries to
// delete the namespace's route to NET: NAME-kept when it cannot. It then
// fetches
// http://$1/ (the API's forwarded address) and prints its status line.
const probeScript = `
api=$1; shift
for t in "$@"; do
  case $t in
  route:*)
    t=${t#route:}; name=${t%%=*}; out=$(ip route get "${t#*=}" 2>&1)
    case $out in
    *" via 10.0.2.2 "*) echo "$name-routed" ;;
    *"Permission denied"*) echo "$name-denied" ;;
    *) echo "$name-other: $out" ;;
    esac
    continue ;;
  del:*)
    t=${t#del:}; name=${t%%=*}
    if ip route del "${t#*=}" 2>/dev/null; then echo "$name-deleted"; else echo "$name-kept"; fi
    continue ;;
  esac
  mode=; case $t in out:*) mode=out; t=${t#out:} ;; esac
  name=${t%%=*}; hp=${t#*=}; host=${hp%:*}; port=${hp##*:}
  err=$(timeout 2 bash -c "exec 3<>/dev/tcp/$host/$port" 2>&1); rc=$?
  case "$rc $err" in
  "0 "*) r=open ;;
  "124 "*) r=timeout ;;
  *"Permission denied"*) r=denied ;;
  *unreachable*|*"No route to host"*|*"not supported"*) r=unreachable ;;
  *"Connection refused"*) r=refused ;;
  *) r="other: $err" ;;
  esac
  if [ "$mode" = out ] && [ "$r" != denied ]; then r=out; fi
  echo "$name-$r"
done
exec 3<>/dev/tcp/${api%:*}/${api##*:} || { echo api-refused; exit 0; }
printf 'GET /healthz HTTP/1.0\r\nHost: x\r\n\r\n' >&3
head -n 1 <&3 | tr -d '\r'
`

// haveIP reports whether iproute2's ip is installed (jobs see the host's
// /usr), for the probe's route: checks.
func haveIP() bool {
	_, err := exec.LookPath("ip")
	return err == nil
}

// TestIsolatedNetworkReach is issue 30's third finding at the driver: a
// job in the isolated network cannot connect to a service on the host's
// loopback (directly, or through slirp's alias of the host), nor, refused
// at once by the namespace's routes, to the host's own non-loopback
// address, the cloud metadata service, a private, a carrier-grade NAT or
// a link-local address (IPv6 has no route at all), while it reaches the
// forwarded API at the address it was given and public addresses are
// routed out.
func TestIsolatedNetworkReach(t *testing.T) { eachIsolation(t, testIsolatedNetworkReach) }

func testIsolatedNetworkReach(t *testing.T, pool bool) {
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusTeapot)
	}))
	t.Cleanup(api.Close)
	apiAddr := api.Listener.Addr().String()
	// A service of the host on its loopback that jobs must not reach: an
	// unauthenticated orchestrator, say.
	private := listen(t, "127.0.0.1:0")
	_, privPort, _ := net.SplitHostPort(private.Addr().String())
	d := networkDriver(t, pool, apiAddr)

	targets := []string{
		"loopback=" + private.Addr().String(),
		"slirp-host=10.0.2.2:" + privPort,
		"slirp-alias=10.0.2.50:" + privPort,
		"metadata=169.254.169.254:80",
		"private=10.1.2.3:8000",
		"lan=192.168.1.1:80",
		"cgnat=100.64.0.1:80",
		"metadata6=fd00:ec2::254:80",
		"ula=fd12:3456::1:80",
	}
	want := []string{"loopback-refused", "slirp-host-unreachable", "slirp-alias-denied", "metadata-denied", "private-denied",
		"lan-denied", "cgnat-denied", "metadata6-unreachable", "ula-unreachable"}
	if ip := hostAddress(); ip != "" {
		// The host's own address, whatever network it is in (on this kind
		// of machine, a public-looking TEST-NET one).
		host := listen(t, net.JoinHostPort(ip, "0"))
		targets = append(targets, "host="+host.Addr().String())
		want = append(want, "host-denied")
	} else {
		t.Log("this host has no non-loopback IPv4 address: its own addresses are not checked")
	}
	if haveIP() {
		// The job cannot lift the refusal: it has no capability in the
		// namespace.
		targets = append(targets, "route:public=8.8.8.8", "route:testnet=198.51.100.7", "del:link-local=169.254.0.0/16", "route:metadata=169.254.169.254")
		want = append(want, "public-routed", "testnet-routed", "link-local-kept", "metadata-denied")
	} else {
		targets = append(targets, "out:public=8.8.8.8:53")
		want = append(want, "public-out")
	}
	want = append(want, "HTTP/1.0 418 I'm a teapot")
	res, err := d.Run(t.Context(), drivers.Job{RunID: "net-probe", Command: append([]string{"/bin/bash", "-c", probeScript, "probe", apiAddr}, targets...)})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	got := strings.Split(strings.TrimSpace(res.Stdout), "\n")
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("what the job reached (-want +got):\n%s\nstderr: %s", diff, res.StderrTail)
	}
}

// TestIsolatedNetworkAllowed: what the operator allows
// (SVC_LOCAL_NETWORK_ALLOW) a job reaches: the host's own address and a
// private network allowed as networks are routed out, every port; a
// private service allowed by port (IPv4 or IPv6) is relayed, that port
// only; the rest of the private networks stays refused.
func TestIsolatedNetworkAllowed(t *testing.T) { eachIsolation(t, testIsolatedNetworkAllowed) }

func testIsolatedNetworkAllowed(t *testing.T, pool bool) {
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusTeapot)
	}))
	t.Cleanup(api.Close)
	apiAddr := api.Listener.Addr().String()
	allow := "10.1.2.0/24,10.9.8.7:8000"
	if _, err := os.Stat("/proc/net/if_inet6"); err == nil {
		// A kernel with IPv6: an IPv6 service allowed by port is relayed
		// too, though the namespace has no IPv6 route.
		allow += ",[fd00::5]:8000"
	}
	fwd, reach, err := ParseAllow(t.Context(), allow)
	if err != nil {
		t.Fatal(err)
	}
	var targets, want []string
	if ip := hostAddress(); ip != "" {
		reach = append(reach, netip.PrefixFrom(netip.MustParseAddr(ip), 32))
		host := listen(t, net.JoinHostPort(ip, "0"))
		targets = append(targets, "host="+host.Addr().String())
		want = append(want, "host-open")
	} else {
		t.Log("this host has no non-loopback IPv4 address: allowing its own addresses is not checked")
	}
	d := networkDriverWith(t, pool, Network{Forward: append([]string{apiAddr}, fwd...), Reach: reach})
	targets = append(targets,
		"out:allowed=10.1.2.3:8000",
		"relayed=10.9.8.7:8000",
		"relayed-other-port=10.9.8.7:8001",
		"private=10.1.3.3:8000",
		"metadata=169.254.169.254:80",
	)
	want = append(want, "allowed-out", "relayed-open", "relayed-other-port-refused", "private-denied", "metadata-denied")
	if strings.Contains(allow, "fd00::5") {
		targets = append(targets, "relayed6=fd00::5:8000", "unrelayed6=fd00::6:8000")
		want = append(want, "relayed6-open", "unrelayed6-unreachable")
	}
	if haveIP() {
		targets = append(targets, "route:allowed=10.1.2.3", "route:private=10.1.3.3")
		want = append(want, "allowed-routed", "private-denied")
	}
	want = append(want, "HTTP/1.0 418 I'm a teapot")
	res, err := d.Run(t.Context(), drivers.Job{RunID: "net-allowed", Command: append([]string{"/bin/bash", "-c", probeScript, "probe", apiAddr}, targets...)})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	got := strings.Split(strings.TrimSpace(res.Stdout), "\n")
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("what the job reached (-want +got):\n%s\nstderr: %s", diff, res.StderrTail)
	}
}

// listen opens a TCP listener at addr that accepts and holds connections
// until the test ends.
func listen(t *testing.T, addr string) net.Listener {
	t.Helper()
	return testbin.Listen(t, addr, nil)
}

// TestIsolatedNetworkServerShared: the jobs of one job server share its
// namespace (one slirp4netns, set up once), and a job server that died is
// replaced with a namespace that works again.
func TestIsolatedNetworkServerShared(t *testing.T) {
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	t.Cleanup(api.Close)
	apiAddr := api.Listener.Addr().String()
	d := networkDriver(t, true, apiAddr)
	run := func(id string) string {
		t.Helper()
		res, err := d.Run(t.Context(), drivers.Job{RunID: id, Command: []string{"/bin/bash", "-c", probeScript, "probe", apiAddr}})
		if err != nil {
			t.Fatalf("Run %s: %v", id, err)
		}
		return strings.TrimSpace(res.Stdout)
	}
	if got := run("first"); got != "HTTP/1.0 200 OK" {
		t.Fatalf("first job got %q from the API", got)
	}
	pid := d.serverPid()
	ns1, err := os.Readlink("/proc/" + strconv.Itoa(pid) + "/ns/net")
	if err != nil {
		t.Fatal(err)
	}
	self, _ := os.Readlink("/proc/self/ns/net")
	if ns1 == self {
		t.Fatalf("the job server is in the host's network namespace")
	}
	if got := run("second"); got != "HTTP/1.0 200 OK" || d.serverPid() != pid {
		t.Fatalf("second job got %q on server %d (first %d)", got, d.serverPid(), pid)
	}
	d.srv.mu.Lock()
	sp := d.srv.cur
	d.srv.mu.Unlock()
	sp.kill()
	<-sp.dead
	if got := run("after-death"); got != "HTTP/1.0 200 OK" {
		t.Fatalf("a job on the new server got %q from the API", got)
	}
}

// TestPlanForwards: where the shim listens for each forwarded address, and
// what is refused.
func TestPlanForwards(t *testing.T) {
	ap := netip.MustParseAddrPort
	for _, tc := range []struct {
		fwd     []string
		listen  []string
		dial    map[netip.AddrPort]string
		wantErr string
	}{
		{fwd: []string{"127.0.0.1:8080"}, listen: []string{"127.0.0.1:8080"}, dial: map[netip.AddrPort]string{ap("127.0.0.1:8080"): "127.0.0.1:8080"}},
		{fwd: []string{"localhost:8080"}, listen: []string{"127.0.0.1:8080", "[::1]:8080"},
			dial: map[netip.AddrPort]string{ap("127.0.0.1:8080"): "localhost:8080", ap("[::1]:8080"): "localhost:8080"}},
		{fwd: []string{"[::1]:443", "127.0.0.2:80"}, listen: []string{"[::1]:443", "127.0.0.2:80"},
			dial: map[netip.AddrPort]string{ap("[::1]:443"): "[::1]:443", ap("127.0.0.2:80"): "127.0.0.2:80"}},
		{fwd: []string{"127.0.0.1:8080", "127.0.0.1:8080"}, listen: []string{"127.0.0.1:8080"}, dial: map[netip.AddrPort]string{ap("127.0.0.1:8080"): "127.0.0.1:8080"}},
		// One port at two addresses: the relay tells them apart by address.
		{fwd: []string{"127.0.0.1:8000", "10.1.2.3:8000", "[fd00::5]:8000"}, listen: []string{"127.0.0.1:8000", "10.1.2.3:8000", "[fd00::5]:8000"},
			dial: map[netip.AddrPort]string{ap("127.0.0.1:8000"): "127.0.0.1:8000", ap("10.1.2.3:8000"): "10.1.2.3:8000", ap("[fd00::5]:8000"): "[fd00::5]:8000"}},
		{fwd: []string{"[::ffff:10.1.2.3]:80"}, listen: []string{"10.1.2.3:80"}, dial: map[netip.AddrPort]string{ap("10.1.2.3:80"): "[::ffff:10.1.2.3]:80"}},
		{fwd: nil, dial: map[netip.AddrPort]string{}},
		{fwd: []string{"127.0.0.1:8080", "localhost:8080"}, wantErr: "both 127.0.0.1:8080"},
		{fwd: []string{"10.0.2.2:80"}, wantErr: "slirp4netns's own network"},
		{fwd: []string{"0.0.0.0:80"}, wantErr: "not a unicast address"},
		{fwd: []string{"224.0.0.1:80"}, wantErr: "not a unicast address"},
		{fwd: []string{"127.0.0.1"}, wantErr: "want host:port"},
		{fwd: []string{"127.0.0.1:0"}, wantErr: "invalid port"},
	} {
		listen, dial, err := planForwards(t.Context(), tc.fwd)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("planForwards(%q) error = %v, want one saying %q", tc.fwd, err, tc.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("planForwards(%q): %v", tc.fwd, err)
			continue
		}
		if diff := cmp.Diff(tc.listen, listen); diff != "" {
			t.Errorf("planForwards(%q) listen (-want +got):\n%s", tc.fwd, diff)
		}
		if diff := cmp.Diff(tc.dial, dial); diff != "" {
			t.Errorf("planForwards(%q) dial (-want +got):\n%s", tc.fwd, diff)
		}
	}
}

// TestForwards: which of the addresses jobs are told they do not reach
// through the way out, and so are forwarded: on the loopback, in a
// network the address guard does not class as public, the host's own, or
// IPv6.
func TestForwards(t *testing.T) {
	targets := []string{"http://127.0.0.1:8080", "", "http://localhost/judge-proxy/v1",
		"https://svc.example.invalid", "http://192.0.2.7:9000", "127.0.0.1:11434", "http://127.0.0.1:8080/x", "https://[::1]/",
		"http://10.0.0.5:8080", "http://169.254.169.254/latest", "100.64.1.1:80", "http://8.8.8.8:53", "[2001:db8::1]:80"}
	want := []string{"127.0.0.1:8080", "localhost:80", "127.0.0.1:11434", "[::1]:443",
		"10.0.0.5:8080", "169.254.169.254:80", "100.64.1.1:80", "[2001:db8::1]:80"}
	if a := hostAddress(); a != "" {
		// The host's own address, public or not, is not reached outside.
		targets = append(targets, "http://"+a+":8081")
		want = append(want, a+":8081")
	}
	got, err := Forwards(t.Context(), targets...)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Forwards (-want +got):\n%s", diff)
	}
	for _, bad := range []string{"ftp://127.0.0.1", "127.0.0.1", "127.0.0.1:99999", "http://"} {
		if _, err := Forwards(t.Context(), bad); err == nil {
			t.Errorf("Forwards(%q) accepted it", bad)
		}
	}
}

// TestParseAllow: SVC_LOCAL_NETWORK_ALLOW's services by port are
// forwarded, its IPv4 addresses and networks routed to; what jobs reach
// without it, IPv6 networks, a loopback address without its port and
// slirp4netns's own network are refused.
func TestParseAllow(t *testing.T) {
	pp := netip.MustParsePrefix
	fwd, reach, err := ParseAllow(t.Context(), " 127.0.0.1:11434, 10.1.2.3:8000,10.1.0.0/16 ,172.16.5.4, 10.1.0.0/16,,192.168.1.77/24,[fd00::5]:8000,0.0.0.0/0")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"127.0.0.1:11434", "10.1.2.3:8000", "[fd00::5]:8000"}, fwd); diff != "" {
		t.Errorf("ParseAllow forwards (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]netip.Prefix{pp("10.1.0.0/16"), pp("172.16.5.4/32"), pp("192.168.1.0/24"), pp("0.0.0.0/0")}, reach, cmp.Comparer(func(a, b netip.Prefix) bool { return a == b })); diff != "" {
		t.Errorf("ParseAllow networks (-want +got):\n%s", diff)
	}
	for bad, why := range map[string]string{
		"192.0.2.1:80":   "public address",
		"fd00::/8":       "no IPv6 way out",
		"fd00::5":        "no IPv6 way out",
		"127.0.0.1":      "with its port",
		"127.0.0.0/8":    "with its port",
		"10.0.2.0/24":    "slirp4netns's own network",
		"10.0.2.3":       "slirp4netns's own network",
		"10.0.0.0/33":    "not a network",
		"127.0.0.1:0":    "invalid port",
		"models.example": "not host:port",
	} {
		if _, _, err := ParseAllow(t.Context(), bad); err == nil || !strings.Contains(err.Error(), why) {
			t.Errorf("ParseAllow(%q) = %v, want an error saying %q", bad, err, why)
		}
	}
}

// TestRoutePlan: the networks a jobs' namespace refuses and those it
// routes out though a refused one covers them.
func TestRoutePlan(t *testing.T) {
	pp := netip.MustParsePrefix
	ps := func(s ...string) []netip.Prefix {
		var out []netip.Prefix
		for _, x := range s {
			out = append(out, pp(x))
		}
		return out
	}
	slirp := []string{"10.0.2.0/31", "10.0.2.4/30", "10.0.2.8/29", "10.0.2.16/28", "10.0.2.32/27", "10.0.2.64/26", "10.0.2.128/25"}
	base := []string{"0.0.0.0/8", "10.0.0.0/8", "100.64.0.0/10", "169.254.0.0/16", "172.16.0.0/12", "192.0.0.0/24", "192.168.0.0/16", "198.18.0.0/15", "224.0.0.0/4", "240.0.0.0/4"}
	with := func(extra ...string) []netip.Prefix {
		out := ps(append(append(append([]string(nil), base...), slirp...), extra...)...)
		sortPrefixes(out)
		return out
	}
	without := func(drop string, extra ...string) []netip.Prefix {
		return slices.DeleteFunc(with(extra...), func(p netip.Prefix) bool { return p == pp(drop) })
	}
	addrs := func(s ...string) []netip.Addr {
		var out []netip.Addr
		for _, x := range s {
			out = append(out, netip.MustParseAddr(x))
		}
		return out
	}
	for _, tc := range []struct {
		name          string
		allow         []netip.Prefix
		own           []netip.Addr
		refuse, reach []netip.Prefix
	}{
		{name: "nothing allowed", refuse: with()},
		{name: "the host's addresses: a public one refused, a private one covered already, loopback, IPv6 and slirp's skipped",
			own: addrs("192.0.2.2", "10.5.5.5", "127.0.0.1", "::ffff:203.0.113.9", "2001:db8::2", "10.0.2.15"), refuse: with("192.0.2.2/32", "203.0.113.9/32")},
		{name: "a private network allowed", allow: ps("10.1.2.0/24"), own: addrs("192.0.2.2"), refuse: with("192.0.2.2/32"), reach: ps("10.1.2.0/24")},
		{name: "a whole refused network allowed", allow: ps("10.0.0.0/8"), refuse: without("10.0.0.0/8")},
		{name: "the host's address allowed", allow: ps("192.0.2.2/32"), own: addrs("192.0.2.2"), refuse: with()},
		{name: "a network holding the host's address allowed", allow: ps("192.0.2.0/24", "10.1.0.0/16"), own: addrs("192.0.2.2", "10.1.0.9", "10.9.0.1"),
			refuse: with(), reach: ps("10.1.0.0/16")},
		{name: "everything allowed", allow: ps("0.0.0.0/0"), own: addrs("192.0.2.2"), refuse: ps(slirp...)},
		{name: "a public network allowed: routed already", allow: ps("8.8.8.0/24"), refuse: with()},
	} {
		refuse, reach := routePlan(tc.allow, tc.own)
		if diff := cmp.Diff(tc.refuse, refuse, cmp.Comparer(func(a, b netip.Prefix) bool { return a == b })); diff != "" {
			t.Errorf("%s: refused (-want +got):\n%s", tc.name, diff)
		}
		if diff := cmp.Diff(tc.reach, reach, cmp.Comparer(func(a, b netip.Prefix) bool { return a == b })); diff != "" {
			t.Errorf("%s: reached (-want +got):\n%s", tc.name, diff)
		}
	}
}

// TestJobResolvConf: a resolver of the host that jobs do not reach (on its
// loopback, or refused: a private address) is replaced by slirp4netns's,
// once; the rest is kept; a file without one is left.
func TestJobResolvConf(t *testing.T) {
	refuse, _ := routePlan(nil, nil)
	reached := func(a netip.Addr) bool {
		return a.Is4() && !slices.ContainsFunc(refuse, func(p netip.Prefix) bool { return p.Contains(a) })
	}
	for _, tc := range []struct {
		in, want string
		changed  bool
	}{
		{"nameserver 127.0.0.53\noptions edns0 trust-ad\nsearch lan\n", "nameserver 10.0.2.3\noptions edns0 trust-ad\nsearch lan\n", true},
		{"nameserver 127.0.0.1\nnameserver ::1\nnameserver 192.0.2.53\n", "nameserver 10.0.2.3\nnameserver 192.0.2.53\n", true},
		{"# generated\nnameserver 10.255.255.53\n", "# generated\nnameserver 10.0.2.3\n", true},
		{"nameserver 192.0.2.53\nnameserver fd00::53\n", "nameserver 192.0.2.53\nnameserver 10.0.2.3\n", true},
		{"# generated\nnameserver 198.51.100.53\n", "", false},
	} {
		got, changed := jobResolvConf([]byte(tc.in), reached)
		if changed != tc.changed || (changed && string(got) != tc.want) {
			t.Errorf("jobResolvConf(%q) = %q, %v; want %q, %v", tc.in, got, changed, tc.want, tc.changed)
		}
	}
}

// TestRelay: a connection accepted on a forwarded port reaches its
// target, both ways and to its end; a listener on a port that is not
// forwarded is refused; closing the relay closes what it relays.
func TestRelay(t *testing.T) {
	echo := listenEcho(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	fd := listenerFD(t, l)
	port := l.Addr().(*net.TCPAddr).Port
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	at := netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), uint16(port))
	r, err := startRelay([]int{fd}, map[netip.AddrPort]string{at: echo.Addr().String()}, log)
	if err != nil {
		t.Fatal(err)
	}
	c, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprintf(c, "hello\n")
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil || line != "hello\n" {
		t.Fatalf("relayed echo = %q, %v", line, err)
	}
	r.close()
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := c.Read(make([]byte, 1)); err == nil {
		t.Errorf("a relayed connection stayed open after the relay closed")
	}

	other, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := startRelay([]int{listenerFD(t, other)}, map[netip.AddrPort]string{at: echo.Addr().String()}, log); err == nil || !strings.Contains(err.Error(), "not forwarded") {
		t.Errorf("startRelay on a port that is not forwarded: %v", err)
	}
}

// listenerFD returns a duplicate descriptor of l's socket, and closes l.
func listenerFD(t *testing.T, l net.Listener) int {
	t.Helper()
	f, err := l.(*net.TCPListener).File()
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	l.Close()
	fd, err := syscall.Dup(int(f.Fd()))
	if err != nil {
		t.Fatal(err)
	}
	return fd
}

// listenEcho starts a TCP echo server on the loopback.
func listenEcho(t *testing.T) net.Listener {
	t.Helper()
	return testbin.Listen(t, "127.0.0.1:0", func(c net.Conn) { defer c.Close(); _, _ = io.Copy(c, c) })
}

// TestIsolatedNetworkResolver: where the host's resolver file names a
// resolver on its loopback (systemd-resolved's), which the namespace does
// not reach, jobs see one naming slirp4netns's, and cannot change it.
func TestIsolatedNetworkResolver(t *testing.T) { eachIsolation(t, testIsolatedNetworkResolver) }

func testIsolatedNetworkResolver(t *testing.T, pool bool) {
	host := t.TempDir() + "/resolv.conf"
	if err := os.WriteFile(host, []byte("nameserver 127.0.0.53\noptions edns0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	old := hostResolvConf
	hostResolvConf = host
	t.Cleanup(func() { hostResolvConf = old })
	d := networkDriver(t, pool)
	res, err := d.Run(t.Context(), drivers.Job{RunID: "resolver", Command: []string{"/bin/sh", "-c",
		`cat /etc/resolv.conf; echo x >> /etc/resolv.conf 2>/dev/null && echo written || echo refused`}})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if want := "nameserver 10.0.2.3\noptions edns0\nrefused\n"; res.Stdout != want {
		t.Errorf("the job's resolver file and its write: %q, want %q (stderr %s)", res.Stdout, want, res.StderrTail)
	}
}

// TestIsolatedNetworkSlirpFails: a slirp4netns that cannot set up the
// namespace fails the driver's check, saying so, and leaves nothing
// running.
func TestIsolatedNetworkSlirpFails(t *testing.T) {
	eachIsolation(t, func(t *testing.T, pool bool) {
		if pool && os.Geteuid() != 0 {
			t.Skip("the job server needs root")
		}
		dataDir := t.TempDir()
		iso := &Isolation{UIDs: &DefaultUIDs, Hide: []string{dataDir}}
		if !pool {
			uid, gid, err := ResolveUser("")
			if err != nil {
				t.Fatal(err)
			}
			iso = &Isolation{UID: uid, GID: gid, Hide: []string{dataDir}}
		}
		iso.Network = &Network{Slirp: "/bin/false"}
		d := newDriver(t, Options{Root: filepath.Join(dataDir, "work"), Isolate: iso})
		err := d.Check(t.Context())
		if err == nil || !strings.Contains(err.Error(), "slirp4netns could not connect the jobs' network namespace") {
			t.Fatalf("Check with a failing slirp4netns: %v", err)
		}
		if pid := d.serverPid(); pid != 0 {
			t.Errorf("a job server (pid %d) is left running", pid)
		}
	})
}

// TestRelayCapsConnections: a job holding connections open cannot exhaust
// the service's descriptors: past the cap the relay closes new ones at once,
// and takes them again once some end.
func TestRelayCapsConnections(t *testing.T) {
	defer func(n int) { maxRelayConns = n }(maxRelayConns)
	maxRelayConns = 2
	echo := listenEcho(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	at := netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), uint16(l.Addr().(*net.TCPAddr).Port))
	r, err := startRelay([]int{listenerFD(t, l)}, map[netip.AddrPort]string{at: echo.Addr().String()}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	defer r.close()
	relayed := func() (net.Conn, bool) {
		t.Helper()
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		_ = c.SetDeadline(time.Now().Add(10 * time.Second))
		fmt.Fprintf(c, "ping\n")
		line, err := bufio.NewReader(c).ReadString('\n')
		return c, err == nil && line == "ping\n"
	}
	var held []net.Conn
	for i := range maxRelayConns {
		c, ok := relayed()
		if !ok {
			t.Fatalf("connection %d of %d was not relayed", i+1, maxRelayConns)
		}
		held = append(held, c)
	}
	c, ok := relayed()
	c.Close()
	if ok {
		t.Fatalf("a connection past the cap of %d was relayed", maxRelayConns)
	}
	held[0].Close()
	testwait.Until(t, 10*time.Second, "a connection relayed again once one ended", func() bool {
		c, ok := relayed()
		c.Close()
		return ok
	})
	for _, c := range held[1:] {
		c.Close()
	}
}
