package local

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestDefaultRoot: the work areas go to a directory of the service's own
// on /dev/shm when it is a tmpfs with room, named after the data
// directory, and to the data directory when /dev/shm is no tmpfs or the
// name is taken by someone else.
func TestDefaultRoot(t *testing.T) {
	dataDir := t.TempDir()
	var sfs syscall.Statfs_t
	if err := syscall.Statfs(shmDir, &sfs); err != nil || sfs.Type != tmpfsMagic || uint64(sfs.Bavail)*uint64(sfs.Bsize) < MinTmpfsFree {
		if os.Getenv("CI") != "" {
			t.Fatalf("CI machines have a tmpfs on %s with 1 GiB free", shmDir)
		}
		t.Skipf("%s is not a tmpfs with room here", shmDir)
	}
	root, note := DefaultRoot(dataDir)
	t.Cleanup(func() { _ = os.RemoveAll(root) })
	if note != "" || !strings.HasPrefix(root, shmDir+"/svc-work-") {
		t.Fatalf("DefaultRoot = %q, %q; want a directory on %s", root, note, shmDir)
	}
	var st syscall.Stat_t
	if err := syscall.Lstat(root, &st); err != nil || st.Mode&0o777 != 0o711 || int(st.Uid) != os.Geteuid() {
		t.Fatalf("root %s: mode %o uid %d err %v; want 0711 owned by svc's user", root, st.Mode&0o777, st.Uid, err)
	}
	if again, _ := DefaultRoot(dataDir); again != root {
		t.Errorf("DefaultRoot of the same data directory = %q, then %q", root, again)
	}
	if other, _ := DefaultRoot(t.TempDir()); other == root {
		t.Errorf("two data directories share the work root %q", root)
	} else {
		_ = os.RemoveAll(other)
	}

	// A directory of that name that others can write to is not taken.
	taken := t.TempDir()
	takenRoot, _ := DefaultRoot(taken)
	t.Cleanup(func() { _ = os.RemoveAll(takenRoot) })
	if err := os.Chmod(takenRoot, 0o777); err != nil {
		t.Fatal(err)
	}
	if got, note := DefaultRoot(taken); got != filepath.Join(taken, "work") || note == "" {
		t.Errorf("DefaultRoot with a world-writable directory in the way = %q, %q; want the data directory and a note", got, note)
	}
	// A symbolic link in the way is not followed.
	if err := os.Remove(takenRoot); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(t.TempDir(), takenRoot); err != nil {
		t.Fatal(err)
	}
	if got, note := DefaultRoot(taken); got != filepath.Join(taken, "work") || note == "" {
		t.Errorf("DefaultRoot with a symbolic link in the way = %q, %q; want the data directory and a note", got, note)
	}

	// No tmpfs: the data directory.
	saved := shmDir
	shmDir = t.TempDir()
	t.Cleanup(func() { shmDir = saved })
	if got, note := DefaultRoot(dataDir); got != filepath.Join(dataDir, "work") || note != "" {
		t.Errorf("DefaultRoot without a tmpfs = %q, %q; want %q", got, note, filepath.Join(dataDir, "work"))
	}
}
