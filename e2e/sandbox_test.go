package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"

	"svc/drivers/local/sandbox"
	"svc/internal/testing/testimage"
	"svc/internal/testing/testwait"
)

// sandboxView is what the sandbox routes answer.
type sandboxView struct {
	ID        string `json:"id"`
	Status    string `json:"status"`
	Kind      string `json:"kind"`
	Lifetime  string `json:"lifetime"`
	CreatedBy string `json:"createdBy"`
	Placement struct {
		Where string `json:"where"`
	} `json:"placement"`
	Session struct {
		ExpiresAt    time.Time `json:"expiresAt"`
		ClosedReason string    `json:"closedReason"`
		ComputeID    string    `json:"computeId"`
		Host         string    `json:"host"`
		Agent        *struct {
			ID string `json:"id"`
		} `json:"agent"`
	} `json:"session"`
	Live *struct {
		Open bool `json:"open"`
	} `json:"live"`
}

type execResult struct {
	ExitCode   int     `json:"exitCode"`
	Stdout     string  `json:"stdout"`
	Stderr     string  `json:"stderr"`
	DurationMs float64 `json:"durationMs"`
}

type errorBody struct {
	Error struct {
		Code    string         `json:"code"`
		Message string         `json:"message"`
		Details map[string]any `json:"details"`
	} `json:"error"`
}

// busyboxLayout writes testimage.Busybox as an OCI image layout under a
// new directory and returns the directory (what SVC_SANDBOX_IMAGE_DIRS
// allows) and the layout's path.
func busyboxLayout(t *testing.T) (string, string) {
	t.Helper()
	img := testimage.Busybox(t)
	if _, err := exec.LookPath("runc"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("runc is not on PATH (apt-get install runc)")
		}
		t.Skip("runc is not on PATH (apt-get install runc)")
	}
	dir := t.TempDir()
	p, err := layout.Write(filepath.Join(dir, "busybox"), empty.Index)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.AppendImage(img); err != nil {
		t.Fatal(err)
	}
	return dir, filepath.Join(dir, "busybox")
}

// sandboxDev starts svc dev with sessions allowed from dir's layouts.
// Once the test has stopped it (or start's cleanup has killed it), every
// container and mount of its sandbox runtime is removed
// (removeSandboxesAfter).
func sandboxDev(t *testing.T, dataDir, imageDir string, extra ...string) *proc {
	t.Helper()
	removeSandboxesAfter(t, filepath.Join(dataDir, "sandbox"))
	env := devEnv(dataDir, append([]string{"SVC_SANDBOX_IMAGE_DIRS=" + imageDir, "SVC_INTERNAL_TOKEN=" + sandboxOperatorToken}, extra...)...)
	return start(t, env, true, "dev")
}

