package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"svc/internal/domain/eval"
	"svc/internal/integrations/webhooks"
	"svc/internal/service/runs"
	"svc/internal/testing/testwait"
	"svc/store"
)

// TestRunSurvivesDevKill: a run whose harness is running when `svc dev` is
// killed with SIGKILL loses its harness with the service (nothing of it
// outlives the process), and after a restart on the same data dir the
// retried dispatch finishes the run exactly once: one result, one sealed
// trajectory, one notification, one signed webhook.
func TestRunSurvivesDevKill(t *testing.T) {
	runSurvivesKill(t, true)
}

// TestRunSurvivesDevKillBeforeStart: `svc dev` killed right after the 202,
// most likely before its worker picked the run up, still finishes the run
// exactly once after a restart.
func TestRunSurvivesDevKillBeforeStart(t *testing.T) {
	runSurvivesKill(t, false)
}

// restartHarness appends "<shell pid> <shim pid> <sleep pid>" to the starts
// file on every start (the shim is the harness's parent, see
// drivers/local), writes two trace events, works for 4 s in a child and
// answers 42.
const restartHarness = `set -eu
sleep 4 &
st= pst= bst=; read -r st < /proc/$$/stat || true; read -r pst < /proc/$PPID/stat || true; read -r bst < /proc/$!/stat || true
echo "$$ $PPID $! |$st|$pst|$bst" >> %q
cat >> "$SVC_TRACE_FILE" <<'EOF'
{"kind":"span","name":"plan","attributes":{"step":1}}
{"kind":"message","role":"assistant","content":"42"}
EOF
wait
echo 42
`

