//go:build linux

package sandbox

import (
	"archive/tar"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"golang.org/x/sys/unix"
)

// base is an image unpacked under Root/images/<digest hex>.
type base struct {
	digest string // sha256:...
	rootfs string
	config v1.Config
}

// ensureBase returns img's unpacked root file system, unpacking it first
// when no process did (under a lock file, so that two processes unpack
// once).
func (r *Runtime) ensureBase(ctx context.Context, img v1.Image) (base, error) {
	d, err := img.Digest()
	if err != nil {
		return base{}, fmt.Errorf("sandbox: image digest: %w", err)
	}
	dir := filepath.Join(r.root, "images", d.Hex)
	b := base{digest: d.String(), rootfs: filepath.Join(dir, "rootfs")}
	cfgPath := filepath.Join(dir, "config.json")
	read := func() (bool, error) {
		data, err := os.ReadFile(cfgPath)
		if errors.Is(err, os.ErrNotExist) {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		return true, json.Unmarshal(data, &b.config)
	}
	if ok, err := read(); ok || err != nil {
		return b, err
	}
	if err := os.MkdirAll(filepath.Join(r.root, "images"), 0o700); err != nil {
		return base{}, err
	}
	unlock, err := lockFile(ctx, dir+".lock")
	if err != nil {
		return base{}, err
	}
	defer unlock()
	if ok, err := read(); ok || err != nil {
		return b, err
	}
	// A crash mid-unpack leaves dir without config.json: start over.
	if err := os.RemoveAll(dir); err != nil {
		return base{}, err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return base{}, err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return base{}, fmt.Errorf("sandbox: image config: %w", err)
	}
	tmp := filepath.Join(dir, "rootfs.tmp")
	if err := os.Mkdir(tmp, 0o755); err != nil {
		return base{}, err
	}
	if err := os.Lchown(tmp, r.uidBase, r.uidBase); err != nil {
		return base{}, err
	}
	rc := mutate.Extract(img)
	err = unpack(ctx, rc, tmp, r.uidBase)
	rc.Close()
	if err != nil {
		return base{}, fmt.Errorf("sandbox: unpacking image %s: %w", d, err)
	}
	if err := os.Rename(tmp, b.rootfs); err != nil {
		return base{}, err
	}
	data, err := json.Marshal(cf.Config)
	if err != nil {
		return base{}, err
	}
	if err := writeFileSync(cfgPath, data); err != nil {
		return base{}, err
	}
	b.config = cf.Config
	return b, nil
}

// lockFile takes an exclusive flock on path, waiting while ctx allows.
func lockFile(ctx context.Context, path string) (func(), error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|unix.O_NOFOLLOW, 0o600)
	if err != nil {
		return nil, err
	}
	done := make(chan error, 1)
	go func() { done <- unix.Flock(int(f.Fd()), unix.LOCK_EX) }()
	select {
	case err := <-done:
		if err != nil {
			f.Close()
			return nil, err
		}
		return func() { f.Close() }, nil
	case <-ctx.Done():
		// The flock, when it comes, is dropped with the file.
		go func() { <-done; f.Close() }()
		return nil, ctx.Err()
	}
}

