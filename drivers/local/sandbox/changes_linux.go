//go:build linux

package sandbox

import (
	"archive/tar"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"hash"
	"io"
	"os"
	"path/filepath"
	"slices"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"golang.org/x/sys/unix"
)

// Whiteout names of the OCI image layer format.
const (
	whiteoutPrefix = ".wh."
	opaqueWhiteout = ".wh..wh..opq"
	opaqueXattr    = "trusted.overlay.opaque"
)

// uncompressedFactor bounds a change set's uncompressed size at this many
// times the capture cap: a sparse or all-zero file compresses to little
// but would take long to read.
const uncompressedFactor = 4

// Changes returns session id's changes since its base as one gzip OCI
// layer (whiteouts .wh.<name> for deletions, .wh..wh..opq for a directory
// that replaced one of the base; modes, owners, symbolic links, hard links
// and modification times kept) and its compressed size. A running
// container is paused while its changes are read, then resumed; the pause
// is marked on disk first, so that one a dead process left is resumed by
// the next Runtime's Lookup, List, Start or Changes. It reads
// the session's overlay upper directory entry by entry relative to open
// directories, never following a symbolic link; FIFOs, sockets and device
// nodes are skipped (a hostile container may plant them; none is opened),
// as are extended attributes. A layer past the capture cap is refused
// with ErrTooLarge. The layer's bytes live in an unlinked temporary file
// under the root, freed when the layer is no longer referenced.
func (r *Runtime) Changes(ctx context.Context, id string) (v1.Layer, int64, error) {
	defer r.lock(id)()
	m, err := r.readMeta(id)
	if err != nil {
		return nil, 0, err
	}
	info, err := r.lookup(ctx, id)
	if err == nil {
		info, err = r.thaw(ctx, info) // a dead process's capture
	}
	if err == nil && info.State == StateRunning {
		if err := r.pauseForCapture(ctx, id); err != nil {
			return nil, 0, err
		}
		defer r.resumeAfterCapture(id)
	}
	tmpDir := filepath.Join(r.root, "tmp")
	if err := os.MkdirAll(tmpDir, 0o700); err != nil {
		return nil, 0, err
	}
	f, err := os.CreateTemp(tmpDir, "changes-")
	if err != nil {
		return nil, 0, err
	}
	_ = os.Remove(f.Name()) // the open file is the layer's
	l, err := capture(ctx, r.paths(id).upper, f, m.UIDBase, r.maxCapture, r.log.Warn)
	if err != nil {
		f.Close()
		return nil, 0, fmt.Errorf("sandbox %s: capturing its changes: %w", id, err)
	}
	return l, l.size, nil
}

// counter counts and hashes what passes; past max (when > 0) it fails.
type counter struct {
	w    io.Writer
	h    hash.Hash
	n    int64
	max  int64
	over error
}

func (c *counter) Write(p []byte) (int, error) {
	if c.max > 0 && c.n+int64(len(p)) > c.max {
		return 0, c.over
	}
	c.n += int64(len(p))
	c.h.Write(p)
	return c.w.Write(p)
}

// capture writes the layer of upper into f.
func capture(ctx context.Context, upper string, f *os.File, uidBase int, max int64, warn func(string, ...any)) (*fileLayer, error) {
	comp := &counter{w: f, h: sha256.New(), max: max,
		over: fmt.Errorf("%w: its compressed layer passed %d bytes (SVC_WORLD_MAX_CAPTURE_BYTES)", ErrTooLarge, max)}
	zw, err := gzip.NewWriterLevel(comp, gzip.BestSpeed)
	if err != nil {
		return nil, err
	}
	unc := &counter{w: zw, h: sha256.New(), max: max * uncompressedFactor,
		over: fmt.Errorf("%w: its uncompressed layer passed %d bytes (%d times SVC_WORLD_MAX_CAPTURE_BYTES)", ErrTooLarge, max*uncompressedFactor, uncompressedFactor)}
	w := &walker{ctx: ctx, tw: tar.NewWriter(unc), uidBase: uidBase, links: map[[2]uint64]string{}, warn: warn, budget: max * uncompressedFactor}
	fd, err := unix.Open(upper, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: upper, Err: err}
	}
	err = w.dir(fd, "")
	unix.Close(fd)
	if err == nil {
		err = w.tw.Close()
	}
	if err == nil {
		err = zw.Close()
	}
	if err != nil {
		return nil, err
	}
	if err := f.Sync(); err != nil {
		return nil, err
	}
	return &fileLayer{
		f:      f,
		size:   comp.n,
		digest: v1.Hash{Algorithm: "sha256", Hex: fmt.Sprintf("%x", comp.h.Sum(nil))},
		diffID: v1.Hash{Algorithm: "sha256", Hex: fmt.Sprintf("%x", unc.h.Sum(nil))},
	}, nil
}

// walker writes a directory tree, read through file descriptors, as tar
// entries.
type walker struct {
	ctx     context.Context
	tw      *tar.Writer
	uidBase int
	links   map[[2]uint64]string // device and inode of a regular file already written, its name
	warn    func(string, ...any)
	budget  int64 // file bytes still allowed
}

// dir writes the entries of the open directory fd, whose name in the
// layer is prefix ("" for the root, else "a/b/").
func (w *walker) dir(fd int, prefix string) error {
	names, err := readNames(fd)
	if err != nil {
		return fmt.Errorf("reading /%s: %w", prefix, err)
	}
	slices.Sort(names)
	for _, name := range names {
		if err := w.ctx.Err(); err != nil {
			return err
		}
		if err := w.entry(fd, prefix, name); err != nil {
			return err
		}
	}
	return nil
}

