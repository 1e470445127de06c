//go:build linux

package sandbox

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// outputGrace is how long Exec waits, after the command ended, for the
// processes it left in the background to close its stdout and stderr.
const outputGrace = 250 * time.Millisecond

// Exec runs command with /bin/sh -c in session id's container, as its
// root, in the image's working directory, and answers its exit code and
// output (each stream bounded by MaxOutput). When timeout (0: none) passes
// or ctx ends, the command's process tree is killed: the result then says
// TimedOut (for ctx, the error is ctx's). A process it put in the
// background and that left its tree (a daemon) lives on in the container.
func (r *Runtime) Exec(ctx context.Context, id, command string, timeout time.Duration) (ExecResult, error) {
	p := r.paths(id)
	if _, err := r.readMeta(id); err != nil {
		return ExecResult{}, err
	}
	if r.runc == "" {
		return ExecResult{}, r.Available()
	}
	var nonce [8]byte
	_, _ = rand.Read(nonce[:])
	pidFile := filepath.Join(p.bundle, "exec-"+hex.EncodeToString(nonce[:])+".pid")
	defer os.Remove(pidFile)
	cmd := exec.Command(r.runc, "--root", r.stateRoot(), "exec", "--pid-file", pidFile, id, "/bin/sh", "-c", command)
	stdout, stderr := &capped{max: MaxOutput}, &capped{max: MaxOutput}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	cmd.WaitDelay = outputGrace
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return ExecResult{}, fmt.Errorf("sandbox %s: exec: %w", id, err)
	}
	var (
		killOnce sync.Once
		timedOut bool
	)
	kill := func(why bool) {
		killOnce.Do(func() {
			timedOut = why
			killExec(cmd, pidFile)
		})
	}
	done := make(chan struct{})
	go func() {
		var timer <-chan time.Time
		if timeout > 0 {
			t := time.NewTimer(timeout)
			defer t.Stop()
			timer = t.C
		}
		select {
		case <-done:
		case <-timer:
			kill(true)
		case <-ctx.Done():
			kill(false)
		}
	}()
	werr := cmd.Wait()
	close(done)
	res := ExecResult{
		ExitCode:        cmd.ProcessState.ExitCode(),
		Stdout:          stdout.buf.Bytes(),
		Stderr:          stderr.buf.Bytes(),
		StdoutTruncated: stdout.dropped,
		StderrTruncated: stderr.dropped,
		Duration:        time.Since(start),
	}
	killOnce.Do(func() {}) // no kill after this point
	if timedOut {
		res.TimedOut = true
		res.ExitCode = 137
		return res, nil
	}
	if err := ctx.Err(); err != nil {
		return res, err
	}
	var exit *exec.ExitError
	if werr != nil && !errors.As(werr, &exit) && !errors.Is(werr, exec.ErrWaitDelay) {
		return res, fmt.Errorf("sandbox %s: exec: %w", id, werr)
	}
	if _, err := os.Stat(pidFile); err != nil && res.ExitCode != 0 {
		// runc never started the command: its own failure, not the
		// command's (a stopped container, say).
		msg := strings.TrimSpace(string(res.Stderr))
		if strings.Contains(msg, "stopped") || strings.Contains(msg, "not running") || strings.Contains(msg, "does not exist") {
			return res, fmt.Errorf("%w: %s: %s", ErrNotRunning, id, msg)
		}
		return res, fmt.Errorf("sandbox %s: exec: runc: %s", id, msg)
	}
	return res, nil
}

// killExec kills the exec'd command's process tree (its host pid is in
// pidFile), then runc itself if the command never started.
func killExec(cmd *exec.Cmd, pidFile string) {
	data, err := os.ReadFile(pidFile)
	pid, perr := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil || perr != nil || pid <= 1 {
		_ = cmd.Process.Kill()
		return
	}
	// Twice: a process forked while the tree was listed is killed on the
	// second pass.
	for range 2 {
		for _, q := range tree(pid) {
			_ = syscall.Kill(q, syscall.SIGKILL)
		}
	}
}

// tree returns pid and its descendants, by the parents /proc lists.
func tree(pid int) []int {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return []int{pid}
	}
	children := map[int][]int{}
	for _, e := range ents {
		q, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if pp := ppid(q); pp > 0 {
			children[pp] = append(children[pp], q)
		}
	}
	out := []int{pid}
	for i := 0; i < len(out); i++ {
		out = append(out, children[out[i]]...)
	}
	return out
}

// ppid reads pid's parent from /proc/<pid>/stat (after the command's
// name, which may hold spaces and parentheses).
func ppid(pid int) int {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	i := bytes.LastIndexByte(data, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(string(data[i+1:]))
	if len(f) < 2 {
		return 0
	}
	pp, _ := strconv.Atoi(f[1])
	return pp
}

// capped keeps the first max bytes written to it and counts the rest.
type capped struct {
	max     int
	buf     bytes.Buffer
	dropped bool
}

func (c *capped) Write(p []byte) (int, error) {
	if room := c.max - c.buf.Len(); room < len(p) {
		c.dropped = true
		if room > 0 {
			c.buf.Write(p[:room])
		}
		return len(p), nil
	}
	c.buf.Write(p)
	return len(p), nil
}
