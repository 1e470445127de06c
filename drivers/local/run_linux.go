//go:build linux

package local

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"svc/drivers"
	"svc/drivers/local/shim"
	"svc/internal/platform/derrors"
)

// supervisorSlack is how long past the kill grace the driver trusts the
// shim to end a terminated job before killing the group itself (and a job
// server to answer a kill before killing the server); a variable for the
// tests.
var supervisorSlack = 10 * time.Second

// Bounds on waits that only a misbehaving process could make long.
const (
	// drainTimeout bounds reading output after the shim is gone: only a
	// process that escaped the shim's tree (say, one handed to systemd)
	// could still hold the pipes.
	drainTimeout = 5 * time.Second
	// lockPoll is how often an attempt retries the run's lock while a
	// previous attempt still holds it.
	lockPoll = 50 * time.Millisecond
)

// run runs a checked job.
func (d *Driver) run(ctx context.Context, j drivers.Job) (drivers.Result, error) {
	l := d.newLayout(j.RunID, j.WorkDir)
	env := environment(j, l, d.otlpEndpoint)
	lock, unlock, err := d.acquire(ctx, j.RunID, l)
	if err != nil {
		return drivers.Result{}, err
	}
	defer unlock()
	// A previous attempt whose shim died with it may have left its group;
	// one whose service died, its dying job server.
	if pgid, shimPid, ok := shim.ReadRecord(l.record); ok && killPrevious(pgid, shimPid, j.RunID) {
		if err := awaitPreviousGone(ctx, pgid, shimPid, j.RunID); err != nil {
			return drivers.Result{}, fmt.Errorf("local driver: killing what the previous attempt of run %q left: %w", j.RunID, err)
		}
	}
	if rec, ok := readPoolRecord(l.lock); ok && !d.isOwnServer(rec) && serverAlive(rec) {
		d.killRecorded(rec, false)
		if err := awaitServerGone(ctx, rec); err != nil {
			return drivers.Result{}, fmt.Errorf("local driver: killing what the previous attempt of run %q left: %w", j.RunID, err)
		}
	}
	if err := removeAll(l.area); err != nil {
		return drivers.Result{}, fmt.Errorf("local driver: wiping the work area %s: %w", l.area, err)
	}
	// The uid is let go of only once the area, and the record naming the
	// uid, are gone: until then a retry could find the record and kill
	// the uid, which must still be this job's.
	var lease *uidLease
	defer func() {
		d.removeArea(l)
		if lease != nil {
			_ = lock.Truncate(0)
			d.releaseUID(lease)
		}
	}()
	if err := prepareArea(j, l); err != nil {
		return drivers.Result{}, err
	}
	var res drivers.Result
	owner := d.jobOwner()
	if d.pooled() {
		sp, err := d.server()
		if err != nil {
			return drivers.Result{}, err
		}
		if lease, err = d.leaseUID(); err != nil {
			return drivers.Result{}, err
		}
		owner = lease.uid
		if err := chownArea(l, len(j.Files) == 0 && l.dir == l.work, lease.uid, lease.uid); err != nil {
			return drivers.Result{}, fmt.Errorf("local driver: handing the work area to the job's uid: %w", err)
		}
		path, err := lookPath(j.Command[0], env, l.dir, lease.uid, lease.uid, d.root)
		if err != nil {
			return drivers.Result{}, err
		}
		if sp.hides(path) {
			return drivers.Result{}, derrors.Invalidf("harness command %q is in a directory hidden from jobs (the service's data directory or home): install it elsewhere", j.Command[0])
		}
		if err := writePoolRecord(lock, poolRecord{uid: lease.uid, pid: sp.pid, startTime: sp.startTime}); err != nil {
			return drivers.Result{}, fmt.Errorf("local driver: recording the job's uid: %w", err)
		}
		if res, err = d.runOnServer(ctx, j, l, sp, lease, path, env); err != nil {
			return drivers.Result{}, err
		}
	} else {
		runAs := -1
		if d.isolate != nil && d.isolate.UID >= 0 {
			runAs = d.isolate.UID
			if err := chownArea(l, len(j.Files) == 0 && l.dir == l.work, d.isolate.UID, d.isolate.GID); err != nil {
				return drivers.Result{}, fmt.Errorf("local driver: handing the work area to the job's user: %w", err)
			}
		}
		path, err := lookPath(j.Command[0], env, l.dir, runAs, d.gid(), l.area)
		if err != nil {
			return drivers.Result{}, err
		}
		if res, err = d.supervise(ctx, j, l, shim.Config{
			Path:      path,
			Args:      j.Command,
			Env:       env,
			Dir:       l.dir,
			Record:    l.record,
			KillGrace: d.killGrace,
			Isolate:   d.isolation(l),
		}); err != nil {
			return drivers.Result{}, err
		}
	}
	d.readTrace(&res, j.RunID, l, owner)
	return res, nil
}

