//go:build linux

package local

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"svc/drivers"
	"svc/drivers/local/shim"
	"svc/internal/platform/derrors"
	"svc/internal/testing/testwait"
)

// poolDriver returns a driver whose jobs run on the job server, its root
// in dataDir (hidden from the jobs); it skips when not root.
func poolDriver(t *testing.T, dataDir string) *Driver {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("the job server needs root")
	}
	return isolatedDriver(t, dataDir, true)
}

// TestPoolJobsAreApart: two jobs running at once on one server cannot
// read each other's area or secrets, see or signal each other's
// processes, see the server's, or read the service's data directory; and
// the only places a job writes are its area, /dev/shm and its devices.
func TestPoolJobsAreApart(t *testing.T) {
	dataDir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dataDir, "svc.db"), []byte("TENANT-DATA"), 0o644); err != nil {
		t.Fatal(err)
	}
	d := poolDriver(t, dataDir)
	shared := jobDir(t, d)

	// A publishes where it is, then waits for B to be done probing.
	a := make(chan error, 1)
	var resA drivers.Result
	go func() {
		var err error
		resA, err = d.Run(t.Context(), drivers.Job{
			RunID:   "apart-a",
			Secrets: map[string]string{"KEY": "A-SECRET-VALUE"},
			Command: sh(`echo A-PRIVATE > "$SVC_WORK_DIR/answer"
printf '%s %s %s\n' "$(dirname "$SVC_WORK_DIR")" $$ "$(id -u)" > "$SHARED/a.tmp" && mv "$SHARED/a.tmp" "$SHARED/a"
i=0; while [ ! -e "$SHARED/b.done" ] && [ $i -lt 3000 ]; do sleep 0.01; i=$((i+1)); done
id -u`),
			Env: map[string]string{"SHARED": shared},
		})
		a <- err
	}()
	testwait.Until(t, 30*time.Second, "job A to publish", func() bool {
		_, err := os.Stat(filepath.Join(shared, "a"))
		return err == nil
	})
	script := fmt.Sprintf(`read AREA APID AUID < "$SHARED/a"
cat "$AREA/secrets.json" 2>/dev/null || echo secrets-refused
cat "$AREA/work/answer" 2>/dev/null || echo area-refused
ls "$AREA" >/dev/null 2>&1 && echo area-listed || echo list-refused
[ -e /proc/$APID ] && echo proc-visible || echo proc-invisible
cat /proc/$APID/environ 2>/dev/null || echo environ-refused
kill -0 $APID 2>/dev/null && echo signal-sent || echo signal-refused
kill -0 1 2>/dev/null && echo server-signalled || echo server-refused
if [ -x /usr/bin/python3 ]; then
	/usr/bin/python3 -c 'import ctypes, sys; sys.exit(ctypes.CDLL(None).ptrace(16, int(sys.argv[1]), 0, 0) != -1)' $APID && echo ptrace-refused || echo ptrace-attached
else
	echo ptrace-refused # nothing here to try it with
fi
cat /proc/1/environ 2>/dev/null || echo server-environ-refused
cat %[1]q/svc.db 2>/dev/null || echo datadir-refused
ls %[2]q >/dev/null 2>&1 && echo root-listed || echo root-refused
[ "$(id -u)" != "$AUID" ] && echo own-uid || echo same-uid
for p in /proc/[0-9]*; do stat -c %%u "$p"; done | sort -u | grep -vx "$(id -u)" || echo only-own
touch /run/lock/svc-pool-probe 2>/dev/null && echo runlock-written || echo runlock-refused
echo x > /dev/null && echo devnull-ok
echo x > /dev/shm/probe && rm /dev/shm/probe && echo shm-ok
echo x > "$HOME/probe" && echo home-ok
touch "$SHARED/b.done"`, dataDir, d.Root())
	resB, err := d.Run(t.Context(), drivers.Job{RunID: "apart-b", Command: sh(script), Env: map[string]string{"SHARED": shared}})
	if err != nil {
		t.Fatalf("Run B: %v", err)
	}
	if err := <-a; err != nil {
		t.Fatalf("Run A: %v", err)
	}
	t.Logf("B's probe:\n%s%s", resB.Stdout, resB.StderrTail)
	want := "secrets-refused\narea-refused\nlist-refused\nproc-invisible\nenviron-refused\nsignal-refused\nserver-refused\nptrace-refused\nserver-environ-refused\ndatadir-refused\nroot-refused\nown-uid\nonly-own\nrunlock-refused\ndevnull-ok\nshm-ok\nhome-ok\n"
	if resB.Stdout != want {
		t.Errorf("B's probe printed\n%s\nwant\n%s", resB.Stdout, want)
	}
	for _, leak := range []string{"A-SECRET-VALUE", "A-PRIVATE", "TENANT-DATA"} {
		if strings.Contains(resB.Stdout+resB.StderrTail, leak) {
			t.Errorf("job B saw %s", leak)
		}
	}
	if resA.ExitCode != 0 {
		t.Errorf("job A: %+v", resA)
	}
}

