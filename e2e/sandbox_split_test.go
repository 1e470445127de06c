package e2e

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"svc/internal/testing/testwait"
	"svc/store/pgtest"
)

// Sandbox sessions outside svc dev (issue 32): `svc serve` and `svc
// worker` on PostgreSQL, where every exec goes through the session
// workflow's exec update to an activity on the session host's own queue,
// and a session's create only reaches a worker whose sandbox runtime is
// available.

// splitStack is the production roles on PostgreSQL with processes the
// test can kill and start again: svc dev only as the Temporal cluster (its
// worker polls a queue of its own), svc serve on a fixed port, and svc
// worker processes started with startWorker.
type splitStack struct {
	t   *testing.T
	env []string
	url string
	api *proc
}

// newSplitStack migrates PostgreSQL and starts svc serve with env added.
func newSplitStack(t *testing.T, env ...string) *splitStack {
	t.Helper()
	temporalPort, port := freePort(t), freePort(t)
	dev := start(t, devEnv(t.TempDir(), "SVC_TEMPORAL_PORT="+temporalPort, "SVC_TASK_QUEUE=dev-only"), true, "dev")
	tlsEnv := testwait.UntilValue(t, 30*time.Second, "svc dev's Temporal TLS line", func() ([]string, bool) {
		m := temporalTLSLine.FindStringSubmatch(dev.Stdout())
		if m == nil {
			return nil, false
		}
		return strings.Fields(m[1]), true
	})
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		t.Fatal(err)
	}
	s := &splitStack{t: t, url: "http://127.0.0.1:" + port}
	s.env = append([]string{"DATABASE_URL=" + pgtest.URL(t), "TEMPORAL_ADDRESS=127.0.0.1:" + temporalPort,
		"SVC_ADDR=127.0.0.1:" + port, "SVC_PUBLIC_URL=" + s.url,
		"SVC_SECRET_KEY=" + base64.StdEncoding.EncodeToString(key)}, append(tlsEnv, env...)...)
	if m := start(t, append(s.env, "SVC_DATA_DIR="+t.TempDir()), false, "migrate"); m.wait(time.Minute) != 0 {
		t.Fatalf("svc migrate failed: %s", m.Stderr())
	}
	s.startServe()
	return s
}

func (s *splitStack) startServe() {
	s.t.Helper()
	s.api = start(s.t, append(s.env, "SVC_DATA_DIR="+s.t.TempDir()), true, "serve")
	if s.api.URL != s.url {
		s.t.Fatalf("svc serve listens on %s, want %s", s.api.URL, s.url)
	}
}

// startWorker starts svc worker on dataDir (its sandbox runtime's state is
// under it) with env added, and waits for it to poll. Its containers and
// mounts are removed once the test has stopped or killed it.
func (s *splitStack) startWorker(dataDir string, env ...string) *proc {
	s.t.Helper()
	removeSandboxesAfter(s.t, filepath.Join(dataDir, "sandbox"))
	w := start(s.t, append(append(s.env, "SVC_DATA_DIR="+dataDir), env...), false, "worker")
	testwait.Until(s.t, time.Minute, "the worker's polling line", func() bool { return strings.Contains(w.Stdout(), "polling task queue") })
	return w
}

// kill SIGKILLs p and waits for it to be gone.
func kill(p *proc) {
	p.signal(syscall.SIGKILL)
	p.wait(time.Minute)
}

// request sends one request with a deadline of d and returns the status,
// the headers and the body decoded into out.
func request(t *testing.T, d time.Duration, method, url string, body, out any) (int, http.Header) {
	t.Helper()
	b, err := json.Marshal(body)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, url, bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	if res.StatusCode >= 400 {
		noInternalChain(t, fmt.Sprintf("the %d body of %s %s", res.StatusCode, method, url), string(raw))
	}
	if out != nil && len(raw) > 0 {
		if err := json.Unmarshal(raw, out); err != nil {
			t.Fatalf("%s %s: decoding %q: %v", method, url, raw, err)
		}
	}
	return res.StatusCode, res.Header
}

// runcList is the containers of the sandbox runtime under dataDir.
func runcList(t *testing.T, dataDir string) string {
	t.Helper()
	out, err := exec.Command("runc", "--root", filepath.Join(dataDir, "sandbox", "runc"), "list", "-q").Output()
	if err != nil {
		return ""
	}
	return string(out)
}

