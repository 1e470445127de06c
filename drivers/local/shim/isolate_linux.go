//go:build linux

package shim

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"unsafe"
)

// Linux constants the syscall package does not name.
const (
	prCapbsetDrop  = 24
	prSetNoNewPriv = 38
	capLastCap     = 63 // drop every capability number the kernel may know
	linuxCapV3     = 0x20080522
	oPath          = 0x200000 // O_PATH
)

// isolate sets up the job's network (in the isolated network: its
// addresses and routes) and mount namespace: the service's directories
// hidden, the work area bound back, a private /tmp, a /proc of the job's
// own PID namespace. In a user namespace it then drops every capability,
// so the harness (root of that namespace) cannot undo any of it.
func isolate(iso *Isolation) error {
	// While the shim still has its capabilities in the namespace.
	if err := configureNetwork(iso); err != nil {
		return fmt.Errorf("setting up the jobs' network: %w", err)
	}
	// Nothing mounted here may reach the host's namespace.
	if err := syscall.Mount("", "/", "", syscall.MS_REC|syscall.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("making the mounts private: %w", err)
	}
	if iso.ResolvConf != "" {
		// First: the file is in the driver's root, hidden below.
		if err := bindResolvConf(iso.ResolvConf); err != nil {
			return err
		}
	}
	// Held before anything covers it, to bind it back afterwards.
	areaFD := -1
	if iso.Area != "" {
		fd, err := syscall.Open(iso.Area, oPath|syscall.O_DIRECTORY|syscall.O_CLOEXEC, 0)
		if err != nil {
			return fmt.Errorf("opening the work area: %w", err)
		}
		areaFD = fd
		defer syscall.Close(fd)
	}
	var covered []string
	if iso.PrivateTmp {
		// The host's shared temporary directories stay readable (a
		// harness's script may live there) but not writable: TMPDIR is in
		// the work area. /dev/shm is the job's own.
		for _, d := range []string{"/tmp", "/var/tmp"} {
			if !isDir(d) {
				continue
			}
			if err := syscall.Mount(d, d, "", syscall.MS_BIND|syscall.MS_REC, ""); err != nil {
				return fmt.Errorf("binding %s: %w", d, err)
			}
			if err := syscall.Mount("", d, "", syscall.MS_REMOUNT|syscall.MS_BIND|syscall.MS_RDONLY|syscall.MS_NOSUID|syscall.MS_NODEV, ""); err != nil {
				return fmt.Errorf("making %s read-only: %w", d, err)
			}
		}
		if isDir("/dev/shm") {
			if err := syscall.Mount("tmpfs", "/dev/shm", "tmpfs", syscall.MS_NOSUID|syscall.MS_NODEV, "mode=1777"); err != nil {
				return fmt.Errorf("mounting a private /dev/shm: %w", err)
			}
			covered = append(covered, "/dev/shm")
		}
	}
	// Outer directories first, so that an inner one is hidden inside the
	// outer tmpfs rather than mounted over a path that no longer exists.
	hide := slices.Clone(iso.Hide)
	slices.SortFunc(hide, func(a, b string) int { return len(a) - len(b) })
	var hidden []string
	for _, h := range hide {
		if !isDir(h) || under(h, hidden) {
			continue
		}
		if err := syscall.Mount("tmpfs", h, "tmpfs", syscall.MS_NOSUID|syscall.MS_NODEV|syscall.MS_NOEXEC, "size=64k,mode=0755"); err != nil {
			return fmt.Errorf("hiding %s: %w", h, err)
		}
		hidden = append(hidden, h)
	}
	covered = append(covered, hidden...)
	// Read-only mounts leave the area writable only if it is a mount of
	// its own.
	if areaFD >= 0 && (under(iso.Area, covered) || iso.ReadOnly) {
		if err := os.MkdirAll(iso.Area, 0o755); err != nil {
			return fmt.Errorf("making the work area's mount point: %w", err)
		}
		if err := syscall.Mount(fmt.Sprintf("/proc/self/fd/%d", areaFD), iso.Area, "", syscall.MS_BIND|syscall.MS_REC, ""); err != nil {
			return fmt.Errorf("binding the work area back: %w", err)
		}
	}
	for _, h := range hidden {
		if err := syscall.Mount("", h, "", syscall.MS_REMOUNT|syscall.MS_RDONLY|syscall.MS_NOSUID|syscall.MS_NODEV|syscall.MS_NOEXEC, ""); err != nil {
			return fmt.Errorf("making %s read-only: %w", h, err)
		}
	}
	if iso.ReadOnly {
		writable := []string{iso.Area}
		if slices.Contains(covered, "/dev/shm") {
			writable = append(writable, "/dev/shm")
		}
		if err := readOnlyExcept(writable); err != nil {
			return err
		}
	}
	// A /proc of this PID namespace: the service's processes, and so its
	// environment, are not in it. Where the kernel refuses a new proc (a
	// user namespace under a masked /proc), an empty one.
	if iso.HidePid {
		// The jobs of a server share its PID namespace: each must see only
		// its own uid's processes. No fallback: without it a job could
		// read the others' command lines.
		return mountHidePidProc()
	}
	if err := syscall.Mount("proc", "/proc", "proc", syscall.MS_NOSUID|syscall.MS_NODEV|syscall.MS_NOEXEC, ""); err != nil {
		if err := syscall.Mount("tmpfs", "/proc", "tmpfs", syscall.MS_NOSUID|syscall.MS_NODEV|syscall.MS_NOEXEC|syscall.MS_RDONLY, "size=4k"); err != nil {
			return fmt.Errorf("hiding the host's /proc: %w", err)
		}
	}
	if iso.UserNS {
		return dropCapabilities()
	}
	return nil
}