// writeFileSync writes data to path through a temporary file and a
// rename, so that path is either absent or whole.
func writeFileSync(path string, data []byte) error {
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC|unix.O_NOFOLLOW, 0o600)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// unpack writes the flattened image tar rc into dir, shifting owners by
// uidBase. It trusts nothing of the tar: a name is confined to dir, no
// entry is written through a symbolic link (every directory on the way is
// checked with lstat: nothing else writes dir meanwhile), a hard link must
// name a regular file inside dir, and device nodes are skipped (a
// container in a user namespace cannot use them; runc gives it /dev).
func unpack(ctx context.Context, rc io.Reader, dir string, uidBase int) error {
	tr := tar.NewReader(rc)
	type dirTime struct {
		path string
		hdr  *tar.Header
	}
	var dirs []dirTime
	for n := 0; ; n++ {
		if n%256 == 0 && ctx.Err() != nil {
			return ctx.Err()
		}
		hdr, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
		name := path.Clean("/" + hdr.Name)
		if strings.HasPrefix(path.Base(name), ".wh.") {
			continue
		}
		p := filepath.Join(dir, filepath.FromSlash(name))
		if name != "/" {
			if err := safeParents(dir, name, uidBase); err != nil {
				return fmt.Errorf("%s: %w", hdr.Name, err)
			}
		}
		switch hdr.Typeflag {
		case tar.TypeDir:
			if fi, err := os.Lstat(p); err == nil && !fi.IsDir() {
				if err := os.Remove(p); err != nil {
					return err
				}
			}
			if err := os.Mkdir(p, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
				return err
			}
			dirs = append(dirs, dirTime{p, hdr})
		case tar.TypeReg: // archive/tar reads the old TypeRegA as TypeReg
			if err := clearPath(p); err != nil {
				return err
			}
			f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL|unix.O_NOFOLLOW, 0o600)
			if err != nil {
				return err
			}
			_, err = io.Copy(f, tr)
			if cerr := f.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				return err
			}
		case tar.TypeSymlink:
			if err := clearPath(p); err != nil {
				return err
			}
			if err := os.Symlink(hdr.Linkname, p); err != nil {
				return err
			}
		case tar.TypeLink:
			target := path.Clean("/" + hdr.Linkname)
			if err := safeParents(dir, target, uidBase); err != nil {
				return fmt.Errorf("%s: link to %s: %w", hdr.Name, hdr.Linkname, err)
			}
			tp := filepath.Join(dir, filepath.FromSlash(target))
			fi, err := os.Lstat(tp)
			if err != nil || !fi.Mode().IsRegular() {
				return fmt.Errorf("%s: hard link to %s, which is not a regular file of the image", hdr.Name, hdr.Linkname)
			}
			if err := clearPath(p); err != nil {
				return err
			}
			if err := os.Link(tp, p); err != nil {
				return err
			}
			continue // the target's owner, mode and times stand
		case tar.TypeFifo:
			if err := clearPath(p); err != nil {
				return err
			}
			if err := unix.Mkfifo(p, 0o600); err != nil {
				return err
			}
		default:
			continue // devices and what else a tar may hold
		}
		if err := setAttrs(p, hdr, uidBase); err != nil {
			return fmt.Errorf("%s: %w", hdr.Name, err)
		}
	}
	for i := len(dirs) - 1; i >= 0; i-- {
		if err := setTimes(dirs[i].path, dirs[i].hdr); err != nil {
			return err
		}
	}
	return nil
}

// clearPath removes what is at p (a directory with its contents) so that an
// entry of another type can take its place.
func clearPath(p string) error {
	fi, err := os.Lstat(p)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return nil
	case err != nil:
		return err
	case fi.IsDir():
		return os.RemoveAll(p)
	}
	return os.Remove(p)
}

// safeParents makes sure every directory above name (a clean absolute
// path of the image) is a real directory under dir, creating missing ones
// (root's, 0755).
func safeParents(dir, name string, uidBase int) error {
	parts := strings.Split(strings.TrimPrefix(path.Dir(name), "/"), "/")
	p := dir
	for _, part := range parts {
		if part == "" {
			continue
		}
		p = filepath.Join(p, part)
		fi, err := os.Lstat(p)
		switch {
		case errors.Is(err, os.ErrNotExist):
			if err := os.Mkdir(p, 0o755); err != nil {
				return err
			}
			if err := os.Lchown(p, uidBase, uidBase); err != nil {
				return err
			}
		case err != nil:
			return err
		case fi.Mode()&os.ModeSymlink != 0:
			return fmt.Errorf("refused: %s is a symbolic link", strings.TrimPrefix(p, dir))
		case !fi.IsDir():
			return fmt.Errorf("refused: %s is not a directory", strings.TrimPrefix(p, dir))
		}
	}
	return nil
}

// hostID is the host id of a container's id.
func hostID(id, uidBase int) int {
	if id < 0 || id >= UIDs {
		id = UIDs - 2 // nobody's, 65534
	}
	return uidBase + id
}

// setAttrs gives p the header's owner, mode and times.
func setAttrs(p string, hdr *tar.Header, uidBase int) error {
	if err := os.Lchown(p, hostID(hdr.Uid, uidBase), hostID(hdr.Gid, uidBase)); err != nil {
		return err
	}
	if hdr.Typeflag != tar.TypeSymlink {
		// After the chown, which clears set-id bits.
		if err := unix.Fchmodat(unix.AT_FDCWD, p, uint32(hdr.Mode&0o7777), 0); err != nil {
			return err
		}
	}
	if hdr.Typeflag == tar.TypeDir {
		return nil // after its entries
	}
	return setTimes(p, hdr)
}

func setTimes(p string, hdr *tar.Header) error {
	at := hdr.AccessTime
	if at.IsZero() {
		at = hdr.ModTime
	}
	ts := []unix.Timespec{unix.NsecToTimespec(at.UnixNano()), unix.NsecToTimespec(hdr.ModTime.UnixNano())}
	return unix.UtimesNanoAt(unix.AT_FDCWD, p, ts, unix.AT_SYMLINK_NOFOLLOW)
}
