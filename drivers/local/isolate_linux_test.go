//go:build linux

package local

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"svc/drivers"
	"svc/drivers/local/shim"
	"svc/internal/testing/testwait"
)

// isolatedDriver returns a driver that isolates jobs the way svc does,
// with dataDir hidden and the work areas where svc puts them: on the job server when pool is set, else each under
// a supervisor of its own as the default user. It fails in CI, and skips
// elsewhere, when this machine cannot isolate.
func isolatedDriver(t *testing.T, dataDir string, pool bool) *Driver {
	t.Helper()
	iso := &Isolation{UIDs: &DefaultUIDs, Hide: []string{dataDir}}
	if !pool {
		uid, gid, err := ResolveUser("")
		if err != nil {
			t.Fatalf("ResolveUser: %v", err)
		}
		iso = &Isolation{UID: uid, GID: gid, Hide: []string{dataDir}}
	}
	// The root svc would take: on a tmpfs where there is one.
	root, _ := DefaultRoot(dataDir)
	if strings.HasPrefix(root, shmDir+"/") {
		t.Cleanup(func() { _ = os.RemoveAll(root) })
	}
	d := newDriver(t, Options{Root: root, Isolate: iso})
	if err := d.Check(t.Context()); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("this CI machine cannot isolate jobs: %v", err)
		}
		t.Skipf("this machine cannot isolate jobs: %v", err)
	}
	return d
}

// eachIsolation runs f as a subtest per isolated mode: a supervisor per
// job ("user") and the job server ("pool").
func eachIsolation(t *testing.T, f func(t *testing.T, pool bool)) {
	t.Helper()
	for _, m := range []struct {
		name string
		pool bool
	}{{"user", false}, {"pool", true}} {
		t.Run(m.name, func(t *testing.T) { f(t, m.pool) })
	}
}

// jobProcesses lists the live host processes of run runID.
func jobProcesses(runID string) []int {
	var pids []int
	for _, p := range shim.Processes() {
		if !p.Zombie && shim.HasEnv(p.Pid, drivers.EnvRunID+"="+runID) {
			pids = append(pids, p.Pid)
		}
	}
	return pids
}

// TestIsolationHidesTheService is issue 11's first finding as a test: a
// harness reads the service's environment through /proc, its data
// directory, another run's work area, and signals the service; all fail,
// while its own work area stays writable.
func TestIsolationHidesTheService(t *testing.T) { eachIsolation(t, testIsolationHidesTheService) }

func testIsolationHidesTheService(t *testing.T, pool bool) {
	dataDir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dataDir, "svc.db"), []byte("TENANT-DATA"), 0o644); err != nil {
		t.Fatal(err)
	}
	d := isolatedDriver(t, dataDir, pool)
	t.Setenv("SVC_INTERNAL_TOKEN", "super-secret-token")

	// Another run, alive while the probe runs, with a file in its area.
	other := make(chan error, 1)
	go func() {
		_, err := d.Run(t.Context(), drivers.Job{RunID: "other-run", Command: sh(`echo OTHER-SECRET > "$SVC_WORK_DIR/answer"; sleep 3`)})
		other <- err
	}()
	otherArea := filepath.Join(d.Root(), "other-run", "work")
	testwait.Until(t, 30*time.Second, "the other run's file", func() bool {
		_, err := os.Stat(filepath.Join(otherArea, "answer"))
		return err == nil
	})

	self := os.Getpid()
	script := fmt.Sprintf(`
cat /proc/*/environ 2>/dev/null | tr '\0' '\n' | grep -c SVC_INTERNAL_TOKEN || true
if cat /proc/%[1]d/environ >/dev/null 2>&1; then echo environ-read; else echo environ-refused; fi
cat %[2]q/svc.db 2>/dev/null || echo datadir-refused
cat %[3]q/answer 2>/dev/null || echo other-refused
kill -0 %[1]d 2>/dev/null && echo signal-sent || echo signal-refused
echo x > /tmp/svc-isolation-probe 2>/dev/null && echo tmp-written || echo tmp-refused
echo ok > "$SVC_WORK_DIR/mine" && cat "$SVC_WORK_DIR/mine"
echo ok > "$TMPDIR/mine" && echo tmpdir-ok
id -u
ls /proc | grep -c '^[0-9]'
`, self, dataDir, otherArea)
	res, err := d.Run(t.Context(), drivers.Job{RunID: "probe-run", Command: sh(script)})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	lines := strings.Split(strings.TrimSpace(res.Stdout), "\n")
	t.Logf("probe output:\n%s\nstderr: %s", res.Stdout, res.StderrTail)
	if strings.Contains(res.Stdout+res.StderrTail, "super-secret-token") || strings.Contains(res.Stdout, "TENANT-DATA") || strings.Contains(res.Stdout, "OTHER-SECRET") {
		t.Fatalf("the job saw the service's secrets or files:\n%s", res.Stdout)
	}
	want := []string{"0", "environ-refused", "datadir-refused", "other-refused", "signal-refused", "tmp-refused", "ok", "tmpdir-ok"}
	if len(lines) < len(want)+2 {
		t.Fatalf("probe output has %d lines, want %d", len(lines), len(want)+2)
	}
	for i, w := range want {
		if lines[i] != w {
			t.Errorf("probe line %d = %q, want %q", i, lines[i], w)
		}
	}
	if uid, _ := strconv.Atoi(lines[len(want)]); uid == 0 && os.Geteuid() == 0 {
		t.Errorf("the job ran as root")
	}
	// The shell, its pipeline and the shim: nothing of the host.
	if n, _ := strconv.Atoi(lines[len(want)+1]); n > 6 {
		t.Errorf("the job sees %d processes in /proc, want only its own", n)
	}
	if _, err := os.Stat("/tmp/svc-isolation-probe"); err == nil {
		os.Remove("/tmp/svc-isolation-probe")
		t.Errorf("the job wrote to the host's /tmp")
	}
	if err := <-other; err != nil {
		t.Fatalf("other run: %v", err)
	}
	assertAreaRemoved(t, d, "probe-run")
}

