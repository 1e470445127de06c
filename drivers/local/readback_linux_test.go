//go:build linux

package local

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"svc/drivers"
	"svc/internal/testing/testwait"
)

// TestTraceFileSymlinkIsRefused is issue 30's first finding: a job that
// replaces its trace file with a symbolic link, to a file only root can
// read or to the trace file of another running job, must not get that
// content into its own result.
func TestTraceFileSymlinkIsRefused(t *testing.T) { eachMode(t, testTraceFileSymlinkIsRefused) }

func testTraceFileSymlinkIsRefused(t *testing.T, m mode) {
	d := m.driver(t, Options{})
	const rootSecret, victimSecret = "root-only-content-4f1c", "victim-trace-content-9b2e"
	rootOnly := filepath.Join(t.TempDir(), "root-only")
	if err := os.WriteFile(rootOnly, []byte(`{"kind":"message","role":"assistant","content":"`+rootSecret+`"}`+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}

	// The victim: another run whose trace holds its own content, alive
	// until the test lets it go.
	shared := jobDir(t, d)
	release := filepath.Join(shared, "release")
	victimTrace := filepath.Join(d.Root(), areaName("victim"), "trace.jsonl")
	victimDone := make(chan error, 1)
	go func() {
		_, err := d.Run(context.WithoutCancel(t.Context()), drivers.Job{
			RunID: "victim",
			Command: sh(`echo '{"kind":"message","role":"assistant","content":"` + victimSecret + `"}' > "$SVC_TRACE_FILE"
while [ ! -e "$RELEASE" ]; do sleep 0.05; done`),
			Env:     map[string]string{"RELEASE": release},
			Timeout: time.Minute,
		})
		victimDone <- err
	}()
	defer func() {
		_ = os.WriteFile(release, nil, 0o644)
		if err := <-victimDone; err != nil {
			t.Errorf("the victim's Run: %v", err)
		}
	}()
	testwait.Until(t, 30*time.Second, "the victim's trace", func() bool {
		b, _ := os.ReadFile(victimTrace)
		return strings.Contains(string(b), victimSecret)
	})

	for _, tt := range []struct{ name, target, secret string }{
		{"a root-only file", rootOnly, rootSecret},
		{"another run's trace", victimTrace, victimSecret},
	} {
		t.Run(tt.name, func(t *testing.T) {
			res, err := d.Run(t.Context(), drivers.Job{
				RunID:   "thief",
				Command: sh(`rm -f "$SVC_TRACE_FILE" && ln -s "$TARGET" "$SVC_TRACE_FILE" && echo linked`),
				Env:     map[string]string{"TARGET": tt.target},
				Timeout: 30 * time.Second,
			})
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
			if res.Stdout != "linked\n" {
				t.Fatalf("the harness did not plant its link: stdout %q, stderr %q", res.Stdout, res.StderrTail)
			}
			if strings.Contains(string(res.Trace), tt.secret) {
				t.Errorf("the thief's trace holds %s's content: %q", tt.name, res.Trace)
			}
			if !strings.Contains(res.TraceRefused, "symbolic link") {
				t.Errorf("TraceRefused = %q, want it to say the trace file was a symbolic link", res.TraceRefused)
			}
			assertAreaRemoved(t, d, "thief")
		})
	}
	if b, err := os.ReadFile(victimTrace); err != nil || !strings.Contains(string(b), victimSecret) {
		t.Errorf("the victim's trace file was changed: %q, %v", b, err)
	}
}

// TestTraceFileFifoDoesNotHang is issue 30's second finding: a FIFO at
// SVC_TRACE_FILE, which nobody writes, must not keep the run (and its
// slot) past the job's end.
func TestTraceFileFifoDoesNotHang(t *testing.T) { eachMode(t, testTraceFileFifoDoesNotHang) }

func testTraceFileFifoDoesNotHang(t *testing.T, m mode) {
	d := m.driver(t, Options{MaxConcurrent: 1})
	const timeout = 20 * time.Second
	fifo := filepath.Join(d.Root(), areaName("fifo"), "trace.jsonl")
	type ran struct {
		res drivers.Result
		err error
	}
	done := make(chan ran, 1)
	begin := time.Now()
	go func() {
		res, err := d.Run(context.WithoutCancel(t.Context()), drivers.Job{
			RunID:   "fifo",
			Command: sh(`rm -f "$SVC_TRACE_FILE" && mkfifo "$SVC_TRACE_FILE" && echo planted`),
			Timeout: timeout,
		})
		done <- ran{res, err}
	}()
	var r ran
	select {
	case r = <-done:
	case <-time.After(timeout):
		// Open the FIFO's other end, so that the stuck read ends and the
		// test binary with it.
		if fd, err := syscall.Open(fifo, syscall.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
			_ = syscall.Close(fd)
		}
		<-done
		t.Fatalf("Run still reading the FIFO %s after the job's timeout of %s", fifo, timeout)
	}
	if r.err != nil {
		t.Fatalf("Run: %v", r.err)
	}
	if r.res.Stdout != "planted\n" {
		t.Fatalf("the harness did not plant its FIFO: stdout %q, stderr %q", r.res.Stdout, r.res.StderrTail)
	}
	if took := time.Since(begin); took >= timeout {
		t.Errorf("the run took %s, past its timeout of %s", took, timeout)
	}
	if !strings.Contains(r.res.TraceRefused, "FIFO") {
		t.Errorf("TraceRefused = %q, want it to say the trace file was a FIFO", r.res.TraceRefused)
	}
	// The slot is free: the next job runs.
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	if _, err := d.Run(ctx, drivers.Job{RunID: "after-fifo", Command: sh(`true`)}); err != nil {
		t.Errorf("the next job: %v", err)
	}
	assertAreaRemoved(t, d, "fifo")
}

// TestReadBack checks each kind of file readBack refuses and what it
// reads.
func TestReadBack(t *testing.T) {
	dir := t.TempDir()
	me := os.Geteuid()
	mk := func(name string, make func(p string) error) string {
		p := filepath.Join(dir, name)
		if err := make(p); err != nil {
			t.Fatal(err)
		}
		return p
	}
	regular := mk("regular", func(p string) error { return os.WriteFile(p, []byte("0123456789"), 0o600) })
	link := mk("link", func(p string) error { return os.Symlink(regular, p) })
	fifo := mk("fifo", func(p string) error { return syscall.Mkfifo(p, 0o600) })
	sub := mk("dir", func(p string) error { return os.Mkdir(p, 0o700) })
	sock := mk("sock", func(p string) error {
		l, err := net.Listen("unix", p)
		if err == nil {
			t.Cleanup(func() { _ = l.Close() })
		}
		return err
	})
	tests := []struct {
		name, path  string
		owner       int
		max         int64
		want        string
		wantRefused string
		wantErr     error
	}{
		{name: "regular", path: regular, owner: me, max: 100, want: "0123456789"},
		{name: "capped", path: regular, owner: -1, max: 4, want: "0123"},
		{name: "missing", path: filepath.Join(dir, "missing"), owner: me, max: 100, wantErr: errNoFile},
		{name: "symlink", path: link, owner: me, max: 100, wantRefused: "it is a symbolic link"},
		{name: "fifo", path: fifo, owner: me, max: 100, wantRefused: "it is a FIFO"},
		{name: "directory", path: sub, owner: me, max: 100, wantRefused: "it is a directory"},
		{name: "socket", path: sock, owner: me, max: 100, wantRefused: "it is a socket"},
		{name: "device", path: "/dev/null", owner: me, max: 100, wantRefused: "it is a device"},
		{name: "another owner", path: regular, owner: me + 1, max: 100, wantRefused: "belongs to uid"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, refused, err := readBack(tt.path, tt.owner, tt.max, time.Minute)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("err = %v, want %v", err, tt.wantErr)
			}
			if string(got) != tt.want {
				t.Errorf("read %q, want %q", got, tt.want)
			}
			if tt.wantRefused == "" && refused != "" || !strings.Contains(refused, tt.wantRefused) {
				t.Errorf("refused = %q, want %q", refused, tt.wantRefused)
			}
		})
	}
}
