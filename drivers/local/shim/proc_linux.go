//go:build linux

package shim

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"syscall"
)

// Proc is one line of the process table, from /proc/<pid>/stat.
type Proc struct {
	Pid, Ppid, Pgid int
	Zombie          bool
}

// Processes lists the processes this process can see. Processes that end
// while it reads are skipped.
func Processes() []Proc {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	ps := make([]Proc, 0, len(ents))
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		if p, ok := ParseStat(pid, b); ok {
			ps = append(ps, p)
		}
	}
	return ps
}

// ParseStat parses /proc/<pid>/stat: "pid (comm) state ppid pgrp ...",
// where comm may itself hold spaces and parentheses.
func ParseStat(pid int, b []byte) (Proc, bool) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return Proc{}, false
	}
	f := bytes.Fields(b[i+1:])
	if len(f) < 3 {
		return Proc{}, false
	}
	ppid, err1 := strconv.Atoi(string(f[1]))
	pgid, err2 := strconv.Atoi(string(f[2]))
	if err1 != nil || err2 != nil {
		return Proc{}, false
	}
	return Proc{Pid: pid, Ppid: ppid, Pgid: pgid, Zombie: string(f[0]) == "Z" || string(f[0]) == "X"}, true
}

// Descendants returns the pids below root in ps, root excluded.
func Descendants(ps []Proc, root int) []int {
	kids := make(map[int][]int)
	for _, p := range ps {
		kids[p.Ppid] = append(kids[p.Ppid], p.Pid)
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

// HasEnv reports whether the process pid was started with the variable
// kv ("NAME=value") in its environment.
func HasEnv(pid int, kv string) bool {
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

// WriteRecord records a running attempt: the harness's process group
// (0 when the job has a PID namespace of its own) and its shim's pid as
// the driver's host sees it.
// The record is in the job's work area, which the job may have changed:
// it is never written through a symbolic link, nor opened in a way that
// would wait on a FIFO.
func WriteRecord(path string, pgid, shim int) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0o600)
	if err != nil {
		return err
	}
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		_ = f.Close()
		return fmt.Errorf("%s is not a regular file", path)
	}
	_, err = fmt.Fprintf(f, "%d %d\n", pgid, shim)
	return errors.Join(err, f.Close())
}

// ReadRecord reads what WriteRecord wrote; ok is false when there is no
// usable record (and when what is at path is not a regular file: a job
// that left a FIFO or a symbolic link there must not block or redirect the
// next attempt's read).
func ReadRecord(path string) (pgid, shim int, ok bool) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return 0, 0, false
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return 0, 0, false
	}
	b, err := io.ReadAll(io.LimitReader(f, 64))
	if err != nil {
		return 0, 0, false
	}
	if _, err := fmt.Sscanf(string(b), "%d %d", &pgid, &shim); err != nil {
		return 0, 0, false
	}
	return pgid, shim, pgid > 1 || shim > 1
}
