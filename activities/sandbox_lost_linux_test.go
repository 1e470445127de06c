//go:build linux

package activities

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"svc/drivers/local/sandbox"
	"svc/internal/domain/eval"
	"svc/internal/testing/testimage"
	"svc/store/records"
	"svc/store/sqlite/sqlitetest"
)

// TestLostSandboxesResumesACapturesPause (issue 32): after a restart, a
// live session whose container a killed world capture left paused is not
// lost: the reconcile finds it running again (the driver resumes it), so
// the worker does not settle it orphaned; a session whose container is
// gone still is.
func TestLostSandboxesResumesACapturesPause(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("sandboxes need root")
	}
	ctx := context.Background()
	root := t.TempDir()
	rt1, err := sandbox.New(sandbox.Options{Root: root})
	if err != nil {
		t.Fatal(err)
	}
	if err := rt1.Available(); err != nil {
		t.Skip(err)
	}
	st := sqlitetest.New(t)
	now := time.Now().UTC()
	for _, id := range []string{"sbx-paused", "sbx-gone"} {
		if _, err := rt1.Create(ctx, id, testimage.Busybox(t), sandbox.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = rt1.Remove(context.Background(), id) })
		row, err := records.Row(eval.Run{ID: id, Tenant: "ws", Status: eval.StatusRunning, Kind: eval.KindSandbox,
			Lifetime: eval.LifetimeSession, CreatedAt: now, UpdatedAt: now,
			Session: &eval.Session{ExpiresAt: now.Add(time.Hour), ComputeID: id, Host: "host-a", Snapshots: []eval.SessionSnapshot{}}})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := st.CreateRun(ctx, row); err != nil {
			t.Fatal(err)
		}
	}
	runc := func(args ...string) {
		t.Helper()
		if out, err := exec.Command("runc", append([]string{"--root", filepath.Join(root, "runc")}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("runc %v: %v: %s", args, err, out)
		}
	}
	// What a kill in the middle of Changes leaves: its mark, then the
	// pause (drivers/local/sandbox pauseForCapture).
	if err := os.WriteFile(filepath.Join(root, "sessions", "sbx-paused", "capture-paused"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	runc("pause", "sbx-paused")
	runc("delete", "--force", "sbx-gone")

	// The restarted worker's runtime on the same root.
	rt2, err := sandbox.New(sandbox.Options{Root: root})
	if err != nil {
		t.Fatal(err)
	}
	a := &Activities{Store: st, Host: "host-a", Sandbox: &Sandboxes{Runtime: rt2}}
	lost, err := a.LostSandboxes(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(lost) != 1 || lost[0].RunID != "sbx-gone" {
		t.Fatalf("lost = %+v, want only sbx-gone (sbx-paused was paused by a capture, and resumes)", lost)
	}
	if info, err := rt2.Lookup(ctx, "sbx-paused"); err != nil || info.State != sandbox.StateRunning {
		t.Fatalf("sbx-paused after the reconcile: %v %+v, want running", err, info)
	}
	res, err := rt2.Exec(ctx, "sbx-paused", "echo alive", 10*time.Second)
	if err != nil || string(res.Stdout) != "alive\n" {
		t.Fatalf("exec after the reconcile: %v %q", err, res.Stdout)
	}
}