// readTrace reads the trace file a finished job left into res (see
// readBack): a file the job removed is no trace; one that is not a regular
// file of owner's is refused, and res.TraceRefused says why.
func (d *Driver) readTrace(res *drivers.Result, runID string, l layout, owner int) {
	b, refused, err := readBack(l.trace, owner, drivers.MaxOutput, readBackTimeout)
	switch {
	case errors.Is(err, errNoFile):
	case err != nil:
		d.log.Warn("local driver: reading the trace file", "run", runID, "err", err)
	case refused != "":
		res.TraceRefused = "the driver did not read the trace file (" + drivers.EnvTraceFile + "): " + refused +
			"; it reads back only a regular file that the job wrote itself"
		d.log.Warn("local driver: refused the trace file", "run", runID, "why", refused)
	default:
		res.Trace = b
	}
}

// jobOwner is the uid that owns what a job writes, as the host sees it,
// for every mode but the job server's (whose jobs have a uid each).
func (d *Driver) jobOwner() int {
	switch {
	case d.isolate == nil:
		return os.Geteuid()
	case d.isolate.UID < 0:
		// Root of a user namespace mapped to the service's user.
		return os.Getuid()
	}
	return d.isolate.UID
}

// acquire takes the lock of run runID, so two attempts of one run (in this
// process or another on the host) never share its work area. An attempt
// that finds the lock held supersedes the holder: it kills the holder's
// job (its process group or its shim, as the area's record says; on a job
// server, through this driver's server or by the uid the lock file
// records), which ends the holder's Run, and takes the lock when the
// holder has cleaned up. The lock file is removed on release; a waiter that
// locked a file since removed tries again. lock is the locked file, where
// an attempt on a job server records its uid.
func (d *Driver) acquire(ctx context.Context, runID string, l layout) (lock *os.File, unlock func(), err error) {
	if err := os.MkdirAll(filepath.Dir(l.lock), 0o700); err != nil {
		return nil, nil, fmt.Errorf("local driver: creating the lock directory: %w", err)
	}
	name := filepath.Base(l.area)
	var tick *time.Ticker
	for {
		f, err := os.OpenFile(l.lock, os.O_CREATE|os.O_RDWR, 0o600)
		if err != nil {
			return nil, nil, fmt.Errorf("local driver: opening the lock of run %q: %w", runID, err)
		}
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			fi1, err1 := f.Stat()
			fi2, err2 := os.Stat(l.lock)
			if err1 == nil && err2 == nil && os.SameFile(fi1, fi2) {
				return f, func() {
					_ = os.Remove(l.lock)
					_ = f.Close()
				}, nil
			}
			_ = f.Close()
			continue
		}
		_ = f.Close()
		if !errors.Is(err, syscall.EWOULDBLOCK) && !errors.Is(err, syscall.EINTR) {
			return nil, nil, fmt.Errorf("local driver: locking run %q: %w", runID, err)
		}
		if !d.killActive(name) {
			if rec, ok := readPoolRecord(l.lock); ok {
				d.killRecorded(rec, true)
			}
		}
		if pgid, shimPid, ok := shim.ReadRecord(l.record); ok {
			killPrevious(pgid, shimPid, runID)
		}
		if tick == nil {
			tick = time.NewTicker(lockPoll)
			defer tick.Stop()
		}
		select {
		case <-ctx.Done():
			return nil, nil, fmt.Errorf("local driver: waiting for the previous attempt of run %q to end: %w", runID, ctx.Err())
		case <-tick.C:
		}
	}
}

