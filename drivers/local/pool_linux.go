//go:build linux

package local

// The driver's side of the job server (package shim, serve_linux.go): one
// svc-shim per Driver, started on the first job and again after it died,
// that forks every harness as a uid of its own from Isolation.UIDs.

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"svc/drivers"
	"svc/drivers/local/shim"
	"svc/internal/platform/derrors"
)

// UIDLockDir holds one lock file per uid of a pool: a uid is a job's while
// an flock on UIDLockDir/<uid> is held, by the job server that runs it and
// by the driver until the job's area is gone. Every svc process of the
// host uses the same directory, so that no two jobs ever share a uid.
const UIDLockDir = "/run/svc-local-uids"

// Bounds on waits that only a broken job server could make long.
const (
	// serverStartTimeout bounds a job server's start and isolation.
	serverStartTimeout = 30 * time.Second
	// serverCloseTimeout bounds Close's wait for the server to exit.
	serverCloseTimeout = 10 * time.Second
)

// errServerClosed is a job that arrives after Close.
var errServerClosed = errors.New("local driver: the driver is closed")

// jobServer is a Driver's job server, when it has one, and what goes with
// it: the uids its jobs hold and its running attempts by run.
type jobServer struct {
	mu       sync.Mutex
	cur      *serverProc // nil before the first job and after Close
	closed   bool
	prepared bool // the root's modes set and stale areas removed

	uidMu sync.Mutex
	held  map[int]bool // uids leased by this driver
	base  int          // where in the range this driver starts looking

	activeMu sync.Mutex
	active   map[string]activeJob // by area name
}

// activeJob is the running attempt of a run on a job server.
type activeJob struct {
	sp *serverProc
	id uint64
}

// serverProc is one running job server.
type serverProc struct {
	conn      *net.UnixConn
	proc      *os.Process
	pid       int
	startTime uint64 // from /proc/<pid>/stat, to tell it from a reused pid
	log       *slog.Logger
	iso       *shim.Isolation // what it set up

	nextID atomic.Uint64
	mu     sync.Mutex
	jobs   map[uint64]chan shim.Event

	ready   chan readyMsg // the server's first word: ready or why not
	exited  chan struct{} // closed when the process has been waited for
	exitErr error         // set before exited is closed
	dead    chan struct{} // closed after exited, once every event is read
	deadErr error         // set before dead is closed

	cleanMu sync.Mutex
	cleaned bool     // the cleanups have run
	cleanup []func() // run once the process is gone, before dead closes
}

// onExit runs f once the server's process is gone, before dead closes
// (at once if it is gone already): what lives as long as the server
// (its slirp4netns, the relay from its namespace) goes with it.
func (sp *serverProc) onExit(f func()) {
	sp.cleanMu.Lock()
	if !sp.cleaned {
		sp.cleanup = append(sp.cleanup, f)
		sp.cleanMu.Unlock()
		return
	}
	sp.cleanMu.Unlock()
	f()
}

// readyMsg is the server's first event and the descriptors that came
// with it (the isolated network's listening sockets).
type readyMsg struct {
	ev  shim.Event
	fds []int
}

// pooled reports whether jobs run on the job server.
func (d *Driver) pooled() bool { return d.isolate != nil && d.isolate.UIDs != nil }

// server returns the running job server, starting one if there is none.
func (d *Driver) server() (*serverProc, error) {
	p := &d.srv
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil, errServerClosed
	}
	if sp := p.cur; sp != nil {
		select {
		case <-sp.dead:
		default:
			return sp, nil
		}
	}
	sp, err := d.startServer()
	if err != nil {
		return nil, err
	}
	p.cur = sp
	return sp, nil
}

// serverPid returns the host pid of the running job server, 0 when none.
func (d *Driver) serverPid() int {
	d.srv.mu.Lock()
	defer d.srv.mu.Unlock()
	if d.srv.cur == nil {
		return 0
	}
	return d.srv.cur.pid
}

