//go:build linux

package sandbox

import (
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"golang.org/x/sys/unix"
)

// Runtime runs sandbox containers under one state root. It is safe for
// concurrent use; calls on one id are serialised.
type Runtime struct {
	root       string
	mounts     string // MountDir/<hash of root>
	runc       string
	uidBase    int
	maxCapture int64
	log        *slog.Logger

	mu    sync.Mutex
	locks map[string]*sync.Mutex
}

// New returns a Runtime for o. It checks nothing of the host: Available
// does.
func New(o Options) (*Runtime, error) {
	if o.Root == "" {
		return nil, errors.New("sandbox: Options.Root is required")
	}
	root, err := filepath.Abs(o.Root)
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256([]byte(root))
	r := &Runtime{
		root:       root,
		mounts:     filepath.Join(cmp.Or(o.MountDir, DefaultMountDir), hex.EncodeToString(sum[:6])),
		runc:       o.Runc,
		uidBase:    cmp.Or(o.UIDBase, DefaultUIDBase),
		maxCapture: cmp.Or(o.MaxCaptureBytes, DefaultMaxCaptureBytes),
		log:        cmp.Or(o.Logger, slog.Default()),
		locks:      map[string]*sync.Mutex{},
	}
	if r.runc == "" {
		if p, err := exec.LookPath("runc"); err == nil {
			r.runc = p
		}
	}
	return r, nil
}

// Available returns nil when this host can run sandboxes: runc is there,
// the service is root, the kernel has overlayfs. Its error (wrapping
// ErrUnavailable) says what to install or change. There is no fallback to
// the host's own root file system.
func (r *Runtime) Available() error {
	if r.runc == "" {
		return fmt.Errorf("%w: no OCI runtime: runc is not on PATH; %s", ErrUnavailable, InstallRunc)
	}
	if fi, err := os.Stat(r.runc); err != nil || fi.IsDir() || fi.Mode()&0o111 == 0 {
		return fmt.Errorf("%w: the OCI runtime %s is not an executable file; %s", ErrUnavailable, r.runc, InstallRunc)
	}
	if os.Geteuid() != 0 {
		return fmt.Errorf("%w: the sandbox runtime mounts overlay file systems and maps user namespaces, which needs the service to run as root (it runs as uid %d)", ErrUnavailable, os.Geteuid())
	}
	fss, err := os.ReadFile("/proc/filesystems")
	if err != nil || !bytes.Contains(fss, []byte("\toverlay\n")) {
		return fmt.Errorf("%w: the kernel has no overlay file system (modprobe overlay)", ErrUnavailable)
	}
	return nil
}

func (r *Runtime) lock(id string) func() {
	r.mu.Lock()
	m := r.locks[id]
	if m == nil {
		m = &sync.Mutex{}
		r.locks[id] = m
	}
	r.mu.Unlock()
	m.Lock()
	return m.Unlock
}

// paths of one session.
type paths struct{ dir, upper, work, bundle, rootfs, meta, captured string }

func (r *Runtime) paths(id string) paths {
	dir := filepath.Join(r.root, "sessions", id)
	return paths{
		dir:    dir,
		upper:  filepath.Join(dir, "upper"),
		work:   filepath.Join(dir, "work"),
		bundle: filepath.Join(dir, "bundle"),
		rootfs: filepath.Join(r.mounts, id),
		meta:   filepath.Join(dir, "meta.json"),
		// captured marks a pause of Changes: written before it pauses the
		// container, removed once it has resumed it.
		captured: filepath.Join(dir, "capture-paused"),
	}
}

// meta is what Root/sessions/<id>/meta.json records.
type meta struct {
	ID      string    `json:"id"`
	Image   string    `json:"image"`
	Base    string    `json:"base"`
	Created time.Time `json:"created"`
	UIDBase int       `json:"uidBase"`
}

