//go:build linux

package sandbox

import (
	"archive/tar"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"

	"svc/internal/testing/testimage"
)

// newRuntime returns a Runtime on a fresh root, skipping t where sandboxes
// cannot run (failing it in CI, which installs runc).
func newRuntime(t testing.TB, o Options) *Runtime {
	t.Helper()
	if os.Geteuid() != 0 {
		if os.Getenv("CI") == "true" {
			t.Fatal("sandboxes need root, and CI runs as root")
		}
		t.Skip("sandboxes need root")
	}
	if o.Root == "" {
		o.Root = t.TempDir()
	}
	r, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Available(); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	t.Cleanup(func() { removeAll(t, r) })
	return r
}

func removeAll(t testing.TB, r *Runtime) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	infos, _ := r.List(ctx)
	for _, i := range infos {
		if err := r.Remove(ctx, i.ID); err != nil {
			t.Errorf("removing %s: %v", i.ID, err)
		}
	}
}

func create(t testing.TB, r *Runtime, id string, img v1.Image) Info {
	t.Helper()
	info, err := r.Create(context.Background(), id, img, CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return info
}

// run execs command in id and fails t unless it exits 0.
func run(t testing.TB, r *Runtime, id, command string) string {
	t.Helper()
	res, err := r.Exec(context.Background(), id, command, 30*time.Second)
	if err != nil {
		t.Fatalf("exec %q: %v", command, err)
	}
	if res.ExitCode != 0 {
		t.Fatalf("exec %q: exit %d: %s%s", command, res.ExitCode, res.Stdout, res.Stderr)
	}
	return string(res.Stdout)
}

// entry is one file of a tree, as compared between trees.
type entry struct {
	Type     byte
	Mode     int64
	UID, GID int
	Size     int64
	Sum      string
	Link     string
	MTime    int64
}

func (e entry) String() string {
	return fmt.Sprintf("type %c mode %o owner %d:%d size %d sum %.12s link %q mtime %d", e.Type, e.Mode, e.UID, e.GID, e.Size, e.Sum, e.Link, e.MTime)
}

// tarEntries reads a tar into entries by clean name (no leading slash).
func tarEntries(t testing.TB, rc io.Reader) map[string]entry {
	t.Helper()
	out := map[string]entry{}
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		e := entry{Type: h.Typeflag, Mode: h.Mode & 0o7777, UID: h.Uid, GID: h.Gid, Link: h.Linkname, MTime: h.ModTime.UnixNano()}
		if h.Typeflag == tar.TypeReg {
			sum := sha256.New()
			n, _ := io.Copy(sum, tr)
			e.Size, e.Sum = n, fmt.Sprintf("%x", sum.Sum(nil))
		}
		if h.Typeflag == tar.TypeSymlink {
			e.Mode = 0
		}
		out[strings.TrimSuffix(filepath.Clean("/" + h.Name)[1:], "/")] = e
	}
}

// layerEntries reads a layer's tar.
func layerEntries(t testing.TB, l v1.Layer) map[string]entry {
	t.Helper()
	rc, err := l.Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	return tarEntries(t, rc)
}

