//go:build linux

package local

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"svc/drivers"
	"svc/drivers/local/shim"
)

func init() {
	// The fallback shim: this binary re-executed with the marker (see
	// shimCommand). init runs on the main goroutine, locked to the main
	// thread, before main.
	if os.Getenv(shim.Marker) == "1" {
		os.Exit(shim.Main())
	}
}

// ShimName is the file name of the supervisor program, installed beside svc.
const ShimName = "svc-shim"

// FindShim returns the svc-shim program beside the running binary, else
// on PATH; "" when there is none (the driver then re-executes itself).
func FindShim() string {
	if exe, err := os.Executable(); err == nil {
		p := filepath.Join(filepath.Dir(exe), ShimName)
		if fi, err := os.Stat(p); err == nil && executable(fi) {
			return p
		}
	}
	if p, err := exec.LookPath(ShimName); err == nil {
		if abs, err := filepath.Abs(p); err == nil {
			return abs
		}
	}
	return ""
}

var warnFallback sync.Once

// shimCommand returns the command that starts the shim of run runID, in
// namespaces of its own when iso is set.
func (d *Driver) shimCommand(runID string, iso *shim.Isolation) *exec.Cmd {
	path := d.shimPath
	if path == "" {
		// /proc/self/exe still names this binary when its file has been
		// replaced on disk by an upgrade.
		path = "/proc/self/exe"
		warnFallback.Do(func() {
			d.log.Warn("local driver: " + ShimName + " not found beside the service or on PATH; each job re-executes the service as its supervisor, which costs far more CPU per case (make build installs it)")
		})
	}
	sys := &syscall.SysProcAttr{
		Setsid:    true, // no terminal's signals, no session with the service
		Pdeathsig: syscall.SIGTERM,
	}
	if iso != nil {
		// The shim is the init of the job's PID namespace: its death, by
		// this signal when the service dies, ends the whole job.
		sys.Pdeathsig = syscall.SIGKILL
		sys.Cloneflags = syscall.CLONE_NEWPID | syscall.CLONE_NEWNS
		if d.isolate.NoNetwork || d.netIsolated() {
			sys.Cloneflags |= syscall.CLONE_NEWNET
		}
		if iso.UserNS {
			sys.Cloneflags |= syscall.CLONE_NEWUSER
			sys.UidMappings = []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getuid(), Size: 1}}
			sys.GidMappings = []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getgid(), Size: 1}}
			sys.GidMappingsEnableSetgroups = false
		}
	}
	return &exec.Cmd{
		Path: path,
		Args: []string{shim.Arg0},
		Env: []string{
			shim.Marker + "=1",
			drivers.EnvRunID + "=" + runID,
			// A race-enabled build (the tests) otherwise sleeps a second
			// at exit; every other build ignores GORACE.
			"GORACE=" + strings.TrimSpace(os.Getenv("GORACE")+" atexit_sleep_ms=0"),
			// One thread runs the shim's few goroutines; fewer to start.
			"GOMAXPROCS=1",
		},
		Dir:         "/",
		SysProcAttr: sys,
	}
}

// isolation is what the shim of the job laid out in l sets up; nil when
// the driver does not isolate jobs.
func (d *Driver) isolation(l layout) *shim.Isolation {
	if d.isolate == nil {
		return nil
	}
	hide := append([]string{d.root}, d.isolate.Hide...)
	if d.isolate.UID >= 0 {
		// The job's user must reach its area: a directory on the way that
		// it could not search (a home of mode 0700, say) is hidden too,
		// and the shim recreates the way through it.
		if dir := blockedAncestor(l.area, d.isolate.UID, d.isolate.GID); dir != "" {
			hide = append(hide, dir)
		}
	}
	iso := &shim.Isolation{
		Hide:       hide,
		Area:       l.area,
		PrivateTmp: true,
		UID:        d.isolate.UID,
		GID:        d.isolate.GID,
		UserNS:     d.isolate.UID < 0,
	}
	// An error here is the network's plan's, which prepareJobNet returns.
	_ = d.netIsolation(iso)
	return iso
}

// gid is the group jobs run as, -1 when they keep the service's.
func (d *Driver) gid() int {
	if d.isolate == nil || d.isolate.UID < 0 {
		return -1
	}
	return d.isolate.GID
}

// chownTree gives dir and everything in it to uid:gid.
func chownTree(dir string, uid, gid int) error {
	return filepath.WalkDir(dir, func(path string, _ fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(path, uid, gid)
	})
}

// blockedAncestor returns the outermost directory above path that uid
// (with group gid) cannot search, or "".
func blockedAncestor(path string, uid, gid int) string {
	var dirs []string
	for dir := filepath.Dir(filepath.Clean(path)); dir != "/" && dir != "."; dir = filepath.Dir(dir) {
		dirs = append(dirs, dir)
	}
	for i := len(dirs) - 1; i >= 0; i-- {
		if !permits(dirs[i], uid, gid, 0o1) {
			return dirs[i]
		}
	}
	return ""
}

// permits reports whether the permission bits of p grant uid (with group
// gid) every bit of want (4 read, 2 write, 1 execute or search).
func permits(p string, uid, gid int, want uint32) bool {
	var st syscall.Stat_t
	if err := syscall.Stat(p, &st); err != nil {
		return false
	}
	mode := st.Mode & 0o777
	switch {
	case int(st.Uid) == uid:
		mode >>= 6
	case int(st.Gid) == gid:
		mode >>= 3
	}
	return mode&want == want
}

