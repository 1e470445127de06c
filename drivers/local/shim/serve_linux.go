//go:build linux

package shim

// The job server: one long-lived supervisor for every job of a driver, so
// that a job costs a fork and exec of the harness and no exec of a
// supervisor.
//
// What holds the guarantees:
//
//   - The driver starts the server as PID 1 of new PID and mount
//     namespaces with a parent-death signal (SIGKILL). When the server dies,
//     however it dies, the kernel kills every process of its PID namespace:
//     nothing of any job outlives it, nor so the service. EOF on its socket
//     (the service closed it, or died) makes it kill everything and exit.
//   - Every job runs as a uid of its own (uid = gid, no groups), which the
//     driver locked host-wide for it and passed along (the lock's
//     descriptor travels with the start request). A job's processes cannot
//     change their uid: no capabilities, and no_new_privs (set on the
//     thread that forks harnesses, inherited) makes setuid and file
//     capabilities of executables inert.
//   - So the uid names the job's whole tree, however it daemonised:
//     kill(-1) from a thread whose real and effective uids are the job's
//     reaches exactly its processes (killAs), and getpriority(PRIO_USER)
//     tells whether any is left, zombies included (UIDAlive). A job is Done
//     when its harness is reaped and no process of its uid is left; only
//     then does the server let go of the uid's lock.
//   - The server reaps every process of its namespace (orphans are
//     re-parented to it). The harness's process group is signalled only
//     while the harness is unreaped, so its id cannot have been reused.
//   - Jobs share the server's mount namespace (set up once: see isolate)
//     and its /proc, mounted with hidepid so that a job sees only its own
//     uid's processes; other jobs' work areas are closed to it by their
//     owners and modes (0700, each its job's uid).
//   - The server ignores every signal it can: a job's process could signal
//     the killing thread in the moment its uids are the job's.

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"sync"
	"syscall"
	"time"
	"unsafe"
)

// Bounds of the server's kill loop.
const (
	// resweepEvery is how often a killed job whose harness has not yet
	// exited (a process in uninterruptible sleep) is killed again.
	resweepEvery = 100 * time.Millisecond
	// sweepMaxDelay bounds the pause between two kills of a uid whose
	// processes are still there.
	sweepMaxDelay = 50 * time.Millisecond
	// pPid is waitid's idtype for one pid.
	pPid = 1
	// wNoHang is WNOHANG.
	wNoHang = 0x1
)

// server is the job server's state.
type server struct {
	sock    int
	cfg     ServeConfig
	devnull int

	sendMu sync.Mutex

	// forkGate lets the spawners fork at once (read-held across a fork
	// and the registering of its pid) and the reaper wait for the forks in
	// flight before it reaps a pid it does not know, which may be a
	// harness that exited before its spawner registered it.
	forkGate sync.RWMutex

	mu    sync.Mutex
	jobs  map[uint64]*job // by the driver's id, from start to Done
	byPid map[int]*job    // unreaped harnesses
	uids  map[int]bool    // uids of the jobs in jobs

	spawns chan *job
	kills  chan killReq
	kick   chan struct{} // a child was forked: the reaper has work
}

// job is one job of the server.
type job struct {
	Request
	out, errOut, lock int // descriptors the driver sent
	ops               chan string
	exited            chan struct{} // closed once the harness is reaped

	// Set under server.mu; read by supervise after exited is closed.
	pid     int
	started time.Time
	exitAt  time.Time
	ws      syscall.WaitStatus
	gone    bool // the harness is reaped: its group id may be reused
}

// killReq asks the killing thread for one kill(-1) as uid.
type killReq struct {
	uid  int
	done chan struct{}
}