// Close stops the job server, if the driver has one, killing every job
// it still runs, and makes later jobs fail. A driver without a server has
// nothing to close.
func (d *Driver) Close() error {
	p := &d.srv
	p.mu.Lock()
	p.closed = true
	sp := p.cur
	p.cur = nil
	p.mu.Unlock()
	if sp == nil {
		return nil
	}
	// EOF makes the server kill everything and exit.
	_ = sp.conn.Close()
	select {
	case <-sp.dead:
		return nil
	case <-time.After(serverCloseTimeout):
		_ = sp.proc.Kill()
		return fmt.Errorf("local driver: the job server (pid %d) did not exit; killed it", sp.pid)
	}
}

// startServer starts a job server and waits until it has isolated itself.
func (d *Driver) startServer() (*serverProc, error) {
	if os.Geteuid() != 0 {
		return nil, fmt.Errorf("local driver: the job server needs svc to run as root to run jobs as uids of their own; run svc as root, or set SVC_LOCAL_USER")
	}
	if err := d.prepareRoot(); err != nil {
		return nil, err
	}
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_SEQPACKET|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("local driver: creating the job server's socket: %w", err)
	}
	// A start request carries the harness's argv and environment in one
	// datagram: let it be as large as exec allows (root may exceed
	// net.core.wmem_max).
	if syscall.SetsockoptInt(fds[0], syscall.SOL_SOCKET, syscall.SO_SNDBUFFORCE, shim.MaxMessage) != nil {
		_ = syscall.SetsockoptInt(fds[0], syscall.SOL_SOCKET, syscall.SO_SNDBUF, shim.MaxMessage)
	}
	mine := os.NewFile(uintptr(fds[0]), "job server")
	theirs := os.NewFile(uintptr(fds[1]), "job server socket")
	defer theirs.Close()
	c, err := net.FileConn(mine)
	_ = mine.Close()
	if err != nil {
		return nil, fmt.Errorf("local driver: the job server's socket: %w", err)
	}
	conn, ok := c.(*net.UnixConn)
	if !ok {
		_ = c.Close()
		return nil, fmt.Errorf("local driver: the job server's socket is a %T", c)
	}
	cmd := d.serverCommand(theirs)
	sp := &serverProc{
		conn:   conn,
		log:    d.log,
		iso:    d.serverIsolation(),
		jobs:   map[uint64]chan shim.Event{},
		ready:  make(chan readyMsg, 1),
		exited: make(chan struct{}),
		dead:   make(chan struct{}),
	}
	if err := d.netIsolation(sp.iso); err != nil {
		_ = conn.Close()
		return nil, err
	}
	exited, err := startHeld(cmd)
	if err != nil {
		_ = conn.Close()
		hint := ""
		if errors.Is(err, syscall.EPERM) {
			hint = " (new PID and mount namespaces need CAP_SYS_ADMIN: run svc as root outside a restricted container, or set SVC_LOCAL_USER)"
		}
		return nil, fmt.Errorf("local driver: starting the job server %s: %w%s", cmd.Path, err, hint)
	}
	go func() {
		sp.exitErr = <-exited
		close(sp.exited)
	}()
	sp.proc, sp.pid = cmd.Process, cmd.Process.Pid
	sp.startTime, _ = procStartTime(sp.pid)
	go sp.read()
	if d.netIsolated() {
		// The server's namespace connected to the outside before it
		// starts any job; gone with the server.
		sl, err := d.startSlirp(sp.pid, false)
		if err != nil {
			sp.kill()
			return nil, err
		}
		sp.onExit(sl.stop)
	}

	cfg, err := json.Marshal(shim.Config{
		KillGrace: d.killGrace,
		Isolate:   sp.iso,
		Serve:     &shim.ServeConfig{FirstUID: d.isolate.UIDs.First, LastUID: d.isolate.UIDs.Last},
	})
	if err == nil {
		_, err = conn.Write(cfg)
	}
	if err != nil {
		sp.kill()
		return nil, fmt.Errorf("local driver: configuring the job server: %w", err)
	}
	timer := time.NewTimer(serverStartTimeout)
	defer timer.Stop()
	select {
	case m := <-sp.ready:
		if ev := m.ev; ev.Error != "" || !ev.Ready {
			closeFDs(m.fds)
			sp.kill()
			return nil, fmt.Errorf("local driver: %s", cmp.Or(ev.Error, "the job server did not start"))
		}
		if len(sp.iso.Listen) > 0 {
			r, err := startRelay(m.fds, d.net.dial, d.log)
			if err != nil {
				sp.kill()
				return nil, err
			}
			sp.onExit(r.close)
		} else {
			closeFDs(m.fds)
		}
		return sp, nil
	case <-sp.dead:
		return nil, fmt.Errorf("local driver: the job server exited before it was ready (%v)", sp.deadErr)
	case <-timer.C:
		sp.kill()
		return nil, fmt.Errorf("local driver: the job server was not ready after %v", serverStartTimeout)
	}
}

