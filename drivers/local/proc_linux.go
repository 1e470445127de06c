//go:build linux

package local

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"syscall"
	"time"

	"svc/drivers"
	"svc/drivers/local/shim"
)

// runGroupAlive reports whether process group pgid has a live member that
// belongs to run runID: the proof that a recorded group id still names one
// of our jobs and has not been reused by some other program.
func runGroupAlive(pgid int, runID string) bool {
	if pgid <= 1 || pgid == syscall.Getpgrp() {
		return false
	}
	for _, p := range shim.Processes() {
		if p.Pgid == pgid && !p.Zombie && shim.HasEnv(p.Pid, drivers.EnvRunID+"="+runID) {
			return true
		}
	}
	return false
}

// shimAlive reports whether pid is a live shim of run runID (an isolated
// job's shim, the init of the job's PID namespace).
func shimAlive(pid int, runID string) bool {
	if pid <= 1 || pid == os.Getpid() {
		return false
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	p, ok := shim.ParseStat(pid, b)
	return ok && !p.Zombie && shim.HasEnv(pid, drivers.EnvRunID+"="+runID)
}

// previousAlive reports whether what a record names (a process group, or
// an isolated job's shim when pgid is 0) still belongs to run runID.
func previousAlive(pgid, shimPid int, runID string) bool {
	if pgid == 0 {
		return shimAlive(shimPid, runID)
	}
	return runGroupAlive(pgid, runID)
}

// killPrevious kills what a record names if it still belongs to run runID,
// and reports whether it did. Killing an isolated job's shim makes the
// kernel kill the rest of its PID namespace.
func killPrevious(pgid, shimPid int, runID string) bool {
	if !previousAlive(pgid, shimPid, runID) {
		return false
	}
	if pgid == 0 {
		_ = syscall.Kill(shimPid, syscall.SIGKILL)
	} else {
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
	}
	return true
}

// killRunGroup kills process group pgid if it still belongs to run runID,
// and reports whether it did.
func killRunGroup(pgid int, runID string) bool {
	return pgid != 0 && killPrevious(pgid, 0, runID)
}

// awaitPreviousGone polls until what the record names has no live member
// of run runID, or a bounded while has passed (a process in
// uninterruptible sleep can outlast SIGKILL for a moment; a zombie is
// already gone).
func awaitPreviousGone(ctx context.Context, pgid, shimPid int, runID string) error {
	deadline := time.NewTimer(10 * time.Second)
	defer deadline.Stop()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for killPrevious(pgid, shimPid, runID) {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-deadline.C:
			return fmt.Errorf("process group %d (shim %d) of run %q is still alive after SIGKILL", pgid, shimPid, runID)
		case <-tick.C:
		}
	}
	return nil
}
