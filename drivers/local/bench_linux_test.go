//go:build linux

package local

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"

	"svc/drivers"
)

// BenchmarkRunNoop runs /bin/true through the driver, with the supervisor
// as svc-shim or as this binary re-executed, isolated or not, per job or
// as the job server (pool), and reports the CPU of the whole thing (this
// process and every child, the job server included) per job:
//
//	go test -run '^$' -bench RunNoop -benchtime 200x ./drivers/local/
//
// The "-64" variants keep 64 jobs in flight; the "-net" variants give jobs
// the isolated network (slirp4netns, whose CPU counts among the
// children's), against the host's network of the others:
//
//	go test -run '^$' -bench 'RunNoop/pool(-net)?-64$' -benchtime 2000x ./drivers/local/
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
		name     string
		shim     string
		isolate  bool
		pool     bool
		inFlight int
		net      bool
	}{
		{"reexec", "", false, false, 1, false},
		{"shim", shimPath, false, false, 1, false},
		{"shim-isolated", shimPath, true, false, 1, false},
		{"pool", shimPath, true, true, 1, false},
		{"shim-isolated-64", shimPath, true, false, 64, false},
		{"pool-64", shimPath, true, true, 64, false},
		{"shim-isolated-net", shimPath, true, false, 1, true},
		{"pool-net", shimPath, true, true, 1, true},
		{"pool-net-64", shimPath, true, true, 64, true},
	} {
		b.Run(tc.name, func(b *testing.B) {
			dataDir := b.TempDir()
			o := Options{Root: filepath.Join(dataDir, "work"), ShimPath: tc.shim}
			switch {
			case tc.pool:
				o.Isolate = &Isolation{UIDs: &DefaultUIDs, Hide: []string{dataDir}}
			case tc.isolate:
				o.Isolate = &Isolation{UID: uid, GID: gid, Hide: []string{dataDir}}
			}
			if tc.net {
				slirp := FindSlirp()
				if slirp == "" {
					b.Skipf("%s is not installed", SlirpName)
				}
				// The API's address, as svc forwards it.
				o.Isolate.Network = &Network{Slirp: slirp, Forward: []string{"127.0.0.1:8080"}}
			}
			// The job server's CPU, and its harnesses', reach this
			// process's children's rusage when it is reaped: the clock
			// runs from before it starts until after Close has reaped it.
			self0, kids0 := cpuTime()
			d := New(o)
			if err := d.Check(b.Context()); err != nil {
				b.Skipf("cannot isolate here: %v", err)
			}
			b.ResetTimer()
			jobs := make(chan int)
			var wg sync.WaitGroup
			for range tc.inFlight {
				wg.Go(func() {
					for i := range jobs {
						res, err := d.Run(b.Context(), drivers.Job{RunID: fmt.Sprintf("noop-%d", i), Command: []string{"/bin/true"}})
						if err != nil || res.ExitCode != 0 {
							b.Errorf("Run: %+v, %v", res, err)
						}
					}
				})
			}
			for i := range b.N {
				jobs <- i
			}
			close(jobs)
			wg.Wait()
			b.StopTimer()
			if err := d.Close(); err != nil {
				b.Error(err)
			}
			self1, kids1 := cpuTime()
			perJob := func(ns int64) float64 { return float64(ns) / 1e6 / float64(b.N) }
			b.ReportMetric(perJob(self1-self0+kids1-kids0), "cpu-ms/job")
			// The driver's share, and the supervisors' and harnesses'.
			b.ReportMetric(perJob(self1-self0), "driver-ms/job")
			b.ReportMetric(perJob(kids1-kids0), "children-ms/job")
		})
	}
}

// cpuTime is the user and system CPU of this process and of its reaped
// children, in nanoseconds.
func cpuTime() (self, children int64) {
	var s, c syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &s)
	_ = syscall.Getrusage(syscall.RUSAGE_CHILDREN, &c)
	sum := func(r syscall.Rusage) int64 { return r.Utime.Nano() + r.Stime.Nano() }
	return sum(s), sum(c)
}