// serverCommand returns the command that starts a job server on socket:
// PID 1 of new PID and mount namespaces, killed with the service.
func (d *Driver) serverCommand(socket *os.File) *exec.Cmd {
	path := d.shimPath
	if path == "" {
		path = "/proc/self/exe"
		warnFallback.Do(func() {
			d.log.Warn("local driver: " + ShimName + " not found beside the service or on PATH; the job server is the service re-executed, which costs more memory and start-up time (make build installs it)")
		})
	}
	flags := uintptr(syscall.CLONE_NEWPID | syscall.CLONE_NEWNS)
	if d.netIsolated() {
		// The jobs' network namespace, one for all of them.
		flags |= syscall.CLONE_NEWNET
	}
	return &exec.Cmd{
		Path: path,
		Args: []string{shim.ServerArg0},
		Env: []string{
			shim.Marker + "=1",
			"GORACE=" + strings.TrimSpace(os.Getenv("GORACE")+" atexit_sleep_ms=0"),
			// The reader, the reaper, the spawner and the killer each
			// block in system calls; two threads run the rest.
			"GOMAXPROCS=2",
		},
		Dir:        "/",
		ExtraFiles: []*os.File{socket},
		Stderr:     &logWriter{log: d.log},
		SysProcAttr: &syscall.SysProcAttr{
			Setsid:     true,
			Pdeathsig:  syscall.SIGKILL,
			Cloneflags: flags,
		},
	}
}

// logWriter logs what the job server writes to its stderr (a panic, say).
type logWriter struct{ log *slog.Logger }

func (w *logWriter) Write(p []byte) (int, error) {
	w.log.Warn("local driver: the job server says", "stderr", strings.TrimSpace(string(p)))
	return len(p), nil
}

// serverIsolation is what the job server sets up once for all its jobs:
// the data directories, the service's home and any directory on the way
// to the root that the jobs' uids cannot search hidden; the root, where
// the areas are, bound back (it is 0711 and each area 0700, owned by its
// job's uid); /tmp and /var/tmp read-only; a /dev/shm of the server's; a
// /proc of its PID namespace where each job sees only its own uid.
func (d *Driver) serverIsolation() *shim.Isolation {
	return &shim.Isolation{
		Hide:       d.hiddenFromJobs(),
		Area:       d.root,
		PrivateTmp: true,
		UID:        -1,
		GID:        -1,
		ReadOnly:   true,
		HidePid:    true,
	}
}

// hiddenFromJobs lists the directories a job server hides.
func (d *Driver) hiddenFromJobs() []string {
	hide := append([]string(nil), d.isolate.Hide...)
	if home := os.Getenv("HOME"); filepath.IsAbs(home) && filepath.Clean(home) != "/" {
		hide = append(hide, filepath.Clean(home))
	}
	uid := d.isolate.UIDs.First
	if dir := blockedAncestor(d.root, uid, uid); dir != "" {
		hide = append(hide, dir)
	}
	return hide
}

// hides reports whether path is in a directory the job server hides
// (and not in the directory it binds back).
func (sp *serverProc) hides(path string) bool {
	return under(path, sp.iso.Hide) && !under(path, []string{sp.iso.Area})
}

