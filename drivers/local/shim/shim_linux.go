//go:build linux

package shim

// Why a supervisor at all: the service may die by SIGKILL, and nothing of
// the harness may outlive it.
//
// Isolated (the default where the kernel allows): the shim is PID 1 of the
// job's PID namespace. The service starts it with Pdeathsig SIGKILL, and
// when the init of a PID namespace dies the kernel kills every process in
// it; kill(-1) from the shim reaches them all. That is the whole guarantee,
// with no /proc scan.
//
// Not isolated (the fallback): Pdeathsig only reaches the direct child,
// and a grandchild can leave the harness's process group. The shim holds
// the read end of a pipe whose write end only the service holds; the
// kernel closes it when the service dies, however it dies, and the shim
// then kills the harness's group and every other descendant. It is a child
// subreaper (PR_SET_CHILD_SUBREAPER), so every descendant whose parent dies
// is re-parented to it and it knows the tree is gone when wait reports
// ECHILD.
//
// Descriptors: stdin /dev/null; stdout and stderr are the job's output
// pipes, passed on to the harness; fd 3 is the control pipe; fd 4 is the
// status pipe (see the package documentation).

import (
	"bufio"
	"encoding/json"
	"errors"
	"os"
	"os/signal"
	"runtime"
	"sync"
	"syscall"
	"time"
	"unsafe"
)

// Linux constants the syscall package does not name.
const (
	prSetChildSubreaper = 36
	pAll                = 0
	wNoWait             = 0x1000000
	wAll                = 0x40000000
)

// Main supervises one job, or, when fd 3 is a SOCK_SEQPACKET socket, runs
// the job server; it returns the shim's exit code.
func Main() int {
	// The capability and no_new_privs settings below are per thread; the
	// harness is forked from this one.
	runtime.LockOSThread()
	// A socket on fd 3 makes this the job server (serve_linux.go).
	if socketType(3) == syscall.SOCK_SEQPACKET {
		return serve(3)
	}
	// Nothing the harness starts may hold the control or status pipe.
	syscall.CloseOnExec(3)
	syscall.CloseOnExec(4)
	ctrl := bufio.NewReader(os.NewFile(3, "control"))
	status := json.NewEncoder(os.NewFile(4, "status"))
	report := func(s Status) { _ = status.Encode(s) }
	startErr := func(what string, err error) int {
		st := Status{StartError: what + err.Error()}
		var errno syscall.Errno
		if errors.As(err, &errno) {
			st.StartErrno = int(errno)
		}
		report(st)
		return 2
	}

	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP, syscall.SIGQUIT)
	line, err := ctrl.ReadBytes('\n')
	if err != nil {
		return 2 // the driver went away before sending the job: nothing started
	}
	var cfg Config
	if err := json.Unmarshal(line, &cfg); err != nil {
		report(Status{StartError: "the job supervisor got a malformed job: " + err.Error()})
		return 2
	}
	// inNS: PID 1 of the job's own PID namespace, where kill(-1) reaches
	// every process of the job and nothing else.
	inNS := cfg.Isolate != nil && os.Getpid() == 1
	if cfg.Isolate != nil {
		if !inNS {
			report(Status{StartError: "the job supervisor was asked to isolate the job but is not the init of a PID namespace"})
			return 2
		}
		if err := isolate(cfg.Isolate); err != nil {
			return startErr("the job supervisor could not isolate the job: ", err)
		}
		if len(cfg.Isolate.Listen) > 0 {
			// Before the harness starts: its connections to the service
			// wait in the backlog until the driver accepts them.
			// ListenFD is there (the driver passes it with Listen set).
			fds, err := listenAll(cfg.Isolate.Listen)
			if err == nil {
				err = sendListeners(ListenFD, fds)
			}
			closeFDs(fds)
			_ = syscall.Close(ListenFD)
			if err != nil {
				return startErr("the job supervisor could not listen for the job's way to the service: ", err)
			}
		}
	} else if _, _, e := syscall.RawSyscall(syscall.SYS_PRCTL, prSetChildSubreaper, 1, 0); e != 0 {
		return startErr("the job supervisor cannot become a child subreaper: ", e)
	}
	if cfg.Check {
		report(Status{Done: true})
		return 0
	}
	devnull, err := os.Open(os.DevNull)
	if err != nil {
		return startErr("", err)
	}
	sys := &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if iso := cfg.Isolate; iso != nil && iso.UID >= 0 {
		sys.Credential = &syscall.Credential{Uid: uint32(iso.UID), Gid: uint32(iso.GID), Groups: []uint32{}}
	}
	started := time.Now()
	pid, err := syscall.ForkExec(cfg.Path, cfg.Args, &syscall.ProcAttr{
		Dir:   cfg.Dir,
		Env:   cfg.Env,
		Files: []uintptr{devnull.Fd(), 1, 2},
		Sys:   sys,
	})
	devnull.Close()
	if err != nil {
		st := Status{StartError: err.Error()}
		var errno syscall.Errno
		if errors.As(err, &errno) {
			st.StartErrno = int(errno)
		}
		report(st)
		return 0
	}
	if cfg.Record != "" && !inNS {
		// Recorded before anything else, for a retried attempt to find
		// should this shim die with the service.
		_ = WriteRecord(cfg.Record, pid, os.Getpid())
	}
	report(Status{Pgid: pid})

	ctl := make(chan byte)
	go func() {
		for {
			b, err := ctrl.ReadByte()
			if err != nil {
				ctl <- 0
				return
			}
			ctl <- b
		}
	}()
	r := &reaper{harness: pid}
	reaped := make(chan reapedChild)
	go r.run(reaped)

	var (
		final      Status
		terminated bool
		killing    bool
		grace      <-chan time.Time
		sweep      <-chan time.Time
	)
	// killAll kills the group and every descendant, and keeps sweeping
	// while the tree lives: a process forked between two sweeps shows up
	// in the next one.
	killAll := func() {
		if !killing {
			killing = true
			sweep = time.NewTicker(100 * time.Millisecond).C // runs until the shim exits
		}
		r.signalGroup(syscall.SIGKILL)
		if inNS {
			_ = syscall.Kill(-1, syscall.SIGKILL)
			return
		}
		self := os.Getpid()
		for _, d := range Descendants(Processes(), self) {
			_ = syscall.Kill(d, syscall.SIGKILL)
		}
	}
	for {
		select {
		case c, ok := <-reaped:
			if !ok {
				// ECHILD: no descendant is left.
				final.Done = true
				report(final)
				return 0
			}
			if c.pid == pid {
				final = exitStatus(c.status)
				final.Terminated = terminated
				final.Duration = time.Since(started)
			}
			if c.pid == pid || killing {
				killAll()
			}
		case b := <-ctl:
			switch {
			case b == 0: // EOF: the driver, and so the service, is gone
				ctl = nil
				killAll()
			case b == CmdTerminate && !terminated && !killing:
				terminated = true
				r.signalGroup(syscall.SIGTERM)
				grace = time.After(cfg.KillGrace)
			}
		case <-grace:
			grace = nil
			killAll()
		case <-sweep:
			killAll()
		case <-sigs:
			killAll()
		}
	}
}

