package local

import (
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"

	"svc/drivers"
)

// MaxConcurrent bounds the jobs that run at once, counted by the jobs
// themselves: each leaves a file in a shared directory while it runs and
// prints how many it sees there.
func TestMaxConcurrent(t *testing.T) {
	d := newDriver(t, Options{MaxConcurrent: 2})
	dir := t.TempDir()
	script := fmt.Sprintf(`touch %[1]q/$SVC_RUN_ID; ls %[1]q | wc -l; sleep 0.2; rm %[1]q/$SVC_RUN_ID`, dir)
	var wg sync.WaitGroup
	seen := make([]int, 6)
	for i := range seen {
		wg.Go(func() {
			res, err := d.Run(t.Context(), drivers.Job{RunID: fmt.Sprintf("run-%d", i), Command: sh(script)})
			if err != nil || res.ExitCode != 0 {
				t.Errorf("job %d: %v, exit %d, stderr %q", i, err, res.ExitCode, res.StderrTail)
				return
			}
			seen[i], _ = strconv.Atoi(strings.TrimSpace(res.Stdout))
		})
	}
	wg.Wait()
	for i, n := range seen {
		if n < 1 || n > 2 {
			t.Errorf("job %d saw %d jobs running, want 1 or 2 (MaxConcurrent 2)", i, n)
		}
	}
}