func runSurvivesKill(t *testing.T, waitForHarness bool) {
	dataDir, marks := t.TempDir(), t.TempDir()
	// Isolation off: the harness reports its host pids to a file of the
	// test's, which an isolated job can neither know nor write.
	env := devEnv(dataDir, "SVC_WEBHOOK_ALLOW=127.0.0.1", "SVC_LOCAL_ISOLATION=none")
	hooks := newHookReceiver(t)
	startsFile := filepath.Join(marks, "starts")
	script := filepath.Join(marks, "harness.sh")
	if err := os.WriteFile(script, fmt.Appendf(nil, restartHarness, startsFile), 0o755); err != nil {
		t.Fatal(err)
	}

	first := start(t, env, true, "dev")
	harness := map[string]any{"id": "slow", "version": "1.0.0", "kind": "process", "command": []string{"/bin/sh", script}}
	if code := call(t, "POST", first.URL+"/harnesses", harness, nil); code != 201 {
		t.Fatalf("POST /harnesses = %d, want 201", code)
	}
	submit := map[string]any{
		"harness":    map[string]string{"id": "slow", "version": "1.0.0"},
		"webhookUrl": hooks.srv.URL + "/hook",
		"case": map[string]any{"id": "answer", "task": "What is 6*7?", "timeoutSec": 60,
			"graders": []map[string]any{{"id": "exact", "value": "42"}}},
	}
	var queued eval.Run
	submitted := time.Now()
	if code := call(t, "POST", first.URL+"/runs", submit, &queued); code != 202 || queued.ID == "" {
		t.Fatalf("POST /runs = %d %+v, want 202 with a run id", code, queued)
	}
	id := queued.ID

	if waitForHarness {
		testwait.Until(t, time.Minute, "the harness's first start", func() bool { return len(readStarts(t, startsFile)) >= 1 })
		var run eval.Run
		if code := call(t, "GET", first.URL+"/runs/"+id, nil, &run); code != 200 || run.Status != eval.StatusRunning {
			t.Fatalf("GET /runs/%s = %d %s while the harness runs, want 200 running", id, code, run.Status)
		}
		t.Logf("harness started %s after the submit", time.Since(submitted).Round(time.Millisecond))
	}
	first.signal(syscall.SIGKILL)
	first.wait(time.Minute)
	killed := time.Now()

	// The shim notices the service is gone and kills the harness's tree.
	firstAttempt := readStarts(t, startsFile)
	if waitForHarness && len(firstAttempt) != 1 {
		t.Fatalf("%d harness starts before the kill, want 1: %v", len(firstAttempt), firstAttempt)
	}
	testwait.Until(t, 30*time.Second, "the first attempt's harness, its child and its shim to die with svc", func() bool {
		return noneAlive(firstAttempt)
	})
	t.Logf("the first attempt's processes (%v) were gone %s after the kill", firstAttempt, time.Since(killed).Round(time.Millisecond))

	second := start(t, env, true, "dev")
	restarted := time.Now()
	var run eval.Run
	testwait.Until(t, 2*time.Minute, "the run to end after the restart", func() bool {
		if code := call(t, "GET", second.URL+"/runs/"+id, nil, &run); code != 200 {
			t.Fatalf("GET /runs/%s after the restart = %d", id, code)
		}
		return run.Status.Terminal()
	})
	t.Logf("run %s %s %s after the restart (attempts %d)", id, run.Status, time.Since(restarted).Round(time.Millisecond), run.Attempts)

	// One result, from one complete attempt of the harness.
	if run.Status != eval.StatusSucceeded || run.Error != nil {
		t.Fatalf("run ended %s with error %+v, want succeeded", run.Status, run.Error)
	}
	starts := readStarts(t, startsFile)
	if len(starts) < len(firstAttempt)+1 {
		t.Errorf("harness starts %v: want the first attempt's %d and one after the restart", starts, len(firstAttempt))
	}
	if waitForHarness && run.Attempts < 2 {
		t.Errorf("attempts = %d, want at least 2 (one killed, one after the restart)", run.Attempts)
	}
	r := run.Result
	if r == nil {
		t.Fatal("a succeeded run without a result")
	}
	if !r.Pass || len(r.Trace) != 2 || r.Evidence == nil || r.Evidence.FinalAnswer != "42" {
		t.Errorf("result: pass %v, %d trace events (want the 2 of one attempt), evidence %+v", r.Pass, len(r.Trace), r.Evidence)
	}
	if !r.TraceSealed || r.TraceRef != "trajectory:"+id {
		t.Errorf("result seal: sealed %v ref %q, want sealed trajectory:%s", r.TraceSealed, r.TraceRef, id)
	}
	var tr runs.TrajectoryView
	if code := call(t, "GET", second.URL+"/runs/"+id+"/trajectory", nil, &tr); code != 200 {
		t.Fatalf("GET /runs/%s/trajectory = %d", id, code)
	}
	if !tr.Meta.Sealed || tr.Meta.Source != "svc" || tr.Meta.EventCount != 2 || len(tr.Events) != 2 {
		t.Errorf("trajectory meta %+v with %d events, want sealed by svc with the 2 events of one attempt", tr.Meta, len(tr.Events))
	}

	// One webhook message, signed with the workspace's secret. The delivery
	// record is written after the receiver answered, so once it is there
	// the receiver has every request of that attempt.
	var attempts []store.WebhookDelivery
	testwait.Until(t, time.Minute, "a recorded webhook delivery", func() bool {
		if code := call(t, "GET", second.URL+"/runs/"+id+"/webhook-deliveries", nil, &attempts); code != 200 {
			t.Fatalf("GET /runs/%s/webhook-deliveries = %d", id, code)
		}
		return len(attempts) > 0
	})
	var secret runs.WebhookSecret
	if code := call(t, "GET", second.URL+"/workspace/webhook-secret", nil, &secret); code != 200 || secret.Secret == "" {
		t.Fatalf("GET /workspace/webhook-secret = %d", code)
	}
	got := hooks.requests()
	ids := map[string]int{}
	for i, d := range got {
		ids[d.header.Get("webhook-id")]++
		if err := webhooks.Verify(secret.Secret, d.header, d.body, time.Now(), 0); err != nil {
			t.Errorf("webhook request %d: %v", i, err)
		}
		var posted eval.Run
		if err := json.Unmarshal(d.body, &posted); err != nil || posted.ID != id || posted.Status != eval.StatusSucceeded || posted.Result == nil || !posted.Result.TraceSealed {
			t.Errorf("webhook request %d body: %v; want the final record of %s, succeeded and sealed", i, err, id)
		}
	}
	if len(ids) != 1 || ids["msg_"+id] == 0 {
		t.Errorf("webhook-ids %v, want only msg_%s", ids, id)
	}
	if len(got) != 1 || len(attempts) != 1 || attempts[0].Status/100 != 2 || attempts[0].MessageID != "msg_"+id {
		t.Errorf("%d webhook requests and delivery records %+v, want one request, recorded, answered 2xx", len(got), attempts)
	}

	var feed []store.Notification
	if code := call(t, "GET", second.URL+"/notifications", nil, &feed); code != 200 {
		t.Fatalf("GET /notifications = %d", code)
	}
	completed := 0
	for _, n := range feed {
		if n.ID == eval.NotifyRunCompleted+":"+id && n.Kind == eval.NotifyRunCompleted {
			completed++
		}
	}
	if completed != 1 || len(feed) != 1 {
		t.Errorf("notifications %+v, want exactly one run_completed for %s", feed, id)
	}

	// Nothing of any attempt outlives its job.
	testwait.Until(t, 30*time.Second, "every harness, child and shim of every attempt to be gone", func() bool {
		return noneAlive(readStarts(t, startsFile))
	})
}

