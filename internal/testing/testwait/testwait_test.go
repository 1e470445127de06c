package testwait

import (
	"fmt"
	"regexp"
	"runtime"
	"testing"
	"time"
)

// fakeTB records a failure and stops its goroutine, as testing's Fatalf does.
type fakeTB struct{ msg string }

func (*fakeTB) Helper() {}
func (f *fakeTB) Fatalf(format string, args ...any) {
	f.msg = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

// run calls wait on a fake TB in its own goroutine and returns the failure
// message, "" when the wait succeeded.
func run(wait func(TB)) string {
	f := &fakeTB{}
	done := make(chan struct{})
	go func() { defer close(done); wait(f) }()
	<-done
	return f.msg
}

func TestUntilReturnsOnceTheConditionHolds(t *testing.T) {
	n := 0
	if msg := run(func(tb TB) { Until(tb, time.Minute, "the third check", func() bool { n++; return n == 3 }) }); msg != "" {
		t.Fatalf("Until failed: %s", msg)
	}
	if n != 3 {
		t.Errorf("Until checked %d times, want 3 (it stops at the first true)", n)
	}
}

func TestUntilGivesUpNamingWhatAndHowLong(t *testing.T) {
	start := time.Now()
	msg := run(func(tb TB) { Until(tb, 50*time.Millisecond, "the flag", func() bool { return false }) })
	if elapsed := time.Since(start); elapsed < 50*time.Millisecond {
		t.Errorf("Until gave up after %s, before its timeout", elapsed)
	}
	if !regexp.MustCompile(`^testwait: gave up after 50ms \(\d+ checks\) waiting for the flag$`).MatchString(msg) {
		t.Errorf("failure = %q, want what was awaited and for how long", msg)
	}
}

func TestUntilValue(t *testing.T) {
	n := 0
	var got int
	msg := run(func(tb TB) {
		got = UntilValue(tb, time.Minute, "two", func() (int, bool) { n++; return n, n == 2 })
	})
	if msg != "" || got != 2 {
		t.Errorf("UntilValue = %d, failure %q; want 2 and no failure", got, msg)
	}

	type progress struct{ Done, Total int }
	msg = run(func(tb TB) {
		UntilValue(tb, 30*time.Millisecond, "the batch to end", func() (progress, bool) { return progress{3, 8}, false })
	})
	if !regexp.MustCompile(`^testwait: gave up after 30ms \(\d+ checks\) waiting for the batch to end; last observed: \{Done:3 Total:8\}$`).MatchString(msg) {
		t.Errorf("failure = %q, want the last observed value", msg)
	}
}

// A condition that fails the test itself stops the wait at once.
func TestUntilConditionMayFail(t *testing.T) {
	checks := 0
	msg := run(func(tb TB) {
		Until(tb, time.Minute, "never", func() bool {
			checks++
			tb.Fatalf("GET = 500")
			return false
		})
	})
	if msg != "GET = 500" || checks != 1 {
		t.Errorf("failure %q after %d checks, want the condition's own after 1", msg, checks)
	}
}