// removeArea removes the work area of a finished job, secrets first so
// that they go even if something else cannot.
func (d *Driver) removeArea(l layout) {
	if err := os.Remove(l.secrets); err != nil && !errors.Is(err, fs.ErrNotExist) {
		d.log.Error("local driver: removing the secrets file", "path", l.secrets, "err", err)
	}
	if removeLaidOut(l) {
		return
	}
	if err := removeAll(l.area); err != nil {
		d.log.Warn("local driver: removing the work area", "path", l.area, "err", err)
	}
}

// removeLaidOut removes the work area l when it holds only what
// prepareArea put there (and the job's process record): a few unlinks
// and rmdirs, where removeAll reads every directory first. It reports
// false, having removed what it could, when the job left anything else.
func removeLaidOut(l layout) bool {
	for _, f := range []string{l.caseF, l.trace, l.secrets, l.record} {
		if err := syscall.Unlink(f); err != nil && err != syscall.ENOENT {
			return false
		}
	}
	for _, dir := range []string{l.work, l.home, l.tmp, l.area} {
		if err := syscall.Rmdir(dir); err != nil {
			return false
		}
	}
	return true
}

// chownArea gives the work area l to uid:gid: the paths prepareArea laid
// out when the job had no files of its own (simple), else every entry.
func chownArea(l layout, simple bool, uid, gid int) error {
	if !simple {
		return chownTree(l.area, uid, gid)
	}
	for _, p := range []string{l.area, l.work, l.home, l.tmp, l.caseF, l.trace, l.secrets} {
		if err := os.Lchown(p, uid, gid); err != nil {
			return err
		}
	}
	return nil
}

// removeAll removes dir like os.RemoveAll, first making the directories a
// harness left read-only writable again (Go's module cache under HOME is
// read-only, for one), since only root could remove their entries.
func removeAll(dir string) error {
	if err := os.RemoveAll(dir); err == nil {
		return nil
	}
	_ = filepath.WalkDir(dir, func(path string, e fs.DirEntry, err error) error {
		if err == nil && e.IsDir() {
			_ = os.Chmod(path, 0o700)
		}
		return nil
	})
	return os.RemoveAll(dir)
}

// prepareArea creates the work area of a job: directories, the case,
// trace and secrets files, and the job's Files.
func prepareArea(j drivers.Job, l layout) error {
	for _, dir := range []string{l.area, l.work, l.home, l.tmp} {
		// Mkdir, not MkdirAll: the root exists, and each case saves the
		// stats of every parent.
		err := os.Mkdir(dir, 0o700)
		if errors.Is(err, fs.ErrNotExist) {
			err = os.MkdirAll(dir, 0o700)
		}
		if err != nil {
			return fmt.Errorf("local driver: creating %s: %w", dir, err)
		}
	}
	secrets := j.Secrets
	if secrets == nil {
		secrets = map[string]string{}
	}
	sb, err := json.Marshal(secrets)
	if err != nil {
		return fmt.Errorf("local driver: encoding the secrets: %w", err)
	}
	for _, f := range []struct {
		path string
		data []byte
	}{{l.caseF, j.Case}, {l.trace, nil}, {l.secrets, sb}} {
		if err := writeNew(f.path, f.data, 0o600); err != nil {
			return fmt.Errorf("local driver: writing %s: %w", f.path, err)
		}
	}
	names := make([]string, 0, len(j.Files))
	for name := range j.Files {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		p := filepath.Join(l.work, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return fmt.Errorf("local driver: writing file %q into the work directory: %w", name, err)
		}
		if err := writeNew(p, []byte(j.Files[name]), fileMode(j.Files[name])); err != nil {
			return fmt.Errorf("local driver: writing file %q into the work directory: %w", name, err)
		}
	}
	if l.dir == l.work {
		return nil
	}
	if err := os.MkdirAll(l.dir, 0o755); err != nil {
		return derrors.Invalidf("harness workDir %q cannot be created in the work directory: %v", j.WorkDir, err)
	}
	return nil
}