// serve runs the job server on the SOCK_SEQPACKET socket sock and returns
// its exit code.
func serve(sock int) int {
	syscall.CloseOnExec(sock)
	// Raw blocking calls: the reader and the sender each hold a thread.
	if err := syscall.SetNonblock(sock, false); err != nil {
		return 2
	}
	// Caught and dropped: no signal a job could send ends the server (see
	// killAs); SIGKILL from the service's side still does.
	signal.Notify(make(chan os.Signal, 1), ignoredSignals...)
	s := &server{
		sock:   sock,
		jobs:   map[uint64]*job{},
		byPid:  map[int]*job{},
		uids:   map[int]bool{},
		spawns: make(chan *job),
		kills:  make(chan killReq),
		kick:   make(chan struct{}, 1),
	}
	b, fds, err := recvMsg(sock)
	closeFDs(fds)
	if err != nil {
		return 2 // the driver went away before configuring the server
	}
	var cfg Config
	if err := json.Unmarshal(b, &cfg); err != nil || cfg.Serve == nil || cfg.Isolate == nil {
		s.fail("the job server got a malformed configuration")
		return 2
	}
	s.cfg = *cfg.Serve
	switch {
	case os.Getpid() != 1:
		s.fail("the job server is not the init of a PID namespace of its own")
		return 2
	case s.cfg.FirstUID <= 0 || s.cfg.LastUID < s.cfg.FirstUID:
		s.fail(fmt.Sprintf("the job server got an invalid uid range %d-%d", s.cfg.FirstUID, s.cfg.LastUID))
		return 2
	}
	if err := isolate(cfg.Isolate); err != nil {
		s.fail("the job server could not isolate jobs: " + err.Error())
		return 2
	}
	if s.devnull, err = syscall.Open(os.DevNull, syscall.O_RDONLY|syscall.O_CLOEXEC, 0); err != nil {
		s.fail("the job server cannot open " + os.DevNull + ": " + err.Error())
		return 2
	}
	spawnerReady := make(chan error)
	for range spawners {
		go s.spawner(spawnerReady)
	}
	for range spawners {
		if err := <-spawnerReady; err != nil {
			s.fail("the job server cannot set no_new_privs: " + err.Error())
			return 2
		}
	}
	// The isolated network's listening sockets, made before any job
	// could take their ports, go to the driver with the Ready event.
	listeners, err := listenAll(cfg.Isolate.Listen)
	if err != nil {
		s.fail("the job server could not listen for the jobs' way to the service: " + err.Error())
		return 2
	}
	go s.killer()
	go s.reaper()
	s.sendFDs(Event{Ready: true, Listening: len(listeners)}, listeners)
	closeFDs(listeners)
	s.readLoop()
	// The service is gone, or let the server go: so is every job. Exiting
	// would do it too (the kernel kills a PID namespace with its init).
	_ = syscall.Kill(-1, syscall.SIGKILL)
	return 0
}

// ignoredSignals are the signals whose default, or Go's, would end the
// server.
var ignoredSignals = []os.Signal{
	syscall.SIGHUP, syscall.SIGINT, syscall.SIGQUIT, syscall.SIGILL, syscall.SIGTRAP,
	syscall.SIGABRT, syscall.SIGBUS, syscall.SIGFPE, syscall.SIGSEGV, syscall.SIGUSR1,
	syscall.SIGUSR2, syscall.SIGPIPE, syscall.SIGALRM, syscall.SIGTERM, syscall.SIGSTKFLT,
	syscall.SIGXCPU, syscall.SIGXFSZ, syscall.SIGVTALRM, syscall.SIGIO, syscall.SIGPWR,
	syscall.SIGSYS, syscall.SIGTSTP, syscall.SIGTTIN, syscall.SIGTTOU,
}

// fail reports why the server cannot serve.
func (s *server) fail(msg string) { s.send(Event{Error: msg}) }

// send writes ev to the driver; a driver that is gone shows up as EOF in
// readLoop.
func (s *server) send(ev Event) {
	b, err := json.Marshal(ev)
	if err != nil {
		return
	}
	s.sendMu.Lock()
	defer s.sendMu.Unlock()
	_ = sendMsg(s.sock, b)
}

// sendFDs writes ev to the driver with the descriptors fds.
func (s *server) sendFDs(ev Event, fds []int) {
	b, err := json.Marshal(ev)
	if err != nil {
		return
	}
	var oob []byte
	if len(fds) > 0 {
		oob = syscall.UnixRights(fds...)
	}
	s.sendMu.Lock()
	defer s.sendMu.Unlock()
	for {
		if err := syscall.Sendmsg(s.sock, b, oob, nil, syscall.MSG_NOSIGNAL); err != syscall.EINTR {
			return
		}
	}
}

