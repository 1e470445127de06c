//go:build linux

package shim

import (
	"errors"
	"runtime"
	"syscall"
)

// prioUser is getpriority's "every process of a real uid".
const prioUser = 2

// UIDAlive reports whether a process (a zombie included) whose real uid is
// uid exists in this process's PID namespace or one below it. It is one
// system call and needs no privilege: getpriority(PRIO_USER) fails with
// ESRCH only when it finds none.
func UIDAlive(uid int) bool {
	_, err := syscall.Getpriority(prioUser, uid)
	return !errors.Is(err, syscall.ESRCH)
}

// killAs sends sig to every process whose real or saved uid is uid, as
// kill(-1) does from a thread whose real and effective uids are uid: the
// kernel checks the sender's uids against the target's, and a thread whose
// effective uid is not 0 has no capability to override that. The uids are
// set for this thread only (raw setresuid; syscall.Setresuid would change
// every thread), keeping the saved uid 0 so that they can be set back.
//
// The caller must have locked its goroutine to its thread. restoreErr is
// set when the thread could not be made root again; the caller must then
// return from its goroutine without unlocking, so that the runtime
// discards the thread.
func killAs(uid int, sig syscall.Signal) (killErr, restoreErr error) {
	if _, _, e := syscall.RawSyscall(sysSetresuid, uintptr(uid), uintptr(uid), 0); e != 0 {
		return e, nil
	}
	// kill(-1) skips the caller, and its PID namespace's init (the server
	// is both).
	if _, _, e := syscall.RawSyscall(syscall.SYS_KILL, ^uintptr(0), uintptr(sig), 0); e != 0 {
		killErr = e
	}
	if _, _, e := syscall.RawSyscall(sysSetresuid, 0, 0, 0); e != 0 {
		return killErr, e
	}
	return killErr, nil
}

// KillUID sends SIGKILL to every process of uid in this process's PID
// namespace and those below it, from a thread made uid's for good and then
// discarded: for the service, which cannot reach a job server's processes
// by group or by pid.
func KillUID(uid int) error {
	if uid <= 0 {
		return syscall.EINVAL
	}
	errc := make(chan error, 1)
	go func() {
		// Never unlocked: the thread ends with the goroutine, its
		// credentials with it.
		runtime.LockOSThread()
		if _, _, e := syscall.RawSyscall(sysSetresuid, uintptr(uid), uintptr(uid), uintptr(uid)); e != 0 {
			errc <- e
			return
		}
		_, _, e := syscall.RawSyscall(syscall.SYS_KILL, ^uintptr(0), uintptr(syscall.SIGKILL), 0)
		if e != 0 && e != syscall.ESRCH {
			errc <- e
			return
		}
		errc <- nil
	}()
	return <-errc
}
