//go:build linux

package local

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"

	"svc/drivers"
)

// BenchmarkRunNoop runs /bin/true through the driver, one job at a time,
// with the supervisor as svc-shim or as this binary re-executed, isolated
// or not, and reports the CPU of the whole thing (this process and every
// child) per job:
//
//	go test -run '^$' -bench RunNoop -benchtime 200x ./drivers/local/
func BenchmarkRunNoop(b *testing.B) {
	shimPath := filepath.Join(b.TempDir(), ShimName)
	if out, err := exec.Command("go", "build", "-o", shimPath, "svc/cmd/svc-shim").CombinedOutput(); err != nil {
		b.Fatalf("building svc-shim: %v\n%s", err, out)
	}
	uid, gid, err := ResolveUser("")
	if err != nil {
		b.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		shim    string
		isolate bool
	}{
		{"reexec", "", false},
		{"shim", shimPath, false},
		{"shim-isolated", shimPath, true},
	} {
		b.Run(tc.name, func(b *testing.B) {
			dataDir := b.TempDir()
			o := Options{Root: filepath.Join(dataDir, "work"), ShimPath: tc.shim}
			if tc.isolate {
				o.Isolate = &Isolation{UID: uid, GID: gid, Hide: []string{dataDir}}
			}
			d := New(o)
			if err := d.Check(b.Context()); err != nil {
				b.Skipf("cannot isolate here: %v", err)
			}
			cpu0 := cpuTime()
			b.ResetTimer()
			for i := range b.N {
				res, err := d.Run(b.Context(), drivers.Job{RunID: fmt.Sprintf("noop-%d", i), Command: []string{"/bin/true"}})
				if err != nil || res.ExitCode != 0 {
					b.Fatalf("Run: %+v, %v", res, err)
				}
			}
			b.StopTimer()
			b.ReportMetric(float64(cpuTime()-cpu0)/1e6/float64(b.N), "cpu-ms/job")
		})
	}
}

// cpuTime is the user and system CPU of this process and its reaped
// children, in nanoseconds.
func cpuTime() int64 {
	var self, kids syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &self)
	_ = syscall.Getrusage(syscall.RUSAGE_CHILDREN, &kids)
	sum := func(r syscall.Rusage) int64 { return r.Utime.Nano() + r.Stime.Nano() }
	return sum(self) + sum(kids)
}
