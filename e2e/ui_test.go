package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"svc/auth/authtest"
	"svc/internal/testing/testimage"
	"svc/internal/testing/testwait"
)

// uiHarness answers "ok" after DELAY seconds, or "bad" for the case ids in
// BROKEN, and writes a small trajectory (an LLM call with tokens and cost,
// a tool call, a span, and an error for a broken case) to SVC_TRACE_FILE.
const uiHarness = `set -eu
id=$(grep -o '"id":"[^"]*"' "$SVC_CASE_FILE" | head -n1 | cut -d'"' -f4)
now() { date -u +%%Y-%%m-%%dT%%H:%%M:%%S.%%3NZ; }
t0=$(now)
sleep %s
t1=$(now)
printf '{"kind":"span","name":"plan","startTime":"%%s","endTime":"%%s"}\n' "$t0" "$t1" >> "$SVC_TRACE_FILE"
printf '{"kind":"llm_call","ts":"%%s","model":"test-model","inputTokens":120,"outputTokens":30,"costUsd":0.0021,"durationMs":40}\n' "$t0" >> "$SVC_TRACE_FILE"
printf '{"kind":"tool_call","ts":"%%s","name":"search","input":{"q":"%%s"},"output":"found","durationMs":15}\n' "$t1" "$id" >> "$SVC_TRACE_FILE"
echo "working on $id" >&2
case " %s " in
*" $id "*) printf '{"kind":"error","ts":"%%s","message":"tool failed","code":"E_TOOL"}\n' "$t1" >> "$SVC_TRACE_FILE"; echo bad ;;
*) echo ok ;;
esac
`

