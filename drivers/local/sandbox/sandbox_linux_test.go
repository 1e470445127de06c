//go:build linux

package sandbox

import (
	"context"
	"os"
	"os/exec"
	"testing"
	"time"

	"svc/internal/testing/testimage"
)

// newRuntime returns a Runtime on a fresh root, skipping t where sandboxes
// cannot run (failing it in CI, which installs runc).
func newRuntime(t testing.TB) *Runtime {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("sandboxes need root")
	}
	r, err := New(Options{Root: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Available(); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		infos, _ := r.List(ctx)
		for _, i := range infos {
			if err := r.Remove(ctx, i.ID); err != nil {
				t.Errorf("removing %s: %v", i.ID, err)
			}
		}
	})
	return r
}

func TestSmoke(t *testing.T) {
	r := newRuntime(t)
	ctx := context.Background()
	img := testimage.Busybox(t)
	start := time.Now()
	info, err := r.Create(ctx, "s1", img, CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("create %v: %+v", time.Since(start), info)
	res, err := r.Exec(ctx, "s1", "echo hello; id; ifconfig -a; ls -la /; pwd", 10*time.Second)
	t.Logf("%v %+v\n%s\n%s", err, res, res.Stdout, res.Stderr)
	_ = exec.Command
}