// TestIsolationKillsTree: timeout, cancel and a normal exit leave no
// process of an isolated job behind, however it daemonised (a child, one
// in a session of its own, a double fork, and a daemon's double fork in a
// new session).
func TestIsolationKillsTree(t *testing.T) { eachIsolation(t, testIsolationKillsTree) }

func testIsolationKillsTree(t *testing.T, pool bool) {
	d := isolatedDriver(t, t.TempDir(), pool)
	const daemons = `sleep 1000 & setsid sleep 1000 & (sh -c 'sleep 1000 &' &)
setsid sh -c '(sh -c "sleep 1000 &" &); exec sleep 1000' > /dev/null 2>&1 < /dev/null &
echo ready`
	for _, tc := range []struct {
		name    string
		script  string
		timeout time.Duration
		cancel  bool
	}{
		{"exit", daemons, 0, false},
		{"timeout", daemons + "; sleep 1000", 500 * time.Millisecond, false},
		{"cancel", daemons + "; sleep 1000", 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			runID := "tree-" + tc.name
			j := drivers.Job{RunID: runID, Command: sh(tc.script), Timeout: tc.timeout}
			if tc.cancel {
				var once sync.Once
				j.Log = func(string, []byte) {
					// Once the daemons are there (the double forks may
					// still be on their way), or after a while.
					once.Do(func() {
						go func() {
							for deadline := time.Now().Add(10 * time.Second); len(jobProcesses(runID)) < 7 && time.Now().Before(deadline); {
								time.Sleep(10 * time.Millisecond)
							}
							cancel()
						}()
					})
				}
			}
			res, err := d.Run(ctx, j)
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
			if res.Stdout != "ready\n" || res.TimedOut != (tc.timeout > 0) || res.Cancelled != tc.cancel {
				t.Errorf("Run = %+v, want stdout ready, timed out %v, cancelled %v", res, tc.timeout > 0, tc.cancel)
			}
			if left := jobProcesses(runID); len(left) > 0 {
				t.Errorf("processes %v of the job outlived it", left)
			}
			assertOnlyServer(t, d)
		})
	}
}

// TestIsolationParentDeath: SIGKILL of the service kills an isolated job's
// whole PID namespace: its supervisor's, or the job server's with every
// job it runs.
func TestIsolationParentDeath(t *testing.T) { eachIsolation(t, testIsolationParentDeath) }

func testIsolationParentDeath(t *testing.T, pool bool) {
	dataDir := t.TempDir()
	isolatedDriver(t, dataDir, pool) // skips where isolation is impossible
	how, runs := "user", []string{"parent-death"}
	if pool {
		how, runs = "pool", []string{"parent-death", "parent-death-2"}
	}
	svc := startService(t, filepath.Join(dataDir, "work"), "/dev/null", how)
	testwait.Until(t, 30*time.Second, "the jobs' trees", func() bool {
		svc.running(t)
		for _, run := range runs {
			if len(jobProcesses(run)) < treePids {
				return false
			}
		}
		return true
	})
	var supervisors []int // the service's children: shims, or the job server
	for _, p := range shim.Processes() {
		if p.Ppid == svc.cmd.Process.Pid {
			supervisors = append(supervisors, p.Pid)
		}
	}
	if len(supervisors) == 0 {
		t.Fatal("the service has no supervisor")
	}
	svc.kill(t)
	for _, run := range runs {
		testwait.Until(t, 30*time.Second, "every process of "+run+" to die with the service", func() bool { return len(jobProcesses(run)) == 0 })
	}
	for _, pid := range supervisors {
		testwait.Until(t, 30*time.Second, fmt.Sprintf("supervisor %d to die with the service", pid), func() bool { return !running(pid) })
	}
}

func TestResolveUser(t *testing.T) {
	for _, tc := range []struct {
		spec    string
		wantErr bool
	}{
		{"0", true},
		{"0:0", true},
		{"no-such-user-here", true},
	} {
		if _, _, err := ResolveUser(tc.spec); (err != nil) != tc.wantErr {
			t.Errorf("ResolveUser(%q) error = %v, want error %v", tc.spec, err, tc.wantErr)
		}
	}
	if os.Geteuid() == 0 {
		uid, gid, err := ResolveUser("4242:4243")
		if err != nil || uid != 4242 || gid != 4243 {
			t.Errorf("ResolveUser(4242:4243) = %d, %d, %v", uid, gid, err)
		}
	}
}
