package e2e

import (
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"svc/drivers/local"
	"svc/internal/domain/eval"
	"svc/internal/testing/testbin"
	"svc/internal/testing/testwait"
	"svc/store/pgtest"
)

// isolationProbe is a harness that tries, as issue 11 found a harness
// could, to read the service's environment (SVC_INTERNAL_TOKEN through
// /proc), its data directory, another run's work area, and to signal the
// service. It prints one verdict per attempt, then "done".
const isolationProbe = `
if cat /proc/*/environ 2>/dev/null | tr '\0' '\n' | grep -q '^SVC_INTERNAL_TOKEN='; then echo env-read; else echo env-refused; fi
if cat %[1]q/svc.db >/dev/null 2>&1; then echo data-read; else echo data-refused; fi
if cat %[4]q/%[2]s/work/answer >/dev/null 2>&1; then echo area-read; else echo area-refused; fi
if kill -0 %[3]d 2>/dev/null; then echo signal-sent; else echo signal-refused; fi
if kill -9 %[3]d 2>/dev/null; then echo kill-sent; else echo kill-refused; fi
echo done
`

// TestLocalJobsCannotReachTheService runs the probe through the real
// binary while another run is alive: every attempt fails.
func TestLocalJobsCannotReachTheService(t *testing.T) {
	dataDir, scripts := t.TempDir(), jobDir(t)
	svc := start(t, devEnv(dataDir, "SVC_INTERNAL_TOKEN=e2e-internal-token-value"), true, "dev")

	sleeper := filepath.Join(scripts, "sleeper.sh")
	if err := os.WriteFile(sleeper, []byte("echo private > \"$SVC_WORK_DIR/answer\"\nsleep 30\necho slept\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	register := func(id, script string) {
		h := map[string]any{"id": id, "version": "1.0.0", "kind": "process", "command": []string{"/bin/sh", script}}
		if code := call(t, "POST", svc.URL+"/harnesses", h, nil); code != 201 {
			t.Fatalf("POST /harnesses %s = %d, want 201", id, code)
		}
	}
	register("sleeper", sleeper)
	submit := func(harness string) string {
		body := map[string]any{"harness": map[string]string{"id": harness, "version": "1.0.0"},
			"case": map[string]any{"id": "c", "task": "t", "timeoutSec": 60}}
		var run eval.Run
		if code := call(t, "POST", svc.URL+"/runs", body, &run); code != 202 {
			t.Fatalf("POST /runs %s = %d, want 202", harness, code)
		}
		return run.ID
	}
	other := submit("sleeper")
	// Where svc dev puts the work areas: a tmpfs when there is one.
	root, _ := local.DefaultRoot(dataDir)
	testwait.Until(t, time.Minute, "the other run's answer file", func() bool {
		_, err := os.Stat(filepath.Join(root, other, "work", "answer"))
		return err == nil
	})

	probe := filepath.Join(scripts, "probe.sh")
	if err := os.WriteFile(probe, fmt.Appendf(nil, isolationProbe, dataDir, other, svc.cmd.Process.Pid, root), 0o755); err != nil {
		t.Fatal(err)
	}
	register("probe", probe)
	id := submit("probe")
	var run eval.Run
	testwait.Until(t, time.Minute, "the probe run to end", func() bool {
		if code := call(t, "GET", svc.URL+"/runs/"+id, nil, &run); code != 200 {
			t.Fatalf("GET /runs/%s = %d", id, code)
		}
		return run.Status.Terminal()
	})
	if run.Result == nil || run.Result.Evidence == nil {
		t.Fatalf("probe run %s ended without a result: %+v", run.Status, run.Error)
	}
	got := strings.Fields(run.Result.Evidence.FinalAnswer)
	want := []string{"env-refused", "data-refused", "area-refused", "signal-refused", "kill-refused", "done"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("the probe answered %q, want %q", got, want)
	}
	if strings.Contains(run.Result.Evidence.FinalAnswer, "e2e-internal-token-value") {
		t.Errorf("the internal token reached a job")
	}
	// The service is alive and answers.
	if code := call(t, "GET", svc.URL+"/healthz", nil, nil); code != 200 {
		t.Errorf("GET /healthz after the probe = %d, want 200", code)
	}
}

// portProbe is a harness that tries, for each NAME=HOST:PORT in its
// script, a TCP connection within 2 s and prints how it went: NAME-open,
// or NAME-denied (EACCES: a prohibit route of the jobs' namespace),
// -unreachable (no route; or no IPv6), -refused (nothing listens),
// -timeout. With the prefix out: it prints NAME-out when the connection
// was not denied. route:NAME=ADDR prints what the namespace's routes do
// with ADDR (ip route get): NAME-routed through slirp4netns's gateway, or
// NAME-denied. It then asks the API for /healthz at the host and port of
// the OTLP endpoint it was given and prints "api" and the status line.
const portProbe = `#!/bin/bash
for t in %s; do
  case $t in
  route:*)
    t=${t#route:}; name=${t%%%%=*}; out=$(ip route get "${t#*=}" 2>&1)
    case $out in
    *" via 10.0.2.2 "*) echo "$name-routed" ;;
    *"Permission denied"*) echo "$name-denied" ;;
    *) echo "$name-other: $out" ;;
    esac
    continue ;;
  esac
  mode=; case $t in out:*) mode=out; t=${t#out:} ;; esac
  name=${t%%%%=*}; hp=${t#*=}; host=${hp%%:*}; port=${hp##*:}
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
hp=${OTEL_EXPORTER_OTLP_ENDPOINT#http://}; hp=${hp%%%%/*}
if exec 3<>"/dev/tcp/${hp%%:*}/${hp##*:}"; then
  printf 'GET /healthz HTTP/1.0\r\nHost: %%s\r\n\r\n' "$hp" >&3
  echo "api $(head -n 1 <&3 | tr -d '\r')"
else
  echo api-refused
fi
`

var temporalLine = regexp.MustCompile(`Temporal on (127\.0\.0\.1:\d+)`)

// needSlirp skips the test where slirp4netns is not installed (svc dev
// would fall back to the host's network, saying so), and fails it in CI.
func needSlirp(t *testing.T) {
	t.Helper()
	if local.FindSlirp() == "" {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s is not installed on this CI machine (.ci/run installs it)", local.SlirpName)
		}
		t.Skipf("%s is not installed (apt-get install %[1]s): jobs get the host's network", local.SlirpName)
	}
}

