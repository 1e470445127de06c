package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"svc/drivers/local"
	"svc/eval"
	"svc/internal/testwait"
)

// isolationProbe is a harness that tries, as issue 11 found a harness
// could, to read the service's environment (SVC_INTERNAL_TOKEN through
// /proc), its data directory, another run's work area, and to signal the
// service. It prints one verdict per attempt, then "done".
const isolationProbe = `
if cat /proc/*/environ 2>/dev/null | tr '\0' '\n' | grep -q '^SVC_INTERNAL_TOKEN='; then echo env-read; else echo env-refused; fi
if cat %[1]q/svc.db >/dev/null 2>&1; then echo data-read; else echo data-refused; fi
if cat %[4]q/%[2]s/work/answer >/dev/null 2>&1; then echo area-read; else echo area-refused; fi
if kill -0 %[3]d 2>/dev/null; then echo signal-sent; else echo signal-refused; fi
if kill -9 %[3]d 2>/dev/null; then echo kill-sent; else echo kill-refused; fi
echo done
`

// TestLocalJobsCannotReachTheService runs the probe through the real
// binary while another run is alive: every attempt fails.
func TestLocalJobsCannotReachTheService(t *testing.T) {
	dataDir, scripts := t.TempDir(), jobDir(t)
	svc := start(t, devEnv(dataDir, "SVC_INTERNAL_TOKEN=e2e-internal-token-value"), true, "dev")

	sleeper := filepath.Join(scripts, "sleeper.sh")
	if err := os.WriteFile(sleeper, []byte("echo private > \"$SVC_WORK_DIR/answer\"\nsleep 30\necho slept\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	register := func(id, script string) {
		h := map[string]any{"id": id, "version": "1.0.0", "kind": "process", "command": []string{"/bin/sh", script}}
		if code := call(t, "POST", svc.URL+"/harnesses", h, nil); code != 201 {
			t.Fatalf("POST /harnesses %s = %d, want 201", id, code)
		}
	}
	register("sleeper", sleeper)
	submit := func(harness string) string {
		body := map[string]any{"harness": map[string]string{"id": harness, "version": "1.0.0"},
			"case": map[string]any{"id": "c", "task": "t", "timeoutSec": 60}}
		var run eval.Run
		if code := call(t, "POST", svc.URL+"/runs", body, &run); code != 202 {
			t.Fatalf("POST /runs %s = %d, want 202", harness, code)
		}
		return run.ID
	}
	other := submit("sleeper")
	// Where svc dev puts the work areas: a tmpfs when there is one.
	root, _ := local.DefaultRoot(dataDir)
	testwait.Until(t, time.Minute, "the other run's answer file", func() bool {
		_, err := os.Stat(filepath.Join(root, other, "work", "answer"))
		return err == nil
	})

	probe := filepath.Join(scripts, "probe.sh")
	if err := os.WriteFile(probe, fmt.Appendf(nil, isolationProbe, dataDir, other, svc.cmd.Process.Pid, root), 0o755); err != nil {
		t.Fatal(err)
	}
	register("probe", probe)
	id := submit("probe")
	var run eval.Run
	testwait.Until(t, time.Minute, "the probe run to end", func() bool {
		if code := call(t, "GET", svc.URL+"/runs/"+id, nil, &run); code != 200 {
			t.Fatalf("GET /runs/%s = %d", id, code)
		}
		return run.Status.Terminal()
	})
	if run.Result == nil || run.Result.Evidence == nil {
		t.Fatalf("probe run %s ended without a result: %+v", run.Status, run.Error)
	}
	got := strings.Fields(run.Result.Evidence.FinalAnswer)
	want := []string{"env-refused", "data-refused", "area-refused", "signal-refused", "kill-refused", "done"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("the probe answered %q, want %q", got, want)
	}
	if strings.Contains(run.Result.Evidence.FinalAnswer, "e2e-internal-token-value") {
		t.Errorf("the internal token reached a job")
	}
	// The service is alive and answers.
	if code := call(t, "GET", svc.URL+"/healthz", nil, nil); code != 200 {
		t.Errorf("GET /healthz after the probe = %d, want 200", code)
	}
}