// dirEntries reads a directory tree on the host, owners shifted back by
// uidBase, as the image would record it.
func dirEntries(t testing.TB, dir string, uidBase int) map[string]entry {
	t.Helper()
	out := map[string]entry{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p == dir {
			return nil
		}
		var st syscall.Stat_t
		if err := syscall.Lstat(p, &st); err != nil {
			return err
		}
		e := entry{Mode: int64(st.Mode & 0o7777), UID: int(st.Uid) - uidBase, GID: int(st.Gid) - uidBase, MTime: st.Mtim.Nano()}
		switch st.Mode & syscall.S_IFMT {
		case syscall.S_IFDIR:
			e.Type = tar.TypeDir
		case syscall.S_IFLNK:
			e.Type, e.Mode = tar.TypeSymlink, 0
			e.Link, _ = os.Readlink(p)
		case syscall.S_IFREG:
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			e.Type, e.Size, e.Sum = tar.TypeReg, int64(len(data)), fmt.Sprintf("%x", sha256.Sum256(data))
		default:
			e.Type = '?'
		}
		rel, _ := filepath.Rel(dir, p)
		out[rel] = e
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestCreateExecChanges: a session runs the image's root (busybox, not the
// host's), its commands' changes come back as one OCI layer with modes,
// a symbolic link, whiteouts and an opaque directory, and that layer
// appended to the base image unpacks to the session's tree.
func TestCreateExecChanges(t *testing.T) {
	r := newRuntime(t, Options{})
	img := testimage.Busybox(t)
	info := create(t, r, "s1", img)
	if info.State != StateRunning || info.Pid == 0 {
		t.Fatalf("after Create: %+v", info)
	}
	if got := run(t, r, "s1", "echo hello"); got != "hello\n" {
		t.Fatalf("echo: %q", got)
	}
	// The image's root, not the host's: busybox's ls, the image's motd.
	if got := run(t, r, "s1", "cat /etc/motd; readlink /bin/ls"); got != testimage.BaseFiles["etc/motd"]+"busybox\n" {
		t.Fatalf("the container's root is not the image's: %q", got)
	}
	if got := run(t, r, "s1", "pwd; id -u"); got != "/root\n0\n" {
		t.Fatalf("working directory and user: %q", got)
	}
	run(t, r, "s1", `set -e
		printf 'new file\n' > /root/new.txt
		chmod 640 /root/new.txt
		ln -s new.txt /root/link
		rm /etc/motd
		rm -r /usr
		mkdir /usr
		echo x > /usr/only
		mkdir -p /var/lib/app && echo data > /var/lib/app/state && chmod 700 /var/lib/app
		chmod 4755 /root/new.txt && chmod 640 /root/new.txt
		chown 1000:1000 /var/lib/app/state`)
	layer, size, err := r.Changes(context.Background(), "s1")
	if err != nil {
		t.Fatal(err)
	}
	if s, _ := layer.Size(); s != size || size <= 0 {
		t.Fatalf("size %d, layer's %d", size, s)
	}
	if mt, _ := layer.MediaType(); mt != "application/vnd.oci.image.layer.v1.tar+gzip" {
		t.Fatalf("media type %s", mt)
	}
	got := layerEntries(t, layer)
	want := map[string]func(entry) bool{
		"root/new.txt":      func(e entry) bool { return e.Type == tar.TypeReg && e.Mode == 0o640 && e.Size == 9 && e.UID == 0 },
		"root/link":         func(e entry) bool { return e.Type == tar.TypeSymlink && e.Link == "new.txt" },
		"etc/.wh.motd":      func(e entry) bool { return e.Type == tar.TypeReg && e.Size == 0 },
		"usr/.wh..wh..opq":  func(e entry) bool { return e.Type == tar.TypeReg && e.Size == 0 },
		"usr":               func(e entry) bool { return e.Type == tar.TypeDir },
		"usr/only":          func(e entry) bool { return e.Type == tar.TypeReg },
		"var/lib/app":       func(e entry) bool { return e.Type == tar.TypeDir && e.Mode == 0o700 },
		"var/lib/app/state": func(e entry) bool { return e.Type == tar.TypeReg && e.UID == 1000 && e.GID == 1000 },
		"root":              func(e entry) bool { return e.Type == tar.TypeDir && e.Mode == 0o700 },
	}
	for name, ok := range want {
		e, found := got[name]
		if !found || !ok(e) {
			t.Errorf("layer entry %s: found %v, %v", name, found, e)
		}
	}
	for name := range got {
		if strings.HasPrefix(name, "bin/") || name == "etc/passwd" {
			t.Errorf("layer holds %s, which did not change", name)
		}
	}
	// The base with the layer unpacks to the session's tree.
	next, err := mutate.Append(img, mutate.Addendum{Layer: layer})
	if err != nil {
		t.Fatal(err)
	}
	rc := mutate.Extract(next)
	applied := tarEntries(t, rc)
	rc.Close()
	session := dirEntries(t, r.paths("s1").rootfs, r.uidBase)
	for name, e := range session {
		if a, ok := applied[name]; !ok || a != e {
			t.Errorf("%s: session %v, base+layer %v (%v)", name, e, a, ok)
		}
	}
	for name := range applied {
		if _, ok := session[name]; !ok {
			t.Errorf("%s: in base+layer, not in the session", name)
		}
	}
	// The session is running again after the capture.
	if got := run(t, r, "s1", "cat /root/new.txt"); got != "new file\n" {
		t.Fatalf("after Changes: %q", got)
	}
}

// TestSessionsOfOneBaseAreSeparate: two sessions of one image share its
// unpacked base and see none of each other's files; the base is unchanged.
func TestSessionsOfOneBaseAreSeparate(t *testing.T) {
	r := newRuntime(t, Options{})
	img := testimage.Busybox(t)
	create(t, r, "a", img)
	create(t, r, "b", img)
	run(t, r, "a", "echo a > /root/a; rm /etc/motd")
	run(t, r, "b", "echo b > /root/b")
	if got := run(t, r, "b", "ls /root; cat /etc/motd"); got != "b\n"+testimage.BaseFiles["etc/motd"] {
		t.Fatalf("b sees: %q", got)
	}
	if got := run(t, r, "a", "ls /root; test -e /etc/motd || echo gone"); got != "a\ngone\n" {
		t.Fatalf("a sees: %q", got)
	}
	ma, _ := r.readMeta("a")
	mb, _ := r.readMeta("b")
	if ma.Base != mb.Base {
		t.Fatalf("two bases for one image: %s, %s", ma.Base, mb.Base)
	}
	if _, err := os.Lstat(filepath.Join(ma.Base, "etc", "motd")); err != nil {
		t.Fatalf("the base lost a file a session removed: %v", err)
	}
	if ents, _ := os.ReadDir(filepath.Join(ma.Base, "root")); len(ents) != 0 {
		t.Fatalf("the base gained files: %v", ents)
	}
	// Each container sees only its own processes.
	if got := run(t, r, "a", "ps -o args | grep -c '^sleep 86400'"); strings.TrimSpace(got) != "1" {
		t.Fatalf("a sees %s sleeping inits, not only its own", got)
	}
}

// TestChangesRefusesHostileEntries: a container's symbolic link to the
// host's /etc/shadow is captured as a link (never followed), a FIFO is
// skipped without blocking, and a link swapped for a directory on the way
// leads nowhere outside the upper directory.
func TestChangesRefusesHostileEntries(t *testing.T) {
	r := newRuntime(t, Options{})
	create(t, r, "h", testimage.Busybox(t))
	run(t, r, "h", `set -e
		ln -s /etc/shadow /root/shadow
		ln -s / /root/hostroot
		ln -s ../../../../../../../etc /root/up
		mkfifo /root/fifo
		mkdir /root/dir && ln -s /etc/shadow /root/dir/inner
		mknod /root/null c 1 3 2>/dev/null || true`)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	start := time.Now()
	layer, _, err := r.Changes(ctx, "h")
	if err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Fatalf("Changes took %v", d)
	}
	got := layerEntries(t, layer)
	for name, link := range map[string]string{"root/shadow": "/etc/shadow", "root/hostroot": "/", "root/up": "../../../../../../../etc", "root/dir/inner": "/etc/shadow"} {
		if e := got[name]; e.Type != tar.TypeSymlink || e.Link != link {
			t.Errorf("%s: %v, want a link to %s", name, e, link)
		}
	}
	for _, name := range []string{"root/fifo", "root/null"} {
		if e, ok := got[name]; ok {
			t.Errorf("%s was captured: %v", name, e)
		}
	}
	shadow, err := os.ReadFile("/etc/shadow")
	if err == nil && len(shadow) > 0 {
		sum := fmt.Sprintf("%x", sha256.Sum256(shadow))
		for name, e := range got {
			if e.Sum == sum {
				t.Errorf("%s holds the host's /etc/shadow", name)
			}
		}
	}
	for name := range got {
		if strings.HasPrefix(name, "etc/") || strings.Contains(name, "..") {
			t.Errorf("entry %s outside what the container changed", name)
		}
	}
}

// TestChangesCap: a change set past the capture cap is refused by name,
// and a huge sparse file is refused before it is read.
func TestChangesCap(t *testing.T) {
	r := newRuntime(t, Options{MaxCaptureBytes: 1 << 20})
	create(t, r, "c", testimage.Busybox(t))
	run(t, r, "c", "head -c 3000000 /dev/urandom > /root/random")
	_, _, err := r.Changes(context.Background(), "c")
	if !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), "SVC_WORLD_MAX_CAPTURE_BYTES") {
		t.Fatalf("3 MB of random bytes past a 1 MiB cap: %v", err)
	}
	run(t, r, "c", "rm /root/random; truncate -s 100G /root/sparse")
	start := time.Now()
	_, _, err = r.Changes(context.Background(), "c")
	if !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), "/root/sparse") {
		t.Fatalf("a 100 GB sparse file: %v", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("refusing the sparse file took %v", d)
	}
	// Refusals leave the session running, with nothing left in the root's tmp.
	run(t, r, "c", "rm /root/sparse")
	if _, _, err := r.Changes(context.Background(), "c"); err != nil {
		t.Fatal(err)
	}
	if ents, _ := os.ReadDir(filepath.Join(r.root, "tmp")); len(ents) != 0 {
		t.Fatalf("captures left files: %v", ents)
	}
}

