//go:build linux

package local

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"strconv"
	"syscall"
	"time"
)

// proc is one line of the process table, from /proc/<pid>/stat.
type proc struct {
	pid, ppid, pgid int
	zombie          bool
}

// processes lists the host's processes. Processes that end while it reads
// are skipped.
func processes() []proc {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	ps := make([]proc, 0, len(ents))
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		if p, ok := parseStat(pid, b); ok {
			ps = append(ps, p)
		}
	}
	return ps
}

// parseStat parses /proc/<pid>/stat: "pid (comm) state ppid pgrp ...",
// where comm may itself hold spaces and parentheses.
func parseStat(pid int, b []byte) (proc, bool) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return proc{}, false
	}
	f := bytes.Fields(b[i+1:])
	if len(f) < 3 {
		return proc{}, false
	}
	ppid, err1 := strconv.Atoi(string(f[1]))
	pgid, err2 := strconv.Atoi(string(f[2]))
	if err1 != nil || err2 != nil {
		return proc{}, false
	}
	return proc{pid: pid, ppid: ppid, pgid: pgid, zombie: string(f[0]) == "Z" || string(f[0]) == "X"}, true
}

// descendants returns the pids below root in ps, root excluded.
func descendants(ps []proc, root int) []int {
	kids := make(map[int][]int)
	for _, p := range ps {
		kids[p.ppid] = append(kids[p.ppid], p.pid)
	}
	var out []int
	queue := kids[root]
	for len(queue) > 0 {
		pid := queue[0]
		queue = queue[1:]
		out = append(out, pid)
		queue = append(queue, kids[pid]...)
	}
	return out
}

// hasEnv reports whether the process pid was started with the variable
// kv ("NAME=value") in its environment.
func hasEnv(pid int, kv string) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/environ")
	if err != nil {
		return false
	}
	for e := range bytes.SplitSeq(b, []byte{0}) {
		if string(e) == kv {
			return true
		}
	}
	return false
}

// runGroupAlive reports whether process group pgid has a live member that
// belongs to run runID: the proof that a recorded group id still names one
// of our jobs and has not been reused by some other program.
func runGroupAlive(pgid int, runID string) bool {
	if pgid <= 1 || pgid == syscall.Getpgrp() {
		return false
	}
	for _, p := range processes() {
		if p.pgid == pgid && !p.zombie && hasEnv(p.pid, EnvRunID+"="+runID) {
			return true
		}
	}
	return false
}

// killRunGroup kills process group pgid if it still belongs to run runID,
// and reports whether it did.
func killRunGroup(pgid int, runID string) bool {
	if !runGroupAlive(pgid, runID) {
		return false
	}
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
	return true
}

// awaitRunGroupGone polls until group pgid has no live member of run
// runID, or a bounded while has passed (a process in uninterruptible
// sleep can outlast SIGKILL for a moment; a zombie is already gone).
func awaitRunGroupGone(ctx context.Context, pgid int, runID string) error {
	deadline := time.NewTimer(10 * time.Second)
	defer deadline.Stop()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for runGroupAlive(pgid, runID) {
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-deadline.C:
			return fmt.Errorf("process group %d of run %q is still alive after SIGKILL", pgid, runID)
		case <-tick.C:
		}
	}
	return nil
}

// writeRecord records the running attempt's process group (the harness's
// pid) and its shim's pid in the work area.
func writeRecord(path string, pgid, shim int) error {
	return os.WriteFile(path, fmt.Appendf(nil, "%d %d\n", pgid, shim), 0o600)
}

// readRecord reads what writeRecord wrote; ok is false when there is no
// usable record.
func readRecord(path string) (pgid, shim int, ok bool) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, 0, false
	}
	if _, err := fmt.Sscanf(string(b), "%d %d", &pgid, &shim); err != nil {
		return 0, 0, false
	}
	return pgid, shim, pgid > 1
}
