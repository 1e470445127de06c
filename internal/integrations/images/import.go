package images

import (
	"archive/tar"
	"bufio"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"svc/internal/platform/derrors"
)

// Imported is an image Import pushed.
type Imported struct {
	// Ref is the pinned reference: host/repo:tag@sha256:...
	Ref    string `json:"ref"`
	Digest string `json:"digest"`
}

var tagRE = regexp.MustCompile(`^[a-zA-Z0-9_][a-zA-Z0-9._-]{0,127}$`)

// Import pushes the image at src to the store as target ("repo:tag", repo
// under the store's prefix), for `svc image import`. src is an OCI image
// layout directory, or a tar file (gzip-compressed or not) written by
// `docker save` or holding an OCI image layout. Where src holds several
// images, the one for linux on this machine's architecture is taken.
func (c *Client) Import(ctx context.Context, src, target string) (Imported, error) {
	repo, tag, ok := strings.Cut(target, ":")
	if !ok || !repoRE.MatchString(repo) || len(repo) > 200 || !tagRE.MatchString(tag) {
		return Imported{}, derrors.Invalidf("import target %q: want repo:tag (repo lowercase, a/b allowed; tag [A-Za-z0-9_][A-Za-z0-9._-]*)", target)
	}
	r, err := c.repository(repo)
	if err != nil {
		return Imported{}, derrors.Invalidf("import target %q: %v", target, err)
	}
	img, cleanup, err := openImage(src)
	if err != nil {
		return Imported{}, err
	}
	defer cleanup()
	digest, err := img.Digest()
	if err != nil {
		return Imported{}, derrors.Invalidf("%s: reading the image: %v", src, err)
	}
	if err := remote.Write(r.Tag(tag), img, c.options(ctx)...); err != nil {
		return Imported{}, c.storeError("pushing "+target, err)
	}
	return Imported{Ref: r.Name() + ":" + tag + "@" + digest.String(), Digest: digest.String()}, nil
}

// openImage reads the image at src; cleanup removes what reading it
// unpacked.
func openImage(src string) (v1.Image, func(), error) {
	none := func() {}
	fi, err := os.Stat(src)
	if err != nil {
		return nil, none, derrors.Invalidf("import source %s: %v", src, errors.Unwrap(err))
	}
	if fi.IsDir() {
		img, err := fromLayout(src)
		return img, none, err
	}
	names, err := tarNames(src)
	if err != nil {
		return nil, none, derrors.Invalidf("import source %s is neither a directory nor a tar file: %v", src, err)
	}
	switch {
	case names["manifest.json"]:
		img, err := tarball.Image(func() (io.ReadCloser, error) { return openMaybeGzip(src) }, nil)
		if err != nil {
			return nil, none, derrors.Invalidf("import source %s (docker save): %v", src, err)
		}
		return img, none, nil
	case names["index.json"] && names["oci-layout"]:
		dir, err := os.MkdirTemp("", "svc-import-")
		if err != nil {
			return nil, none, err
		}
		cleanup := func() { os.RemoveAll(dir) }
		if err := unpackLayout(src, dir); err != nil {
			cleanup()
			return nil, none, derrors.Invalidf("import source %s: %v", src, err)
		}
		img, err := fromLayout(dir)
		if err != nil {
			cleanup()
			return nil, none, err
		}
		return img, cleanup, nil
	}
	return nil, none, derrors.Invalidf("import source %s: a tar with neither manifest.json (docker save) nor index.json and oci-layout (OCI image layout)", src)
}

// readCloser closes the gzip reader and the file under it.
type readCloser struct {
	io.Reader
	close func() error
}

func (r readCloser) Close() error { return r.close() }

// openMaybeGzip opens a file, decompressing it when it is gzip.
func openMaybeGzip(p string) (io.ReadCloser, error) {
	f, err := os.Open(p)
	if err != nil {
		return nil, err
	}
	br := bufio.NewReader(f)
	magic, _ := br.Peek(2)
	if len(magic) == 2 && magic[0] == 0x1f && magic[1] == 0x8b {
		zr, err := gzip.NewReader(br)
		if err != nil {
			f.Close()
			return nil, err
		}
		return readCloser{Reader: zr, close: func() error { zr.Close(); return f.Close() }}, nil
	}
	return readCloser{Reader: br, close: f.Close}, nil
}

func cleanName(n string) string {
	return strings.TrimPrefix(path.Clean("/"+strings.TrimPrefix(n, "./")), "/")
}

// tarNames lists the regular files of a tar.
func tarNames(p string) (map[string]bool, error) {
	rc, err := openMaybeGzip(p)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	tr := tar.NewReader(rc)
	out := map[string]bool{}
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		if h.Typeflag == tar.TypeReg {
			out[cleanName(h.Name)] = true
		}
	}
}

var layoutFileRE = regexp.MustCompile(`^(oci-layout|index\.json|blobs/sha256/[a-f0-9]{64})$`)

// unpackLayout writes the OCI layout files of the tar at p under dir:
// only oci-layout, index.json and blobs/sha256/<hex>, so no entry can
// write elsewhere.
func unpackLayout(p, dir string) error {
	rc, err := openMaybeGzip(p)
	if err != nil {
		return err
	}
	defer rc.Close()
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		n := cleanName(h.Name)
		if h.Typeflag != tar.TypeReg || !layoutFileRE.MatchString(n) {
			continue
		}
		dst := filepath.Join(dir, filepath.FromSlash(n))
		if err := os.MkdirAll(filepath.Dir(dst), 0o700); err != nil {
			return err
		}
		f, err := os.OpenFile(dst, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
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
	}
}

func fromLayout(dir string) (v1.Image, error) {
	p, err := layout.FromPath(dir)
	if err != nil {
		return nil, derrors.Invalidf("import source %s is not an OCI image layout (oci-layout, index.json): %v", dir, err)
	}
	idx, err := p.ImageIndex()
	if err != nil {
		return nil, derrors.Invalidf("import source %s: %v", dir, err)
	}
	img, err := pickImage(idx, 0)
	if err != nil {
		return nil, derrors.Invalidf("import source %s: %v", dir, err)
	}
	return img, nil
}

// pickImage is the image of idx: the only one, or the one for linux on
// this machine's architecture.
func pickImage(idx v1.ImageIndex, depth int) (v1.Image, error) {
	if depth > 4 {
		return nil, errors.New("image indexes nested too deep")
	}
	im, err := idx.IndexManifest()
	if err != nil {
		return nil, err
	}
	var cands []v1.Descriptor
	for _, d := range im.Manifests {
		if d.MediaType.IsImage() || d.MediaType.IsIndex() {
			cands = append(cands, d)
		}
	}
	pick := func(d v1.Descriptor) (v1.Image, error) {
		if d.MediaType.IsIndex() {
			child, err := idx.ImageIndex(d.Digest)
			if err != nil {
				return nil, err
			}
			return pickImage(child, depth+1)
		}
		return idx.Image(d.Digest)
	}
	if len(cands) == 1 {
		return pick(cands[0])
	}
	var platforms []string
	for _, d := range cands {
		if d.Platform != nil && d.Platform.OS == "linux" && d.Platform.Architecture == runtime.GOARCH {
			return pick(d)
		}
		if d.Platform != nil {
			platforms = append(platforms, d.Platform.String())
		}
	}
	if len(cands) == 0 {
		return nil, errors.New("it holds no image")
	}
	return nil, fmt.Errorf("it holds %d images and none for linux/%s (platforms: %s); import a layout of one image", len(cands), runtime.GOARCH, strings.Join(platforms, ", "))
}