func (r *Runtime) readMeta(id string) (meta, error) {
	if err := checkID(id); err != nil {
		return meta{}, fmt.Errorf("%w: %v", ErrNotFound, err)
	}
	data, err := os.ReadFile(r.paths(id).meta)
	if errors.Is(err, os.ErrNotExist) {
		return meta{}, fmt.Errorf("%w: %s", ErrNotFound, id)
	}
	if err != nil {
		return meta{}, err
	}
	var m meta
	if err := json.Unmarshal(data, &m); err != nil {
		return meta{}, fmt.Errorf("sandbox %s: reading its record: %w", id, err)
	}
	return m, nil
}

// Create starts session id's container from img: see the package comment.
func (r *Runtime) Create(ctx context.Context, id string, img v1.Image, o CreateOptions) (Info, error) {
	if err := checkID(id); err != nil {
		return Info{}, err
	}
	if err := r.Available(); err != nil {
		return Info{}, err
	}
	if o.Network != "" && o.Network != NetworkNone {
		return Info{}, fmt.Errorf("sandbox: network %q: only %q (a loopback only) is supported", o.Network, NetworkNone)
	}
	defer r.lock(id)()
	p := r.paths(id)
	if _, err := os.Lstat(p.dir); err == nil {
		return Info{}, fmt.Errorf("%w: %s", ErrExists, id)
	}
	b, err := r.ensureBase(ctx, img)
	if err != nil {
		return Info{}, err
	}
	if _, err := os.Lstat(filepath.Join(b.rootfs, "bin", "sh")); err != nil {
		return Info{}, fmt.Errorf("sandbox: image %s has no /bin/sh, which the sandbox's init and exec need", b.digest)
	}
	if err := os.MkdirAll(filepath.Join(r.root, "sessions"), 0o700); err != nil {
		return Info{}, err
	}
	if err := os.Mkdir(p.dir, 0o711); err != nil {
		return Info{}, err
	}
	ok := false
	defer func() {
		if !ok {
			r.unmount(p.rootfs)
			os.RemoveAll(p.dir)
			os.Remove(p.rootfs)
		}
	}()
	for _, d := range []string{p.upper, p.work, p.bundle} {
		if err := os.Mkdir(d, 0o711); err != nil {
			return Info{}, err
		}
	}
	// The merged root's owner and mode are the upper directory's.
	var st unix.Stat_t
	if err := unix.Lstat(b.rootfs, &st); err != nil {
		return Info{}, err
	}
	if err := os.Lchown(p.upper, int(st.Uid), int(st.Gid)); err != nil {
		return Info{}, err
	}
	if err := unix.Chmod(p.upper, st.Mode&0o7777); err != nil {
		return Info{}, err
	}
	// The cgroup is the runtime's own: two roots may hold one id.
	cfg := runtimeConfig("/svc-sandbox/"+filepath.Base(r.mounts)+"/"+id, b.config, o, r.uidBase)
	cfg.Root.Path = p.rootfs
	data, err := json.MarshalIndent(cfg, "", "\t")
	if err != nil {
		return Info{}, err
	}
	if err := writeFileSync(filepath.Join(p.bundle, "config.json"), data); err != nil {
		return Info{}, err
	}
	m := meta{ID: id, Image: b.digest, Base: b.rootfs, Created: time.Now().UTC(), UIDBase: r.uidBase}
	if data, err = json.Marshal(m); err != nil {
		return Info{}, err
	}
	if err := writeFileSync(p.meta, data); err != nil {
		return Info{}, err
	}
	if err := r.start(ctx, id, m); err != nil {
		return Info{}, err
	}
	ok = true
	return r.lookup(ctx, id)
}

