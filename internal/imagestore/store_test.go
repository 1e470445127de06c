package imagestore

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"svc/internal/testing/testwait"
)

// serve opens a store under dir and serves it on a loopback port.
func serve(t testing.TB, dir string, o Options) (*Store, string) {
	t.Helper()
	s, err := Open(dir, o)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	return s, strings.TrimPrefix(srv.URL, "http://")
}

func ref(t testing.TB, host, r string) name.Reference {
	t.Helper()
	n, err := name.ParseReference(host + "/" + r)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func digestOf(t testing.TB, img v1.Image) v1.Hash {
	t.Helper()
	d, err := img.Digest()
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// checkPull pulls r and checks the manifest digest and every layer's bytes
// against their digests.
func checkPull(t *testing.T, r name.Reference, want v1.Hash) {
	t.Helper()
	img, err := remote.Image(r)
	if err != nil {
		t.Fatalf("pull %s: %v", r, err)
	}
	if got := digestOf(t, img); got != want {
		t.Fatalf("pull %s: digest %s, want %s", r, got, want)
	}
	layers, err := img.Layers()
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range layers {
		rc, err := l.Compressed()
		if err != nil {
			t.Fatal(err)
		}
		h := sha256.New()
		if _, err := io.Copy(h, rc); err != nil {
			t.Fatal(err)
		}
		rc.Close()
		d, _ := l.Digest()
		if got := "sha256:" + hex.EncodeToString(h.Sum(nil)); got != d.String() {
			t.Fatalf("layer %s read back as %s", d, got)
		}
	}
}

func blobExists(s *Store, h v1.Hash) bool {
	_, err := os.Stat(s.blobPath(h.String()))
	return err == nil
}

// TestPushPullRemote: go-containerregistry's remote pushes an image by tag
// and pulls it back whole; tags and the catalog list it.
func TestPushPullRemote(t *testing.T) {
	_, host := serve(t, t.TempDir(), Options{})
	img, err := random.Image(4096, 3)
	if err != nil {
		t.Fatal(err)
	}
	r := ref(t, host, "worlds/alpha:v1")
	if err := remote.Write(r, img); err != nil {
		t.Fatal(err)
	}
	checkPull(t, r, digestOf(t, img))
	checkPull(t, ref(t, host, "worlds/alpha@"+digestOf(t, img).String()), digestOf(t, img))

	tags, err := remote.List(r.Context())
	if err != nil || len(tags) != 1 || tags[0] != "v1" {
		t.Fatalf("tags = %v, %v; want [v1]", tags, err)
	}
	reg, _ := name.NewRegistry(host)
	repos, err := remote.Catalog(context.Background(), reg)
	if err != nil || len(repos) != 1 || repos[0] != "worlds/alpha" {
		t.Fatalf("catalog = %v, %v", repos, err)
	}
	// Pushing again uploads nothing new and keeps the digest.
	if err := remote.Write(ref(t, host, "worlds/alpha:v2"), img); err != nil {
		t.Fatal(err)
	}
	checkPull(t, ref(t, host, "worlds/alpha:v2"), digestOf(t, img))
}

// crane builds go-containerregistry's CLI once per test binary.
var (
	craneOnce sync.Once
	cranePath string
	craneErr  error
)

func crane(t *testing.T) string {
	t.Helper()
	craneOnce.Do(func() {
		if p := os.Getenv("SVC_CRANE"); p != "" {
			cranePath = p
			return
		}
		dir, err := os.MkdirTemp("", "crane-")
		if err != nil {
			craneErr = err
			return
		}
		cranePath = filepath.Join(dir, "crane")
		out, err := exec.Command("go", "build", "-o", cranePath, "github.com/google/go-containerregistry/cmd/crane").CombinedOutput()
		if err != nil {
			craneErr = fmt.Errorf("building crane: %v\n%s", err, out)
		}
	})
	if craneErr != nil {
		t.Fatal(craneErr)
	}
	return cranePath
}

func runCrane(t *testing.T, args ...string) string {
	t.Helper()
	cmd := exec.Command(crane(t), args...)
	cmd.Env = append(os.Environ(), "HOME="+t.TempDir(), "DOCKER_CONFIG="+t.TempDir())
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("crane %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return strings.TrimSpace(string(out))
}

// TestCrane: the crane binary pushes an image tarball, pulls it as an OCI
// layout, reads its manifest and digest, lists tags, copies and deletes.
func TestCrane(t *testing.T) {
	s, host := serve(t, t.TempDir(), Options{})
	img, err := random.Image(100_000, 2)
	if err != nil {
		t.Fatal(err)
	}
	tarPath := filepath.Join(t.TempDir(), "img.tar")
	if err := tarball.WriteToFile(tarPath, ref(t, host, "imported/base:1"), img); err != nil {
		t.Fatal(err)
	}
	want := digestOf(t, img).String()

	runCrane(t, "push", "--insecure", tarPath, host+"/imported/base:1")
	if got := runCrane(t, "digest", "--insecure", host+"/imported/base:1"); got != want {
		t.Fatalf("crane digest = %s, want %s", got, want)
	}
	manifest := runCrane(t, "manifest", "--insecure", host+"/imported/base:1")
	if sum := sha256.Sum256([]byte(manifest)); "sha256:"+hex.EncodeToString(sum[:]) != want {
		t.Fatalf("crane manifest does not hash to %s:\n%s", want, manifest)
	}
	layout := filepath.Join(t.TempDir(), "layout")
	runCrane(t, "pull", "--insecure", "--format=oci", host+"/imported/base:1", layout)
	ls, err := filepath.Glob(filepath.Join(layout, "blobs", "sha256", "*"))
	if err != nil || len(ls) != 4 { // manifest, config, two layers
		t.Fatalf("pulled layout blobs = %v, %v", ls, err)
	}
	for _, p := range ls {
		b, _ := os.ReadFile(p)
		if sum := sha256.Sum256(b); hex.EncodeToString(sum[:]) != filepath.Base(p) {
			t.Fatalf("pulled blob %s does not match its digest", p)
		}
	}
	runCrane(t, "copy", "--insecure", host+"/imported/base:1", host+"/imported/copy:latest")
	if got := runCrane(t, "ls", "--insecure", host+"/imported/copy"); got != "latest" {
		t.Fatalf("crane ls = %q", got)
	}
	runCrane(t, "delete", "--insecure", host+"/imported/copy@"+want)
	if got := runCrane(t, "ls", "--insecure", host+"/imported/copy"); got != "" {
		t.Fatalf("after delete, crane ls = %q, want no tags", got)
	}
	// The blobs are still the other repository's.
	for _, l := range mustLayers(t, img) {
		if !blobExists(s, l) {
			t.Fatalf("blob %s of imported/base went with imported/copy's manifest", l)
		}
	}
}

func mustLayers(t testing.TB, img v1.Image) []v1.Hash {
	t.Helper()
	m, err := img.Manifest()
	if err != nil {
		t.Fatal(err)
	}
	out := []v1.Hash{m.Config.Digest}
	for _, l := range m.Layers {
		out = append(out, l.Digest)
	}
	return out
}

// TestRestartKeepsTags: a new store over the same directory serves the
// tags and blobs the old one was given.
func TestRestartKeepsTags(t *testing.T) {
	dir := t.TempDir()
	_, host := serve(t, dir, Options{})
	img, _ := random.Image(2048, 2)
	if err := remote.Write(ref(t, host, "w:v1"), img); err != nil {
		t.Fatal(err)
	}
	_, host2 := serve(t, dir, Options{})
	checkPull(t, ref(t, host2, "w:v1"), digestOf(t, img))
}

// TestInterruptedPushKeepsTagAndGCRemovesOrphans: a push whose blobs
// arrived but whose manifest never did, and an upload cut off mid-blob,
// leave the tag on the previous image; GC (and a restart) remove what
// they left.
func TestInterruptedPushKeepsTagAndGCRemovesOrphans(t *testing.T) {
	dir := t.TempDir()
	s, host := serve(t, dir, Options{Grace: -1})
	old, _ := random.Image(2048, 2)
	r := ref(t, host, "w:latest")
	if err := remote.Write(r, old); err != nil {
		t.Fatal(err)
	}
	// The next image's blobs, and no manifest.
	next, _ := random.Image(4096, 2)
	for _, l := range mustNextLayers(t, next) {
		if err := remote.WriteLayer(r.Context(), l); err != nil {
			t.Fatal(err)
		}
	}
	// An upload cut off mid-blob: the connection dies after half of it.
	cutUpload(t, host, "w")

	checkPull(t, r, digestOf(t, old))
	orphans := mustLayers(t, next)[1:]
	for _, d := range orphans {
		if !blobExists(s, d) {
			t.Fatalf("orphan %s was not uploaded", d)
		}
	}
	st, err := s.GC()
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range orphans {
		if blobExists(s, d) {
			t.Errorf("GC left orphan blob %s (stats %+v)", d, st)
		}
	}
	for _, d := range mustLayers(t, old) {
		if !blobExists(s, d) {
			t.Errorf("GC removed %s of the tagged image", d)
		}
	}
	if ups, _ := os.ReadDir(filepath.Join(dir, "uploads")); len(ups) != 0 {
		t.Errorf("uploads left: %v", ups)
	}
	checkPull(t, r, digestOf(t, old))

	// A restart collects too: blobs pushed and never referenced before it.
	for _, l := range mustNextLayers(t, next) {
		if err := remote.WriteLayer(r.Context(), l); err != nil {
			t.Fatal(err)
		}
	}
	s2, host2 := serve(t, dir, Options{})
	for _, d := range orphans {
		if blobExists(s2, d) {
			t.Errorf("restart left orphan blob %s", d)
		}
	}
	checkPull(t, ref(t, host2, "w:latest"), digestOf(t, old))
}

func mustNextLayers(t testing.TB, img v1.Image) []v1.Layer {
	t.Helper()
	ls, err := img.Layers()
	if err != nil {
		t.Fatal(err)
	}
	return ls
}

// cutUpload starts an upload of repo and sends half of a chunk before the
// connection is closed.
func cutUpload(t *testing.T, host, repo string) {
	t.Helper()
	resp, err := http.Post("http://"+host+"/v2/"+repo+"/blobs/uploads/", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	loc := resp.Header.Get("Location")
	if resp.StatusCode != http.StatusAccepted || loc == "" {
		t.Fatalf("start upload: %s", resp.Status)
	}
	c, err := net.Dial("tcp", host)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(c, "PATCH %s HTTP/1.1\r\nHost: %s\r\nContent-Length: 100000\r\nContent-Type: application/octet-stream\r\n\r\n", loc, host)
	c.Write(bytes.Repeat([]byte("x"), 50_000))
	c.Close()
}

// TestDeleteManifestByDigest: DELETE of a manifest by digest removes the
// tags naming it and the blobs only it referenced; a DELETE of a tag
// leaves the manifest.
func TestDeleteManifestByDigest(t *testing.T) {
	s, host := serve(t, t.TempDir(), Options{})
	a, _ := random.Image(2048, 2)
	b, _ := random.Image(2048, 2)
	for _, x := range []struct {
		tag string
		img v1.Image
	}{{"v1", a}, {"v2", b}} {
		if err := remote.Write(ref(t, host, "w:"+x.tag), x.img); err != nil {
			t.Fatal(err)
		}
	}
	if err := remote.Delete(ref(t, host, "w@"+digestOf(t, a).String())); err != nil {
		t.Fatal(err)
	}
	tags, err := remote.List(ref(t, host, "w:v2").Context())
	if err != nil || len(tags) != 1 || tags[0] != "v2" {
		t.Fatalf("tags after delete = %v, %v", tags, err)
	}
	for _, d := range append(mustLayers(t, a), digestOf(t, a)) {
		if blobExists(s, d) {
			t.Errorf("blob %s of the deleted manifest is still there", d)
		}
	}
	checkPull(t, ref(t, host, "w:v2"), digestOf(t, b))
	if _, err := remote.Head(ref(t, host, "w@"+digestOf(t, a).String())); err == nil {
		t.Error("deleted manifest still answers")
	}
}

// TestTagIfNoneMatch: a tag written with If-None-Match: * is refused with
// 412 when the tag names another manifest, and accepted when it names the
// same one; a plain PUT moves it.
func TestTagIfNoneMatch(t *testing.T) {
	_, host := serve(t, t.TempDir(), Options{})
	a, _ := random.Image(1024, 1)
	b, _ := random.Image(1024, 1)
	if err := remote.Write(ref(t, host, "w:v1"), a); err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(ref(t, host, "w@"+digestOf(t, b).String()), b); err != nil {
		t.Fatal(err)
	}
	put := func(img v1.Image, ifNoneMatch bool) int {
		raw, _ := img.RawManifest()
		mt, _ := img.MediaType()
		req, _ := http.NewRequest(http.MethodPut, "http://"+host+"/v2/w/manifests/v1", bytes.NewReader(raw))
		req.Header.Set("Content-Type", string(mt))
		if ifNoneMatch {
			req.Header.Set("If-None-Match", "*")
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if got := put(b, true); got != http.StatusPreconditionFailed {
		t.Fatalf("If-None-Match over another manifest: %d, want 412", got)
	}
	if got := put(a, true); got != http.StatusCreated {
		t.Fatalf("If-None-Match over the same manifest: %d, want 201", got)
	}
	checkPull(t, ref(t, host, "w:v1"), digestOf(t, a))
	if got := put(b, false); got != http.StatusCreated {
		t.Fatalf("plain PUT: %d, want 201", got)
	}
	checkPull(t, ref(t, host, "w:v1"), digestOf(t, b))
}

// TestRefusals: bad names, references and digests are 4xx with the
// distribution API's error codes; a manifest naming a missing blob is
// MANIFEST_BLOB_UNKNOWN; a digest mismatch is refused.
func TestRefusals(t *testing.T) {
	_, host := serve(t, t.TempDir(), Options{})
	do := func(method, path string, body []byte, hdr ...string) (int, string) {
		req, _ := http.NewRequest(method, "http://"+host+path, bytes.NewReader(body))
		for i := 0; i+1 < len(hdr); i += 2 {
			req.Header.Set(hdr[i], hdr[i+1])
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var e struct {
			Errors []struct{ Code string }
		}
		json.NewDecoder(resp.Body).Decode(&e)
		code := ""
		if len(e.Errors) > 0 {
			code = e.Errors[0].Code
		}
		return resp.StatusCode, code
	}
	zero := "sha256:" + strings.Repeat("0", 64)
	for _, tc := range []struct {
		method, path string
		body         []byte
		hdr          []string
		status       int
		code         string
	}{
		{"GET", "/v2/UPPER/tags/list", nil, nil, 400, "NAME_INVALID"},
		{"GET", "/v2/a/../b/tags/list", nil, nil, 400, "NAME_INVALID"},
		{"GET", "/v2/a/manifests/bad:tag", nil, nil, 400, "MANIFEST_INVALID"},
		{"GET", "/v2/a/blobs/sha512:00", nil, nil, 400, "DIGEST_INVALID"},
		{"GET", "/v2/a/manifests/v1", nil, nil, 404, "NAME_UNKNOWN"},
		{"GET", "/v2/a/blobs/" + zero, nil, nil, 404, "BLOB_UNKNOWN"},
		{"PATCH", "/v2/a/blobs/uploads/" + strings.Repeat("a", 32), nil, nil, 404, "BLOB_UPLOAD_UNKNOWN"},
		{"POST", "/v2/a/blobs/uploads/?digest=" + zero, []byte("not zero"), nil, 400, "DIGEST_INVALID"},
		{"PUT", "/v2/a/manifests/v1", []byte(`{"schemaVersion":2,"config":{"digest":"` + zero + `"},"layers":[]}`),
			[]string{"Content-Type", "application/vnd.oci.image.manifest.v1+json"}, 400, "MANIFEST_BLOB_UNKNOWN"},
		{"PUT", "/v2/a/manifests/v1", []byte(`{`), []string{"Content-Type", "x"}, 400, "MANIFEST_INVALID"},
		{"PUT", "/v2/a/manifests/" + zero, []byte(`{}`), []string{"Content-Type", "x"}, 400, "DIGEST_INVALID"},
		{"DELETE", "/v2/a/blobs/" + zero, nil, nil, 405, "UNSUPPORTED"},
		{"GET", "/v3/", nil, nil, 404, "NAME_UNKNOWN"},
	} {
		status, code := do(tc.method, tc.path, tc.body, tc.hdr...)
		if status != tc.status || code != tc.code {
			t.Errorf("%s %s: %d %s, want %d %s", tc.method, tc.path, status, code, tc.status, tc.code)
		}
	}
	if status, _ := do("GET", "/v2/", nil); status != 200 {
		t.Errorf("GET /v2/: %d", status)
	}
}

// FuzzParseRoute: the request path decoder never panics; what it accepts
// has a valid name that is a safe relative path and encodes back to a
// path that decodes to the same route.
func FuzzParseRoute(f *testing.F) {
	zero := strings.Repeat("0", 64)
	for _, s := range []string{
		"/v2/", "/v2", "/v2/_catalog", "/v2/a/b/tags/list", "/v2/a/manifests/v1", "/v2/a/manifests/sha256:" + zero,
		"/v2/a/blobs/sha256:" + zero, "/v2/a/blobs/uploads/", "/v2/a/blobs/uploads", "/v2/a/blobs/uploads/" + strings.Repeat("a", 32),
		"/v2/a/manifests/manifests/x", "/v2/x/tags/tags/list", "/v2/a/blobs/blobs/uploads/", "/v2/../etc/manifests/x",
		"/v2/a//b/manifests/x", "/v2/_a/manifests/x", "/v2/a/manifests/", "/v2//manifests/x", "/v2/a-b__c.d/e/manifests/T_1.-x",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, p string) {
		r, err := parseRoute(p)
		if err != nil {
			return
		}
		if r.kind != kindBase && r.kind != kindCatalog {
			if !validName(r.name) {
				t.Fatalf("%q: accepted name %q", p, r.name)
			}
			for _, c := range strings.Split(r.name, "/") {
				if c == "" || c == "." || c == ".." || strings.HasPrefix(c, "_") || filepath.Clean(c) != c {
					t.Fatalf("%q: name %q has an unsafe component %q", p, r.name, c)
				}
			}
		}
		again, err := parseRoute(r.path())
		if err != nil || again != r {
			t.Fatalf("%q decodes to %+v, whose path %q decodes to %+v, %v", p, r, r.path(), again, err)
		}
	})
}

// TestGCDuringUpload: GC neither waits for nor removes an upload whose
// chunk is still arriving, even with no grace; the upload then finishes.
func TestGCDuringUpload(t *testing.T) {
	s, host := serve(t, t.TempDir(), Options{Grace: -1})
	resp, err := http.Post("http://"+host+"/v2/w/blobs/uploads/", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	loc := "http://" + host + resp.Header.Get("Location")
	pr, pw := io.Pipe()
	done := make(chan *http.Response, 1)
	go func() {
		req, _ := http.NewRequest(http.MethodPatch, loc, pr)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Error(err)
		}
		done <- resp
	}()
	first := bytes.Repeat([]byte("a"), 1000)
	if _, err := pw.Write(first); err != nil {
		t.Fatal(err)
	}
	id := path.Base(loc)
	testwait.Until(t, 10*time.Second, "the chunk's first half in the upload file", func() bool {
		fi, err := os.Stat(filepath.Join(s.Dir(), "uploads", id))
		return err == nil && fi.Size() == 1000 // the handler is inside the chunk
	})
	if _, err := s.GC(); err != nil {
		t.Fatal(err)
	}
	pw.Write(first)
	pw.Close()
	if r := <-done; r == nil || r.StatusCode != http.StatusAccepted {
		t.Fatalf("PATCH after GC: %v", r)
	}
	sum := sha256.Sum256(append(first, first...))
	digest := "sha256:" + hex.EncodeToString(sum[:])
	req, _ := http.NewRequest(http.MethodPut, loc+"?digest="+digest, nil)
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("finishing the upload: %s", resp.Status)
	}
	if size, err := s.blobSize(digest); err != nil || size != 2000 {
		t.Fatalf("blob: %d, %v", size, err)
	}
}

// TestPasswordRequired: a store with a password answers nothing without
// it (401 with a basic challenge), and serves a client that sends it as
// basic auth (user svc) or as a bearer token; a wrong one is refused.
func TestPasswordRequired(t *testing.T) {
	s, err := Open(t.TempDir(), Options{Password: "s3cret"})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(s)
	defer srv.Close()
	for _, c := range []struct {
		name string
		set  func(*http.Request)
		want int
	}{
		{"none", func(*http.Request) {}, http.StatusUnauthorized},
		{"wrong", func(r *http.Request) { r.SetBasicAuth(User, "nope") }, http.StatusUnauthorized},
		{"other user", func(r *http.Request) { r.SetBasicAuth("root", "s3cret") }, http.StatusUnauthorized},
		{"basic", func(r *http.Request) { r.SetBasicAuth(User, "s3cret") }, http.StatusOK},
		{"bearer", func(r *http.Request) { r.Header.Set("Authorization", "Bearer s3cret") }, http.StatusOK},
	} {
		for _, path := range []string{"/v2/", "/v2/_catalog"} {
			req, _ := http.NewRequest(http.MethodGet, srv.URL+path, nil)
			c.set(req)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != c.want {
				t.Errorf("%s %s = %d, want %d", c.name, path, resp.StatusCode, c.want)
			}
			if c.want == http.StatusUnauthorized && !strings.HasPrefix(resp.Header.Get("WWW-Authenticate"), "Basic") {
				t.Errorf("%s %s: no basic challenge", c.name, path)
			}
		}
	}
}