// under reports whether path is one of dirs or inside one of them.
func under(path string, dirs []string) bool {
	for _, dir := range dirs {
		if rel, err := filepath.Rel(dir, path); err == nil && filepath.IsLocal(rel) || filepath.Clean(dir) == filepath.Clean(path) {
			return true
		}
	}
	return false
}

// prepareRoot makes the root traversable but not listable by the jobs'
// uids (0711) and its lock directory root's alone, once per driver
// removes the work areas that attempts which died with their service left
// (they hold secrets, readable by the uid that owned them), and checks
// the uid lock directory.
func (d *Driver) prepareRoot() error {
	locks := filepath.Join(d.root, ".locks")
	for _, dm := range []struct {
		dir  string
		mode os.FileMode
	}{{d.root, 0o711}, {locks, 0o700}, {UIDLockDir, 0o700}} {
		if err := os.MkdirAll(dm.dir, dm.mode); err != nil {
			return fmt.Errorf("local driver: creating %s: %w", dm.dir, err)
		}
		if err := os.Chmod(dm.dir, dm.mode); err != nil {
			return fmt.Errorf("local driver: setting the mode of %s: %w", dm.dir, err)
		}
	}
	var st syscall.Stat_t
	if err := syscall.Lstat(UIDLockDir, &st); err != nil || st.Uid != 0 || st.Mode&syscall.S_IFMT != syscall.S_IFDIR {
		return fmt.Errorf("local driver: %s must be a directory owned by root", UIDLockDir)
	}
	if !d.srv.prepared {
		d.srv.prepared = true
		d.removeStaleAreas()
	}
	return nil
}

// removeStaleAreas removes every work area whose run lock nobody holds:
// an attempt holds its lock for as long as its area exists, so such an
// area was left by a service that died.
func (d *Driver) removeStaleAreas() {
	ents, err := os.ReadDir(d.root)
	if err != nil {
		return
	}
	for _, e := range ents {
		name := e.Name()
		if !e.IsDir() || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "check-") {
			continue
		}
		lockPath := filepath.Join(d.root, ".locks", name)
		f, err := os.OpenFile(lockPath, os.O_CREATE|os.O_RDWR, 0o600)
		if err != nil {
			continue
		}
		if syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) == nil {
			fi1, err1 := f.Stat()
			fi2, err2 := os.Stat(lockPath)
			if err1 == nil && err2 == nil && os.SameFile(fi1, fi2) {
				area := filepath.Join(d.root, name)
				if err := removeAll(area); err != nil {
					d.log.Warn("local driver: removing a stale work area", "path", area, "err", err)
				}
				_ = os.Remove(lockPath)
			}
		}
		_ = f.Close()
	}
}

// kill kills the server; its jobs die with it, and dead closes.
func (sp *serverProc) kill() { _ = sp.proc.Kill() }

// read dispatches the server's events until its socket says it is gone,
// then makes sure it is and closes dead.
func (sp *serverProc) read() {
	buf := make([]byte, 64<<10)
	oob := make([]byte, syscall.CmsgSpace(4*max(shim.MaxFDs, shim.MaxListen)))
	var rerr error
	for {
		n, oobn, flags, _, err := sp.conn.ReadMsgUnix(buf, oob)
		var fds []int
		if oobn > 0 {
			fds = parseFDs(oob[:oobn])
		}
		if err == nil && n == 0 {
			err = io.EOF
		}
		if err != nil {
			closeFDs(fds)
			rerr = err
			break
		}
		var ev shim.Event
		if flags&syscall.MSG_TRUNC != 0 || json.Unmarshal(buf[:n], &ev) != nil {
			closeFDs(fds)
			sp.log.Error("local driver: a malformed message from the job server", "pid", sp.pid, "bytes", n)
			continue
		}
		if ev.ID != 0 || !ev.Ready || ev.Listening != len(fds) {
			// Only the Ready event carries descriptors: its listeners.
			closeFDs(fds)
			fds = nil
		}
		sp.dispatch(ev, fds)
	}
	sp.kill()
	<-sp.exited
	sp.cleanMu.Lock()
	sp.cleaned = true
	cleanup := sp.cleanup
	sp.cleanMu.Unlock()
	for _, f := range cleanup {
		f()
	}
	why := "exit: " + fmt.Sprint(sp.exitErr)
	if sp.exitErr == nil {
		why = "it exited"
	}
	if !errors.Is(rerr, io.EOF) && !errors.Is(rerr, net.ErrClosed) {
		why += "; reading its socket: " + rerr.Error()
	}
	sp.deadErr = errors.New(why)
	_ = sp.conn.Close()
	close(sp.dead)
}