// start mounts session id's root and runs its init.
func (r *Runtime) start(ctx context.Context, id string, m meta) error {
	p := r.paths(id)
	if err := r.mountPoint(p.rootfs); err != nil {
		return err
	}
	if err := r.mount(m.Base, p); err != nil {
		return err
	}
	// The container's stdio is /dev/null (an open pipe would be held by
	// its init); runc's own errors go to its log.
	logPath := filepath.Join(p.bundle, "runc.log")
	_ = os.Remove(logPath)
	cmd := exec.CommandContext(ctx, r.runc, "--root", r.stateRoot(), "--log", logPath, "run", "--detach",
		"--bundle", p.bundle, "--pid-file", filepath.Join(p.bundle, "init.pid"), id)
	if err := cmd.Run(); err != nil {
		_, _ = r.runcOut(context.Background(), "delete", "--force", id)
		r.unmount(p.rootfs)
		return fmt.Errorf("sandbox %s: starting its container: %w%s", id, err, runcLogTail(logPath))
	}
	return nil
}

// Start runs a stopped session's container again over its file system
// (after Stop, or a reboot); a running one is left as is.
func (r *Runtime) Start(ctx context.Context, id string) (Info, error) {
	if err := r.Available(); err != nil {
		return Info{}, err
	}
	defer r.lock(id)()
	m, err := r.readMeta(id)
	if err != nil {
		return Info{}, err
	}
	info, err := r.lookup(ctx, id)
	if err == nil {
		info, err = r.thaw(ctx, info)
	}
	if err != nil || info.State != StateStopped {
		return info, err
	}
	_, _ = r.runcOut(ctx, "delete", "--force", id)
	r.unmount(r.paths(id).rootfs)
	if err := r.start(ctx, id, m); err != nil {
		return Info{}, err
	}
	return r.lookup(ctx, id)
}

// mount mounts the overlay of the base lower and p's upper at p.rootfs.
// Features that would put meaning in the upper directory beyond files and
// whiteouts (redirects, metacopy, index) are off, so that Changes reads
// it as plain files.
func (r *Runtime) mount(lower string, p paths) error {
	if mounted(p.rootfs) {
		return nil
	}
	opts := fmt.Sprintf("lowerdir=%s,upperdir=%s,workdir=%s,redirect_dir=off,metacopy=off,index=off", lower, p.upper, p.work)
	if err := unix.Mount("overlay", p.rootfs, "overlay", unix.MS_NODEV, opts); err != nil {
		return fmt.Errorf("sandbox: mounting the overlay root at %s: %w", p.rootfs, err)
	}
	return nil
}

// mountPoint makes the empty directory dir, under MountDir/<hash>, which
// only root and the containers' group (gid UIDBase) search.
func (r *Runtime) mountPoint(dir string) error {
	if err := os.MkdirAll(filepath.Dir(r.mounts), 0o711); err != nil {
		return err
	}
	if err := os.Mkdir(r.mounts, 0o710); err != nil && !errors.Is(err, os.ErrExist) {
		return err
	}
	if err := os.Lchown(r.mounts, 0, r.uidBase); err != nil {
		return err
	}
	if err := os.Chmod(r.mounts, 0o710); err != nil {
		return err
	}
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
		return err
	}
	return nil
}

// mounted reports whether dir is a mount point: its device differs from
// its parent's.
func mounted(dir string) bool {
	var a, b unix.Stat_t
	if unix.Lstat(dir, &a) != nil || unix.Lstat(filepath.Dir(dir), &b) != nil {
		return false
	}
	return a.Dev != b.Dev
}

func (r *Runtime) unmount(dir string) {
	for i := 0; i < 8 && mounted(dir); i++ {
		if err := unix.Unmount(dir, unix.MNT_DETACH); err != nil {
			r.log.Warn("sandbox: unmounting", "dir", dir, "err", err)
			return
		}
	}
}