// writeNew creates path with mode perm (O_EXCL: the area is fresh, so an
// existing file means two names for one path) and writes data to it.
func writeNew(path string, data []byte, perm os.FileMode) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	return errors.Join(err, f.Close())
}

// lookPath resolves the harness's program: a name without '/' on the
// harness's PATH (relative PATH entries relative to dir, as the harness
// would see them), any other path relative to dir. With uid >= 0 the
// program must be executable by that user (and group gid): a PATH entry
// only the service's user can reach is skipped. bound is the directory
// the job's mounts bind back, whose way is the job's (see reachableBy).
func lookPath(name string, env []string, dir string, uid, gid int, bound string) (string, error) {
	if strings.Contains(name, "/") {
		p := name
		if !filepath.IsAbs(p) {
			p = filepath.Join(dir, p)
		}
		switch fi, err := os.Stat(p); {
		case errors.Is(err, fs.ErrNotExist) && !filepath.IsAbs(name):
			return "", derrors.Invalidf("harness command %q not found in the job's working directory: add it to the case's files or give an absolute path", name)
		case errors.Is(err, fs.ErrNotExist):
			return "", derrors.Invalidf("harness command %q does not exist on the worker host", name)
		case err != nil:
			return "", fmt.Errorf("harness command %q: %w", name, err)
		case !executable(fi):
			return "", derrors.Invalidf("harness command %q is not an executable file", name)
		case uid >= 0 && !reachableBy(p, bound, uid, gid):
			return "", derrors.Invalidf("harness command %q cannot be run by the jobs' user (uid %d): make it and its directories readable and executable by others", name, uid)
		}
		return p, nil
	}
	var path string
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			path = v
		}
	}
	for _, d := range filepath.SplitList(path) {
		if d == "" {
			d = "."
		}
		if !filepath.IsAbs(d) {
			d = filepath.Join(dir, d)
		}
		p := filepath.Join(d, name)
		if fi, err := os.Stat(p); err == nil && executable(fi) && (uid < 0 || reachableBy(p, bound, uid, gid)) {
			return p, nil
		}
	}
	return "", derrors.Invalidf("harness command %q not found on PATH: install it on the worker host or give its absolute path", name)
}

// executable reports whether fi is a regular file with an execute bit.
func executable(fi fs.FileInfo) bool {
	return fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0
}

