package e2e

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"svc/drivers/local"
	"svc/internal/domain/eval"
	"svc/internal/testing/testwait"
)

// TestHarnessCannotReadAnotherRunsTrace is issue 30's first finding
// through the real binary: a harness that replaces its trace file with a
// symbolic link, to a file only root can read or to the trace file of
// another tenant's run that is still going, must not get that content into
// its trajectory; its result says the trace file was refused. A FIFO in
// its place (finding 2) does not keep the run going.
func TestHarnessCannotReadAnotherRunsTrace(t *testing.T) {
	dataDir, scripts := t.TempDir(), jobDir(t)
	svc := start(t, devEnv(dataDir), true, "dev")
	const victimSecret, rootSecret = "victim-trace-7d31", "root-only-5c08"

	register := func(t *testing.T, id, script string) {
		t.Helper()
		path := filepath.Join(scripts, id+".sh")
		if err := os.WriteFile(path, []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
		h := map[string]any{"id": id, "version": "1.0.0", "kind": "process", "command": []string{"/bin/sh", path}}
		if code := call(t, "POST", svc.URL+"/harnesses", h, nil); code != 201 {
			t.Fatalf("POST /harnesses %s = %d, want 201", id, code)
		}
	}
	submit := func(t *testing.T, harness string) string {
		t.Helper()
		body := map[string]any{"harness": map[string]string{"id": harness, "version": "1.0.0"},
			"case": map[string]any{"id": "c", "task": "t", "timeoutSec": 60}}
		var run eval.Run
		if code := call(t, "POST", svc.URL+"/runs", body, &run); code != 202 {
			t.Fatalf("POST /runs %s = %d, want 202", harness, code)
		}
		return run.ID
	}
	ended := func(t *testing.T, id string) eval.Run {
		t.Helper()
		var run eval.Run
		testwait.Until(t, 2*time.Minute, "run "+id+" to end", func() bool {
			if code := call(t, "GET", svc.URL+"/runs/"+id, nil, &run); code != 200 {
				t.Fatalf("GET /runs/%s = %d", id, code)
			}
			return run.Status.Terminal()
		})
		return run
	}

	// The first run writes its trace and stays alive until released.
	release := filepath.Join(scripts, "release")
	register(t, "victim", fmt.Sprintf(`echo '{"kind":"message","role":"assistant","content":"%s"}' >> "$SVC_TRACE_FILE"
while [ ! -e %q ]; do sleep 0.05; done
echo released
`, victimSecret, release))
	victim := submit(t, "victim")
	root, _ := local.DefaultRoot(dataDir)
	victimTrace := filepath.Join(root, victim, "trace.jsonl")
	testwait.Until(t, time.Minute, "the first run's trace", func() bool {
		b, _ := os.ReadFile(victimTrace)
		return bytes.Contains(b, []byte(victimSecret))
	})

	rootOnly := filepath.Join(t.TempDir(), "root-only.jsonl")
	if err := os.WriteFile(rootOnly, fmt.Appendf(nil, `{"kind":"message","role":"assistant","content":"%s"}`+"\n", rootSecret), 0o600); err != nil {
		t.Fatal(err)
	}
	link := "rm -f \"$SVC_TRACE_FILE\" && ln -s %q \"$SVC_TRACE_FILE\" && echo planted\n"
	for _, tt := range []struct{ harness, plant, secret, refused string }{
		{"thief-root", fmt.Sprintf(link, rootOnly), rootSecret, "symbolic link"},
		{"thief-area", fmt.Sprintf(link, victimTrace), victimSecret, "symbolic link"},
		// Finding 2: a FIFO nobody writes must not hold the run past its
		// timeout (60 s) nor its local slot.
		{"thief-fifo", "rm -f \"$SVC_TRACE_FILE\" && mkfifo \"$SVC_TRACE_FILE\" && echo planted\n", "", "FIFO"},
	} {
		t.Run(tt.harness, func(t *testing.T) {
			register(t, tt.harness, tt.plant)
			begin := time.Now()
			id := submit(t, tt.harness)
			run := ended(t, id)
			if took := time.Since(begin); took > 60*time.Second {
				t.Errorf("run %s took %s, past its timeout of 60s", id, took)
			}
			if run.Result == nil || run.Result.Evidence == nil {
				t.Fatalf("run %s ended %s without a result: %+v", id, run.Status, run.Error)
			}
			if got := strings.TrimSpace(run.Result.Evidence.FinalAnswer); got != "planted" {
				t.Fatalf("the harness answered %q, want planted (it did not plant its trap)", got)
			}
			traj := getBody(t, svc.URL+"/runs/"+id+"/trajectory")
			if tt.secret != "" && strings.Contains(traj, tt.secret) {
				t.Errorf("run %s's trajectory holds what its trace file pointed to:\n%s", id, traj)
			}
			if !strings.Contains(traj, "TRACE_REFUSED") || !strings.Contains(traj, tt.refused) {
				t.Errorf("run %s's trajectory does not say its trace file was refused as a %s:\n%s", id, tt.refused, traj)
			}
			if got := getBody(t, svc.URL+"/runs/"+id); tt.secret != "" && strings.Contains(got, tt.secret) {
				t.Errorf("run %s holds what its trace file pointed to:\n%s", id, got)
			}
		})
	}

	// The first run, released, keeps its own trace.
	if err := os.WriteFile(release, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if run := ended(t, victim); run.Status != eval.StatusSucceeded {
		t.Fatalf("the first run ended %s: %+v", run.Status, run.Error)
	}
	if traj := getBody(t, svc.URL+"/runs/"+victim+"/trajectory"); !strings.Contains(traj, victimSecret) {
		t.Errorf("the first run's trajectory lacks its own trace:\n%s", traj)
	}
}

// getBody returns the body of a GET that must answer 200.
func getBody(t *testing.T, url string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s = %d: %s", url, resp.StatusCode, b)
	}
	return string(b)
}