// reachableBy reports whether uid (with group gid) can search every
// directory on the way to path and read and execute path itself, by the
// permission bits (root's bypass is not the job's). The way to bound, a
// directory the job's mounts bind back (its area, or a job server's root),
// is the job's whatever the host's directories above it allow.
func reachableBy(path, bound string, uid, gid int) bool {
	clean := filepath.Clean(path)
	if !permits(clean, uid, gid, 0o5) {
		return false
	}
	if bound = filepath.Clean(bound); bound != "." && bound != clean && strings.HasPrefix(clean, bound+string(filepath.Separator)) {
		for dir := filepath.Dir(clean); ; dir = filepath.Dir(dir) {
			if !permits(dir, uid, gid, 0o1) {
				return false
			}
			if dir == bound {
				return true
			}
		}
	}
	return permits("/", uid, gid, 0o1) && blockedAncestor(clean, uid, gid) == ""
}

// Check starts one supervisor in the namespaces Isolate asks for and has
// it set them up without running anything (with Isolate.UIDs, the job
// server, which then stays up): whether this kernel and this process's
// privileges allow the isolation. It returns nil when they do, or when the
// driver does not isolate.
func (d *Driver) Check(ctx context.Context) error {
	if d.isolate == nil || d.off != "" {
		return nil
	}
	if d.pooled() {
		// The job server itself: started now rather than on the first job,
		// and kept.
		if _, err := d.server(); err != nil {
			return fmt.Errorf("local driver: jobs cannot be isolated here: %w", err)
		}
		lease, err := d.leaseUID()
		if err != nil {
			return err
		}
		d.releaseUID(lease)
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	area, err := os.MkdirTemp(d.root, "check-")
	if err != nil {
		if err := os.MkdirAll(d.root, 0o711); err != nil {
			return fmt.Errorf("local driver: creating %s: %w", d.root, err)
		}
		if area, err = os.MkdirTemp(d.root, "check-"); err != nil {
			return fmt.Errorf("local driver: creating a work area under %s: %w", d.root, err)
		}
	}
	defer os.RemoveAll(area)
	l := layout{area: area}
	cfg := shim.Config{Check: true, Isolate: d.isolation(l)}
	if _, err := d.supervise(ctx, checkJob0, l, cfg); err != nil {
		return fmt.Errorf("local driver: jobs cannot be isolated here: %w", err)
	}
	return nil
}

// checkJob0 is the job Check supervises: nothing runs.
var checkJob0 = drivers.Job{RunID: "isolation-check", Command: []string{"(isolation check)"}}

// DefaultUser is the user jobs run as when the service runs as root and
// no other is configured; ResolveUser creates it when it does not exist.
const DefaultUser = "svc-job"

// ResolveUser returns the uid and gid jobs run as for the setting spec
// (SVC_LOCAL_USER): "" for the default (DefaultUser when the service is
// root, created if absent; otherwise -1, -1: root of a user namespace
// mapped to the service's user), a user name, or "uid[:gid]". Root is
// refused: the point is a user that owns nothing of the service's.
func ResolveUser(spec string) (uid, gid int, err error) {
	root := os.Geteuid() == 0
	if spec == "" {
		if !root {
			return -1, -1, nil
		}
		spec = DefaultUser
	}
	if u, g, ok := parseIDs(spec); ok {
		uid, gid = u, g
	} else {
		usr, err := user.Lookup(spec)
		var unknown user.UnknownUserError
		if errors.As(err, &unknown) && spec == DefaultUser && root {
			if err := createUser(spec); err != nil {
				return 0, 0, err
			}
			usr, err = user.Lookup(spec)
		}
		if err != nil {
			return 0, 0, fmt.Errorf("user %q for local jobs: %v", spec, err)
		}
		uid, _ = strconv.Atoi(usr.Uid)
		gid, _ = strconv.Atoi(usr.Gid)
	}
	switch {
	case uid == 0 || gid == 0:
		return 0, 0, fmt.Errorf("user %q for local jobs is root; name an unprivileged user", spec)
	case !root && uid != os.Geteuid():
		return 0, 0, fmt.Errorf("user %q for local jobs: only a service running as root can run jobs as another user; leave the setting empty to isolate jobs in a user namespace", spec)
	case !root:
		return -1, -1, nil
	}
	return uid, gid, nil
}

// parseIDs parses "uid" or "uid:gid" (gid defaults to uid).
func parseIDs(s string) (uid, gid int, ok bool) {
	us, gs, found := strings.Cut(s, ":")
	u, err := strconv.Atoi(us)
	if err != nil || u < 0 {
		return 0, 0, false
	}
	if !found {
		return u, u, true
	}
	g, err := strconv.Atoi(gs)
	if err != nil || g < 0 {
		return 0, 0, false
	}
	return u, g, true
}

// createUser makes a system user with no home and no login shell.
func createUser(name string) error {
	out, err := exec.Command("useradd", "--system", "--user-group", "--no-create-home",
		"--home-dir", "/nonexistent", "--shell", "/usr/sbin/nologin", name).CombinedOutput()
	if err != nil {
		return fmt.Errorf("creating the user %q for local jobs (useradd): %v: %s; create it, or name another with SVC_LOCAL_USER", name, err, strings.TrimSpace(string(out)))
	}
	return nil
}