// supervise starts the shim on cfg and follows the job to its end.
func (d *Driver) supervise(ctx context.Context, j drivers.Job, l layout, cfg shim.Config) (drivers.Result, error) {
	ends, err := pipes(4) // the control, status, stdout and stderr pipes
	if err != nil {
		return drivers.Result{}, err
	}
	ctrlR, ctrlW, statR, statW, outR, outW, errR, errW := ends[0], ends[1], ends[2], ends[3], ends[4], ends[5], ends[6], ends[7]
	defer closeFiles(ctrlW, statR, outR, errR)

	cmd := d.shimCommand(j.RunID, cfg.Isolate)
	cmd.Stdout, cmd.Stderr = outW, errW
	cmd.ExtraFiles = []*os.File{ctrlR, statW}
	jn, err := d.prepareJobNet(cmd, cfg.Isolate)
	if err != nil {
		closeFiles(ctrlR, statW, outW, errW)
		return drivers.Result{}, err
	}
	defer jn.close()
	begin := time.Now()
	exited, err := startHeld(cmd)
	closeFiles(ctrlR, statW, outW, errW)
	jn.started()
	if err != nil {
		return drivers.Result{}, fmt.Errorf("local driver: starting the job supervisor: %w", err)
	}
	if err := jn.connect(cmd.Process.Pid); err != nil {
		// The supervisor waits for its job: EOF makes it give up.
		_ = ctrlW.Close()
		<-exited
		return drivers.Result{}, err
	}
	if cfg.Isolate != nil && l.record != "" {
		// The shim is the init of the job's PID namespace: killing it
		// kills the job. Recorded for a retried attempt to find.
		if err := shim.WriteRecord(l.record, 0, cmd.Process.Pid); err != nil {
			d.log.Warn("local driver: recording the job's supervisor", "run", j.RunID, "err", err)
		}
	}

	out := readOutput(outR, errR, j.Log)
	var (
		pgid       atomic.Int64
		final      *shim.Status
		startErr   *shim.Status
		statusDone = make(chan struct{})
	)
	go func() {
		defer close(statusDone)
		sc := bufio.NewScanner(statR)
		for sc.Scan() {
			var st shim.Status
			if json.Unmarshal(sc.Bytes(), &st) != nil {
				continue
			}
			switch {
			case st.StartError != "":
				startErr = &st
			case st.Pgid != 0:
				pgid.Store(int64(st.Pgid))
			case st.Done:
				final = &st
			}
		}
	}()

	line, err := json.Marshal(cfg)
	if err == nil {
		_, err = ctrlW.Write(append(line, '\n'))
	}
	if err != nil {
		// The shim sees EOF, or a broken line, and gives up without starting.
		_ = ctrlW.Close()
		<-exited
		return drivers.Result{}, fmt.Errorf("local driver: sending the job to its supervisor: %w", err)
	}

	stop := newStopper(ctx, j.Timeout, d.killGrace, func() { _, _ = ctrlW.Write([]byte{shim.CmdTerminate}) })
	defer stop.stop()
	var waitErr error
wait:
	for {
		select {
		case <-stop.timeout:
			stop.timedOut()
		case <-stop.done:
			stop.cancelled()
		case <-stop.overdue:
			stop.overdue = nil
			d.log.Error("local driver: the job supervisor did not end the job in time; killing it", "run", j.RunID, "pid", cmd.Process.Pid)
			if cfg.Isolate == nil {
				killRunGroup(int(pgid.Load()), j.RunID)
			}
			_ = cmd.Process.Kill()
		case waitErr = <-exited:
			break wait
		}
	}
	end := time.Now()
	_ = ctrlW.Close()

	// The shim is gone; the harness never had the status pipe, and every
	// process that had the output pipes is dead unless it escaped the
	// shim's tree.
	out.drain(statusDone, statR)

	if final == nil {
		// The shim died without reporting: kill what it supervised (an
		// isolated job died with it).
		if pg := int(pgid.Load()); pg != 0 && cfg.Isolate == nil && killRunGroup(pg, j.RunID) {
			_ = awaitPreviousGone(context.WithoutCancel(ctx), pg, 0, j.RunID)
		}
		if startErr != nil {
			return drivers.Result{}, startError(j.Command[0], startErr)
		}
		return drivers.Result{}, fmt.Errorf("local driver: the job supervisor of run %q ended without reporting the harness's exit (%v)", j.RunID, waitErr)
	}
	return out.result(final, stop.reason, end.Sub(begin)), nil
}

// startHeld starts cmd from a thread held until cmd is reaped, and returns
// the channel that gets cmd's Wait error. Pdeathsig fires when the thread
// that forked the child exits, not the process: holding it makes only the
// service's death signal the child.
func startHeld(cmd *exec.Cmd) (<-chan error, error) {
	started := make(chan error, 1)
	exited := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		if err := cmd.Start(); err != nil {
			started <- err
			return
		}
		started <- nil
		exited <- cmd.Wait()
	}()
	return exited, <-started
}

// startError explains why the shim could not start the harness.
func startError(name string, st *shim.Status) error {
	switch syscall.Errno(st.StartErrno) {
	case syscall.ENOENT, syscall.EACCES, syscall.EPERM, syscall.ENOEXEC, syscall.ENOTDIR, syscall.EISDIR, syscall.ELOOP, syscall.ENAMETOOLONG:
		return derrors.Invalidf("harness command %q could not be started: %s", name, st.StartError)
	}
	return fmt.Errorf("local driver: harness command %q could not be started: %s", name, st.StartError)
}

// closeFiles closes every non-nil file; closing twice is harmless here.
func closeFiles(fs ...*os.File) {
	for _, f := range fs {
		if f != nil {
			_ = f.Close()
		}
	}
}