// readLoop handles the driver's requests until EOF.
func (s *server) readLoop() {
	for {
		b, fds, err := recvMsg(s.sock)
		if errors.Is(err, errTooLarge) {
			s.send(Event{Error: "the job server dropped a request: " + err.Error()})
			continue
		}
		if err != nil {
			return
		}
		req, err := decodeRequest(b, len(fds), &s.cfg)
		if err != nil {
			closeFDs(fds)
			s.send(Event{ID: req.ID, Error: "the job server refused a request: " + err.Error()})
			continue
		}
		s.handle(req, fds)
	}
}

// decodeRequest parses one request that came with nfds descriptors and
// checks it against what the server may do.
func decodeRequest(b []byte, nfds int, cfg *ServeConfig) (Request, error) {
	var req Request
	if err := json.Unmarshal(b, &req); err != nil {
		return Request{}, fmt.Errorf("malformed request: %v", err)
	}
	if req.ID == 0 {
		return req, errors.New("request without an id")
	}
	switch req.Op {
	case OpStart:
		switch {
		case nfds != MaxFDs:
			return req, fmt.Errorf("start with %d descriptors, want %d", nfds, MaxFDs)
		case !filepath.IsAbs(req.Path) || !filepath.IsAbs(req.Dir):
			return req, errors.New("start without an absolute program path and directory")
		case len(req.Args) == 0:
			return req, errors.New("start without argv")
		case req.UID < cfg.FirstUID || req.UID > cfg.LastUID || req.UID <= 0:
			return req, fmt.Errorf("uid %d is outside the server's range %d-%d", req.UID, cfg.FirstUID, cfg.LastUID)
		case req.KillGrace < 0:
			return req, errors.New("negative kill grace")
		}
	case OpTerm, OpKill:
		if nfds != 0 {
			return req, fmt.Errorf("%s with descriptors", req.Op)
		}
	default:
		return req, fmt.Errorf("unknown operation %q", req.Op)
	}
	return req, nil
}

// handle acts on a checked request; fds are its descriptors, which become
// the job's or are closed.
func (s *server) handle(req Request, fds []int) {
	switch req.Op {
	case OpStart:
		s.mu.Lock()
		refuse := ""
		switch {
		case s.jobs[req.ID] != nil:
			refuse = fmt.Sprintf("job id %d is in use", req.ID)
		case s.uids[req.UID]:
			refuse = fmt.Sprintf("uid %d is in use by another job", req.UID)
		}
		if refuse != "" {
			s.mu.Unlock()
			closeFDs(fds)
			s.send(Event{ID: req.ID, Error: "the job server refused a request: " + refuse})
			return
		}
		j := &job{
			Request: req,
			out:     fds[0], errOut: fds[1], lock: fds[2],
			ops:    make(chan string, 4),
			exited: make(chan struct{}),
		}
		s.jobs[req.ID] = j
		s.uids[req.UID] = true
		s.mu.Unlock()
		s.spawns <- j
	case OpTerm, OpKill:
		s.mu.Lock()
		j := s.jobs[req.ID]
		s.mu.Unlock()
		if j == nil {
			return // ended already
		}
		select {
		case j.ops <- req.Op:
		default: // enough of them queued
		}
	}
}

// spawners is how many threads fork harnesses. A fork returns once the
// child has exec'd (vfork), a few ms on a loaded machine; with one thread
// the harnesses of a batch that start together (a round of 64) waited up
// to 64 of those for their turn.
const spawners = 4

// spawner forks harnesses, from a thread with no_new_privs set (it is per
// thread and inherited) that lives as long as the server, so that the
// harnesses' parent-death signal never fires while it does.
func (s *server) spawner(ready chan<- error) {
	runtime.LockOSThread() // never unlocked
	if _, _, e := syscall.RawSyscall(syscall.SYS_PRCTL, prSetNoNewPriv, 1, 0); e != 0 {
		ready <- e
		return
	}
	ready <- nil
	for j := range s.spawns {
		s.spawn(j)
	}
}

