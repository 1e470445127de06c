package images

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/rand"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/stream"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"svc/internal/imagestore"
	"svc/internal/platform/derrors"
)

// managed serves a managed image store on loopback, behind wrap when
// given, and answers it with the store's address.
func managed(t *testing.T, wrap func(http.Handler) http.Handler) (*imagestore.Store, string) {
	t.Helper()
	s, err := imagestore.Open(t.TempDir(), imagestore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var h http.Handler = s
	if wrap != nil {
		h = wrap(h)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return s, srv.URL
}

func client(t *testing.T, store string, mod ...func(*Config)) *Client {
	t.Helper()
	g, err := NewGuard("127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config{Store: store + "/worlds", Guard: g}
	for _, m := range mod {
		m(&cfg)
	}
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func layer(t testing.TB, n int) v1.Layer {
	t.Helper()
	b := make([]byte, n)
	rand.Read(b)
	return static.NewLayer(b, types.OCILayer)
}

func baseImage(t testing.TB) v1.Image {
	t.Helper()
	img, err := random.Image(2048, 2)
	if err != nil {
		t.Fatal(err)
	}
	return img
}

func blobGone(s *imagestore.Store, d string) bool {
	_, err := os.Stat(filepath.Join(s.Dir(), "blobs", "sha256", strings.TrimPrefix(d, "sha256:")))
	return errors.Is(err, os.ErrNotExist)
}

// TestPublishVersionsResolve: two publishes are v1 and v2, pinned by
// digest, with who published them; v2 built on v1 holds v1's layers and
// its own; the latest is v2; the pins pull the images published.
func TestPublishVersionsResolve(t *testing.T) {
	ctx := context.Background()
	_, store := managed(t, nil)
	c := client(t, store)
	if vs, err := c.Versions(ctx, "w1"); err != nil || len(vs) != 0 {
		t.Fatalf("a new world's versions = %v, %v", vs, err)
	}
	if _, err := c.Latest(ctx, "w1"); !errors.Is(err, derrors.ErrNotFound) {
		t.Fatalf("latest of a new world: %v, want not found", err)
	}
	base := baseImage(t)
	v1v, err := c.Publish(ctx, "w1", base, layer(t, 1000), "alice")
	if err != nil {
		t.Fatal(err)
	}
	img1, err := c.Image(ctx, v1v.Ref)
	if err != nil {
		t.Fatal(err)
	}
	v2v, err := c.Publish(ctx, "w1", img1, layer(t, 1000), "bob")
	if err != nil {
		t.Fatal(err)
	}
	host := strings.TrimPrefix(store, "http://")
	if v1v.Number != 1 || v2v.Number != 2 || v1v.Ref != host+"/worlds/w1:v1@"+v1v.Digest || v2v.Ref != host+"/worlds/w1:v2@"+v2v.Digest {
		t.Fatalf("published %+v and %+v", v1v, v2v)
	}
	vs, err := c.Versions(ctx, "w1")
	if err != nil {
		t.Fatal(err)
	}
	if len(vs) != 2 || vs[0].Digest != v1v.Digest || vs[0].PublishedBy != "alice" || vs[1].Digest != v2v.Digest || vs[1].PublishedBy != "bob" || vs[1].Created.IsZero() {
		t.Fatalf("versions = %+v", vs)
	}
	if l, err := c.Latest(ctx, "w1"); err != nil || l.Digest != v2v.Digest {
		t.Fatalf("latest = %+v, %v", l, err)
	}
	if r, err := c.Resolve(ctx, "w1", 1); err != nil || r.Ref != v1v.Ref {
		t.Fatalf("resolve v1 = %+v, %v", r, err)
	}
	if _, err := c.Resolve(ctx, "w1", 3); !errors.Is(err, derrors.ErrNotFound) {
		t.Fatalf("resolve v3: %v, want not found", err)
	}
	img2, err := c.Image(ctx, v2v.Ref)
	if err != nil {
		t.Fatal(err)
	}
	if d, _ := img2.Digest(); d.String() != v2v.Digest {
		t.Fatalf("pulled v2 is %s", d)
	}
	ls, err := img2.Layers()
	if err != nil || len(ls) != 4 {
		t.Fatalf("v2 has %d layers (%v), want base 2 + v1's + v2's", len(ls), err)
	}
	for _, l := range ls {
		rc, err := l.Compressed()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := io.Copy(io.Discard, rc); err != nil {
			t.Fatal(err)
		}
		rc.Close()
	}
	for _, bad := range []string{"a/b", "UP", "", "-x"} {
		if _, err := c.Versions(ctx, bad); !errors.Is(err, derrors.ErrInvalid) {
			t.Errorf("world id %q: %v, want invalid", bad, err)
		}
	}
}

// TestPruneKeepOne: keep 1 after v1 and v2 prunes v1 with its manifest,
// config and the layer only it used; v2 stays whole.
func TestPruneKeepOne(t *testing.T) {
	ctx := context.Background()
	s, store := managed(t, nil)
	c := client(t, store)
	base := baseImage(t)
	l1 := layer(t, 5000)
	v1v, err := c.Publish(ctx, "w", base, l1, "alice")
	if err != nil {
		t.Fatal(err)
	}
	img1, _ := c.Image(ctx, v1v.Ref)
	m1, _ := img1.Manifest()
	v2v, err := c.Publish(ctx, "w", base, layer(t, 5000), "alice") // a fork of the base
	if err != nil {
		t.Fatal(err)
	}
	if got, err := c.Prune(ctx, "w", 0, "alice"); err != nil || got != nil {
		t.Fatalf("keep 0 pruned %v, %v; want nothing", got, err)
	}
	pruned, err := c.Prune(ctx, "w", 1, "alice")
	if err != nil || len(pruned) != 1 || pruned[0].Tag != "v1" {
		t.Fatalf("pruned %+v, %v; want v1", pruned, err)
	}
	vs, err := c.Versions(ctx, "w")
	if err != nil || len(vs) != 1 || vs[0].Digest != v2v.Digest {
		t.Fatalf("versions after prune = %+v, %v", vs, err)
	}
	l1d, _ := l1.Digest()
	for _, d := range []string{v1v.Digest, m1.Config.Digest.String(), l1d.String()} {
		if !blobGone(s, d) {
			t.Errorf("blob %s of v1 is still in the store", d)
		}
	}
	for _, l := range m1.Layers[:2] {
		if blobGone(s, l.Digest.String()) {
			t.Errorf("base layer %s went with v1", l.Digest)
		}
	}
	if _, err := c.Image(ctx, v1v.Ref); !errors.Is(err, derrors.ErrNotFound) {
		t.Errorf("pruned v1 still pulls: %v", err)
	}
	img2, err := c.Image(ctx, v2v.Ref)
	if err != nil {
		t.Fatal(err)
	}
	ls, _ := img2.Layers()
	for _, l := range ls {
		rc, err := l.Compressed()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := io.Copy(io.Discard, rc); err != nil {
			t.Fatalf("v2's layer after the prune: %v", err)
		}
		rc.Close()
	}
}

// TestPruneSkipsAnotherMembersVersion: pruning for alice with keep 1 over
// v1 (bob's), v2 and v3 (alice's) deletes v2 only.
func TestPruneSkipsAnotherMembersVersion(t *testing.T) {
	ctx := context.Background()
	_, store := managed(t, nil)
	c := client(t, store)
	base := baseImage(t)
	for _, who := range []string{"bob", "alice", "alice"} {
		if _, err := c.Publish(ctx, "w", base, layer(t, 100), who); err != nil {
			t.Fatal(err)
		}
	}
	pruned, err := c.Prune(ctx, "w", 1, "alice")
	if err != nil || len(pruned) != 1 || pruned[0].Tag != "v2" {
		t.Fatalf("pruned %+v, %v; want v2", pruned, err)
	}
	vs, _ := c.Versions(ctx, "w")
	if len(vs) != 2 || vs[0].Tag != "v1" || vs[0].PublishedBy != "bob" || vs[1].Tag != "v3" {
		t.Fatalf("versions = %+v, want bob's v1 and v3", vs)
	}
	// The next version follows the newest, not the count.
	v, err := c.Publish(ctx, "w", base, layer(t, 100), "alice")
	if err != nil || v.Tag != "v4" {
		t.Fatalf("next publish = %+v, %v; want v4", v, err)
	}
}

// TestConcurrentPublishesLoseNoVersion: publishers in separate clients
// (as separate processes would be) race for the next version; each gets
// a version or a conflict, never a version someone else overwrote, and
// retrying after a conflict lands every one.
func TestConcurrentPublishesLoseNoVersion(t *testing.T) {
	ctx := context.Background()
	_, store := managed(t, nil)
	base := baseImage(t)
	const n = 6
	type result struct {
		v         Version
		conflicts int
		err       error
	}
	results := make([]result, n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := client(t, store)
			l := layer(t, 2000)
			<-start
			for attempt := 0; attempt < 50; attempt++ {
				v, err := c.Publish(ctx, "w", base, l, "m"+string(rune('a'+i)))
				if errors.Is(err, derrors.ErrConflict) {
					results[i].conflicts++
					continue
				}
				results[i].v, results[i].err = v, err
				return
			}
			results[i].err = errors.New("50 conflicts in a row")
		}()
	}
	close(start)
	wg.Wait()
	c := client(t, store)
	vs, err := c.Versions(ctx, "w")
	if err != nil {
		t.Fatal(err)
	}
	got := map[int]Version{}
	for _, v := range vs {
		got[v.Number] = v
	}
	conflicts := 0
	var numbers []int
	for i, r := range results {
		if r.err != nil {
			t.Fatalf("publisher %d: %v", i, r.err)
		}
		conflicts += r.conflicts
		numbers = append(numbers, r.v.Number)
		if g, ok := got[r.v.Number]; !ok || g.Digest != r.v.Digest || g.PublishedBy != r.v.PublishedBy {
			t.Errorf("publisher %d's %s (%s) was lost: the store has %+v", i, r.v.Tag, r.v.Digest, g)
		}
	}
	sort.Ints(numbers)
	for i, num := range numbers {
		if num != i+1 {
			t.Fatalf("versions published = %v, want 1..%d", numbers, n)
		}
	}
	if len(vs) != n {
		t.Fatalf("the store has %d versions, want %d", len(vs), n)
	}
	t.Logf("%d publishers, %d conflicts answered and retried", n, conflicts)
}

// TestCaptureLimitRefusedByName: a change set past the capture limit is
// refused naming SVC_WORLD_MAX_CAPTURE_BYTES, whether its size is known
// before the push or only after (a streamed layer); no version appears.
func TestCaptureLimitRefusedByName(t *testing.T) {
	ctx := context.Background()
	_, store := managed(t, nil)
	c := client(t, store, func(c *Config) { c.MaxCaptureBytes = 1000 })
	base := baseImage(t)
	_, err := c.Publish(ctx, "w", base, layer(t, 2000), "alice")
	if !errors.Is(err, derrors.ErrInvalid) || !strings.Contains(err.Error(), "SVC_WORLD_MAX_CAPTURE_BYTES") {
		t.Fatalf("sized layer past the limit: %v", err)
	}
	b := make([]byte, 4000)
	rand.Read(b)
	_, err = c.Publish(ctx, "w", base, stream.NewLayer(io.NopCloser(bytes.NewReader(b))), "alice")
	if !errors.Is(err, derrors.ErrInvalid) || !strings.Contains(err.Error(), "SVC_WORLD_MAX_CAPTURE_BYTES") {
		t.Fatalf("streamed layer past the limit: %v", err)
	}
	if d := derrors.Details(err); d["maxCaptureBytes"] != int64(1000) {
		t.Errorf("details = %v", d)
	}
	if vs, err := c.Versions(ctx, "w"); err != nil || len(vs) != 0 {
		t.Fatalf("versions after refusals = %+v, %v", vs, err)
	}
	if _, err := c.Publish(ctx, "w", base, layer(t, 500), "alice"); err != nil {
		t.Fatalf("a layer within the limit: %v", err)
	}
}

// TestGuardRefusesPrivateAddress: a store on a loopback address the
// guard's allow list does not name is refused at dial, naming the setting.
func TestGuardRefusesPrivateAddress(t *testing.T) {
	_, store := managed(t, nil)
	g, err := NewGuard("")
	if err != nil {
		t.Fatal(err)
	}
	c, err := New(Config{Store: store, Guard: g})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Versions(context.Background(), "w")
	if !errors.Is(err, derrors.ErrInvalid) || !strings.Contains(err.Error(), "SVC_WEBHOOK_ALLOW") || !strings.Contains(err.Error(), "loopback") {
		t.Fatalf("versions through a guard without the store: %v", err)
	}
	g2, _ := NewGuard("10.0.0.0/8")
	c2, _ := New(Config{Store: store, Guard: g2})
	if _, err := c2.Publish(context.Background(), "w", baseImage(t), layer(t, 10), "a"); !errors.Is(err, derrors.ErrInvalid) {
		t.Fatalf("publish through a guard allowing another range: %v", err)
	}
}

// TestCredentialSent: a store behind basic authentication is reached with
// the "user:password" credential and refused without it.
func TestCredentialSent(t *testing.T) {
	_, store := managed(t, func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if u, p, ok := r.BasicAuth(); !ok || u != "svc" || p != "pw" {
				w.Header().Set("WWW-Authenticate", `Basic realm="store"`)
				w.WriteHeader(http.StatusUnauthorized)
				return
			}
			h.ServeHTTP(w, r)
		})
	})
	ctx := context.Background()
	c := client(t, store, func(c *Config) { c.Credential = "svc:pw" })
	if _, err := c.Publish(ctx, "w", baseImage(t), layer(t, 10), "a"); err != nil {
		t.Fatal(err)
	}
	anon := client(t, store)
	if _, err := anon.Versions(ctx, "w"); !errors.Is(err, derrors.ErrUnavailable) || !strings.Contains(err.Error(), "credential") {
		t.Fatalf("anonymous: %v", err)
	}
	if s := c.String() + c.GoString(); strings.Contains(s, "pw") {
		t.Fatalf("client prints its credential: %s", s)
	}
}

