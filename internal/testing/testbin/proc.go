package testbin

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// Start starts a test server whose output goes to dir/name.log and stops
// it (SIGTERM, then SIGKILL after 10 s) when t ends, printing the end of
// its log if t failed. exited is closed when the process has ended.
func Start(t testing.TB, dir, name, path string, args ...string) (exited <-chan struct{}, logPath string) {
	t.Helper()
	logf, err := os.Create(filepath.Join(dir, name+".log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(path, args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = sysProcAttr()
	if err := cmd.Start(); err != nil {
		logf.Close()
		t.Fatalf("starting %s: %v", name, err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		defer logf.Close()
		terminate(cmd.Process)
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-done
		}
		if t.Failed() {
			t.Logf("%s log (tail):\n%s", name, Tail(logf.Name()))
		}
	})
	return done, logf.Name()
}

// Tail is the end of a log file.
func Tail(path string) string {
	b, _ := os.ReadFile(path)
	if len(b) > 8<<10 {
		b = b[len(b)-8<<10:]
	}
	return string(b)
}

// FreePort is a loopback port the OS just handed out.
func FreePort(t testing.TB) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// Listen opens a TCP listener at addr, closed when the test ends, and
// serves each connection it accepts with serve, in a goroutine of its own;
// with a nil serve a connection is held open until the test ends.
func Listen(t testing.TB, addr string, serve func(net.Conn)) net.Listener {
	t.Helper()
	l, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			if serve == nil {
				t.Cleanup(func() { c.Close() })
				continue
			}
			go serve(c)
		}
	}()
	return l
}