// TestSandboxSplitDeployment (spec §2.9, §3, §4.8; issue 32): on svc serve
// + svc worker with PostgreSQL,
//   - a create with only a worker without runc answers 503 saying no
//     worker with a sandbox runtime took it, within the bound, and leaves
//     no live session (that worker never takes the create);
//   - with a capable worker too, creates land on it (its runc holds the
//     containers), exec runs inside the image through the exec update,
//     touch never shortens, close settles; the caps' 429 carries
//     Retry-After from freesAt;
//   - SIGKILL of the worker holding live sessions, one of whose container
//     is then lost: an exec meanwhile is 503 in bounded time and never
//     runs, though another capable worker runs on the same machine under
//     another SVC_WORKER_HOST (it takes neither that exec nor, at its
//     start, the sessions of the first's host); after the restart the
//     other session runs commands again with its files, the lost one is
//     settled orphaned;
//   - SIGKILL of svc serve loses nothing: after its restart the session is
//     listed with its deadline and runs commands.
//
// It logs the exec round trip through the update (20 execs, p50 and p99).
func TestSandboxSplitDeployment(t *testing.T) {
	imageDir, image := busyboxLayout(t)
	s := newSplitStack(t, "SVC_SANDBOX_IMAGE_DIRS="+imageDir, "SVC_SANDBOX_MAX_PER_TENANT=3")
	noRunc := s.startWorker(t.TempDir(), "SVC_SANDBOX_RUNC=/nonexistent/runc", "SVC_WORKER_HOST=split-norunc")
	if !strings.Contains(noRunc.Stderr(), "hosts no sandbox sessions") {
		t.Errorf("the worker without runc does not say it hosts no sessions; stderr:\n%s", tail(noRunc.Stderr(), 2000))
	}

	// Only a worker without runc: the create is refused, clearly, in time.
	var eb errorBody
	t0 := time.Now()
	code, _ := request(t, 2*time.Minute, "POST", s.url+"/sandboxes", map[string]any{"image": image, "ttl": 300}, &eb)
	if code != 503 || !strings.Contains(eb.Error.Message, "no worker with a sandbox runtime") || !strings.Contains(eb.Error.Message, "runc") {
		t.Fatalf("create with no capable worker = %d %+v, want 503 saying no worker with a sandbox runtime took it", code, eb.Error)
	}
	if waited := time.Since(t0); waited > time.Minute {
		t.Errorf("the refusal took %s, want it within the create's bound (30 s)", waited)
	}
	var list []sandboxView
	if call(t, "GET", s.url+"/sandboxes", nil, &list); len(list) != 0 {
		t.Errorf("%d live sessions after the refused create, want none", len(list))
	}

	// A capable worker: creates land on it.
	// Every worker of this machine is named (SVC_WORKER_HOST): sessions
	// route to their host's own queue.
	hostDir := t.TempDir()
	host := s.startWorker(hostDir, "SVC_WORKER_HOST=split-a")
	create := func(ttl int) sandboxView {
		t.Helper()
		var v sandboxView
		if code, _ := request(t, 2*time.Minute, "POST", s.url+"/sandboxes", map[string]any{"image": image, "ttl": ttl}, &v); code != 201 {
			t.Fatalf("create = %d %+v", code, v)
		}
		return v
	}
	created := time.Now()
	a := create(600)
	if a.Status != "running" || a.Session.ComputeID == "" || a.Session.Host != "split-a" || !strings.Contains(runcList(t, hostDir), a.Session.ComputeID) {
		t.Fatalf("session %+v: want running in a container of the capable worker's runc (%q)", a, runcList(t, hostDir))
	}
	base := s.url + "/sandboxes/" + a.ID
	var r execResult
	if code := call(t, "POST", base+"/exec", map[string]any{"command": "echo split > /root/f && cat /root/f /etc/motd"}, &r); code != 200 ||
		!strings.Contains(r.Stdout, "split") || !strings.Contains(r.Stdout, "built by svc's testimage") {
		t.Fatalf("exec = %d %q, want the file and the image's motd", code, r.Stdout)
	}
	firstExec := time.Since(created)
	if code := call(t, "POST", base+"/exec", map[string]any{"command": "exit 7"}, &r); code != 200 || r.ExitCode != 7 {
		t.Errorf("exec of exit 7 = %d exit %d", code, r.ExitCode)
	}
	var lat []time.Duration
	for range 20 {
		t1 := time.Now()
		if code := call(t, "POST", base+"/exec", map[string]any{"command": "true"}, &r); code != 200 || r.ExitCode != 0 {
			t.Fatalf("exec true = %d exit %d", code, r.ExitCode)
		}
		lat = append(lat, time.Since(t1))
	}
	t.Logf("split deployment: create to first exec %s; exec round trip through the update p50 %s p99 %s (20 execs of `true`)",
		firstExec.Round(time.Millisecond), percentile(lat, 0.5).Round(100*time.Microsecond), percentile(lat, 0.99).Round(100*time.Microsecond))

	var v sandboxView
	if code := call(t, "POST", base+"/touch", map[string]any{"ttl": 1}, &v); code != 200 || !v.Session.ExpiresAt.Equal(a.Session.ExpiresAt) {
		t.Errorf("touch ttl 1 = %d expiresAt %s, want the deadline kept at %s", code, v.Session.ExpiresAt, a.Session.ExpiresAt)
	}
	if code := call(t, "POST", base+"/touch", map[string]any{"ttl": 1200}, &v); code != 200 || !v.Session.ExpiresAt.After(a.Session.ExpiresAt) {
		t.Errorf("touch ttl 1200 = %d expiresAt %s, want later than %s", code, v.Session.ExpiresAt, a.Session.ExpiresAt)
	}
	deadline := v.Session.ExpiresAt

	// Caps: the 429 says when to come back.
	b := create(600)
	c := create(120)
	code, hdr := request(t, time.Minute, "POST", s.url+"/sandboxes", map[string]any{"image": image, "ttl": 300}, &eb)
	ra, _ := strconv.Atoi(hdr.Get("Retry-After"))
	if code != 429 || eb.Error.Details["freesAt"] == nil || ra < 100 || ra > 121 {
		t.Errorf("create past the cap = %d Retry-After %q %+v, want 429 with Retry-After about 120 s (the first session's freesAt)", code, hdr.Get("Retry-After"), eb.Error)
	}
	if code := call(t, "POST", s.url+"/sandboxes/"+c.ID+"/close", nil, &v); code != 200 || v.Status != "succeeded" || v.Session.ClosedReason != "closed" {
		t.Fatalf("close = %d %s %q, want succeeded closed", code, v.Status, v.Session.ClosedReason)
	}
	if code := call(t, "POST", s.url+"/sandboxes/"+c.ID+"/exec", map[string]any{"command": "true"}, &eb); code != 409 {
		t.Errorf("exec after close = %d, want 409", code)
	}
	if strings.Contains(runcList(t, hostDir), c.Session.ComputeID) {
		t.Errorf("the closed session's container is still listed by runc")
	}

	// SIGKILL the host with a and b live; b's container is lost while it
	// is down.
	kill(host)
	if out, err := exec.Command("runc", "--root", filepath.Join(hostDir, "sandbox", "runc"), "delete", "--force", b.Session.ComputeID).CombinedOutput(); err != nil {
		t.Fatalf("runc delete %s: %v: %s", b.Session.ComputeID, err, out)
	}
	// Another capable worker on this machine, under its own name: its
	// start settles none of split-a's sessions, and it takes no command
	// of theirs.
	other := s.startWorker(t.TempDir(), "SVC_WORKER_HOST=split-b")
	// An exec while its host is down: 503 in bounded time, and it never
	// runs later.
	t1 := time.Now()
	code, _ = request(t, 2*time.Minute, "POST", base+"/exec", map[string]any{"command": "echo late >> /root/f"}, &eb)
	if code != 503 || !strings.Contains(eb.Error.Message, "nothing ran") {
		t.Errorf("exec with the host down = %d %+v, want 503 saying nothing ran", code, eb.Error)
	}
	if waited := time.Since(t1); waited > time.Minute {
		t.Errorf("the exec with the host down took %s to answer, want about 30 s", waited)
	}
	host = s.startWorker(hostDir, "SVC_WORKER_HOST=split-a")
	if code := call(t, "POST", base+"/exec", map[string]any{"command": "cat /root/f"}, &r); code != 200 || r.Stdout != "split\n" {
		t.Errorf("exec after the worker's restart = %d %q, want the file written before the kill, and nothing of the refused exec", code, r.Stdout)
	}
	testwait.Until(t, time.Minute, "the lost session to settle orphaned", func() bool {
		call(t, "GET", s.url+"/runs/"+b.ID, nil, &v)
		return v.Status == "succeeded"
	})
	if v.Session.ClosedReason != "orphaned" {
		t.Errorf("the lost session settled %q, want orphaned", v.Session.ClosedReason)
	}

	// SIGKILL svc serve: nothing is lost.
	kill(s.api)
	s.startServe()
	if call(t, "GET", s.url+"/sandboxes", nil, &list); len(list) != 1 || list[0].ID != a.ID || !list[0].Session.ExpiresAt.Equal(deadline) {
		t.Errorf("live sessions after serve's restart = %+v, want %s with its deadline %s", list, a.ID, deadline)
	}
	if code := call(t, "POST", base+"/exec", map[string]any{"command": "cat /root/f"}, &r); code != 200 || !strings.Contains(r.Stdout, "split") {
		t.Errorf("exec after serve's restart = %d %q, want the file", code, r.Stdout)
	}
	if code := call(t, "POST", base+"/close", nil, &v); code != 200 || v.Status != "succeeded" || v.Session.ClosedReason != "closed" {
		t.Errorf("close after the restarts = %d %s %q, want succeeded closed", code, v.Status, v.Session.ClosedReason)
	}
	if strings.Contains(runcList(t, hostDir), a.Session.ComputeID) {
		t.Errorf("the closed session's container is still listed by runc")
	}
	for _, p := range []*proc{host, other, noRunc, s.api} {
		p.signal(syscall.SIGTERM)
		p.wait(time.Minute)
	}
}