// exitStatus turns a wait status into a report; a harness killed by a
// signal has exit code -1.
func exitStatus(ws syscall.WaitStatus) Status {
	if ws.Signaled() {
		return Status{ExitCode: -1, Signal: ws.Signal().String()}
	}
	return Status{ExitCode: ws.ExitStatus()}
}

// reapedChild is one child the shim reaped.
type reapedChild struct {
	pid    int
	status syscall.WaitStatus
}

// reaper reaps the shim's children and guards signals to the harness's
// process group. The group id is the harness's pid, which the kernel may
// give to another process once the harness is reaped and its group is
// empty; so the group is signalled only while the harness is unreaped, and
// the harness's exit is noticed (waitid with WNOWAIT) and its group killed
// before it is reaped.
type reaper struct {
	harness int

	mu          sync.Mutex
	harnessGone bool
}

// signalGroup sends sig to the harness's process group, if it is still
// safe to name it.
func (r *reaper) signalGroup(sig syscall.Signal) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.harnessGone {
		_ = syscall.Kill(-r.harness, sig)
	}
}

// run reaps children until there are none (ECHILD), then closes out.
func (r *reaper) run(out chan<- reapedChild) {
	defer close(out)
	for {
		pid, err := waitExited()
		if errors.Is(err, syscall.EINTR) {
			continue
		}
		if err != nil {
			return
		}
		var ws syscall.WaitStatus
		if pid == r.harness {
			r.mu.Lock()
			// The job is over: what the harness left in its group goes too.
			_ = syscall.Kill(-pid, syscall.SIGKILL)
			_, err = wait4(pid, &ws)
			r.harnessGone = true
			r.mu.Unlock()
		} else {
			_, err = wait4(pid, &ws)
		}
		if err != nil {
			continue
		}
		out <- reapedChild{pid: pid, status: ws}
	}
}

// siginfo is the part of Linux's siginfo_t that waitid fills for a child:
// si_pid follows signo, errno and code, aligned to the word size.
type siginfo struct {
	signo, errno, code int32
	_                  [unsafe.Sizeof(uintptr(0)) - 4]byte
	pid                int32
	_                  [128 - 12 - (unsafe.Sizeof(uintptr(0)) - 4) - 4]byte
}

// waitExited blocks until a child has exited and returns its pid without
// reaping it.
func waitExited() (int, error) {
	var si siginfo
	_, _, e := syscall.Syscall6(syscall.SYS_WAITID, pAll, 0, uintptr(unsafe.Pointer(&si)), syscall.WEXITED|wNoWait|wAll, 0, 0)
	if e != 0 {
		return 0, e
	}
	return int(si.pid), nil
}

// wait4 reaps child pid, retrying on EINTR.
func wait4(pid int, ws *syscall.WaitStatus) (int, error) {
	for {
		p, err := syscall.Wait4(pid, ws, wAll, nil)
		if !errors.Is(err, syscall.EINTR) {
			return p, err
		}
	}
}