// removeSandboxesAfter registers the removal of every container, mount
// and session of the sandbox runtime under root (sandbox.RemoveAll, as
// the process's own runtime finds them), so that a test leaves none
// however it ends: a session it left open, a process it killed. Call it
// before starting the process on root: cleanups run last registered
// first, so it runs after start's cleanup has stopped the process. What
// RemoveAll cannot remove fails the test, naming it.
func removeSandboxesAfter(t testing.TB, root string) {
	t.Helper()
	t.Cleanup(func() {
		rt, err := sandbox.New(sandbox.Options{Root: root})
		if err != nil {
			t.Errorf("the sandbox runtime under %s: %v", root, err)
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		if left, _ := rt.List(ctx); len(left) > 0 {
			t.Logf("removing the %d sandbox sessions left under %s", len(left), root)
		}
		if err := rt.RemoveAll(ctx); err != nil {
			t.Errorf("sandbox containers or mounts left after the test: %v", err)
		}
	})
}

// sandboxOperatorToken is SVC_INTERNAL_TOKEN of the sandbox tests' svc dev.
const sandboxOperatorToken = "sbx-operator-token"

// otherMember mints an operator's admin key of the dev workspace: a
// principal of its own, another member than the dev fallback.
func otherMember(t *testing.T, url string) string {
	t.Helper()
	var k struct {
		APIKey string `json:"apiKey"`
	}
	if code := call(t, "POST", url+"/internal/tenant-keys", map[string]string{"workspace": "default"}, &k, "x-internal-token", sandboxOperatorToken); code != 201 || k.APIKey == "" {
		t.Fatalf("POST /internal/tenant-keys = %d", code)
	}
	return k.APIKey
}

func percentile(ds []time.Duration, p float64) time.Duration {
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[min(len(s)-1, int(float64(len(s))*p))]
}

// TestSandboxSessionLifecycle (spec §2.9, §3, §4.8): create answers 201 a
// running session run in a real container from the image (busybox's
// programs and files, not the host's); exec writes files inside it and
// lands on the trajectory; touch never shortens; another member reads
// nothing (404); close settles succeeded with closedReason closed, is
// idempotent, and exec after it is 409. It logs create-to-first-exec and
// exec round trips through the binary.
func TestSandboxSessionLifecycle(t *testing.T) {
	imageDir, image := busyboxLayout(t)
	dev := sandboxDev(t, t.TempDir(), imageDir)

	var s sandboxView
	created := time.Now()
	if code := call(t, "POST", dev.URL+"/sandboxes", map[string]any{"image": image, "ttl": 300}, &s); code != 201 {
		t.Fatalf("POST /sandboxes = %d %+v", code, s)
	}
	if s.Status != "running" || s.Kind != "sandbox" || s.Lifetime != "session" || s.Session.ComputeID == "" || s.Placement.Where != "local" {
		t.Fatalf("created session = %+v, want a running sandbox session with a container", s)
	}
	if left := time.Until(s.Session.ExpiresAt); left < 280*time.Second || left > 301*time.Second {
		t.Errorf("expiresAt %s is %s away, want about the ttl of 300 s", s.Session.ExpiresAt, left)
	}
	base := dev.URL + "/sandboxes/" + s.ID
	var r execResult
	marker := "sbx-" + s.ID
	cmd := fmt.Sprintf(`echo hello > /root/%s && cat /root/%s && cat /etc/motd && ls /usr/bin/go 2>&1; echo; busybox | head -1`, marker, marker)
	if code := call(t, "POST", base+"/exec", map[string]any{"command": cmd}, &r); code != 200 {
		t.Fatalf("POST exec = %d", code)
	}
	firstExec := time.Since(created)
	if !strings.Contains(r.Stdout, "hello") || !strings.Contains(r.Stdout, "built by svc's testimage") ||
		!strings.Contains(r.Stdout, "No such file") || !strings.Contains(r.Stdout, "BusyBox") {
		t.Errorf("exec stdout = %q, want the file written, the image's motd, no host go, busybox's banner", r.Stdout)
	}
	if _, err := os.Stat("/root/" + marker); err == nil {
		t.Errorf("the exec wrote /root/%s on the host, want it only inside the container", marker)
	}
	if code := call(t, "POST", base+"/exec", map[string]any{"command": "exit 3"}, &r); code != 200 || r.ExitCode != 3 {
		t.Errorf("exec of exit 3 = %d exit %d, want 200 with exit code 3", code, r.ExitCode)
	}
	var lat []time.Duration
	for range 30 {
		t0 := time.Now()
		if code := call(t, "POST", base+"/exec", map[string]any{"command": "true"}, &r); code != 200 || r.ExitCode != 0 {
			t.Fatalf("exec true = %d exit %d", code, r.ExitCode)
		}
		lat = append(lat, time.Since(t0))
	}
	t.Logf("create to first exec %s; exec round trip p50 %s p99 %s (30 execs of `true` through svc dev)",
		firstExec.Round(time.Millisecond), percentile(lat, 0.5).Round(100*time.Microsecond), percentile(lat, 0.99).Round(100*time.Microsecond))

	// Touch never shortens; a longer ttl extends.
	before := s.Session.ExpiresAt
	var v sandboxView
	if code := call(t, "POST", base+"/touch", map[string]any{"ttl": 1}, &v); code != 200 || !v.Session.ExpiresAt.Equal(before) {
		t.Errorf("touch ttl 1 = %d expiresAt %s, want 200 and the deadline kept at %s", code, v.Session.ExpiresAt, before)
	}
	if code := call(t, "POST", base+"/touch", map[string]any{"ttl": 900}, &v); code != 200 || !v.Session.ExpiresAt.After(before) {
		t.Errorf("touch ttl 900 = %d expiresAt %s, want later than %s", code, v.Session.ExpiresAt, before)
	}

	// Another member reads nothing of it.
	other := otherMember(t, dev.URL)
	var eb errorBody
	for _, c := range []struct{ method, path string }{{"GET", base}, {"POST", base + "/exec"}, {"POST", base + "/close"}, {"GET", dev.URL + "/runs/" + s.ID}} {
		var body any
		if c.method == "POST" {
			body = map[string]any{"command": "true"}
			if strings.HasSuffix(c.path, "/close") {
				body = map[string]any{}
			}
		}
		if code := call(t, c.method, c.path, body, &eb, "Authorization", "Bearer "+other); code != 404 {
			t.Errorf("%s %s as another member = %d, want 404", c.method, c.path, code)
		}
	}
	var list []sandboxView
	if call(t, "GET", dev.URL+"/sandboxes", nil, &list, "Authorization", "Bearer "+other); len(list) != 0 {
		t.Errorf("GET /sandboxes as another member lists %d sessions, want none", len(list))
	}
	if call(t, "GET", dev.URL+"/sandboxes", nil, &list); len(list) != 1 || list[0].ID != s.ID || list[0].Live == nil || !list[0].Live.Open {
		t.Errorf("GET /sandboxes as its member = %+v, want the open session", list)
	}

	// Close settles it; again is the same answer; exec then is 409.
	if code := call(t, "POST", base+"/close", nil, &v); code != 200 || v.Status != "succeeded" || v.Session.ClosedReason != "closed" {
		t.Fatalf("close = %d %s %q, want 200 succeeded closed", code, v.Status, v.Session.ClosedReason)
	}
	var again sandboxView
	if code := call(t, "POST", base+"/close", map[string]any{"snapshot": false}, &again); code != 200 || again.Status != "succeeded" || again.Session.ClosedReason != "closed" {
		t.Errorf("second close = %d %s %q, want the same settled session", code, again.Status, again.Session.ClosedReason)
	}
	if code := call(t, "POST", base+"/exec", map[string]any{"command": "true"}, &eb); code != 409 {
		t.Errorf("exec after close = %d, want 409", code)
	}
	var tr struct {
		Events []struct {
			Kind string `json:"kind"`
			Name string `json:"name"`
		} `json:"events"`
	}
	if code := call(t, "GET", dev.URL+"/runs/"+s.ID+"/trajectory", nil, &tr); code != 200 {
		t.Fatalf("GET trajectory = %d", code)
	}
	execs := 0
	for _, e := range tr.Events {
		if e.Kind == "tool_call" && e.Name == "exec" {
			execs++
		}
	}
	if execs != 32 || tr.Events[len(tr.Events)-1].Kind != "session.closed" {
		t.Errorf("trajectory has %d exec events (last %+v), want 32 and session.closed last", execs, tr.Events[len(tr.Events)-1])
	}
}

// TestSandboxCaps (spec §4.8, §8): an agent holds at most
// SVC_SANDBOX_MAX_PER_AGENT sessions and never takes the workspace's last
// slot; a member takes it; past the tenant cap everyone gets 429 naming
// the holder and freesAt.
func TestSandboxCaps(t *testing.T) {
	imageDir, image := busyboxLayout(t)
	dev := sandboxDev(t, t.TempDir(), imageDir, "SVC_SANDBOX_MAX_PER_AGENT=1", "SVC_SANDBOX_MAX_PER_TENANT=3")
	create := func(agent string) (int, sandboxView, errorBody) {
		body := map[string]any{"image": image, "ttl": 120}
		if agent != "" {
			body["agent"] = map[string]any{"id": agent, "conversation": "c1"}
		}
		var s sandboxView
		var eb errorBody
		code := call(t, "POST", dev.URL+"/sandboxes", body, &s)
		if code != 201 {
			call(t, "POST", dev.URL+"/sandboxes", body, &eb) // the refusal's body
		}
		return code, s, eb
	}
	code, a1, _ := create("agent-a")
	if code != 201 || a1.Session.Agent == nil || a1.Session.Agent.ID != "agent-a" {
		t.Fatalf("agent-a's first session = %d %+v", code, a1)
	}
	code, _, eb := create("agent-a")
	if code != 429 || eb.Error.Code != "RATE_LIMITED" || eb.Error.Details["freesAt"] == nil || eb.Error.Details["holder"] == nil {
		t.Errorf("agent-a's second session = %d %+v, want 429 naming the holder and freesAt", code, eb.Error)
	}
	code, _, _ = create("agent-b")
	if code != 201 {
		t.Fatalf("agent-b's session = %d, want 201 (2 of 3 slots)", code)
	}
	code, _, eb = create("agent-c")
	if code != 429 || !strings.Contains(eb.Error.Message, "last slot") {
		t.Errorf("agent-c's session = %d %q, want 429: agents never take the last slot", code, eb.Error.Message)
	}
	code, _, _ = create("")
	if code != 201 {
		t.Errorf("a member's session in the last slot = %d, want 201", code)
	}
	code, _, eb = create("")
	if code != 429 || eb.Error.Details["freesAt"] == nil {
		t.Errorf("a member's session past the tenant cap = %d %+v, want 429 with freesAt", code, eb.Error)
	}
	// Closing one frees a slot.
	var v sandboxView
	if code := call(t, "POST", dev.URL+"/sandboxes/"+a1.ID+"/close", nil, &v); code != 200 {
		t.Fatalf("close = %d", code)
	}
	if code, _, _ := create(""); code != 201 {
		t.Errorf("a member's session after a close = %d, want 201", code)
	}
}

// TestSandboxSurvivesDevKill (spec §3, issue 32 item 1): svc dev SIGKILLed
// with two live sessions; one's container is then lost. After a restart
// on the same data dir the surviving session still runs commands and
// expires on schedule (the durable timer), and the lost one is settled
// orphaned.
func TestSandboxSurvivesDevKill(t *testing.T) {
	imageDir, image := busyboxLayout(t)
	data := t.TempDir()
	first := sandboxDev(t, data, imageDir, "SVC_SANDBOX_MAX_PER_TENANT=5")
	var keep, lose sandboxView
	if code := call(t, "POST", first.URL+"/sandboxes", map[string]any{"image": image, "ttl": 40}, &keep); code != 201 {
		t.Fatalf("create = %d", code)
	}
	if code := call(t, "POST", first.URL+"/sandboxes", map[string]any{"image": image, "ttl": 600}, &lose); code != 201 {
		t.Fatalf("create = %d", code)
	}
	var r execResult
	call(t, "POST", first.URL+"/sandboxes/"+keep.ID+"/exec", map[string]any{"command": "echo kept > /root/f"}, &r)
	first.signal(syscall.SIGKILL)
	first.wait(time.Minute)

	// The lost one: its container is gone when svc comes back.
	state := filepath.Join(data, "sandbox", "runc")
	if out, err := exec.Command("runc", "--root", state, "delete", "--force", lose.Session.ComputeID).CombinedOutput(); err != nil {
		t.Fatalf("runc delete %s: %v: %s", lose.Session.ComputeID, err, out)
	}

	second := sandboxDev(t, data, imageDir, "SVC_SANDBOX_MAX_PER_TENANT=5")
	if code := call(t, "POST", second.URL+"/sandboxes/"+keep.ID+"/exec", map[string]any{"command": "cat /root/f"}, &r); code != 200 || !strings.Contains(r.Stdout, "kept") {
		t.Errorf("exec after the restart = %d %q, want the file written before the kill", code, r.Stdout)
	}
	var v sandboxView
	testwait.Until(t, time.Minute, "the lost session to settle orphaned", func() bool {
		call(t, "GET", second.URL+"/runs/"+lose.ID, nil, &v)
		return v.Status == "succeeded"
	})
	if v.Session.ClosedReason != "orphaned" {
		t.Errorf("the lost session settled %q, want orphaned", v.Session.ClosedReason)
	}
	testwait.Until(t, 2*time.Minute, "the surviving session to expire", func() bool {
		call(t, "GET", second.URL+"/runs/"+keep.ID, nil, &v)
		return v.Status == "succeeded"
	})
	settled := time.Now()
	if v.Session.ClosedReason != "expired" {
		t.Errorf("the surviving session settled %q, want expired", v.Session.ClosedReason)
	}
	if late := settled.Sub(keep.Session.ExpiresAt); late < 0 || late > 15*time.Second {
		t.Errorf("the session settled %s after its expiry, want on schedule (within 15 s)", late)
	}
	if out, err := exec.Command("runc", "--root", state, "list", "-q").Output(); err == nil && strings.Contains(string(out), keep.ID) {
		t.Errorf("the expired session's container is still listed by runc: %s", out)
	}
}

// TestSandboxNoOCIRuntime (spec §4.8, issue 32 item 2): without runc on
// PATH a create answers 400 naming what to install, and no session is
// left: none listed, no container, no session's file system, not even
// the image unpacked.
func TestSandboxNoOCIRuntime(t *testing.T) {
	imageDir, image := busyboxLayout(t)
	data := t.TempDir()
	// PATH comes after start's own PATH: the last one is the process's.
	dev := sandboxDev(t, data, imageDir, "PATH="+t.TempDir())
	var eb errorBody
	if code := call(t, "POST", dev.URL+"/sandboxes", map[string]any{"image": image}, &eb); code != 400 || !strings.Contains(eb.Error.Message, "runc") {
		t.Errorf("create without runc = %d %q, want 400 naming runc", code, eb.Error.Message)
	}
	var list []sandboxView
	if call(t, "GET", dev.URL+"/sandboxes", nil, &list); len(list) != 0 {
		t.Errorf("%d sessions listed after the refusal, want none", len(list))
	}
	if ids := runcList(t, data); ids != "" {
		t.Errorf("runc lists containers under svc dev's sandbox root after the refusal: %s", ids)
	}
	for _, d := range []string{"sessions", "images"} {
		if ents, _ := os.ReadDir(filepath.Join(data, "sandbox", d)); len(ents) != 0 {
			t.Errorf("%d entries under the sandbox root's %s after the refusal, want none", len(ents), d)
		}
	}
}
