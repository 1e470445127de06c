package cli

import (
	"archive/tar"
	"bytes"
	"crypto/rand"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"

	"svc/internal/client"
)

// imported answers POST /images as the service does, after checking the
// query and reading the body (which the fake API records).
func imported(t *testing.T, wantAs string, sawLength *int64) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if got := r.URL.Query().Get("as"); got != wantAs {
			writeError(w, http.StatusBadRequest, "INVALID", "as is "+got)
			return
		}
		if sawLength != nil {
			atomic.StoreInt64(sawLength, r.ContentLength)
		}
		writeJSONBody(w, http.StatusCreated, map[string]string{"ref": wantAs + "@sha256:abc", "digest": "sha256:abc", "as": wantAs})
	}
}

// TestImageImportTar: a tar file is sent as it is, with its length, as
// ?as=REPO:TAG; the pinned reference is printed; stderr counts the bytes
// sent, a line per tenth in a log, and says when the service has it all.
func TestImageImportTar(t *testing.T) {
	data := make([]byte, 3<<20)
	rand.Read(data)
	path := filepath.Join(t.TempDir(), "image.tar")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	var length int64
	api := newFakeAPI(t, map[string]http.HandlerFunc{"POST /images": imported(t, "busybox:1", &length)})
	out, errOut, code := invocation{env: map[string]string{client.EnvURL: api.srv.URL}}.run(t, "image", RunImage, "import", path, "--as", "busybox:1")
	if code != 0 || out != "busybox:1@sha256:abc\n" {
		t.Fatalf("exit %d stdout %q stderr %q, want 0 and the pinned reference", code, out, errOut)
	}
	req := api.last("POST", "/images")
	if !bytes.Equal(req.body, data) || length != int64(len(data)) {
		t.Errorf("sent %d bytes (Content-Length %d), want the file's %d as they are", len(req.body), length, len(data))
	}
	if got := req.header.Get("Content-Type"); got != "application/x-tar" {
		t.Errorf("Content-Type %q", got)
	}
	lines := strings.Split(strings.TrimSuffix(errOut, "\n"), "\n")
	if len(lines) < 5 || !strings.Contains(errOut, "svc image import: 1.5 MiB of 3.0 MiB sent (50%)\n") ||
		lines[len(lines)-1] != "svc image import: 3.0 MiB sent; the service is pushing it into the image store" {
		t.Errorf("stderr %q lacks the progress lines", errOut)
	}
	if strings.Contains(errOut, "\x1b") || strings.Contains(errOut, "\r") {
		t.Errorf("a log (not a terminal) got terminal controls: %q", errOut)
	}

	// On a terminal, one line is rewritten.
	out, errOut, code = invocation{env: map[string]string{client.EnvURL: api.srv.URL}, tty: true}.run(t, "image", RunImage, "import", "--json", path, "--as", "busybox:1")
	if code != 0 || out != `{"as":"busybox:1","digest":"sha256:abc","ref":"busybox:1@sha256:abc"}`+"\n" {
		t.Errorf("--json: exit %d stdout %q", code, out)
	}
	if !strings.HasPrefix(errOut, "\r") || strings.Count(errOut, "\n") != 1 || !strings.HasSuffix(errOut, "\rsvc image import: 3.0 MiB sent; the service is pushing it into the image store\x1b[K\n") {
		t.Errorf("terminal stderr %q: want one rewritten line ending with the total", errOut)
	}
}

// TestImageImportDir: an OCI layout directory is tarred on the fly, sent
// without a length (chunked), every file under its relative name with
// its bytes.
func TestImageImportDir(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{
		"oci-layout":              `{"imageLayoutVersion":"1.0.0"}`,
		"index.json":              `{"schemaVersion":2,"manifests":[]}`,
		"blobs/sha256/0123456789": strings.Repeat("layer bytes ", 1000),
	}
	for name, body := range files {
		p := filepath.Join(dir, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	length := int64(99)
	api := newFakeAPI(t, map[string]http.HandlerFunc{"POST /images": imported(t, "base:v1", &length)})
	out, errOut, code := invocation{env: map[string]string{client.EnvURL: api.srv.URL}}.run(t, "image", RunImage, "import", dir, "--as", "base:v1")
	if code != 0 || out != "base:v1@sha256:abc\n" {
		t.Fatalf("exit %d stdout %q stderr %q", code, out, errOut)
	}
	if length != -1 {
		t.Errorf("Content-Length %d, want none (chunked)", length)
	}
	got := map[string]string{}
	var dirs []string
	tr := tar.NewReader(bytes.NewReader(api.last("POST", "/images").body))
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("the body is not a tar: %v", err)
		}
		if h.Typeflag == tar.TypeDir {
			dirs = append(dirs, h.Name)
			continue
		}
		b, _ := io.ReadAll(tr)
		got[h.Name] = string(b)
	}
	if diff := cmp.Diff(files, got); diff != "" {
		t.Errorf("the tar's files (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"blobs/", "blobs/sha256/"}, dirs); diff != "" {
		t.Errorf("the tar's directories (-want +got):\n%s", diff)
	}
}

// TestImageImportRefusals: a command line that cannot work is a usage
// error sending nothing; the service's refusal is its message, and it
// comes before the body is sent (100-continue), not after the upload.
func TestImageImportRefusals(t *testing.T) {
	notLayout := t.TempDir()
	os.WriteFile(filepath.Join(notLayout, "index.json"), []byte("{}"), 0o644)
	api := newFakeAPI(t, nil)
	env := map[string]string{client.EnvURL: api.srv.URL}
	for _, tc := range []struct {
		args    []string
		wantErr string
	}{
		{[]string{"import", notLayout, "--as", "a:1"}, "is not an OCI image layout (it has no oci-layout)"},
		{[]string{"import", notLayout}, `--as "": name the image as REPO:TAG`},
		{[]string{"import", notLayout, "--as", "busybox"}, `--as "busybox": name the image as REPO:TAG`},
		{[]string{"import", filepath.Join(notLayout, "nope.tar"), "--as", "a:1"}, "no such file or directory"},
		{[]string{"import", "--as", "a:1"}, "want exactly one image directory or tar file"},
	} {
		_, errOut, code := invocation{env: env}.run(t, "image", RunImage, tc.args...)
		if code != exitProblem || !strings.Contains(errOut, tc.wantErr) || !strings.Contains(errOut, "usage: ") {
			t.Errorf("svc image %q: exit %d stderr %q, want a usage error with %q", tc.args, code, errOut, tc.wantErr)
		}
	}
	if n := len(api.requests()); n != 0 {
		t.Errorf("usage errors sent %d requests", n)
	}

	// A service that refuses without reading the body: no image store.
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusBadRequest, "INVALID", "this deployment has no image store to import into; set SVC_IMAGE_STORE")
	}))
	t.Cleanup(srv.Close)
	big := filepath.Join(t.TempDir(), "big.tar")
	if err := os.WriteFile(big, make([]byte, 32<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	out, errOut, code := invocation{env: map[string]string{client.EnvURL: srv.URL}}.run(t, "image", RunImage, "import", big, "--as", "a:1")
	if code != exitProblem || out != "" || errOut != "svc image: this deployment has no image store to import into; set SVC_IMAGE_STORE (request req-42)\n" {
		t.Errorf("exit %d stdout %q stderr %q, want the service's refusal alone, before any upload", code, out, errOut)
	}
}