// spawn forks and execs j's harness and reports its pid, or why not.
func (s *server) spawn(j *job) {
	// Each job its own System V IPC and POSIX message queues, gone with it;
	// and, without network, its own empty network namespace (a shared one
	// would let jobs talk over loopback).
	flags := uintptr(syscall.CLONE_NEWIPC)
	if j.NoNetwork {
		flags |= syscall.CLONE_NEWNET
	}
	attr := &syscall.ProcAttr{
		Dir:   j.Dir,
		Env:   j.Env,
		Files: []uintptr{uintptr(s.devnull), uintptr(j.out), uintptr(j.errOut)},
		Sys: &syscall.SysProcAttr{
			Setpgid:    true,
			Pdeathsig:  syscall.SIGKILL,
			Cloneflags: flags,
			Credential: &syscall.Credential{Uid: uint32(j.UID), Gid: uint32(j.UID), Groups: []uint32{}},
		},
	}
	// Held across the fork and the registering, so that the reaper cannot
	// take the harness for a stray child if it exits before that.
	s.forkGate.RLock()
	started := time.Now()
	pid, err := syscall.ForkExec(j.Path, j.Args, attr)
	if err == nil {
		s.mu.Lock()
		j.pid, j.started = pid, started
		s.byPid[pid] = j
		s.mu.Unlock()
	}
	s.forkGate.RUnlock()
	_ = syscall.Close(j.out)
	_ = syscall.Close(j.errOut)
	if err != nil {
		st := Status{StartError: err.Error()}
		var errno syscall.Errno
		if errors.As(err, &errno) {
			st.StartErrno = int(errno)
		}
		// A failed exec's child was reaped by ForkExec: nothing of the uid
		// is left.
		s.release(j)
		s.send(Event{ID: j.ID, Status: st})
		return
	}
	select {
	case s.kick <- struct{}{}:
	default:
	}
	s.send(Event{ID: j.ID, Status: Status{Pgid: pid}})
	go s.supervise(j)
}

// release forgets j and lets go of its uid's lock (the driver holds its
// own until it has cleaned up after the job).
func (s *server) release(j *job) {
	_ = syscall.Close(j.lock)
	s.mu.Lock()
	delete(s.jobs, j.ID)
	delete(s.uids, j.UID)
	s.mu.Unlock()
}

// supervise follows j from its start to Done.
func (s *server) supervise(j *job) {
	var (
		grace       <-chan time.Time
		resweep     <-chan time.Time
		terminated  bool
		killing     bool
		resweepTick *time.Ticker
	)
	defer func() {
		if resweepTick != nil {
			resweepTick.Stop()
		}
	}()
	kill := func() {
		killing = true
		s.killUID(j.UID)
		if resweepTick == nil {
			resweepTick = time.NewTicker(resweepEvery)
			resweep = resweepTick.C
		}
	}
	for {
		select {
		case <-j.exited:
			// What the harness left behind goes with it.
			s.sweep(j.UID)
			st := exitStatus(j.ws)
			st.Done = true
			st.Terminated = terminated
			st.Duration = j.exitAt.Sub(j.started)
			s.release(j)
			s.send(Event{ID: j.ID, Status: st})
			return
		case op := <-j.ops:
			switch {
			case op == OpTerm && !terminated && !killing:
				if s.signalGroup(j, syscall.SIGTERM) {
					terminated = true
					grace = time.After(j.KillGrace)
				}
			case op == OpKill:
				kill()
			}
		case <-grace:
			grace = nil
			kill()
		case <-resweep:
			s.killUID(j.UID)
		}
	}
}

// signalGroup sends sig to j's harness's process group and reports
// whether it could: not once the harness is reaped, when the group id may
// name another group.
func (s *server) signalGroup(j *job, sig syscall.Signal) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if j.gone {
		return false
	}
	_ = syscall.Kill(-j.pid, sig)
	return true
}

