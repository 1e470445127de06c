//go:build linux

package local

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"syscall"
	"time"
)

// readBackTimeout bounds reading one file back from a job's work area. A
// regular file of a local disk or tmpfs reads in far less; only a file
// system that hangs could reach it, and the job's slot must not hang with it.
const readBackTimeout = 10 * time.Second

// errNoFile is a file the job removed: nothing to read, nothing refused.
var errNoFile = errors.New("no such file")

// readBack reads up to max bytes of the file that a finished job left at
// path in its work area. The driver reads it with more rights than the job
// had (as root, outside the job's namespaces), so it reads only what the
// job itself could have written there: path must not be a symbolic link
// (O_NOFOLLOW; the directories above it are the driver's, or the area
// that the job cannot rename), it must be a regular file (O_NONBLOCK, so
// that a FIFO is refused rather than waited on; fstat before any read)
// and, when owner >= 0, belong to uid owner. refused, when not "", says
// why the file was not read; err is a failure of the driver's own (the
// file vanished is errNoFile).
func readBack(path string, owner int, max int64, timeout time.Duration) (data []byte, refused string, err error) {
	fd, err := syscall.Open(path, syscall.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK|syscall.O_NOCTTY|syscall.O_CLOEXEC, 0)
	switch {
	case errors.Is(err, syscall.ENOENT):
		return nil, "", errNoFile
	case errors.Is(err, syscall.ELOOP):
		return nil, "it is a symbolic link", nil
	case errors.Is(err, syscall.ENXIO):
		return nil, "it is a socket", nil
	case err != nil:
		return nil, "", &fs.PathError{Op: "open", Path: path, Err: err}
	}
	var st syscall.Stat_t
	if err := syscall.Fstat(fd, &st); err != nil {
		_ = syscall.Close(fd)
		return nil, "", &fs.PathError{Op: "fstat", Path: path, Err: err}
	}
	if why := notRegular(st.Mode); why != "" {
		_ = syscall.Close(fd)
		return nil, why, nil
	}
	if owner >= 0 && int(st.Uid) != owner {
		_ = syscall.Close(fd)
		return nil, fmt.Sprintf("it belongs to uid %d, not to the job's uid %d", st.Uid, owner), nil
	}
	f := os.NewFile(uintptr(fd), path)
	type read struct {
		b   []byte
		err error
	}
	done := make(chan read, 1)
	go func() {
		defer f.Close()
		b, err := io.ReadAll(io.LimitReader(f, max))
		done <- read{b, err}
	}()
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case r := <-done:
		if r.err != nil {
			return nil, "", &fs.PathError{Op: "read", Path: path, Err: r.err}
		}
		return r.b, "", nil
	case <-timer.C:
		// The reading goroutine is left to end when its read does; the
		// job's slot is not.
		return nil, fmt.Sprintf("reading it took longer than %s", timeout), nil
	}
}

// notRegular says what a file of mode m is when it is not a regular file.
func notRegular(m uint32) string {
	switch m & syscall.S_IFMT {
	case syscall.S_IFREG:
		return ""
	case syscall.S_IFIFO:
		return "it is a FIFO"
	case syscall.S_IFDIR:
		return "it is a directory"
	case syscall.S_IFSOCK:
		return "it is a socket"
	case syscall.S_IFCHR, syscall.S_IFBLK:
		return "it is a device"
	case syscall.S_IFLNK:
		return "it is a symbolic link"
	}
	return "it is not a regular file"
}