// TestNewRefusesBadStore: SVC_IMAGE_STORE values that cannot be a store.
func TestNewRefusesBadStore(t *testing.T) {
	g, _ := NewGuard("")
	for _, s := range []string{"", "ftp://x", "u:p@host", "host/UPPER", "http://"} {
		if _, err := New(Config{Store: s, Guard: g}); !errors.Is(err, derrors.ErrInvalid) {
			t.Errorf("store %q: %v, want invalid", s, err)
		}
	}
	if _, err := New(Config{Store: "registry.example.com/svc"}); err == nil {
		t.Error("a client without a guard was built")
	}
}

// TestImport: an OCI layout directory, an OCI layout tar, a docker-save
// tar and a gzip-compressed one are imported as repo:tag with their digest.
func TestImport(t *testing.T) {
	ctx := context.Background()
	_, store := managed(t, nil)
	c := client(t, store)
	img := baseImage(t)
	want, _ := img.Digest()
	dir := t.TempDir()

	layoutDir := filepath.Join(dir, "layout")
	p, err := layout.Write(layoutDir, empty.Index)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.AppendImage(img); err != nil {
		t.Fatal(err)
	}
	ociTar := filepath.Join(dir, "oci.tar")
	tarDir(t, layoutDir, ociTar)

	dockerTar := filepath.Join(dir, "docker.tar")
	tag, _ := name.NewTag("example/base:1")
	if err := tarball.WriteToFile(dockerTar, tag, img); err != nil {
		t.Fatal(err)
	}
	dockerGz := filepath.Join(dir, "docker.tar.gz")
	gz(t, dockerTar, dockerGz)

	for _, src := range []string{layoutDir, ociTar, dockerTar, dockerGz} {
		target := "imported/" + strings.ReplaceAll(filepath.Base(src), ".", "-") + ":1"
		got, err := c.Import(ctx, src, target)
		if err != nil {
			t.Fatalf("import %s: %v", src, err)
		}
		if got.Digest != want.String() || !strings.HasSuffix(got.Ref, target+"@"+want.String()) {
			t.Fatalf("import %s = %+v, want digest %s", src, got, want)
		}
		pulled, err := c.Image(ctx, got.Ref)
		if err != nil {
			t.Fatal(err)
		}
		if d, _ := pulled.Digest(); d != want {
			t.Fatalf("pulled %s, want %s", d, want)
		}
	}
	notImage := filepath.Join(dir, "x.tar")
	os.WriteFile(notImage, []byte("not a tar"), 0o600)
	for _, tc := range [][2]string{{notImage, "a:1"}, {layoutDir, "a"}, {layoutDir, "A:1"}, {filepath.Join(dir, "missing"), "a:1"}} {
		if _, err := c.Import(ctx, tc[0], tc[1]); !errors.Is(err, derrors.ErrInvalid) {
			t.Errorf("import %s as %s: %v, want invalid", tc[0], tc[1], err)
		}
	}
}

func tarDir(t *testing.T, dir, out string) {
	t.Helper()
	f, err := os.Create(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tw := tar.NewWriter(f)
	defer tw.Close()
	filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err != nil || fi.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		b, _ := os.ReadFile(p)
		tw.WriteHeader(&tar.Header{Name: "./" + filepath.ToSlash(rel), Mode: 0o644, Size: int64(len(b)), Typeflag: tar.TypeReg})
		tw.Write(b)
		return nil
	})
}

func gz(t *testing.T, in, out string) {
	t.Helper()
	b, _ := os.ReadFile(in)
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	zw.Write(b)
	zw.Close()
	if err := os.WriteFile(out, buf.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
}