// runcOut runs runc with the runtime's state root and returns its stdout;
// an error carries its stderr.
func (r *Runtime) runcOut(ctx context.Context, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, r.runc, append([]string{"--root", r.stateRoot()}, args...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Run(); err != nil {
		msg := strings.TrimSpace(stderr.String())
		if len(msg) > 2000 {
			msg = msg[len(msg)-2000:]
		}
		return stdout.Bytes(), fmt.Errorf("runc %s: %w: %s", args[0], err, msg)
	}
	return stdout.Bytes(), nil
}

func (r *Runtime) stateRoot() string { return filepath.Join(r.root, "runc") }

// runcLogTail is the end of runc's log, to explain a failed start.
func runcLogTail(path string) string {
	data, err := os.ReadFile(path)
	if err != nil || len(data) == 0 {
		return ""
	}
	if len(data) > 2000 {
		data = data[len(data)-2000:]
	}
	return " (runc's log: " + strings.TrimSpace(string(data)) + ")"
}

// runcState is `runc state`'s answer.
type runcState struct {
	Status string `json:"status"`
	Pid    int    `json:"pid"`
}

// Lookup returns session id's container, as a previous process may have
// left it; ErrNotFound when there is none. A container a capture of a
// process that died left paused (see Changes) is resumed, and reads
// running; one paused by Pause stays paused.
func (r *Runtime) Lookup(ctx context.Context, id string) (Info, error) {
	info, err := r.lookup(ctx, id)
	if err != nil || info.State != StatePaused || !r.captured(id) {
		return info, err
	}
	// Under the lock, a capture of this process has ended: a mark still
	// there is a dead process's.
	defer r.lock(id)()
	if info, err = r.lookup(ctx, id); err != nil {
		return info, err
	}
	return r.thaw(ctx, info)
}

// captured reports whether session id carries the mark of a capture's
// pause (Changes).
func (r *Runtime) captured(id string) bool {
	_, err := os.Lstat(r.paths(id).captured)
	return err == nil
}

// thaw resumes a container a capture left paused, and drops a mark that
// no longer matches a paused container; the caller holds id's lock, so no
// capture of this process is under way.
func (r *Runtime) thaw(ctx context.Context, info Info) (Info, error) {
	if !r.captured(info.ID) {
		return info, nil
	}
	if info.State == StatePaused {
		if _, err := r.runcOut(ctx, "resume", info.ID); err != nil {
			return info, fmt.Errorf("sandbox %s: resuming the container a capture left paused: %w", info.ID, err)
		}
		r.log.Info("sandbox: resumed a container an interrupted capture left paused", "id", info.ID)
		info.State = StateRunning
	}
	return info, ignoreNotExist(os.Remove(r.paths(info.ID).captured))
}

func (r *Runtime) lookup(ctx context.Context, id string) (Info, error) {
	m, err := r.readMeta(id)
	if err != nil {
		return Info{}, err
	}
	info := Info{ID: id, Image: m.Image, Created: m.Created, State: StateStopped}
	if r.runc == "" {
		return info, nil
	}
	out, err := r.runcOut(ctx, "state", id)
	if err != nil {
		// No state: the container is gone (Stop, a reboot).
		return info, nil
	}
	var s runcState
	if err := json.Unmarshal(out, &s); err != nil {
		return Info{}, fmt.Errorf("sandbox %s: runc state: %w", id, err)
	}
	switch s.Status {
	case "running", "created":
		info.State, info.Pid = StateRunning, s.Pid
	case "paused":
		info.State, info.Pid = StatePaused, s.Pid
	}
	return info, nil
}

// List returns every session's container under the root, as Lookup
// finds each.
func (r *Runtime) List(ctx context.Context) ([]Info, error) {
	ents, err := os.ReadDir(filepath.Join(r.root, "sessions"))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []Info
	for _, e := range ents {
		info, err := r.Lookup(ctx, e.Name())
		if errors.Is(err, ErrNotFound) {
			continue // a Create or Remove under way
		}
		if err != nil {
			return nil, err
		}
		out = append(out, info)
	}
	return out, nil
}

// Stop kills session id's processes and unmounts its root, keeping its
// file system for Changes and Start. Stopping a stopped one does nothing.
func (r *Runtime) Stop(ctx context.Context, id string) error {
	defer r.lock(id)()
	if _, err := r.readMeta(id); err != nil {
		return err
	}
	return r.stop(ctx, id)
}

func (r *Runtime) stop(ctx context.Context, id string) error {
	if r.runc != "" {
		if _, err := r.runcOut(ctx, "delete", "--force", id); err != nil && !strings.Contains(err.Error(), "not exist") {
			return fmt.Errorf("sandbox %s: stopping: %w", id, err)
		}
	}
	r.unmount(r.paths(id).rootfs)
	// No container, no pause to undo.
	return ignoreNotExist(os.Remove(r.paths(id).captured))
}

// Remove stops session id and deletes its file system; removing one that
// is not there does nothing.
func (r *Runtime) Remove(ctx context.Context, id string) error {
	if err := checkID(id); err != nil {
		return err
	}
	defer r.lock(id)()
	p := r.paths(id)
	if _, err := os.Lstat(p.dir); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err := r.stop(ctx, id); err != nil {
		return err
	}
	if mounted(p.rootfs) {
		return fmt.Errorf("sandbox %s: its root is still mounted at %s; not removing", id, p.rootfs)
	}
	// The record goes first: a crash mid-removal leaves no half session
	// that List would offer.
	if err := os.Remove(p.meta); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	if err := os.RemoveAll(p.dir); err != nil {
		return err
	}
	if err := os.Remove(p.rootfs); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	if os.Remove(r.mounts) == nil {
		// It was the last session: the runtime's parent cgroups go too
		// (runc removes only each container's own).
		r.removeCgroups()
	}
	return nil
}

// removeCgroups removes the runtime's empty parent cgroup, in every
// hierarchy (cgroup v1's controllers, or v2's one).
func (r *Runtime) removeCgroups() {
	key := filepath.Base(r.mounts)
	dirs, _ := filepath.Glob("/sys/fs/cgroup/*/svc-sandbox/" + key)
	dirs = append(dirs, "/sys/fs/cgroup/svc-sandbox/"+key)
	for _, d := range dirs {
		_ = unix.Rmdir(d) // an error is a cgroup still in use, or none
	}
}

// Pause freezes session id's processes (the freezer cgroup); Resume thaws
// them. The pause is the caller's: a new Runtime leaves it as it is.
func (r *Runtime) Pause(ctx context.Context, id string) error { return r.freezer(ctx, id, "pause") }

// Resume thaws a paused session.
func (r *Runtime) Resume(ctx context.Context, id string) error { return r.freezer(ctx, id, "resume") }

// freezer runs runc pause or resume on session id; either makes the
// container's state the caller's, no longer a capture's.
func (r *Runtime) freezer(ctx context.Context, id, verb string) error {
	defer r.lock(id)()
	if _, err := r.readMeta(id); err != nil {
		return err
	}
	if _, err := r.runcOut(ctx, verb, id); err != nil {
		return err
	}
	return ignoreNotExist(os.Remove(r.paths(id).captured))
}

// pauseForCapture pauses a running container for Changes, marking the
// pause as a capture's first (durably), so that a process that dies
// before resumeAfterCapture leaves a pause the next Runtime undoes
// (Lookup). The caller holds id's lock.
func (r *Runtime) pauseForCapture(ctx context.Context, id string) error {
	if err := writeFileSync(r.paths(id).captured, nil); err != nil {
		return fmt.Errorf("sandbox %s: marking a capture's pause: %w", id, err)
	}
	if _, err := r.runcOut(ctx, "pause", id); err != nil {
		_ = os.Remove(r.paths(id).captured)
		return fmt.Errorf("sandbox %s: pausing for a capture: %w", id, err)
	}
	return nil
}

// resumeAfterCapture undoes pauseForCapture; the mark stays when the
// resume fails, for the next Lookup to try again.
func (r *Runtime) resumeAfterCapture(id string) {
	if _, err := r.runcOut(context.Background(), "resume", id); err != nil {
		r.log.Warn("sandbox: resuming after a capture", "id", id, "err", err)
		return
	}
	if err := ignoreNotExist(os.Remove(r.paths(id).captured)); err != nil {
		r.log.Warn("sandbox: removing a capture's pause mark", "id", id, "err", err)
	}
}

func ignoreNotExist(err error) error {
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	return err
}

// RemoveAll removes every session under the root, as a teardown of a root
// no process uses any longer (a test's, an operator's): each session's
// container, mount and file system (Remove), then any container runc's
// state root still lists (one whose record a crash lost), any overlay
// still mounted under the runtime's mount directory or over a directory of
// the root, and the runtime's cgroups. Unpacked images stay. It then
// checks that nothing is left, and its error names what is: a container
// runc still lists, a mount still there.
func (r *Runtime) RemoveAll(ctx context.Context) error {
	var errs []error
	ents, err := os.ReadDir(filepath.Join(r.root, "sessions"))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		errs = append(errs, err)
	}
	for _, e := range ents {
		if err := r.Remove(ctx, e.Name()); err != nil {
			errs = append(errs, err)
		}
	}
	for _, id := range r.runcIDs(ctx) {
		if _, err := r.runcOut(ctx, "delete", "--force", id); err != nil && !strings.Contains(err.Error(), "not exist") {
			errs = append(errs, fmt.Errorf("sandbox %s: %w", id, err))
		}
	}
	for _, m := range r.mountsLeft() {
		r.unmount(m)
		if err := os.Remove(m); err != nil && !errors.Is(err, os.ErrNotExist) && strings.HasPrefix(m, r.mounts+"/") {
			errs = append(errs, err)
		}
	}
	_ = os.Remove(r.mounts)
	r.removeCgroups() // only the empty ones go
	// What is left.
	if ids := r.runcIDs(ctx); len(ids) > 0 {
		errs = append(errs, fmt.Errorf("runc (state root %s) still lists %d containers: %s", r.stateRoot(), len(ids), strings.Join(ids, " ")))
	}
	if ms := r.mountsLeft(); len(ms) > 0 {
		errs = append(errs, fmt.Errorf("%d mounts of the root %s are still there: %s", len(ms), r.root, strings.Join(ms, " ")))
	}
	return errors.Join(errs...)
}

