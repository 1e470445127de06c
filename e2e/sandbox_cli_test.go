package e2e

import (
	"encoding/json"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"svc/internal/testing/testimage"
)

var pinnedRef = regexp.MustCompile(`^busybox:(1|2)@sha256:[0-9a-f]{64}\n$`)

// TestSandboxCLI (issue 32 item 8) drives the sandbox commands through
// the binary against svc dev: svc image import of an OCI layout directory
// (tarred on the fly) and of a docker-save tar prints the pinned
// reference with a progress line; svc sandbox create --image prints the
// session's id; exec runs the words in the image's container and exits
// with the command's exit code, its output as written; ls lists the
// session; get --json is the record; close settles it and is idempotent;
// exec after close is the service's refusal and exit 2.
func TestSandboxCLI(t *testing.T) {
	imageDir, layoutDir := busyboxLayout(t)
	dev := sandboxDev(t, t.TempDir(), imageDir)

	out, errOut, code := runCLI(t, dev.URL, "image", "import", layoutDir, "--as", "busybox:1")
	if code != 0 || !pinnedRef.MatchString(out) || !strings.Contains(errOut, "sent; the service is pushing it into the image store") {
		t.Fatalf("svc image import DIR: exit %d stdout %q stderr %q, want 0, busybox:1@sha256:..., a progress line", code, out, errOut)
	}
	ref := strings.TrimSpace(out)

	tarPath := filepath.Join(t.TempDir(), "busybox.tar")
	if err := tarball.WriteToFile(tarPath, name.MustParseReference("busybox:2"), testimage.Busybox(t)); err != nil {
		t.Fatal(err)
	}
	if out, errOut, code := runCLI(t, dev.URL, "image", "import", tarPath, "--as", "busybox:2"); code != 0 || !pinnedRef.MatchString(out) {
		t.Errorf("svc image import TAR: exit %d stdout %q stderr %q", code, out, errOut)
	}
	if _, errOut, code := runCLI(t, dev.URL, "image", "import", tarPath, "--as", "Bad Name:1"); code != 2 || !strings.Contains(errOut, "want repo:tag") {
		t.Errorf("svc image import --as 'Bad Name:1': exit %d stderr %q, want 2 and the service's message", code, errOut)
	}

	out, errOut, code = runCLI(t, dev.URL, "sandbox", "create", "--image", ref, "--ttl", "10m")
	id := strings.TrimSpace(out)
	if code != 0 || id == "" || strings.ContainsAny(id, " \n") {
		t.Fatalf("svc sandbox create: exit %d stdout %q stderr %q, want the id", code, out, errOut)
	}

	out, errOut, code = runCLI(t, dev.URL, "sandbox", "exec", id, "--", "sh", "-c", "echo hi; echo oops >&2; exit 3")
	if code != 3 || out != "hi\n" || errOut != "oops\n" {
		t.Errorf("svc sandbox exec -- sh -c 'echo hi; echo oops >&2; exit 3': exit %d stdout %q stderr %q, want 3 %q %q", code, out, errOut, "hi\n", "oops\n")
	}
	// The words reach the container's shell as written, and the image's
	// files are what it reads.
	out, errOut, code = runCLI(t, dev.URL, "sandbox", "exec", id, "--", "cat", "/etc/motd")
	if code != 0 || out != testimage.BaseFiles["etc/motd"] {
		t.Errorf("svc sandbox exec cat /etc/motd: exit %d stdout %q stderr %q, want the image's motd", code, out, errOut)
	}
	out, _, code = runCLI(t, dev.URL, "sandbox", "exec", id, "--", "printf", "[%s]", "two words", "it's", "$HOME")
	if code != 0 || out != "[two words][it's][$HOME]" {
		t.Errorf("svc sandbox exec printf: exit %d stdout %q, want each word as written", code, out)
	}

	out, errOut, code = runCLI(t, dev.URL, "sandbox", "ls")
	if code != 0 || !strings.Contains(out, "IMAGE/WORLD") || !regexp.MustCompile(regexp.QuoteMeta(id)+`\s+`+regexp.QuoteMeta(ref[:len("busybox:1@sha256:")+12])+`\s+running\s+\S+ \S+\s+no`).MatchString(out) {
		t.Errorf("svc sandbox ls: exit %d stdout %q stderr %q, want the session's row", code, out, errOut)
	}
	out, _, code = runCLI(t, dev.URL, "sandbox", "get", id, "--json")
	var rec struct {
		ID     string `json:"id"`
		Status string `json:"status"`
		Live   struct {
			Open bool `json:"open"`
		} `json:"live"`
	}
	if err := json.Unmarshal([]byte(out), &rec); code != 0 || err != nil || rec.ID != id || !rec.Live.Open {
		t.Errorf("svc sandbox get --json: exit %d stdout %q (%v), want the open session's record", code, out, err)
	}

	for i := range 2 {
		out, errOut, code = runCLI(t, dev.URL, "sandbox", "close", id)
		if code != 0 || out != id+" succeeded (closed)\n" {
			t.Errorf("svc sandbox close (%d): exit %d stdout %q stderr %q, want %q", i+1, code, out, errOut, id+" succeeded (closed)\n")
		}
	}
	out, errOut, code = runCLI(t, dev.URL, "sandbox", "exec", id, "--", "true")
	if code != 2 || out != "" || !strings.HasPrefix(errOut, "svc sandbox: ") || !strings.Contains(errOut, id) {
		t.Errorf("svc sandbox exec after close: exit %d stdout %q stderr %q, want 2 and the service's message", code, out, errOut)
	}
	out, errOut, code = runCLI(t, dev.URL, "sandbox", "ls")
	if code != 0 || strings.Contains(out, id) {
		t.Errorf("svc sandbox ls after close: exit %d stdout %q stderr %q, want the session gone", code, out, errOut)
	}
	if _, errOut, code := runCLI(t, dev.URL, "world", "ls"); code != 0 || !strings.Contains(errOut, "no worlds") {
		t.Errorf("svc world ls: exit %d stderr %q, want none yet", code, errOut)
	}
}