// haveIP reports whether iproute2's ip is installed (jobs see the host's
// /usr), for the probe's route: checks.
func haveIP() bool {
	_, err := exec.LookPath("ip")
	return err == nil
}

// TestLocalJobsCannotReachServicePorts is issue 30's third finding through
// the binary: a local job connects to nothing the service or the host
// listens on at the loopback (the embedded Temporal frontend, every other
// port svc dev listens on, pprof, a PostgreSQL of the host, a listener the
// test opens), nor, refused at once, to the host's own non-loopback
// address, the cloud metadata service (169.254.169.254, fd00:ec2::254) or
// a private network, while the API answers at the OTLP endpoint the job
// is told and public addresses are routed out.
func TestLocalJobsCannotReachServicePorts(t *testing.T) {
	needSlirp(t)
	dataDir, scripts := t.TempDir(), jobDir(t)
	apiPort, pprofPort := freePort(t), freePort(t)
	pg, err := url.Parse(pgtest.URL(t))
	if err != nil {
		t.Fatal(err)
	}
	svc := start(t, devEnv(dataDir, "SVC_ADDR=127.0.0.1:"+apiPort, "SVC_HARNESS_OTLP_ENDPOINT=http://127.0.0.1:"+apiPort,
		"SVC_PPROF_ADDR=127.0.0.1:"+pprofPort), true, "dev")
	m := temporalLine.FindStringSubmatch(svc.Stdout())
	if m == nil {
		t.Fatalf("svc dev did not print Temporal's address: %s", svc.Stdout())
	}

	targets := []string{"temporal=" + m[1], "pprof=127.0.0.1:" + pprofPort, "postgres=" + pg.Host}
	want := []string{"temporal-refused", "pprof-refused", "postgres-refused"}
	// Every other port svc listens on (Temporal's own services, say).
	for _, port := range listeningPorts(t, svc.cmd.Process.Pid) {
		if port == apiPort || "127.0.0.1:"+port == m[1] || port == pprofPort {
			continue
		}
		targets = append(targets, "svc"+port+"=127.0.0.1:"+port)
		want = append(want, "svc"+port+"-refused")
	}
	mine := acceptAll(t, "127.0.0.1:0")
	targets = append(targets, "loopback="+mine)
	want = append(want, "loopback-refused")
	if ip := outsideAddress(); ip != "" {
		// A service of this host listening on its own non-loopback address
		// (all interfaces, say).
		targets = append(targets, "host="+acceptAll(t, net.JoinHostPort(ip, "0")))
		want = append(want, "host-denied")
	} else {
		t.Log("this host has no non-loopback IPv4 address: its own addresses are not checked")
	}
	targets = append(targets, "metadata=169.254.169.254:80", "private=10.1.2.3:8000", "cgnat=100.64.0.1:80", "metadata6=fd00:ec2::254:80")
	want = append(want, "metadata-denied", "private-denied", "cgnat-denied", "metadata6-unreachable")
	if haveIP() {
		targets = append(targets, "route:public=8.8.8.8")
		want = append(want, "public-routed")
	} else {
		targets = append(targets, "out:public=8.8.8.8:53")
		want = append(want, "public-out")
	}
	want = append(want, "api HTTP/1.0 200 OK")
	if diff := cmp.Diff(want, probePorts(t, svc, scripts, targets)); diff != "" {
		t.Errorf("what a local job reached (-want +got):\n%s", diff)
	}
}