// TestExec: exit codes, stderr, bounded output, and a timeout that kills
// the command's whole tree.
func TestExec(t *testing.T) {
	r := newRuntime(t, Options{})
	create(t, r, "e", testimage.Busybox(t))
	ctx := context.Background()
	res, err := r.Exec(ctx, "e", "echo out; echo err >&2; exit 3", 10*time.Second)
	if err != nil || res.ExitCode != 3 || string(res.Stdout) != "out\n" || string(res.Stderr) != "err\n" || res.TimedOut {
		t.Fatalf("%v %+v", err, res)
	}
	res, err = r.Exec(ctx, "e", "head -c 3000000 /dev/zero", 10*time.Second)
	if err != nil || res.ExitCode != 0 || len(res.Stdout) != MaxOutput || !res.StdoutTruncated || res.StderrTruncated {
		t.Fatalf("%v exit %d, %d bytes, truncated %v", err, res.ExitCode, len(res.Stdout), res.StdoutTruncated)
	}
	start := time.Now()
	res, err = r.Exec(ctx, "e", "sleep 1000 & sleep 1001; echo never", 500*time.Millisecond)
	if err != nil || !res.TimedOut || res.ExitCode != 137 || strings.Contains(string(res.Stdout), "never") {
		t.Fatalf("timeout: %v %+v", err, res)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("the timeout took %v", d)
	}
	if got := run(t, r, "e", "ps -o args | grep -c '^sleep 100[01]' || true"); strings.TrimSpace(got) != "0" {
		t.Fatalf("the timed-out tree lives on: %s", got)
	}
	// A process left in the background holding stdout does not hold Exec.
	start = time.Now()
	res, err = r.Exec(ctx, "e", "sleep 1000 & echo started", 10*time.Second)
	if err != nil || res.ExitCode != 0 || string(res.Stdout) != "started\n" {
		t.Fatalf("background: %v %+v", err, res)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Fatalf("a background process held Exec for %v", d)
	}
	if _, err := r.Exec(ctx, "nope", "true", time.Second); !errors.Is(err, ErrNotFound) {
		t.Fatalf("exec into no sandbox: %v", err)
	}
}