// sweep kills every process of uid until none is left, zombies included
// (the reaper reaps those re-parented to the server), then removes what
// the uid left in the server's /dev/shm. In the common case, a harness
// that left nothing, it is one getpriority call.
func (s *server) sweep(uid int) {
	delay := 500 * time.Microsecond
	for UIDAlive(uid) {
		s.killUID(uid)
		time.Sleep(delay)
		delay = min(2*delay, sweepMaxDelay)
	}
	removeOwned("/dev/shm", uid)
}

// removeOwned removes the entries of dir owned by uid, with what is in
// them: the next job with this uid must not find them. Only the top
// level: a directory of another uid is that job's to leave (it goes when
// that job ends), and walking into it could be led elsewhere by a symlink
// swapped in.
func removeOwned(dir string, uid int) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range ents {
		fi, err := e.Info()
		if err != nil {
			continue
		}
		if st, ok := fi.Sys().(*syscall.Stat_t); ok && int(st.Uid) == uid {
			_ = os.RemoveAll(filepath.Join(dir, e.Name()))
		}
	}
}

// killUID has the killing thread send SIGKILL to every process of uid.
func (s *server) killUID(uid int) {
	done := make(chan struct{})
	s.kills <- killReq{uid: uid, done: done}
	<-done
}

// killer is the thread that takes a job's uids to kill its processes.
func (s *server) killer() {
	runtime.LockOSThread()
	for r := range s.kills {
		killErr, restoreErr := killAs(r.uid, syscall.SIGKILL)
		close(r.done)
		if killErr != nil && killErr != syscall.ESRCH {
			fmt.Fprintf(os.Stderr, "svc job server: killing uid %d: %v\n", r.uid, killErr)
		}
		if restoreErr != nil {
			// This thread is not root any more: let the runtime discard
			// it (the goroutine returns locked) and carry on in another.
			fmt.Fprintf(os.Stderr, "svc job server: restoring root after killing uid %d: %v\n", r.uid, restoreErr)
			go s.killer()
			return
		}
	}
}

// reaper reaps every child of the server: the harnesses, and the jobs'
// processes re-parented to it.
func (s *server) reaper() {
	for {
		pid, err := waitExited()
		switch {
		case err == syscall.EINTR:
			continue
		case err == syscall.ECHILD:
			<-s.kick // no child at all: wait for the next harness
			continue
		case err != nil:
			fmt.Fprintf(os.Stderr, "svc job server: waitid: %v\n", err)
			time.Sleep(10 * time.Millisecond)
			continue
		}
		s.reap(pid)
	}
}

// reap reaps child pid, which waitid saw exited. A harness's group is
// killed before it is reaped, while its id still names it.
func (s *server) reap(pid int) {
	s.mu.Lock()
	known := s.byPid[pid] != nil
	s.mu.Unlock()
	if !known {
		// A job's stray process, or a harness whose spawner has not yet
		// registered it: wait for the forks in flight. (Only the reaper
		// removes from byPid, so a known pid stays known.)
		s.forkGate.Lock()
		defer s.forkGate.Unlock()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	// ForkExec reaps a child whose exec failed, and the pid may since
	// have been reused: reap only a child that has exited now.
	if !exitedChild(pid) {
		return
	}
	j := s.byPid[pid]
	if j != nil {
		_ = syscall.Kill(-pid, syscall.SIGKILL)
	}
	var ws syscall.WaitStatus
	if p, err := syscall.Wait4(pid, &ws, wNoHang|wAll, nil); err != nil || p != pid {
		return
	}
	if j != nil {
		j.ws, j.exitAt, j.gone = ws, time.Now(), true
		delete(s.byPid, pid)
		close(j.exited)
	}
}

// exitedChild reports whether pid is a child of this process that has
// exited and is not yet reaped.
func exitedChild(pid int) bool {
	var si siginfo
	for {
		_, _, e := syscall.Syscall6(syscall.SYS_WAITID, pPid, uintptr(pid), uintptr(unsafe.Pointer(&si)), syscall.WEXITED|wNoWait|wNoHang|wAll, 0, 0)
		if e == syscall.EINTR {
			continue
		}
		return e == 0 && int(si.pid) == pid
	}
}