// runcIDs is the containers runc's state root lists; none without runc or
// a state root.
func (r *Runtime) runcIDs(ctx context.Context) []string {
	if r.runc == "" {
		return nil
	}
	if _, err := os.Stat(r.stateRoot()); err != nil {
		return nil
	}
	out, err := r.runcOut(ctx, "list", "--quiet")
	if err != nil {
		return nil
	}
	return strings.Fields(string(out))
}

// mountsLeft is the mount points of this runtime still mounted: under its
// mount directory, or an overlay whose options name a directory of the
// root (its lower, upper or work directory), deepest first.
func (r *Runtime) mountsLeft() []string {
	data, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return nil
	}
	var out []string
	for _, line := range strings.Split(string(data), "\n") {
		// id parent major:minor root mountpoint options ... - fstype source superoptions
		f := strings.Fields(line)
		if len(f) < 5 {
			continue
		}
		point := unescapeMount(f[4])
		ours := strings.HasPrefix(point, r.mounts+"/")
		if !ours {
			for i, x := range f {
				if x == "-" && i+3 < len(f) && f[i+1] == "overlay" {
					ours = strings.Contains(","+unescapeMount(f[i+3]), "dir="+r.root+"/")
				}
			}
		}
		if ours {
			out = append(out, point)
		}
	}
	// Deepest first, so that a mount under another goes before it.
	slices.SortFunc(out, func(a, b string) int { return cmp.Or(cmp.Compare(len(b), len(a)), strings.Compare(a, b)) })
	return slices.Compact(out)
}

// unescapeMount undoes mountinfo's octal escapes (\040 for a space).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if c, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(c))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
