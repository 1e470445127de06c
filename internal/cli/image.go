package cli

import (
	"archive/tar"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

const imageSynopsis = `usage: svc image import DIR|TAR --as REPO:TAG [--json]

import uploads an image into the workspace's image store (POST /images?as=REPO:TAG) and prints
its pinned reference (REPO:TAG@sha256:...), what svc sandbox create --image takes. TAR is a
docker save tar or a tar of an OCI image layout, gzip-compressed or not; DIR is an OCI image
layout directory (oci-layout, index.json, blobs/), tarred on the fly as it is sent. Where the
image holds several platforms, the service takes linux on its own architecture. A progress
line on stderr counts the bytes sent.

Exit codes: 0 imported; 2 usage or service error.`

// RunImage is `svc image`.
func RunImage(ctx context.Context, x *cli, args []string) (int, error) {
	return subcommand(ctx, x, imageSynopsis, []sub{{"import", runImageImport}}, args)
}

// runImageImport is `svc image import`.
func runImageImport(ctx context.Context, x *cli, args []string) (int, error) {
	fset := newFlagSet(x, "image import", imageSynopsis)
	var cf clientFlags
	cf.register(fset, x.getenv)
	as := fset.String("as", "", "the name to import as, REPO:TAG (required)")
	asJSON := fset.Bool("json", false, "print the service's answer as JSON")
	src, err := parseOne(fset, args, "image directory or tar file")
	if err != nil {
		return 0, err
	}
	target := strings.TrimSpace(*as)
	if repo, tag, ok := strings.Cut(target, ":"); !ok || repo == "" || tag == "" {
		return 0, fmt.Errorf("%w: --as %q: name the image as REPO:TAG (for example --as busybox:1)", errUsage, *as)
	}
	fi, err := os.Stat(src)
	if err != nil {
		return 0, fmt.Errorf("%w: %v", errUsage, err)
	}
	c, err := cf.client(x.getenv)
	if err != nil {
		return 0, err
	}
	var body io.Reader
	size := int64(-1)
	var tarDone chan error
	var pr *io.PipeReader
	if fi.IsDir() {
		for _, name := range []string{"oci-layout", "index.json"} {
			if _, err := os.Stat(filepath.Join(src, name)); err != nil {
				return 0, fmt.Errorf("%w: %s is not an OCI image layout (it has no %s): give a layout directory, or a tar from docker save", errUsage, src, name)
			}
		}
		var pw *io.PipeWriter
		pr, pw = io.Pipe()
		tarDone = make(chan error, 1)
		go func() {
			err := tarDir(pw, src)
			pw.CloseWithError(err)
			tarDone <- err
		}()
		body = pr
	} else {
		f, err := os.Open(src)
		if err != nil {
			return 0, fmt.Errorf("%w: %v", errUsage, err)
		}
		defer f.Close()
		body, size = f, fi.Size()
	}
	p := &uploadProgress{x: x, total: size, r: body, every: 100 * time.Millisecond}
	im, raw, err := c.ImportImage(ctx, target, p, size)
	if tarDone != nil {
		pr.Close() // unblocks a tar the service stopped reading
		if terr := <-tarDone; terr != nil && !errors.Is(terr, io.ErrClosedPipe) && err != nil {
			return 0, fmt.Errorf("reading %s: %w", src, terr)
		}
	}
	p.end()
	if err != nil {
		return 0, err
	}
	if *asJSON {
		writeJSON(x.stdout, raw)
		return exitOK, nil
	}
	fmt.Fprintln(x.stdout, im.Ref)
	return exitOK, nil
}

// tarDir writes the tree under dir as a tar stream to w: directories,
// regular files and symbolic links, named relative to dir.
func tarDir(w io.Writer, dir string) error {
	tw := tar.NewWriter(w)
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, path)
		if err != nil || rel == "." {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		var link string
		switch {
		case fi.Mode()&fs.ModeSymlink != 0:
			if link, err = os.Readlink(path); err != nil {
				return err
			}
		case fi.IsDir(), fi.Mode().IsRegular():
		default:
			return fmt.Errorf("%s is neither a file, a directory nor a symbolic link", path)
		}
		hdr, err := tar.FileInfoHeader(fi, link)
		if err != nil {
			return err
		}
		hdr.Name = filepath.ToSlash(rel)
		if fi.IsDir() {
			hdr.Name += "/"
		}
		hdr.Uid, hdr.Gid, hdr.Uname, hdr.Gname = 0, 0, "", ""
		if err := tw.WriteHeader(hdr); err != nil {
			return err
		}
		if !fi.Mode().IsRegular() {
			return nil
		}
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		defer f.Close()
		_, err = io.Copy(tw, f)
		return err
	})
	if err != nil {
		return err
	}
	return tw.Close()
}

// uploadProgress counts the bytes of an upload as the transport reads
// them and shows them on stderr: on a terminal one line rewritten at most
// every `every`; in a log a line per tenth of a known size (per 64 MiB of
// an unknown one); and a last line when the body has been sent.
type uploadProgress struct {
	x     *cli
	r     io.Reader
	total int64 // -1: unknown
	every time.Duration

	mu     sync.Mutex
	sent   int64
	drawn  time.Time
	onLine bool  // a rewritable line is on screen
	logged int64 // the last step a log line was written for
	done   bool
}

// logStep is the bytes between two log lines of an upload of unknown size.
const logStep = 64 << 20

func (p *uploadProgress) Read(b []byte) (int, error) {
	n, err := p.r.Read(b)
	p.mu.Lock()
	defer p.mu.Unlock()
	p.sent += int64(n)
	if err == io.EOF {
		p.finish()
	} else if n > 0 {
		p.show()
	}
	return n, err
}

func (p *uploadProgress) line() string {
	if p.total > 0 {
		return fmt.Sprintf("svc image import: %s of %s sent (%d%%)", byteSize(p.sent), byteSize(p.total), p.sent*100/p.total)
	}
	return fmt.Sprintf("svc image import: %s sent", byteSize(p.sent))
}

func (p *uploadProgress) show() {
	if p.done {
		return
	}
	if p.x.tty {
		if now := time.Now(); now.Sub(p.drawn) >= p.every {
			p.drawn = now
			fmt.Fprintf(p.x.stderr, "\r%s\x1b[K", p.line())
			p.onLine = true
		}
		return
	}
	step := p.sent / logStep
	if p.total > 0 {
		step = p.sent * 10 / p.total
	}
	if step > p.logged {
		p.logged = step
		fmt.Fprintln(p.x.stderr, p.line())
	}
}

// finish writes the last line once the whole body has been read.
func (p *uploadProgress) finish() {
	if p.done {
		return
	}
	p.done = true
	line := fmt.Sprintf("svc image import: %s sent; the service is pushing it into the image store", byteSize(p.sent))
	if p.onLine {
		line = "\r" + line + "\x1b[K"
	}
	fmt.Fprintln(p.x.stderr, line)
}

// end closes a progress line the upload left open (an upload cut short).
func (p *uploadProgress) end() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.onLine && !p.done {
		io.WriteString(p.x.stderr, "\n")
		p.done = true
	}
}
