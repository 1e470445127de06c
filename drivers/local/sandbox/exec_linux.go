//go:build linux

package sandbox

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
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

// execWrapper runs the command ($1) in a shell of its own that does not
// hold fd 3, then writes its exit status to fd 3: the status arrives when
// the command ends even while processes it left in the background hold
// its stdout.
const execWrapper = `/bin/sh -c "$1" 3>&-; echo $? >&3`

// Exec runs command with /bin/sh -c in session id's container, as its
// root, in the image's working directory, and answers its exit code and
// output (each stream bounded by MaxOutput). When timeout (0: none) passes
// or ctx ends, the command's process tree is killed: the result then says
// TimedOut (for ctx, the error is ctx's). A process it put in the
// background and that left its tree (a daemon) lives on in the container;
// its output after the command ended (and outputGrace) is not read.
//
// runc exec runs detached: the command gets the pipes of this process
// directly (runc's own copying would wait for every holder of the pipe to
// close it), and its exit status comes back on a pipe of its own.
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

	var pipes [3][2]*os.File // stdout, stderr, status: read and write ends
	defer func() {
		for _, pp := range pipes {
			for _, f := range pp {
				if f != nil {
					f.Close()
				}
			}
		}
	}()
	for i := range pipes {
		rd, wr, err := os.Pipe()
		if err != nil {
			return ExecResult{}, err
		}
		pipes[i] = [2]*os.File{rd, wr}
	}
	stdout, stderr := &capped{max: MaxOutput}, &capped{max: MaxOutput}
	var wg sync.WaitGroup
	for i, c := range []*capped{stdout, stderr} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, _ = io.Copy(c, pipes[i][0])
		}()
	}
	statusCh := make(chan []byte, 1)
	go func() {
		b, _ := io.ReadAll(io.LimitReader(pipes[2][0], 64))
		statusCh <- b
	}()

	start := time.Now()
	cmd := exec.CommandContext(ctx, r.runc, "--root", r.stateRoot(), "exec", "--detach", "--pid-file", pidFile,
		"--preserve-fds", "1", id, "/bin/sh", "-c", execWrapper, "sh", command)
	cmd.Stdout, cmd.Stderr = pipes[0][1], pipes[1][1]
	cmd.ExtraFiles = []*os.File{pipes[2][1]}
	cmd.WaitDelay = time.Second
	err := cmd.Run()
	// Only the command holds the write ends now.
	for i := range pipes {
		pipes[i][1].Close()
		pipes[i][1] = nil
	}
	if err != nil {
		wg.Wait() // runc wrote its error and exited: the pipes are closed
		msg := strings.TrimSpace(stderr.buf.String())
		if strings.Contains(msg, "stopped") || strings.Contains(msg, "not running") || strings.Contains(msg, "does not exist") {
			return ExecResult{}, fmt.Errorf("%w: %s: %s", ErrNotRunning, id, msg)
		}
		if ctx.Err() != nil {
			return ExecResult{}, ctx.Err()
		}
		return ExecResult{}, fmt.Errorf("sandbox %s: exec: runc: %v: %s", id, err, msg)
	}

	res := ExecResult{ExitCode: -1}
	var timer <-chan time.Time
	if timeout > 0 {
		t := time.NewTimer(timeout - time.Since(start))
		defer t.Stop()
		timer = t.C
	}
	var status []byte
	select {
	case status = <-statusCh:
	case <-timer:
		res.TimedOut = true
	case <-ctx.Done():
	}
	if status == nil {
		killTree(pidFile)
		select {
		case status = <-statusCh:
		case <-time.After(5 * time.Second):
		}
	}
	// What the command's background processes still write is not waited
	// for past the grace.
	for i := 0; i < 2; i++ {
		_ = pipes[i][0].SetReadDeadline(time.Now().Add(outputGrace))
	}
	wg.Wait()
	res.Stdout, res.Stderr = stdout.buf.Bytes(), stderr.buf.Bytes()
	res.StdoutTruncated, res.StderrTruncated = stdout.dropped, stderr.dropped
	res.Duration = time.Since(start)
	if res.TimedOut {
		res.ExitCode = 137
		return res, nil
	}
	if err := ctx.Err(); err != nil {
		return res, err
	}
	code, err := strconv.Atoi(strings.TrimSpace(string(status)))
	if err != nil {
		// The wrapper died before it wrote (killed from inside).
		res.ExitCode = 137
		return res, nil
	}
	res.ExitCode = code
	return res, nil
}

// killTree kills the exec'd command's process tree, whose host pid is in
// pidFile.
func killTree(pidFile string) {
	data, err := os.ReadFile(pidFile)
	pid, perr := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil || perr != nil || pid <= 1 {
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
