package local

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// shmDir is the host's shared memory filesystem, where DefaultRoot puts
// the work areas when it is a tmpfs with room.
var shmDir = "/dev/shm"

const (
	tmpfsMagic = 0x01021994 // statfs(2) f_type of a tmpfs
	// MinTmpfsFree is the free space a tmpfs must have for DefaultRoot to
	// put the work areas there.
	MinTmpfsFree = 1 << 30
)

// DefaultRoot returns the directory of the work areas of a service whose
// data directory is dataDir, when none is configured: a directory of its
// own on /dev/shm when that is a tmpfs with MinTmpfsFree free, else
// dataDir/work. A work area is scratch (made for one attempt, removed
// after it), and on this kind of machine creating and removing its
// directories and files on a journalled disk costs about ten times the CPU
// it costs on a tmpfs (docs/benchmarks.md); the secrets file then never
// reaches a disk either. note says why the tmpfs was not taken, when it
// exists but cannot be used.
func DefaultRoot(dataDir string) (root, note string) {
	abs, err := filepath.Abs(dataDir)
	if err != nil {
		abs = filepath.Clean(dataDir)
	}
	fallback := filepath.Join(abs, "work")
	var sfs syscall.Statfs_t
	if err := syscall.Statfs(shmDir, &sfs); err != nil || sfs.Type != tmpfsMagic {
		return fallback, ""
	}
	if free := uint64(sfs.Bavail) * uint64(sfs.Bsize); free < MinTmpfsFree {
		return fallback, fmt.Sprintf("%s has %d MiB free, under the %d MiB the work areas want there", shmDir, free>>20, MinTmpfsFree>>20)
	}
	sum := sha256.Sum256([]byte(abs))
	dir := filepath.Join(shmDir, "svc-work-"+hex.EncodeToString(sum[:6]))
	if err := os.Mkdir(dir, 0o711); err != nil && !errors.Is(err, fs.ErrExist) {
		return fallback, fmt.Sprintf("creating %s: %v", dir, err)
	}
	// The name is predictable and /dev/shm is everyone's: use it only if
	// it is a directory of ours that nobody else can write to.
	var st syscall.Stat_t
	if err := syscall.Lstat(dir, &st); err != nil {
		return fallback, fmt.Sprintf("checking %s: %v", dir, err)
	}
	if st.Mode&syscall.S_IFMT != syscall.S_IFDIR || int(st.Uid) != os.Geteuid() || st.Mode&0o022 != 0 {
		return fallback, fmt.Sprintf("%s is not a directory that only svc's user owns and can write: remove it", dir)
	}
	return dir, ""
}