// TestAvailableNamesRunc: without runc on PATH, Available and Create say
// what to install, and nothing runs on the host's root.
func TestAvailableNamesRunc(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	r, err := New(Options{Root: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	err = r.Available()
	if !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), "apt-get install runc") {
		t.Fatalf("Available without runc: %v", err)
	}
	img := testimage.Busybox(t)
	if _, err := r.Create(context.Background(), "x", img, CreateOptions{}); !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), "install runc") {
		t.Fatalf("Create without runc: %v", err)
	}
	if ents, _ := os.ReadDir(filepath.Join(r.root, "sessions")); len(ents) != 0 {
		t.Fatalf("a refused Create left %v", ents)
	}
}

// TestRestartFindsContainers: a new Runtime on the same root (the service
// restarted) finds the running container, execs into it, stops, starts
// and removes it; pause and resume freeze and thaw it.
func TestRestartFindsContainers(t *testing.T) {
	root := t.TempDir()
	r1 := newRuntime(t, Options{Root: root})
	create(t, r1, "keep", testimage.Busybox(t))
	run(t, r1, "keep", "echo kept > /root/file")
	r1 = nil

	r2 := newRuntime(t, Options{Root: root})
	ctx := context.Background()
	infos, err := r2.List(ctx)
	if err != nil || len(infos) != 1 || infos[0].ID != "keep" || infos[0].State != StateRunning {
		t.Fatalf("List after a restart: %v %+v", err, infos)
	}
	if got := run(t, r2, "keep", "cat /root/file"); got != "kept\n" {
		t.Fatalf("after a restart: %q", got)
	}
	if err := r2.Pause(ctx, "keep"); err != nil {
		t.Fatal(err)
	}
	if i, _ := r2.Lookup(ctx, "keep"); i.State != StatePaused {
		t.Fatalf("after Pause: %+v", i)
	}
	if err := r2.Resume(ctx, "keep"); err != nil {
		t.Fatal(err)
	}
	if err := r2.Stop(ctx, "keep"); err != nil {
		t.Fatal(err)
	}
	if err := r2.Stop(ctx, "keep"); err != nil {
		t.Fatalf("second Stop: %v", err)
	}
	if i, err := r2.Lookup(ctx, "keep"); err != nil || i.State != StateStopped || i.Pid != 0 {
		t.Fatalf("after Stop: %v %+v", err, i)
	}
	if _, err := r2.Exec(ctx, "keep", "true", time.Second); !errors.Is(err, ErrNotRunning) {
		t.Fatalf("exec into a stopped sandbox: %v", err)
	}
	// A stopped session's changes are still there to capture.
	l, _, err := r2.Changes(ctx, "keep")
	if err != nil {
		t.Fatal(err)
	}
	if e := layerEntries(t, l)["root/file"]; e.Size != 5 {
		t.Fatalf("changes of a stopped session: %v", e)
	}
	if _, err := r2.Start(ctx, "keep"); err != nil {
		t.Fatal(err)
	}
	if got := run(t, r2, "keep", "cat /root/file"); got != "kept\n" {
		t.Fatalf("after Start: %q", got)
	}
	if err := r2.Remove(ctx, "keep"); err != nil {
		t.Fatal(err)
	}
	if err := r2.Remove(ctx, "keep"); err != nil {
		t.Fatalf("second Remove: %v", err)
	}
	if _, err := r2.Lookup(ctx, "keep"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Lookup after Remove: %v", err)
	}
	if _, err := os.Lstat(r2.paths("keep").rootfs); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the mount point outlived Remove: %v", err)
	}
	if left, _ := filepath.Glob("/sys/fs/cgroup/*/svc-sandbox/" + filepath.Base(r2.mounts)); len(left) != 0 {
		t.Fatalf("cgroups outlived the last Remove: %v", left)
	}
}