// dispatch hands ev to the job it is about, or the server's own event,
// with the descriptors that came with it, to startServer.
func (sp *serverProc) dispatch(ev shim.Event, fds []int) {
	if ev.ID == 0 {
		select {
		case sp.ready <- readyMsg{ev: ev, fds: fds}:
		default:
			closeFDs(fds)
			if ev.Error != "" {
				sp.log.Error("local driver: the job server", "pid", sp.pid, "err", ev.Error)
			}
		}
		return
	}
	sp.mu.Lock()
	ch := sp.jobs[ev.ID]
	sp.mu.Unlock()
	if ch == nil {
		return // the job's Run has returned
	}
	select {
	case ch <- ev:
	default:
		sp.log.Error("local driver: dropped an event of the job server", "pid", sp.pid, "id", ev.ID)
	}
}

// register makes a new job id and the channel its events arrive on.
func (sp *serverProc) register() (uint64, chan shim.Event) {
	id := sp.nextID.Add(1)
	ch := make(chan shim.Event, 4) // a start or a refusal, then Done
	sp.mu.Lock()
	sp.jobs[id] = ch
	sp.mu.Unlock()
	return id, ch
}

// unregister forgets job id.
func (sp *serverProc) unregister(id uint64) {
	sp.mu.Lock()
	delete(sp.jobs, id)
	sp.mu.Unlock()
}

// errTooLarge is a start whose argv and environment exceed what one
// message may carry.
var errTooLarge = errors.New("message too large")

// send sends req with the descriptors fds.
func (sp *serverProc) send(req shim.Request, fds ...int) error {
	b, err := json.Marshal(req)
	if err != nil {
		return err
	}
	if len(b) > shim.MaxMessage {
		return errTooLarge
	}
	var oob []byte
	if len(fds) > 0 {
		oob = syscall.UnixRights(fds...)
	}
	_, _, err = sp.conn.WriteMsgUnix(b, oob, nil)
	return err
}

// uidLease is a uid of the pool held for one job: fd is the open, locked
// lock file.
type uidLease struct {
	uid int
	fd  int
}

// leaseUID takes a uid of the pool for one job: one that no job of any svc
// process on the host holds (its lock file is not locked) and that no
// process runs as (what a job of a service that just died left could
// still be dying).
func (d *Driver) leaseUID() (*uidLease, error) {
	r := *d.isolate.UIDs
	n := r.Last - r.First + 1
	p := &d.srv
	p.uidMu.Lock()
	defer p.uidMu.Unlock()
	if p.held == nil {
		// Drivers of different processes start at different places, and
		// each reuses its own few uids: the lock directory holds about as
		// many files as jobs ever ran at once.
		p.held = map[int]bool{}
		p.base = rand.IntN(n)
	}
	for i := range n {
		uid := r.First + (p.base+i)%n
		if p.held[uid] {
			continue
		}
		path := filepath.Join(UIDLockDir, strconv.Itoa(uid))
		fd, err := syscall.Open(path, syscall.O_RDWR|syscall.O_CREAT|syscall.O_CLOEXEC|syscall.O_NOFOLLOW, 0o600)
		if err != nil {
			return nil, fmt.Errorf("local driver: opening the lock of uid %d: %w", uid, err)
		}
		if err := syscall.Flock(fd, syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
			_ = syscall.Close(fd)
			if errors.Is(err, syscall.EWOULDBLOCK) || errors.Is(err, syscall.EINTR) {
				continue
			}
			return nil, fmt.Errorf("local driver: locking uid %d: %w", uid, err)
		}
		if shim.UIDAlive(uid) {
			_ = syscall.Close(fd)
			continue
		}
		p.held[uid] = true
		return &uidLease{uid: uid, fd: fd}, nil
	}
	return nil, fmt.Errorf("local driver: every uid of the pool %d-%d is taken by a running job: widen SVC_LOCAL_UIDS", r.First, r.Last)
}