// TestWebView drives the web view of a real `svc dev` (SVC_REQUIRE_AUTH=1,
// two workspaces, OIDC_ISSUER a loopback issuer) in Debian's Chromium with
// playwright-core: sign in with an API key, and with the issuer through the
// authorization code redirect (PKCE), watch a running scorecard's progress move, open a case's
// trace, a diff with its gate decision, the trend, registries and
// notifications, see another workspace's scorecard answer "not found",
// open sandbox sessions and a world (a busybox image imported through
// the API) and read them in the Sandboxes and Worlds views, park an
// agent's call (the X-Svc-Agent-* headers, Prefer: wait=0) and approve it
// in the approvals inbox (its arguments shown as sent, as text), and
// cancel the running batch. Screenshots of each page land in
// SVC_UI_SHOTS (default ui/testdata/screenshots, ignored by git). Without
// chromium or playwright-core (ui/test/install.sh) it skips, except under
// CI=true, where it fails.
func TestWebView(t *testing.T) {
	chromium := os.Getenv("SVC_UI_CHROMIUM")
	if chromium == "" {
		chromium = "/usr/bin/chromium"
	}
	modules := filepath.Join(envOr("SVC_UI_JS", "/tmp/svc-ui-js"), "node_modules")
	var missing []string
	if _, err := os.Stat(chromium); err != nil {
		missing = append(missing, chromium+" (apt-get install -y chromium)")
	}
	if _, err := os.Stat(filepath.Join(modules, "playwright-core", "package.json")); err != nil {
		missing = append(missing, "playwright-core in "+modules+" (ui/test/install.sh)")
	}
	node, err := exec.LookPath("node")
	if err != nil {
		missing = append(missing, "node")
	}
	if len(missing) > 0 {
		if os.Getenv("CI") == "true" {
			t.Fatalf("the browser test needs %s", strings.Join(missing, ", "))
		}
		t.Skipf("the browser test needs %s", strings.Join(missing, ", "))
	}
	shots := os.Getenv("SVC_UI_SHOTS")
	if shots == "" {
		if shots, err = filepath.Abs(filepath.Join("..", "ui", "testdata", "screenshots")); err != nil {
			t.Fatal(err)
		}
	}
	script, err := filepath.Abs(filepath.Join("..", "ui", "test", "ui.test.mjs"))
	if err != nil {
		t.Fatal(err)
	}

	const internal = "ui-test-operator-token"
	dir, scripts := t.TempDir(), jobDir(t)
	// A real OIDC issuer on loopback with the view's public client: its
	// authorization endpoint approves alice, a member of acme, at once.
	issuer := authtest.NewIssuer(t)
	const clientID = "svc-web-view"
	removeSandboxesAfter(t, filepath.Join(dir, "data", "sandbox"))
	svc := start(t, devEnv(filepath.Join(dir, "data"), "SVC_REQUIRE_AUTH=1", "SVC_INTERNAL_TOKEN="+internal,
		"OIDC_ISSUER="+issuer.URL, "SVC_UI_OIDC_CLIENT_ID="+clientID), true, "dev")
	testwait.Until(t, 30*time.Second, "/readyz 200", func() bool { return call(t, "GET", svc.URL+"/readyz", nil, nil) == 200 })
	issuer.AutoApprove(clientID, svc.URL+"/ui/", map[string]any{
		"sub": "alice", "name": "Alice Example", "email": "alice@example.test", "workspace": "acme", "roles": []string{"member"},
	})

	tenant := func(ws string) string {
		t.Helper()
		var key struct{ APIKey, Workspace string }
		if code := call(t, "POST", svc.URL+"/internal/tenant-keys", map[string]string{"workspace": ws}, &key, "x-internal-token", internal); code != 201 || key.APIKey == "" {
			t.Fatalf("POST /internal/tenant-keys %s = %d", ws, code)
		}
		return key.APIKey
	}
	acme, globex := tenant("acme"), tenant("globex")
	as := func(key string) []string { return []string{"Authorization", "Bearer " + key} }

	harness := func(key, id, version, delay string, broken ...string) {
		t.Helper()
		path := filepath.Join(scripts, fmt.Sprintf("%s-%s-%s.sh", key[:8], id, version))
		if err := os.WriteFile(path, fmt.Appendf(nil, uiHarness, delay, strings.Join(broken, " ")), 0o755); err != nil {
			t.Fatal(err)
		}
		body := map[string]any{"id": id, "version": version, "kind": "process", "command": []string{"/bin/sh", path}}
		if code := call(t, "POST", svc.URL+"/harnesses", body, nil, as(key)...); code != 201 {
			t.Fatalf("POST /harnesses %s@%s = %d, want 201", id, version, code)
		}
	}
	dataset := func(key, id string, n int) {
		t.Helper()
		var cases []map[string]any
		for i := 1; i <= n; i++ {
			cases = append(cases, map[string]any{"id": fmt.Sprintf("c%05d", i), "task": "say ok", "expected": "ok",
				"graders": []map[string]any{{"id": "exact"}}, "tags": []string{"smoke"}})
		}
		if code := call(t, "POST", svc.URL+"/datasets", map[string]any{"id": id, "version": "1.0.0", "cases": cases}, nil, as(key)...); code != 201 {
			t.Fatalf("POST /datasets %s = %d, want 201", id, code)
		}
	}
	submit := func(key, ds, h string, trials, concurrency int) string {
		t.Helper()
		var sc struct{ ID string }
		hid, hv, _ := strings.Cut(h, "@")
		body := map[string]any{"dataset": map[string]string{"id": ds, "version": "1.0.0"}, "harness": map[string]string{"id": hid, "version": hv},
			"trials": trials, "concurrency": concurrency}
		if code := call(t, "POST", svc.URL+"/scorecards", body, &sc, as(key)...); code != 202 {
			t.Fatalf("POST /scorecards %s %s = %d, want 202", ds, h, code)
		}
		return sc.ID
	}
	status := func(key, id string) string {
		var sc struct{ Status string }
		call(t, "GET", svc.URL+"/scorecards/"+id+"?view=summary", nil, &sc, as(key)...)
		return sc.Status
	}
	finished := func(key, id string) {
		t.Helper()
		testwait.Until(t, 2*time.Minute, id+" succeeded", func() bool { return status(key, id) == "succeeded" })
	}

	harness(acme, "agent", "1.0.0", "0.05")
	harness(acme, "agent", "2.0.0", "0.05", "c00002", "c00005")
	harness(acme, "slow", "1.0.0", "1.5")
	dataset(acme, "qa", 6)
	dataset(acme, "long", 200)
	harness(globex, "agent", "1.0.0", "0.05")
	dataset(globex, "secret", 2)

	base := submit(acme, "qa", "agent@1.0.0", 2, 6)
	cand := submit(acme, "qa", "agent@2.0.0", 2, 6)
	foreign := submit(globex, "secret", "agent@1.0.0", 1, 2)
	finished(acme, base)
	finished(acme, cand)
	finished(globex, foreign)
	// SVC_UI_BIG=10000 adds a finished batch of that many cases, whose page
	// load the script times (a figure to read, not an assertion).
	var big string
	if n, _ := strconv.Atoi(os.Getenv("SVC_UI_BIG")); n > 0 {
		fast := map[string]any{"id": "fast", "version": "1.0.0", "kind": "process", "command": []string{"/bin/echo", "ok"}}
		if code := call(t, "POST", svc.URL+"/harnesses", fast, nil, as(acme)...); code != 201 {
			t.Fatalf("POST /harnesses fast@1.0.0 = %d, want 201", code)
		}
		dataset(acme, "big", n)
		big = submit(acme, "big", "fast@1.0.0", 1, 64)
		testwait.Until(t, 20*time.Minute, big+" succeeded", func() bool { return status(acme, big) == "succeeded" })
	}
	running := submit(acme, "long", "slow@1.0.0", 1, 2)
	testwait.Until(t, time.Minute, running+" running", func() bool { return status(acme, running) == "running" })

	image := uiImageTar(t, dir)

	ctx, cancel := context.WithTimeout(t.Context(), 4*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, script)
	cmd.Env = append(os.Environ(),
		"SVC_UI_URL="+svc.URL, "SVC_UI_KEY="+acme, "SVC_UI_WORKSPACE=acme",
		"SVC_UI_RUNNING="+running, "SVC_UI_BASELINE="+base, "SVC_UI_CANDIDATE="+cand, "SVC_UI_FOREIGN="+foreign,
		"SVC_UI_OIDC_USER=alice", "SVC_UI_OIDC_ISSUER="+issuer.URL,
		"SVC_UI_CASE=c00002", "SVC_UI_BIG_ID="+big, "SVC_UI_BIG_N="+os.Getenv("SVC_UI_BIG"), "SVC_UI_DATASET=qa", "SVC_UI_SHOTS="+shots, "SVC_UI_CHROMIUM="+chromium, "SVC_UI_MODULES="+modules,
		"SVC_UI_IMAGE_TAR="+image)
	out, err := cmd.CombinedOutput()
	t.Logf("ui.test.mjs:\n%s", out)
	if err != nil {
		t.Fatalf("ui.test.mjs: %v", err)
	}
	// The browser went through the issuer's redirect and the service
	// redeemed exactly the code it got (the forged answer never reached
	// the issuer).
	if issued, redeemed := issuer.CodesIssued(), issuer.CodesRedeemed(); issued != 1 || redeemed != 1 {
		t.Errorf("the issuer issued %d codes and redeemed %d, want 1 and 1", issued, redeemed)
	}
	// The cancel the browser clicked reached the service.
	if got := status(acme, running); got != "cancelled" {
		t.Errorf("the running batch is %q after the browser cancelled it, want cancelled", got)
	}
	t.Logf("screenshots of every page: %s", shots)
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

// uiImageTar writes testimage.Busybox as a docker-save tar under dir for
// the browser test to import (POST /images?as=) and open sandbox
// sessions and a world from; "" without busybox or runc (the sandbox
// steps are then skipped), except under CI=true, where it fails.
func uiImageTar(t *testing.T, dir string) string {
	t.Helper()
	_, errBusybox := os.Stat(testimage.BusyboxPath)
	_, errRunc := exec.LookPath("runc")
	if errBusybox != nil || errRunc != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("the browser test's sandbox steps need %s and runc (apt-get install runc)", testimage.Install)
		}
		t.Logf("no %s or runc: the browser test skips its sandbox and world steps", testimage.BusyboxPath)
		return ""
	}
	tag, err := name.NewTag("busybox:1")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "busybox.tar")
	if err := tarball.WriteToFile(path, tag, testimage.Busybox(t)); err != nil {
		t.Fatal(err)
	}
	return path
}
