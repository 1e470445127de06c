//go:build linux

package local

import (
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"svc/drivers"
)

// BenchmarkWorkArea creates and removes a job's work area (the
// directories, the case, trace and secrets files) as the driver does for
// every attempt, on the disk of the data directory and on DefaultRoot's
// tmpfs, one at a time and 64 at once, and reports the CPU of the process
// per area (docs/decisions.md, "Work areas on a tmpfs by default"):
//
//	go test -run '^$' -bench WorkArea -benchtime 2000x ./drivers/local/
func BenchmarkWorkArea(b *testing.B) {
	disk := b.TempDir()
	tmpfs, _ := DefaultRoot(b.TempDir())
	if !strings.HasPrefix(tmpfs, shmDir+"/") {
		b.Skipf("%s is not a tmpfs with room here", shmDir)
	}
	b.Cleanup(func() { _ = os.RemoveAll(tmpfs) })
	for _, root := range []struct{ name, dir string }{{"disk", disk}, {"tmpfs", tmpfs}} {
		for _, inFlight := range []int{1, 64} {
			b.Run(fmt.Sprintf("%s-%d", root.name, inFlight), func(b *testing.B) {
				d := New(Options{Root: root.dir})
				job := drivers.Job{Case: []byte(`{"task":"q1"}`), Secrets: map[string]string{"K": "v"}}
				var next atomic.Int64
				var ru0, ru1 syscall.Rusage
				_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru0)
				b.ResetTimer()
				var wg sync.WaitGroup
				for range inFlight {
					wg.Go(func() {
						for {
							i := next.Add(1)
							if i > int64(b.N) {
								return
							}
							l := d.newLayout(fmt.Sprintf("run-%d", i), "")
							if err := prepareArea(job, l); err != nil {
								b.Error(err)
								return
							}
							d.removeArea(l)
						}
					})
				}
				wg.Wait()
				b.StopTimer()
				_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru1)
				cpu := time.Duration(ru1.Utime.Nano() + ru1.Stime.Nano() - ru0.Utime.Nano() - ru0.Stime.Nano())
				b.ReportMetric(float64(cpu.Microseconds())/1000/float64(b.N), "cpu-ms/area")
			})
		}
	}
}