// TestLocalJobsReachWhatTheOperatorAllows: SVC_LOCAL_NETWORK_ALLOW through
// the binary: the host's own address and a private network allowed as
// networks are routed to (a listener on the host's address answers), a
// private service allowed by port is relayed, that port only, and the
// rest of the private networks and the metadata service stay refused.
func TestLocalJobsReachWhatTheOperatorAllows(t *testing.T) {
	needSlirp(t)
	dataDir, scripts := t.TempDir(), jobDir(t)
	apiPort := freePort(t)
	allow := []string{"10.1.2.0/24", "10.9.8.7:8000"}
	var targets, want []string
	if ip := outsideAddress(); ip != "" {
		allow = append(allow, ip)
		targets = append(targets, "host="+acceptAll(t, net.JoinHostPort(ip, "0")))
		want = append(want, "host-open")
	} else {
		t.Log("this host has no non-loopback IPv4 address: allowing its own addresses is not checked")
	}
	svc := start(t, devEnv(dataDir, "SVC_ADDR=127.0.0.1:"+apiPort, "SVC_HARNESS_OTLP_ENDPOINT=http://127.0.0.1:"+apiPort,
		"SVC_LOCAL_NETWORK_ALLOW="+strings.Join(allow, ",")), true, "dev")
	targets = append(targets, "out:allowed=10.1.2.3:8000", "relayed=10.9.8.7:8000", "relayed-other-port=10.9.8.7:8001",
		"private=10.1.3.3:8000", "metadata=169.254.169.254:80")
	want = append(want, "allowed-out", "relayed-open", "relayed-other-port-refused", "private-denied", "metadata-denied")
	if haveIP() {
		targets = append(targets, "route:allowed=10.1.2.3")
		want = append(want, "allowed-routed")
	}
	want = append(want, "api HTTP/1.0 200 OK")
	if diff := cmp.Diff(want, probePorts(t, svc, scripts, targets)); diff != "" {
		t.Errorf("what a local job reached (-want +got):\n%s", diff)
	}
}

// probePorts runs portProbe over targets as a run of svc (its harness in
// scripts) and returns the lines it printed.
func probePorts(t *testing.T, svc *proc, scripts string, targets []string) []string {
	t.Helper()
	probe := filepath.Join(scripts, "ports.sh")
	if err := os.WriteFile(probe, fmt.Appendf(nil, portProbe, strings.Join(targets, " ")), 0o755); err != nil {
		t.Fatal(err)
	}
	run := probeRun(t, svc.URL, "ports", []string{"/bin/bash", probe})
	return strings.Split(strings.TrimSpace(run.Result.Evidence.FinalAnswer), "\n")
}

// listeningPorts returns the TCP ports the process pid listens on.
func listeningPorts(t *testing.T, pid int) []string {
	t.Helper()
	inodes := map[string]bool{}
	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, fd := range fds {
		if l, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", pid, fd.Name())); err == nil {
			if ino, ok := strings.CutPrefix(l, "socket:["); ok {
				inodes[strings.TrimSuffix(ino, "]")] = true
			}
		}
	}
	var ports []string
	for _, f := range []string{"tcp", "tcp6"} {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/net/%s", pid, f))
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(b), "\n")[1:] {
			// sl local_address rem_address st ... inode
			fs := strings.Fields(line)
			if len(fs) < 10 || fs[3] != "0A" || !inodes[fs[9]] {
				continue
			}
			_, hexPort, _ := strings.Cut(fs[1], ":")
			if p, err := strconv.ParseUint(hexPort, 16, 16); err == nil && !slices.Contains(ports, strconv.Itoa(int(p))) {
				ports = append(ports, strconv.Itoa(int(p)))
			}
		}
	}
	if len(ports) == 0 {
		t.Fatalf("found no port svc (pid %d) listens on", pid)
	}
	return ports
}

// acceptAll listens at addr, accepting and holding connections until the
// test ends, and returns its address.
func acceptAll(t *testing.T, addr string) string {
	t.Helper()
	return testbin.Listen(t, addr, nil).Addr().String()
}

// outsideAddress returns an IPv4 address of this host that is not on the
// loopback (which the isolated network refuses unless allowed), or "".
func outsideAddress() string {
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