// mount_setattr(2), which Go's syscall package does not have.
const (
	sysMountSetattr = 442 // the same on every architecture
	mountAttrRdonly = 0x1
	atRecursive     = 0x8000
	atFdcwd         = -100
	sizeofMountAttr = 32
)

// mountSetattr sets and clears attributes of the mount at path and every
// mount below it.
func mountSetattr(path string, set, clear uint64) error {
	p, err := syscall.BytePtrFromString(path)
	if err != nil {
		return err
	}
	attr := struct{ set, clear, propagation, userns uint64 }{set: set, clear: clear}
	fdcwd := atFdcwd
	_, _, e := syscall.Syscall6(sysMountSetattr, uintptr(fdcwd), uintptr(unsafe.Pointer(p)), atRecursive, uintptr(unsafe.Pointer(&attr)), sizeofMountAttr, 0)
	if e != 0 {
		return e
	}
	return nil
}

// readOnlyExcept makes every mount read-only but those at the paths in
// writable (each a mount point); without mount_setattr (before Linux
// 5.12) it leaves the mounts as they are.
func readOnlyExcept(writable []string) error {
	if err := mountSetattr("/", mountAttrRdonly, 0); err != nil {
		if err == syscall.ENOSYS {
			return nil
		}
		return fmt.Errorf("making the mounts read-only: %w", err)
	}
	for _, w := range writable {
		if err := mountSetattr(w, 0, mountAttrRdonly); err != nil {
			return fmt.Errorf("making %s writable again: %w", w, err)
		}
	}
	return nil
}

// mountHidePidProc mounts the PID namespace's /proc where only a process's
// own uid's processes are visible to it (root's view is whole).
func mountHidePidProc() error {
	const flags = syscall.MS_NOSUID | syscall.MS_NODEV | syscall.MS_NOEXEC
	err := syscall.Mount("proc", "/proc", "proc", flags, "hidepid=invisible")
	if err == syscall.EINVAL {
		// Before Linux 5.8: the numeric form, same meaning.
		err = syscall.Mount("proc", "/proc", "proc", flags, "hidepid=2")
	}
	if err != nil {
		return fmt.Errorf("mounting /proc with hidepid: %w", err)
	}
	return nil
}

// dropCapabilities leaves the harness, root of the job's user namespace,
// without a capability to gain: no_new_privs, an empty bounding set and an
// empty inheritable set (both inherited by what this thread forks).
func dropCapabilities() error {
	if _, _, e := syscall.RawSyscall(syscall.SYS_PRCTL, prSetNoNewPriv, 1, 0); e != 0 {
		return fmt.Errorf("setting no_new_privs: %w", e)
	}
	for c := 0; c <= capLastCap; c++ {
		if _, _, e := syscall.RawSyscall(syscall.SYS_PRCTL, prCapbsetDrop, uintptr(c), 0); e != 0 && e != syscall.EINVAL {
			return fmt.Errorf("dropping capability %d: %w", c, e)
		}
	}
	hdr := struct {
		version uint32
		pid     int32
	}{version: linuxCapV3}
	var data [2]struct{ effective, permitted, inheritable uint32 }
	if _, _, e := syscall.RawSyscall(syscall.SYS_CAPGET, uintptr(unsafe.Pointer(&hdr)), uintptr(unsafe.Pointer(&data[0])), 0); e != 0 {
		return fmt.Errorf("reading capabilities: %w", e)
	}
	data[0].inheritable, data[1].inheritable = 0, 0
	if _, _, e := syscall.RawSyscall(syscall.SYS_CAPSET, uintptr(unsafe.Pointer(&hdr)), uintptr(unsafe.Pointer(&data[0])), 0); e != 0 {
		return fmt.Errorf("clearing inheritable capabilities: %w", e)
	}
	return nil
}

// isDir reports whether path is a directory.
func isDir(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.IsDir()
}

// under reports whether path is one of dirs or inside one of them.
func under(path string, dirs []string) bool {
	for _, d := range dirs {
		if path == d || strings.HasPrefix(path, strings.TrimSuffix(d, string(filepath.Separator))+string(filepath.Separator)) {
			return true
		}
	}
	return false
}