// releaseUID lets go of the driver's hold of l (the server has let go of
// its own when the job was Done).
func (d *Driver) releaseUID(l *uidLease) {
	if l == nil {
		return
	}
	_ = syscall.Close(l.fd)
	d.srv.uidMu.Lock()
	delete(d.srv.held, l.uid)
	d.srv.uidMu.Unlock()
}

// setActive records, or with sp nil forgets, the running attempt of the
// run whose area is name.
func (d *Driver) setActive(name string, sp *serverProc, id uint64) {
	p := &d.srv
	p.activeMu.Lock()
	defer p.activeMu.Unlock()
	if sp == nil {
		delete(p.active, name)
		return
	}
	if p.active == nil {
		p.active = map[string]activeJob{}
	}
	p.active[name] = activeJob{sp: sp, id: id}
}

// killActive asks the job server to kill the attempt of the run whose
// area is name that runs in this process, and reports whether there is
// one.
func (d *Driver) killActive(name string) bool {
	d.srv.activeMu.Lock()
	a, ok := d.srv.active[name]
	d.srv.activeMu.Unlock()
	if ok {
		_ = a.sp.send(shim.Request{Op: shim.OpKill, ID: a.id})
	}
	return ok
}

// poolRecord is what an attempt on a job server records in its run's lock
// file (root's alone, unlike the area): its uid and its server, for an
// attempt in another process to kill.
type poolRecord struct {
	uid       int
	pid       int
	startTime uint64
}

// writePoolRecord replaces the content of the locked run lock file f.
func writePoolRecord(f *os.File, r poolRecord) error {
	if err := f.Truncate(0); err != nil {
		return err
	}
	_, err := f.WriteAt(fmt.Appendf(nil, "uid %d %d %d\n", r.uid, r.pid, r.startTime), 0)
	return err
}

// readPoolRecord reads what writePoolRecord wrote at path.
func readPoolRecord(path string) (poolRecord, bool) {
	b, err := os.ReadFile(path)
	if err != nil || len(b) == 0 {
		return poolRecord{}, false
	}
	var r poolRecord
	if _, err := fmt.Sscanf(string(b), "uid %d %d %d", &r.uid, &r.pid, &r.startTime); err != nil || r.uid <= 0 || r.pid <= 1 {
		return poolRecord{}, false
	}
	return r, true
}

// serverAlive reports whether the job server a record names still runs:
// the pid is alive and started when the record says.
func serverAlive(r poolRecord) bool {
	t, ok := procStartTime(r.pid)
	return ok && t == r.startTime
}

// isOwnServer reports whether r names this driver's running server.
func (d *Driver) isOwnServer(r poolRecord) bool {
	d.srv.mu.Lock()
	defer d.srv.mu.Unlock()
	sp := d.srv.cur
	return sp != nil && sp.pid == r.pid && sp.startTime == r.startTime
}

// killRecorded kills what a record of an attempt in another process
// names: with the run lock still held, that attempt's job (every process
// of its uid); with the lock free, its holder died, and the server it left
// (already dying of its parent-death signal) with every job of it. An
// attempt of this process is killed through killActive instead.
func (d *Driver) killRecorded(r poolRecord, held bool) {
	if d.isOwnServer(r) || !serverAlive(r) {
		return
	}
	if held {
		if err := shim.KillUID(r.uid); err != nil {
			d.log.Warn("local driver: killing the previous attempt's uid", "uid", r.uid, "err", err)
		}
		return
	}
	_ = syscall.Kill(r.pid, syscall.SIGKILL)
}

// awaitServerGone waits, boundedly, for the server a record names to be
// gone (its PID namespace, and so the attempt's job, with it).
func awaitServerGone(ctx context.Context, r poolRecord) error {
	deadline := time.NewTimer(10 * time.Second)
	defer deadline.Stop()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for serverAlive(r) {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-deadline.C:
			return fmt.Errorf("the job server %d is still alive after SIGKILL", r.pid)
		case <-tick.C:
		}
	}
	return nil
}

