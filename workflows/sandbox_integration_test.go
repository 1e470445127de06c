package workflows_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"

	"svc/internal/domain/eval"
	"svc/internal/domain/flows"
	"svc/internal/orchestration"
	"svc/internal/platform/config"
	"svc/internal/testing/testimage"
)

// TestRunSandboxSessionEndToEnd runs a sandbox session through Temporal's
// real server, the real API and a real container (runc, busybox): create,
// an exec through the session workflow's exec update (the path of svc
// serve), a touch, close. Its history is the committed
// sandbox_session_closed.json that replay_test.go replays
// (-update-histories rewrites it).
func TestRunSandboxSessionEndToEnd(t *testing.T) {
	img := testimage.Busybox(t)
	if _, err := exec.LookPath("runc"); err != nil || os.Geteuid() != 0 {
		if os.Getenv("CI") == "true" {
			t.Fatal("sandbox sessions need runc and root (apt-get install runc)")
		}
		t.Skip("sandbox sessions need runc and root (apt-get install runc)")
	}
	imageDir := t.TempDir()
	p, err := layout.Write(filepath.Join(imageDir, "busybox"), empty.Index)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.AppendImage(img); err != nil {
		t.Fatal(err)
	}
	sandboxRoot := t.TempDir()
	s := newStack(t, "sqlite", func(cfg *config.Config) {
		cfg.SandboxImageDirs, cfg.SandboxRoot = imageDir, sandboxRoot
	})

	var run eval.Run
	s.call(t, "POST", "/sandboxes", fmt.Sprintf(`{"image": %q, "ttl": 600}`, filepath.Join(imageDir, "busybox")), 201, &run)
	st := &orchestration.Starter{Client: s.tc, TaskQueue: taskQueue}
	res, err := st.ExecSandbox(t.Context(), flows.SandboxExecInput{Workspace: s.ws, RunID: run.ID, Command: "echo hi > /root/f && cat /root/f", By: "test"})
	if err != nil || res.ExitCode != 0 || res.Stdout != "hi\n" {
		t.Fatalf("exec through the update = %+v, %v; want hi", res, err)
	}
	s.call(t, "POST", "/sandboxes/"+run.ID+"/touch", `{"ttl": 900}`, 200, nil)
	var closed eval.Run
	s.call(t, "POST", "/sandboxes/"+run.ID+"/close", `{}`, 200, &closed)
	if closed.Status != eval.StatusSucceeded || closed.Session == nil || closed.Session.ClosedReason != eval.ClosedByRequest {
		t.Fatalf("closed session = %s %+v, want succeeded closed", closed.Status, closed.Session)
	}
	if err := st.WaitSandbox(t.Context(), run.ID); err != nil {
		t.Fatalf("the session's workflow: %v", err)
	}
	if _, err := st.ExecSandbox(t.Context(), flows.SandboxExecInput{Workspace: s.ws, RunID: run.ID, Command: "true"}); err == nil {
		t.Error("exec through the update after close succeeded, want it refused")
	}
	saveHistory(t, s.tc, run.ID, "sandbox_session_closed")
}