// TestSandboxCLIWorld (issue 32 items 4 and 8): through the binary, a
// world session's snapshot prints the version's pinned reference (v1),
// svc world ls lists the world and svc world ls ID its versions, and a
// new session on the world (svc sandbox create --world) sees the file
// the first one wrote.
func TestSandboxCLIWorld(t *testing.T) {
	imageDir, layoutDir := busyboxLayout(t)
	dev := sandboxDev(t, t.TempDir(), imageDir)
	out, errOut, code := runCLI(t, dev.URL, "image", "import", layoutDir, "--as", "busybox:1")
	if code != 0 || !pinnedRef.MatchString(out) {
		t.Fatalf("svc image import: exit %d stdout %q stderr %q", code, out, errOut)
	}
	ref := strings.TrimSpace(out)
	out, errOut, code = runCLI(t, dev.URL, "sandbox", "create", "--world", "cliw", "--image", ref, "--ttl", "10m")
	id := strings.TrimSpace(out)
	if code != 0 || id == "" {
		t.Fatalf("svc sandbox create --world: exit %d stdout %q stderr %q", code, out, errOut)
	}
	if _, errOut, code := runCLI(t, dev.URL, "sandbox", "exec", id, "--", "sh", "-c", "echo kept > /root/f"); code != 0 {
		t.Fatalf("exec: exit %d stderr %q", code, errOut)
	}
	out, errOut, code = runCLI(t, dev.URL, "sandbox", "snapshot", id)
	if code == 2 && strings.Contains(errOut, "no route matches POST /sandboxes/") {
		t.Skip("waits for the POST /sandboxes/:id/snapshot route in the API's route table (api/sandboxes_world.go, the sessions part of issue 32)")
	}
	if code != 0 || !regexp.MustCompile(`^cliw:v1@sha256:[0-9a-f]{64}\n$`).MatchString(out) || !strings.Contains(errOut, "world cliw version 1 published") {
		t.Fatalf("svc sandbox snapshot: exit %d stdout %q stderr %q, want cliw:v1@sha256:...", code, out, errOut)
	}
	v1 := strings.TrimSpace(out)
	if out, errOut, code := runCLI(t, dev.URL, "world", "ls"); code != 0 || !regexp.MustCompile(`(?m)^cliw\s+v1\s+`+regexp.QuoteMeta(v1)+`\s`).MatchString(out) {
		t.Errorf("svc world ls: exit %d stdout %q stderr %q, want cliw at v1", code, out, errOut)
	}
	if out, errOut, code := runCLI(t, dev.URL, "world", "ls", "cliw"); code != 0 || !regexp.MustCompile(`(?m)^1\s+v1\s+`+regexp.QuoteMeta(v1)+`\s`).MatchString(out) {
		t.Errorf("svc world ls cliw: exit %d stdout %q stderr %q, want version 1", code, out, errOut)
	}
	if out, errOut, code := runCLI(t, dev.URL, "sandbox", "close", id, "--no-snapshot"); code != 0 || out != id+" succeeded (closed)\nlast snapshot: "+v1+"\n" {
		t.Errorf("svc sandbox close --no-snapshot: exit %d stdout %q stderr %q", code, out, errOut)
	}
	out, errOut, code = runCLI(t, dev.URL, "sandbox", "create", "--world", "cliw", "--ttl", "10m")
	id2 := strings.TrimSpace(out)
	if code != 0 || id2 == "" {
		t.Fatalf("svc sandbox create --world cliw (v1): exit %d stdout %q stderr %q", code, out, errOut)
	}
	if out, errOut, code := runCLI(t, dev.URL, "sandbox", "exec", id2, "--", "cat", "/root/f"); code != 0 || out != "kept\n" {
		t.Errorf("the file in a session from v1: exit %d stdout %q stderr %q, want kept", code, out, errOut)
	}
	if out, _, code := runCLI(t, dev.URL, "sandbox", "ls"); code != 0 || !strings.Contains(out, "world cliw") {
		t.Errorf("svc sandbox ls: exit %d stdout %q, want the world session's row", code, out)
	}
	runCLI(t, dev.URL, "sandbox", "close", id2, "--no-snapshot")
}
