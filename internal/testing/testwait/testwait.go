// Package testwait is the one way a test waits for work it cannot observe
// directly (a workflow, a process, a server): it polls a condition with a
// deadline, never sleeps a fixed time, and when it gives up says what it
// awaited, for how long, and the last state it saw.
package testwait

import (
	"fmt"
	"time"
)

// TB is the part of testing.TB a wait uses.
type TB interface {
	Helper()
	Fatalf(format string, args ...any)
}

// First and Max bound the pause between two checks: it starts at First,
// so a condition that holds soon is seen soon, and doubles up to Max, so a
// long wait does not hammer what it polls.
const (
	First = 10 * time.Millisecond
	Max   = 100 * time.Millisecond
)

// Until polls cond until it returns true, and fails t (from the calling
// goroutine, so cond may itself call t.Fatal) once timeout has passed:
// "gave up after 30s (52 checks) waiting for <what>".
func Until(t TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	UntilValue(t, timeout, what, func() (struct{}, bool) { return struct{}{}, cond() })
}

// UntilValue polls f until its second result is true and returns its
// first; once timeout has passed it fails t with the last value f
// returned, so the failure shows where the work stood.
func UntilValue[T any](t TB, timeout time.Duration, what string, f func() (T, bool)) T {
	t.Helper()
	start := time.Now()
	pause := First
	for checks := 1; ; checks++ {
		v, ok := f()
		if ok {
			return v
		}
		if waited := time.Since(start); waited >= timeout {
			t.Fatalf("testwait: gave up after %s (%d checks) waiting for %s%s", timeout, checks, what, last(v))
			return v // a TB whose Fatalf returns
		}
		time.Sleep(min(pause, max(timeout-time.Since(start), 0)))
		pause = min(2*pause, Max)
	}
}

// last renders the last observed value, or nothing for Until's.
func last(v any) string {
	if _, none := v.(struct{}); none {
		return ""
	}
	return fmt.Sprintf("; last observed: %+v", v)
}