// readNames lists the open directory fd (a duplicate is read, so fd's own
// offset stays).
func readNames(fd int) ([]string, error) {
	dup, err := unix.Openat(fd, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	d := os.NewFile(uintptr(dup), ".")
	defer d.Close()
	return d.Readdirnames(-1)
}

func (w *walker) entry(dirfd int, prefix, name string) error {
	var st unix.Stat_t
	if err := unix.Fstatat(dirfd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		if errors.Is(err, unix.ENOENT) {
			return nil
		}
		return fmt.Errorf("/%s%s: %w", prefix, name, err)
	}
	full := prefix + name
	hdr := &tar.Header{
		Name:    full,
		Mode:    int64(st.Mode & 0o7777),
		Uid:     w.id(st.Uid),
		Gid:     w.id(st.Gid),
		ModTime: time.Unix(st.Mtim.Unix()).UTC(),
		Format:  tar.FormatPAX,
	}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFCHR:
		if st.Rdev != 0 {
			w.warn("sandbox: capture skips a device node", "path", "/"+full)
			return nil
		}
		// An overlay whiteout: name was deleted.
		return w.tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: prefix + whiteoutPrefix + name, ModTime: hdr.ModTime, Format: tar.FormatPAX})
	case unix.S_IFDIR:
		fd, err := unix.Openat(dirfd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			return fmt.Errorf("/%s: %w", full, err)
		}
		defer unix.Close(fd)
		hdr.Typeflag, hdr.Name = tar.TypeDir, full+"/"
		if err := w.tw.WriteHeader(hdr); err != nil {
			return err
		}
		buf := make([]byte, 8)
		if n, err := unix.Fgetxattr(fd, opaqueXattr, buf); err == nil && string(buf[:n]) == "y" {
			if err := w.tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: full + "/" + opaqueWhiteout, ModTime: hdr.ModTime, Format: tar.FormatPAX}); err != nil {
				return err
			}
		}
		return w.dir(fd, full+"/")
	case unix.S_IFLNK:
		target, err := readlinkat(dirfd, name)
		if err != nil {
			return fmt.Errorf("/%s: %w", full, err)
		}
		hdr.Typeflag, hdr.Linkname = tar.TypeSymlink, target
		return w.tw.WriteHeader(hdr)
	case unix.S_IFREG:
		return w.file(dirfd, name, hdr, &st)
	default:
		w.warn("sandbox: capture skips a FIFO or socket", "path", "/"+full)
		return nil
	}
}

// file writes the regular file name of dirfd, opened without following a
// link and without waiting (a FIFO swapped in after the stat is refused
// by the fstat that follows).
func (w *walker) file(dirfd int, name string, hdr *tar.Header, st *unix.Stat_t) error {
	key := [2]uint64{st.Dev, st.Ino}
	if st.Nlink > 1 {
		if first, ok := w.links[key]; ok {
			hdr.Typeflag, hdr.Linkname = tar.TypeLink, first
			return w.tw.WriteHeader(hdr)
		}
	}
	if st.Size > w.budget {
		return fmt.Errorf("%w: /%s alone holds %d bytes, past the uncompressed bound of %d times SVC_WORLD_MAX_CAPTURE_BYTES", ErrTooLarge, hdr.Name, st.Size, uncompressedFactor)
	}
	fd, err := unix.Openat(dirfd, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if err != nil {
		if errors.Is(err, unix.ELOOP) || errors.Is(err, unix.ENXIO) || errors.Is(err, unix.ENOENT) {
			w.warn("sandbox: capture skips a file that changed while read", "path", "/"+hdr.Name)
			return nil
		}
		return fmt.Errorf("/%s: %w", hdr.Name, err)
	}
	f := os.NewFile(uintptr(fd), hdr.Name)
	defer f.Close()
	var fst unix.Stat_t
	if err := unix.Fstat(fd, &fst); err != nil {
		return err
	}
	if fst.Mode&unix.S_IFMT != unix.S_IFREG || fst.Ino != st.Ino || fst.Size != st.Size {
		w.warn("sandbox: capture skips a file that changed while read", "path", "/"+hdr.Name)
		return nil
	}
	hdr.Typeflag, hdr.Size = tar.TypeReg, st.Size
	if err := w.tw.WriteHeader(hdr); err != nil {
		return err
	}
	n, err := io.Copy(w.tw, &ctxReader{ctx: w.ctx, r: io.LimitReader(f, st.Size)})
	if err != nil {
		return fmt.Errorf("/%s: %w", hdr.Name, err)
	}
	if n != st.Size {
		return fmt.Errorf("/%s shrank from %d to %d bytes while read", hdr.Name, st.Size, n)
	}
	w.budget -= n
	if st.Nlink > 1 {
		w.links[key] = hdr.Name
	}
	return nil
}

// id is the container's id of a host id of its user namespace.
func (w *walker) id(host uint32) int {
	if int(host) >= w.uidBase && int(host) < w.uidBase+UIDs {
		return int(host) - w.uidBase
	}
	return UIDs - 2 // outside the namespace's map: nobody's, as the container sees it
}

func readlinkat(dirfd int, name string) (string, error) {
	for size := 256; ; size *= 2 {
		buf := make([]byte, size)
		n, err := unix.Readlinkat(dirfd, name, buf)
		if err != nil {
			return "", err
		}
		if n < size {
			return string(buf[:n]), nil
		}
		if size > 1<<16 {
			return "", errors.New("symbolic link target too long")
		}
	}
}

// ctxReader fails a read once ctx is done.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c *ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}