// TestPoolUIDsDistinct: jobs running at the same time never share a uid,
// and a uid's lock is let go of when its job ends.
func TestPoolUIDsDistinct(t *testing.T) {
	d := poolDriver(t, t.TempDir())
	const jobs, inFlight = 48, 16
	type span struct {
		uid        int
		start, end int64 // ns, as the job saw them
	}
	spans := make([]span, jobs)
	work := make(chan int)
	var wg sync.WaitGroup
	for range inFlight {
		wg.Go(func() {
			for i := range work {
				res, err := d.Run(t.Context(), drivers.Job{
					RunID:   fmt.Sprint("uid-", i),
					Command: sh(`id -u; date +%s%N; sleep 0.05; date +%s%N`),
				})
				if err != nil {
					t.Errorf("Run %d: %v", i, err)
					continue
				}
				f := strings.Fields(res.Stdout)
				if len(f) != 3 {
					t.Errorf("job %d printed %q", i, res.Stdout)
					continue
				}
				uid, _ := strconv.Atoi(f[0])
				start, _ := strconv.ParseInt(f[1], 10, 64)
				end, _ := strconv.ParseInt(f[2], 10, 64)
				spans[i] = span{uid, start, end}
			}
		})
	}
	for i := range jobs {
		work <- i
	}
	close(work)
	wg.Wait()
	overlaps := 0
	uids := map[int]bool{}
	for i, a := range spans {
		if a.uid < DefaultUIDs.First || a.uid > DefaultUIDs.Last {
			t.Errorf("job %d ran as uid %d, outside the pool", i, a.uid)
		}
		uids[a.uid] = true
		for k := i + 1; k < jobs; k++ {
			b := spans[k]
			if a.start < b.end && b.start < a.end {
				overlaps++
				if a.uid == b.uid {
					t.Errorf("jobs %d and %d ran at the same time as uid %d", i, k, a.uid)
				}
			}
		}
	}
	if overlaps == 0 {
		t.Fatal("no two jobs ran at the same time: the test proves nothing")
	}
	t.Logf("%d overlapping pairs, %d uids", overlaps, len(uids))
	for uid := range uids {
		fd, err := syscall.Open(filepath.Join(UIDLockDir, strconv.Itoa(uid)), syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
		if err != nil {
			t.Fatal(err)
		}
		if err := syscall.Flock(fd, syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
			t.Errorf("uid %d is still locked after its job: %v", uid, err)
		}
		_ = syscall.Close(fd)
	}
}

// TestPoolServerDeath: a job whose server dies gets an error that is not
// the job's fault, and the next job starts a new server.
func TestPoolServerDeath(t *testing.T) {
	d := poolDriver(t, t.TempDir())
	first := d.serverPid()
	ready := make(chan struct{})
	var once sync.Once
	ended := make(chan error, 1)
	go func() {
		_, err := d.Run(t.Context(), drivers.Job{
			RunID:   "server-death",
			Command: sh(`echo ready; exec sleep 1000`),
			Log:     func(string, []byte) { once.Do(func() { close(ready) }) },
		})
		ended <- err
	}()
	<-ready
	if err := syscall.Kill(first, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	err := <-ended
	if err == nil || !strings.Contains(err.Error(), "job server died") || errors.Is(err, derrors.ErrInvalid) {
		t.Fatalf("Run = %v, want an error saying the job server died, not ErrInvalid", err)
	}
	assertAreaRemoved(t, d, "server-death")
	res, err := d.Run(t.Context(), drivers.Job{RunID: "after-death", Command: sh(`echo alive`)})
	if err != nil || res.Stdout != "alive\n" {
		t.Fatalf("the next Run: %+v, %v", res, err)
	}
	if pid := d.serverPid(); pid == first || pid == 0 {
		t.Errorf("server pid %d after the death of %d, want a new one", pid, first)
	}
}

// TestPoolSurvivesGarbage: malformed requests get refused; the server
// keeps running jobs.
func TestPoolSurvivesGarbage(t *testing.T) {
	d := poolDriver(t, t.TempDir())
	sp, err := d.server()
	if err != nil {
		t.Fatal(err)
	}
	devnull, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer devnull.Close()
	nul := int(devnull.Fd())
	// Ids the driver does not use for a while: a refusal of one would be
	// taken for an answer about a job of the driver.
	for _, m := range []struct {
		msg string
		fds []int
	}{
		{"", nil},
		{"{", nil},
		{"null", nil},
		{"[1,2]", []int{nul}},
		{`{"op":"start"}`, nil},
		{`{"op":"start","id":1000005}`, nil},
		{`{"op":"start","id":1000006,"path":"/bin/true","args":["true"],"dir":"/","uid":1879048200}`, []int{nul, nul}},
		{`{"op":"start","id":1000007,"path":"/bin/true","args":["true"],"dir":"/","uid":0}`, []int{nul, nul, nul}},
		{`{"op":"start","id":1000008,"path":"true","args":["true"],"dir":"/","uid":1879048200}`, []int{nul, nul, nul}},
		{`{"op":"start","id":1000009,"path":"/bin/true","args":[],"dir":"/","uid":1879048200}`, []int{nul, nul, nul}},
		{`{"op":"bogus","id":1000001}`, nil},
		{`{"op":"term","id":999}`, nil},
		{`{"op":"kill","id":1000001}`, []int{nul}},
		{`{"op":"kill","id":-1}`, nil},
		{strings.Repeat("\xff", 100<<10), nil},
	} {
		if _, _, err := sp.conn.WriteMsgUnix([]byte(m.msg), syscall.UnixRights(m.fds...), nil); err != nil && len(m.fds) > 0 {
			t.Fatalf("sending %q: %v", m.msg, err)
		} else if err != nil {
			if _, err := sp.conn.Write([]byte(m.msg)); err != nil {
				t.Fatalf("sending %q: %v", m.msg, err)
			}
		}
	}
	res, err := d.Run(t.Context(), drivers.Job{RunID: "after-garbage", Command: sh(`echo fine`)})
	if err != nil || res.Stdout != "fine\n" {
		t.Fatalf("Run after garbage: %+v, %v", res, err)
	}
	if got := d.serverPid(); got != sp.pid {
		t.Errorf("the server was replaced (%d, was %d)", got, sp.pid)
	}
}

// TestPoolRetryFromAnotherDriver: an attempt on another driver (as in
// another svc process on the host) kills the running attempt of the same
// run by the uid its lock file records.
func TestPoolRetryFromAnotherDriver(t *testing.T) {
	dataDir := t.TempDir()
	d1 := poolDriver(t, dataDir)
	d2 := poolDriver(t, dataDir)
	const runID = "run-elsewhere"
	ready := make(chan struct{})
	var once sync.Once
	type outcome struct {
		res drivers.Result
		err error
	}
	first := make(chan outcome, 1)
	go func() {
		res, err := d1.Run(t.Context(), drivers.Job{
			RunID:   runID,
			Command: sh(`echo ready; setsid sleep 1000 & exec sleep 1000`),
			Log:     func(string, []byte) { once.Do(func() { close(ready) }) },
		})
		first <- outcome{res, err}
	}()
	<-ready
	res, err := d2.Run(t.Context(), drivers.Job{RunID: runID, Command: sh(`echo second`)})
	if err != nil || res.Stdout != "second\n" {
		t.Fatalf("second attempt: %+v, %v; want stdout second", res, err)
	}
	o := <-first
	if o.err != nil || o.res.ExitCode != -1 {
		t.Errorf("first attempt: %+v, %v; want it killed (exit -1)", o.res, o.err)
	}
	assertOnlyServer(t, d1)
}

// TestPoolRetryAfterCrash: an attempt that finds the lock of its run free
// but a record of a job server there (its service died, the server is
// dying with it) kills that server before it starts.
func TestPoolRetryAfterCrash(t *testing.T) {
	dataDir := t.TempDir()
	crashed := poolDriver(t, dataDir)
	d := poolDriver(t, dataDir)
	const runID = "run-crashed"
	old := crashed.serverPid()
	start, _ := procStartTime(old)
	l := d.newLayout(runID, "")
	f, err := os.OpenFile(l.lock, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	if err := writePoolRecord(f, poolRecord{uid: DefaultUIDs.First, pid: old, startTime: start}); err != nil {
		t.Fatal(err)
	}
	f.Close()
	res, err := d.Run(t.Context(), drivers.Job{RunID: runID, Command: sh(`echo retried`)})
	if err != nil || res.Stdout != "retried\n" {
		t.Fatalf("Run: %+v, %v", res, err)
	}
	testwait.Until(t, 30*time.Second, "the recorded server to die", func() bool { return !running(old) })
	// Its driver starts another, once it has seen the server's socket
	// close: a job sent before that (the server's process is gone, but a
	// process of its namespace still holds the socket) is lost, and says
	// so.
	testwait.Until(t, 30*time.Second, "the driver to see its server dead", func() bool { return serverDead(crashed) })
	if res, err := crashed.Run(t.Context(), drivers.Job{RunID: "next", Command: sh(`echo next`)}); err != nil || res.Stdout != "next\n" {
		t.Fatalf("Run on the driver whose server was killed: %+v, %v", res, err)
	}
}

// serverDead reports whether the driver knows its job server is dead.
func serverDead(d *Driver) bool {
	d.srv.mu.Lock()
	sp := d.srv.cur
	d.srv.mu.Unlock()
	if sp == nil {
		return true
	}
	select {
	case <-sp.dead:
		return true
	default:
		return false
	}
}

// TestPoolRecord: the record an attempt leaves in its lock file.
func TestPoolRecord(t *testing.T) {
	path := filepath.Join(t.TempDir(), "lock")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString("a much longer previous content that must go\n"); err != nil {
		t.Fatal(err)
	}
	want := poolRecord{uid: 1879048200, pid: 4242, startTime: 123456789}
	if err := writePoolRecord(f, want); err != nil {
		t.Fatal(err)
	}
	if got, ok := readPoolRecord(path); !ok || got != want {
		t.Errorf("readPoolRecord = %+v, %v; want %+v", got, ok, want)
	}
	for _, bad := range []string{"", "12 34\n", "uid 0 5 6\n", "uid 5 1 6\n", "uid x y z"} {
		if err := os.WriteFile(path, []byte(bad), 0o600); err != nil {
			t.Fatal(err)
		}
		if got, ok := readPoolRecord(path); ok {
			t.Errorf("readPoolRecord(%q) = %+v, want none", bad, got)
		}
	}
}

// TestKillUID: the service's kill of a uid reaches that uid's processes
// and no other's, and leaves the calling process root.
func TestKillUID(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root")
	}
	// Held as a job's would be, so that no job of another svc on the
	// host has them.
	for _, uid := range []int{DefaultUIDs.Last - 1, DefaultUIDs.Last - 2, DefaultUIDs.Last - 3} {
		lockUID(t, uid)
	}
	victim, bystander := startAs(t, DefaultUIDs.Last-1), startAs(t, DefaultUIDs.Last-2)
	if err := shim.KillUID(DefaultUIDs.Last - 1); err != nil {
		t.Fatal(err)
	}
	testwait.Until(t, 30*time.Second, "the uid's process to die", func() bool { return !running(victim) })
	if !running(bystander) {
		t.Error("a process of another uid was killed")
	}
	if !shim.UIDAlive(DefaultUIDs.Last-2) || shim.UIDAlive(DefaultUIDs.Last-3) {
		t.Error("UIDAlive is wrong")
	}
	if os.Geteuid() != 0 || os.Getuid() != 0 {
		t.Errorf("the process is not root any more")
	}
}

// lockUID holds uid's lock until the test ends.
func lockUID(t *testing.T, uid int) {
	t.Helper()
	if err := os.MkdirAll(UIDLockDir, 0o700); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(filepath.Join(UIDLockDir, strconv.Itoa(uid)), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		t.Skipf("uid %d is in use: %v", uid, err)
	}
}

// startAs starts a sleep as uid and returns its pid; a cleanup kills it.
func startAs(t *testing.T, uid int) int {
	t.Helper()
	pid, err := syscall.ForkExec("/bin/sleep", []string{"sleep", "1000"}, &syscall.ProcAttr{
		Sys: &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(uid), Groups: []uint32{}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	reaped := make(chan struct{})
	go func() {
		var ws syscall.WaitStatus
		_, _ = syscall.Wait4(pid, &ws, 0, nil)
		close(reaped)
	}()
	t.Cleanup(func() {
		_ = syscall.Kill(pid, syscall.SIGKILL)
		<-reaped
	})
	return pid
}

// TestPoolCloseKillsJobs: Close ends the running jobs with the server,
// and later jobs fail.
func TestPoolCloseKillsJobs(t *testing.T) {
	d := poolDriver(t, t.TempDir())
	ready := make(chan struct{})
	var once sync.Once
	ended := make(chan error, 1)
	go func() {
		_, err := d.Run(context.Background(), drivers.Job{
			RunID:   "closed",
			Command: sh(`echo ready; exec sleep 1000`),
			Log:     func(string, []byte) { once.Do(func() { close(ready) }) },
		})
		ended <- err
	}()
	<-ready
	pid := d.serverPid()
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-ended; err == nil {
		t.Error("a job of a closed driver ended without an error")
	}
	if running(pid) {
		t.Error("the job server outlived Close")
	}
	if _, err := d.Run(t.Context(), drivers.Job{RunID: "late", Command: sh(`true`)}); !errors.Is(err, errServerClosed) {
		t.Errorf("Run after Close = %v, want %v", err, errServerClosed)
	}
}

// TestPoolServerUnresponsive: a server that answers nothing (stopped) is
// killed when a terminated job is overdue; the job gets an error, and the
// next job starts a new server.
func TestPoolServerUnresponsive(t *testing.T) {
	defer func(s time.Duration) { supervisorSlack = s }(supervisorSlack)
	supervisorSlack = 200 * time.Millisecond
	d := poolDriver(t, t.TempDir())
	stopped := d.serverPid()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var once sync.Once
	_, err := d.Run(ctx, drivers.Job{
		RunID:   "unresponsive",
		Command: sh(`echo ready; exec sleep 1000`),
		Log: func(string, []byte) {
			once.Do(func() {
				if err := syscall.Kill(stopped, syscall.SIGSTOP); err != nil {
					t.Error(err)
				}
				cancel()
			})
		},
	})
	if err == nil || !strings.Contains(err.Error(), "job server died") {
		t.Fatalf("Run = %v, want an error saying the job server died", err)
	}
	if running(stopped) {
		t.Errorf("the stopped server %d is still there", stopped)
	}
	res, err := d.Run(t.Context(), drivers.Job{RunID: "after-stop", Command: sh(`echo alive`)})
	if err != nil || res.Stdout != "alive\n" {
		t.Fatalf("the next Run: %+v, %v", res, err)
	}
}

// TestPoolLargeStart: a start as large as exec allows (1 MB of environment,
// over the default socket buffer) reaches the server; one larger than a
// message may be is refused as the job's fault.
func TestPoolLargeStart(t *testing.T) {
	d := poolDriver(t, t.TempDir())
	env := map[string]string{}
	for i := range 10 {
		env[fmt.Sprint("BIG", i)] = strings.Repeat("x", 100<<10)
	}
	res, err := d.Run(t.Context(), drivers.Job{RunID: "large", Command: sh(`printf %s "$BIG9" | wc -c`), Env: env})
	if err != nil || strings.TrimSpace(res.Stdout) != fmt.Sprint(100<<10) {
		t.Fatalf("Run: %+v, %v; want the 100 KiB variable", res, err)
	}
	huge := map[string]string{"HUGE": strings.Repeat("x", shim.MaxMessage)}
	if _, err := d.Run(t.Context(), drivers.Job{RunID: "huge", Command: sh(`true`), Env: huge}); !errors.Is(err, derrors.ErrInvalid) {
		t.Errorf("Run with %d bytes of environment = %v, want ErrInvalid", shim.MaxMessage, err)
	}
}

// TestPoolCleansShm: what a job leaves in the server's /dev/shm is gone
// when it ends, so that a later job with the same uid cannot read it.
func TestPoolCleansShm(t *testing.T) {
	d := poolDriver(t, t.TempDir())
	// The work areas' root, when it is on the host's /dev/shm, is bound
	// back into the server's: the one entry that is not the job's.
	root := ""
	if filepath.Dir(d.Root()) == "/dev/shm" {
		root = filepath.Base(d.Root())
	}
	res, err := d.Run(t.Context(), drivers.Job{RunID: "shm", Command: sh(`echo secret > /dev/shm/left; mkdir /dev/shm/dir && echo secret > /dev/shm/dir/f; ls /dev/shm | grep -vx "` + root + `"`)})
	if err != nil || res.Stdout != "dir\nleft\n" {
		t.Fatalf("Run: %+v, %v", res, err)
	}
	shm := fmt.Sprintf("/proc/%d/root/dev/shm", d.serverPid())
	ents, err := os.ReadDir(shm)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if e.Name() != root {
			t.Errorf("the job left %s in the server's /dev/shm", e.Name())
		}
	}
}

// TestPoolQuickExits: harnesses that exit at once, many started together
// (the server forks from several threads), each report their own exit
// code, even when one exits before its spawner has registered it, and
// while the jobs leave stray processes for the reaper.
func TestPoolQuickExits(t *testing.T) {
	d := poolDriver(t, t.TempDir())
	const jobs, inFlight = 96, 32
	work := make(chan int)
	var wg sync.WaitGroup
	for range inFlight {
		wg.Go(func() {
			for i := range work {
				cmd := []string{"/bin/sh", "-c", fmt.Sprintf("exit %d", i%7)}
				if i%3 == 0 {
					// A stray child re-parented to the server when the
					// harness exits.
					cmd = sh(fmt.Sprintf("(sleep 0.01 &) ; exit %d", i%7))
				}
				res, err := d.Run(t.Context(), drivers.Job{RunID: fmt.Sprint("quick-", i), Command: cmd})
				if err != nil {
					t.Errorf("Run %d: %v", i, err)
					continue
				}
				if res.ExitCode != i%7 {
					t.Errorf("job %d exited %d, want %d", i, res.ExitCode, i%7)
				}
			}
		})
	}
	for i := range jobs {
		work <- i
	}
	close(work)
	wg.Wait()
}