// TestRestartResumesACapturesPause (issue 32): a process killed while
// Changes had a session's container paused leaves it paused; a new
// Runtime on the same root resumes it (Lookup, List, Start), so the
// session runs on instead of reading lost. A pause of Pause is the
// caller's and survives a new Runtime.
func TestRestartResumesACapturesPause(t *testing.T) {
	root := t.TempDir()
	ctx := context.Background()
	r1 := newRuntime(t, Options{Root: root})
	create(t, r1, "cap", testimage.Busybox(t))
	run(t, r1, "cap", "echo kept > /root/file")
	// What a kill mid-capture leaves: the capture's pause, never undone.
	func() {
		defer r1.lock("cap")()
		if err := r1.pauseForCapture(ctx, "cap"); err != nil {
			t.Fatal(err)
		}
	}()
	if i, err := r1.lookup(ctx, "cap"); err != nil || i.State != StatePaused {
		t.Fatalf("after the capture's pause: %v %+v", err, i)
	}

	// Lookup of a new Runtime resumes it.
	r2 := newRuntime(t, Options{Root: root})
	if i, err := r2.Lookup(ctx, "cap"); err != nil || i.State != StateRunning {
		t.Fatalf("Lookup after a restart mid-capture: %v %+v, want running", err, i)
	}
	if got := run(t, r2, "cap", "cat /root/file"); got != "kept\n" {
		t.Fatalf("exec after the resume: %q", got)
	}
	if _, err := os.Lstat(r2.paths("cap").captured); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the capture's mark is still there after the resume: %v", err)
	}

	// So does List.
	func() {
		defer r2.lock("cap")()
		if err := r2.pauseForCapture(ctx, "cap"); err != nil {
			t.Fatal(err)
		}
	}()
	r3 := newRuntime(t, Options{Root: root})
	infos, err := r3.List(ctx)
	if err != nil || len(infos) != 1 || infos[0].State != StateRunning {
		t.Fatalf("List after a restart mid-capture: %v %+v, want one running", err, infos)
	}

	// A capture by the new Runtime pauses and resumes as ever.
	l, _, err := r3.Changes(ctx, "cap")
	if err != nil {
		t.Fatal(err)
	}
	if e := layerEntries(t, l)["root/file"]; e.Size != 5 {
		t.Fatalf("changes after the resume: %v", e)
	}
	if i, err := r3.Lookup(ctx, "cap"); err != nil || i.State != StateRunning {
		t.Fatalf("after a capture: %v %+v", err, i)
	}

	// A caller's Pause is not undone by a new Runtime.
	if err := r3.Pause(ctx, "cap"); err != nil {
		t.Fatal(err)
	}
	r4 := newRuntime(t, Options{Root: root})
	if i, err := r4.Lookup(ctx, "cap"); err != nil || i.State != StatePaused {
		t.Fatalf("Lookup after a restart with a caller's pause: %v %+v, want paused", err, i)
	}
	if err := r4.Resume(ctx, "cap"); err != nil {
		t.Fatal(err)
	}
}

