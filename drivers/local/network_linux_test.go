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
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"svc/drivers"
)

// networkDriver returns an isolated driver (on the job server when pool)
// whose jobs get the isolated network with fwd forwarded. It fails in CI,
// and skips elsewhere, when slirp4netns is missing or jobs cannot be
// isolated.
func networkDriver(t *testing.T, pool bool, fwd ...string) *Driver {
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
	iso.Network = &Network{Slirp: slirp, Forward: fwd}
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

// probeScript is a harness that tries to connect to each host:port given
// as NAME=HOST:PORT arguments and prints NAME-open or NAME-refused, then
// fetches http://$1/ (the API's forwarded address) and prints its status
// line.
const probeScript = `
api=$1; shift
for t in "$@"; do
  name=${t%%=*}; hp=${t#*=}; host=${hp%:*}; port=${hp##*:}
  if timeout 5 bash -c "exec 3<>/dev/tcp/$host/$port" 2>/dev/null; then echo "$name-open"; else echo "$name-refused"; fi
done
exec 3<>/dev/tcp/${api%:*}/${api##*:} || { echo api-refused; exit 0; }
printf 'GET /healthz HTTP/1.0\r\nHost: x\r\n\r\n' >&3
head -n 1 <&3 | tr -d '\r'
`

// TestIsolatedNetworkReach is issue 30's third finding at the driver: a
// job in the isolated network cannot connect to a service on the host's
// loopback (directly, or through slirp's alias of the host), while it
// reaches the forwarded API at the address it was given, and a host of
// the outside network.
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
	}
	want := []string{"loopback-refused", "slirp-host-refused"}
	if ip := hostAddress(); ip != "" {
		outside := listen(t, net.JoinHostPort(ip, "0"))
		targets = append(targets, "outside="+outside.Addr().String())
		want = append(want, "outside-open")
	} else {
		t.Log("this host has no non-loopback IPv4 address: the outside network is not checked")
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

// listen opens a TCP listener at addr that accepts and holds connections
// until the test ends.
func listen(t *testing.T, addr string) net.Listener {
	t.Helper()
	l, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			t.Cleanup(func() { c.Close() })
		}
	}()
	return l
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
	for _, tc := range []struct {
		fwd     []string
		listen  []string
		dial    map[int]string
		wantErr string
	}{
		{fwd: []string{"127.0.0.1:8080"}, listen: []string{"127.0.0.1:8080"}, dial: map[int]string{8080: "127.0.0.1:8080"}},
		{fwd: []string{"localhost:8080"}, listen: []string{"127.0.0.1:8080", "[::1]:8080"}, dial: map[int]string{8080: "localhost:8080"}},
		{fwd: []string{"[::1]:443", "127.0.0.2:80"}, listen: []string{"[::1]:443", "127.0.0.2:80"}, dial: map[int]string{443: "[::1]:443", 80: "127.0.0.2:80"}},
		{fwd: []string{"127.0.0.1:8080", "127.0.0.1:8080"}, listen: []string{"127.0.0.1:8080"}, dial: map[int]string{8080: "127.0.0.1:8080"}},
		{fwd: nil, dial: map[int]string{}},
		{fwd: []string{"127.0.0.1:8080", "localhost:8080"}, wantErr: "share port 8080"},
		{fwd: []string{"192.0.2.1:80"}, wantErr: "not on the host's loopback"},
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

// TestLoopbackForwards: which of the addresses jobs are told are on the
// host's loopback, and so forwarded.
func TestLoopbackForwards(t *testing.T) {
	got, err := LoopbackForwards(t.Context(), "http://127.0.0.1:8080", "", "http://localhost/judge-proxy/v1",
		"https://svc.example.invalid", "http://192.0.2.7:9000", "127.0.0.1:11434", "http://127.0.0.1:8080/x", "https://[::1]/")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"127.0.0.1:8080", "localhost:80", "127.0.0.1:11434", "[::1]:443"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("LoopbackForwards (-want +got):\n%s", diff)
	}
	for _, bad := range []string{"ftp://127.0.0.1", "127.0.0.1", "127.0.0.1:99999", "http://"} {
		if _, err := LoopbackForwards(t.Context(), bad); err == nil {
			t.Errorf("LoopbackForwards(%q) accepted it", bad)
		}
	}
}

// TestJobResolvConf: a loopback resolver of the host is replaced by
// slirp4netns's, once; the rest is kept; a file without one is left.
func TestJobResolvConf(t *testing.T) {
	for _, tc := range []struct {
		in, want string
		changed  bool
	}{
		{"nameserver 127.0.0.53\noptions edns0 trust-ad\nsearch lan\n", "nameserver 10.0.2.3\noptions edns0 trust-ad\nsearch lan\n", true},
		{"nameserver 127.0.0.1\nnameserver ::1\nnameserver 192.0.2.53\n", "nameserver 10.0.2.3\nnameserver 192.0.2.53\n", true},
		{"# generated\nnameserver 10.255.255.53\n", "", false},
	} {
		got, changed := jobResolvConf([]byte(tc.in))
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
	r, err := startRelay([]int{fd}, map[int]string{port: echo.Addr().String()}, log)
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
	if _, err := startRelay([]int{listenerFD(t, other)}, map[int]string{port: echo.Addr().String()}, log); err == nil || !strings.Contains(err.Error(), "not forwarded") {
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
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() { defer c.Close(); _, _ = io.Copy(c, c) }()
		}
	}()
	return l
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