// procStartTime returns the start time of process pid (field 22 of
// /proc/<pid>/stat); ok is false when there is no such live process.
func procStartTime(pid int) (uint64, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, false
	}
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return 0, false
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 20 || f[0] == "Z" || f[0] == "X" {
		return 0, false
	}
	t, err := strconv.ParseUint(f[19], 10, 64)
	return t, err == nil
}

// runOnServer runs a job whose area is ready and owned by lease's uid on
// the job server sp, and follows it to its end.
func (d *Driver) runOnServer(ctx context.Context, j drivers.Job, l layout, sp *serverProc, lease *uidLease, path string, env []string) (drivers.Result, error) {
	ends, err := pipes(2) // the stdout and stderr pipes
	if err != nil {
		return drivers.Result{}, err
	}
	outR, outW, errR, errW := ends[0], ends[1], ends[2], ends[3]
	defer closeFiles(outR, errR)

	id, events := sp.register()
	defer sp.unregister(id)
	name := filepath.Base(l.area)
	d.setActive(name, sp, id)
	defer d.setActive(name, nil, 0)
	begin := time.Now()
	err = sp.send(shim.Request{
		Op:        shim.OpStart,
		ID:        id,
		Path:      path,
		Args:      j.Command,
		Env:       env,
		Dir:       l.dir,
		UID:       lease.uid,
		KillGrace: d.killGrace,
		NoNetwork: d.isolate.NoNetwork,
	}, int(outW.Fd()), int(errW.Fd()), lease.fd)
	closeFiles(outW, errW)
	switch {
	case errors.Is(err, errTooLarge):
		return drivers.Result{}, derrors.Invalidf("harness command %q: its arguments and environment are too large to start", j.Command[0])
	case err != nil:
		return drivers.Result{}, fmt.Errorf("local driver: sending run %q to the job server: %w", j.RunID, err)
	}

	out := readOutput(outR, errR, j.Log)
	stop := newStopper(ctx, j.Timeout, d.killGrace, func() { _ = sp.send(shim.Request{Op: shim.OpTerm, ID: id}) })
	defer stop.stop()
	var (
		unanswered <-chan time.Time
		final      *shim.Status
		startErr   *shim.Status
		refused    string
		lost       bool
	)
wait:
	for {
		select {
		case ev := <-events:
			switch {
			case ev.Error != "":
				refused = ev.Error
				break wait
			case ev.StartError != "":
				startErr = &ev.Status
				break wait
			case ev.Done:
				final = &ev.Status
				break wait
			}
		case <-sp.dead:
			lost = true
			break wait
		case <-stop.timeout:
			stop.timedOut()
		case <-stop.done:
			stop.cancelled()
		case <-stop.overdue:
			stop.overdue = nil
			d.log.Error("local driver: the job server did not end a terminated job in time; killing its uid", "run", j.RunID, "uid", lease.uid)
			_ = sp.send(shim.Request{Op: shim.OpKill, ID: id})
			unanswered = time.After(supervisorSlack)
		case <-unanswered:
			unanswered = nil
			d.log.Error("local driver: the job server does not answer; killing it and every job it runs", "run", j.RunID, "pid", sp.pid)
			sp.kill()
		}
	}
	end := time.Now()

	// Every process that had the output pipes is dead (Done, or the
	// server's PID namespace went with it), and the server closed its
	// copies when it forked the harness.
	out.drain(nil)

	switch {
	case lost:
		return drivers.Result{}, fmt.Errorf("local driver: the job server died while it ran run %q (%v); the job was lost, and the next one starts a new server", j.RunID, sp.deadErr)
	case refused != "":
		return drivers.Result{}, fmt.Errorf("local driver: run %q: %s", j.RunID, refused)
	case startErr != nil:
		return drivers.Result{}, startError(j.Command[0], startErr)
	}
	return out.result(final, stop.reason, end.Sub(begin)), nil
}