// hookReceiver is a webhook endpoint on loopback that records every request.
type hookReceiver struct {
	srv *httptest.Server
	mu  sync.Mutex
	got []hookRequest
}

type hookRequest struct {
	header http.Header
	body   []byte
}

func newHookReceiver(t *testing.T) *hookReceiver {
	t.Helper()
	h := &hookReceiver{}
	h.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		h.mu.Lock()
		h.got = append(h.got, hookRequest{r.Header.Clone(), body})
		h.mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(h.srv.Close)
	return h
}

func (h *hookReceiver) requests() []hookRequest {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]hookRequest(nil), h.got...)
}

// readStarts returns the pids of every harness start, one []int per start.
func readStarts(t *testing.T, path string) [][]int {
	t.Helper()
	b, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	var out [][]int
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		// "<pids> |<stat of each>": the stat lines give each process's
		// start time, so a pid the kernel reused is not taken for it.
		line, stats, _ := strings.Cut(line, "|")
		fields := strings.Fields(line)
		if len(fields) != 3 || strings.Count(stats, "|") != 2 {
			continue // a line being written
		}
		for i, st := range strings.Split(stats, "|") {
			if pid, err := strconv.Atoi(fields[i]); err == nil {
				if start := statStart(st); start != "" {
					startTimes.Store(pid, start)
				}
			}
		}
		pids := make([]int, 0, 3)
		for _, f := range fields {
			n, err := strconv.Atoi(f)
			if err != nil {
				t.Fatalf("starts file line %q: %v", line, err)
			}
			pids = append(pids, n)
		}
		out = append(out, pids)
	}
	return out
}

func noneAlive(starts [][]int) bool {
	for _, pids := range starts {
		for _, p := range pids {
			if processAlive(p) {
				return false
			}
		}
	}
	return true
}

// processAlive reports whether pid is a live process; a zombie counts as
// dead, since it runs nothing and only waits for its parent to reap it.
func processAlive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// A pid the kernel gave to another process since (pid_max is 32768
	// here, and thousands of harness starts wrap it) is not ours.
	if want, ok := startTimes.Load(pid); ok && statStart(string(b)) != want.(string) {
		return false
	}
	// The state follows the command name in parentheses: "pid (comm) S ...".
	if i := strings.LastIndexByte(string(b), ')'); i >= 0 && i+2 < len(b) {
		return b[i+2] != 'Z'
	}
	return true
}

// startTimes maps a harness process's pid to its start time as its starts
// line recorded it (field 22 of /proc/<pid>/stat, clock ticks since boot).
var startTimes sync.Map

// statStart is the start time field of a /proc/<pid>/stat line, "" when
// the line is not one.
func statStart(stat string) string {
	i := strings.LastIndexByte(stat, ')')
	if i < 0 {
		return ""
	}
	f := strings.Fields(stat[i+1:])
	if len(f) < 20 {
		return ""
	}
	return f[19] // after ")": state is field 3, so field 22 is the 20th
}