// TestRemoveAllLeavesNothing (issue 32): RemoveAll of a root with a
// running, a paused and a stopped session, and one whose record a crash
// lost (its container and mount still there), leaves no container runc
// lists, no mount of the root, no session, no mount directory and no
// cgroup; a second RemoveAll does nothing.
func TestRemoveAllLeavesNothing(t *testing.T) {
	root := t.TempDir()
	r := newRuntime(t, Options{Root: root})
	ctx := context.Background()
	img := testimage.Busybox(t)
	for _, id := range []string{"run", "paused", "stopped", "lost"} {
		create(t, r, id, img)
	}
	if err := r.Pause(ctx, "paused"); err != nil {
		t.Fatal(err)
	}
	if err := r.Stop(ctx, "stopped"); err != nil {
		t.Fatal(err)
	}
	// The lost one's record goes elsewhere: only runc and the mount table know it.
	if err := os.Rename(r.paths("lost").dir, filepath.Join(root, "lost-record")); err != nil {
		t.Fatal(err)
	}
	if ids := r.runcIDs(ctx); len(ids) != 3 {
		t.Fatalf("runc lists %v before RemoveAll, want 3 containers", ids)
	}
	if ms := r.mountsLeft(); len(ms) != 3 {
		t.Fatalf("mounts before RemoveAll: %v, want 3", ms)
	}
	for range 2 {
		if err := r.RemoveAll(ctx); err != nil {
			t.Fatalf("RemoveAll: %v", err)
		}
		if out, err := exec.Command(r.runc, "--root", r.stateRoot(), "list", "-q").Output(); err != nil || strings.TrimSpace(string(out)) != "" {
			t.Errorf("runc list after RemoveAll = %q %v, want no container", out, err)
		}
		mi, _ := os.ReadFile("/proc/self/mountinfo")
		for _, line := range strings.Split(string(mi), "\n") {
			if strings.Contains(line, root+"/") || strings.Contains(line, r.mounts) {
				t.Errorf("a mount of the root is left: %s", line)
			}
		}
		if ents, _ := os.ReadDir(filepath.Join(root, "sessions")); len(ents) != 0 {
			t.Errorf("%d sessions left under the root", len(ents))
		}
		if _, err := os.Lstat(r.mounts); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("the mount directory %s is left: %v", r.mounts, err)
		}
		if left, _ := filepath.Glob("/sys/fs/cgroup/*/svc-sandbox/" + filepath.Base(r.mounts)); len(left) != 0 {
			t.Errorf("cgroups left: %v", left)
		}
	}
}
