// Package testimage builds OCI images on this machine for tests, without a
// registry, a daemon or the internet: Busybox is a root file system made of
// Debian's busybox-static (one static binary and a symbolic link per
// applet) as a one-layer OCI image, built with go-containerregistry.
package testimage

import (
	"archive/tar"
	"bytes"
	"io"
	"os"
	"os/exec"
	"runtime"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// BusyboxPath is where Debian's busybox-static installs its binary.
const BusyboxPath = "/bin/busybox"

// Install is what to run when busybox is missing.
const Install = "apt-get install busybox-static"

// MTime is the modification time of every entry of the image's layer, so
// that the image's digest depends only on the busybox binary.
var MTime = time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)

// BaseFiles are regular files of the image besides busybox, with their
// contents (mode 0644, root's): a test may read, change or remove them.
var BaseFiles = map[string]string{
	"etc/passwd":   "root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n",
	"etc/group":    "root:x:0:\nnogroup:x:65534:\n",
	"etc/hostname": "sandbox\n",
	"etc/motd":     "built by svc's testimage from busybox-static\n",
}

var (
	once  sync.Once
	image v1.Image
	err   error
)

// Busybox returns the busybox image (built once per test process). Without
// busybox it skips t, or fails it when CI=true: CI installs busybox-static.
func Busybox(t testing.TB) v1.Image {
	t.Helper()
	if _, serr := os.Stat(BusyboxPath); serr != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("testimage: %s is missing (%s)", BusyboxPath, Install)
		}
		t.Skipf("testimage: %s is missing (%s)", BusyboxPath, Install)
	}
	once.Do(func() { image, err = build() })
	if err != nil {
		t.Fatalf("testimage: building the busybox image: %v", err)
	}
	return image
}

// build makes the image: one OCI layer, an OCI config with PATH set.
func build() (v1.Image, error) {
	bin, err := os.ReadFile(BusyboxPath)
	if err != nil {
		return nil, err
	}
	out, err := exec.Command(BusyboxPath, "--list").Output()
	if err != nil {
		return nil, err
	}
	applets := strings.Fields(string(out))
	sort.Strings(applets)

	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	dir := func(name string, mode int64) error {
		return tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: name + "/", Mode: mode, ModTime: MTime, Format: tar.FormatPAX})
	}
	for _, d := range []struct {
		name string
		mode int64
	}{{"bin", 0o755}, {"dev", 0o755}, {"etc", 0o755}, {"proc", 0o555}, {"root", 0o700}, {"sys", 0o555}, {"tmp", 0o1777}, {"usr", 0o755}, {"usr/bin", 0o755}, {"var", 0o755}} {
		if err := dir(d.name, d.mode); err != nil {
			return nil, err
		}
	}
	if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: "bin/busybox", Mode: 0o755, Size: int64(len(bin)), ModTime: MTime, Format: tar.FormatPAX}); err != nil {
		return nil, err
	}
	if _, err := tw.Write(bin); err != nil {
		return nil, err
	}
	for _, a := range applets {
		if a == "busybox" {
			continue
		}
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeSymlink, Name: "bin/" + a, Linkname: "busybox", Mode: 0o777, ModTime: MTime, Format: tar.FormatPAX}); err != nil {
			return nil, err
		}
	}
	names := make([]string, 0, len(BaseFiles))
	for n := range BaseFiles {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		body := BaseFiles[n]
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: n, Mode: 0o644, Size: int64(len(body)), ModTime: MTime, Format: tar.FormatPAX}); err != nil {
			return nil, err
		}
		if _, err := io.WriteString(tw, body); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	data := buf.Bytes()
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(data)), nil
	}, tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return nil, err
	}
	base := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	base = mutate.ConfigMediaType(base, types.OCIConfigJSON)
	img, err := mutate.AppendLayers(base, layer)
	if err != nil {
		return nil, err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.Architecture, cf.OS = runtime.GOARCH, "linux"
	cf.Created = v1.Time{Time: MTime}
	cf.Config.Env = []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}
	cf.Config.Cmd = []string{"/bin/sh"}
	cf.Config.WorkingDir = "/root"
	return mutate.ConfigFile(img, cf)
}
