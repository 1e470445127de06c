package auth_test

import (
	"fmt"
	"testing"
	"time"

	"svc/auth"
)

func TestFailureLimiterWindow(t *testing.T) {
	l := auth.NewFailureLimiter(3, time.Minute, 0)
	now := time.Unix(1_700_000_000, 0)
	l.SetNow(func() time.Time { return now })
	const a = "192.0.2.1:4000"

	for i := range 3 {
		if !l.Allow(a) {
			t.Fatalf("refused after %d failures; limit is 3", i)
		}
		l.Fail(a)
	}
	if l.Allow(a) {
		t.Fatal("allowed after 3 failures in a minute")
	}
	if l.Allow("192.0.2.1:4001") {
		t.Error("another port of the same address is allowed; want the address counted, not the port")
	}
	if !l.Allow("192.0.2.2:4000") {
		t.Error("another address is refused")
	}
	now = now.Add(59 * time.Second)
	if l.Allow(a) {
		t.Error("allowed before the window ended")
	}
	now = now.Add(time.Second)
	if !l.Allow(a) {
		t.Error("still refused after the window ended")
	}
	l.Fail(a) // a new window starts with one failure
	if !l.Allow(a) {
		t.Error("refused after one failure in a new window")
	}
}

func TestFailureLimiterDisabled(t *testing.T) {
	l := auth.NewFailureLimiter(0, 0, 0)
	for range 100 {
		l.Fail("192.0.2.1")
	}
	if !l.Allow("192.0.2.1") {
		t.Error("a limit of 0 refused an address")
	}
}

func TestFailureLimiterBoundedMemory(t *testing.T) {
	l := auth.NewFailureLimiter(2, time.Minute, 100)
	now := time.Unix(1_700_000_000, 0)
	l.SetNow(func() time.Time { return now })
	l.Fail("198.51.100.1")
	l.Fail("198.51.100.1")
	for i := range 1000 {
		now = now.Add(time.Millisecond)
		l.Fail(fmt.Sprintf("198.18.%d.%d", i/256, i%256))
	}
	if got := l.Len(); got > 100 {
		t.Errorf("tracking %d addresses; want at most 100", got)
	}
	// The oldest offender was evicted (memory stays bounded), the newest kept.
	if !l.Allow("198.51.100.1") {
		t.Error("evicted address is still refused")
	}
	l.Fail("198.18.3.231")
	if l.Allow("198.18.3.231") {
		t.Error("recent address was forgotten")
	}
	// Entries whose window has passed are swept on the next failure.
	now = now.Add(2 * time.Minute)
	l.Fail("203.0.113.1")
	if got := l.Len(); got != 1 {
		t.Errorf("after the window, tracking %d addresses; want 1", got)
	}
}

func TestAddrKey(t *testing.T) {
	tests := []struct{ in, want string }{
		{"192.0.2.1:80", "192.0.2.1"},
		{"192.0.2.1", "192.0.2.1"},
		{"[::ffff:192.0.2.1]:80", "192.0.2.1"},
		{"[2001:db8:1:2:3:4:5:6]:443", "2001:db8:1:2::/64"},
		{"2001:db8:1:2:ffff::1", "2001:db8:1:2::/64"},
		{"[fe80::1%eth0]:80", "fe80::/64"},
		{"not-an-ip", "not-an-ip"},
		{"", ""},
	}
	for _, tt := range tests {
		if got := auth.AddrKey(tt.in); got != tt.want {
			t.Errorf("addrKey(%q) = %q; want %q", tt.in, got, tt.want)
		}
	}
}

// TestFailureGuard: the first limit failures of an address or of a key
// prefix are not over the limit, later ones are; the two are counted apart,
// and the window ends the limit.
func TestFailureGuard(t *testing.T) {
	if g := auth.NewFailureGuard(0); g.Fail("192.0.2.1", "") {
		t.Error("a disabled guard limited a failure")
	}
	g := auth.NewFailureGuard(2)
	now := time.Unix(1_700_000_000, 0)
	g.SetNow(func() time.Time { return now })
	key, _ := auth.NewAPIKey(auth.APIKeyPrefix)
	for i, tc := range []struct {
		addr, credential string
		want             bool
	}{
		{"192.0.2.1:1", "", false},
		{"192.0.2.1:2", "", false},
		{"192.0.2.1:3", "", true},       // the address reached 2
		{"192.0.2.2:1", key, false},     // another address; the prefix has 1
		{"192.0.2.3:1", key, false},     // the prefix has 2
		{"192.0.2.4:1", key, true},      // the prefix reached 2, from a fresh address
		{"192.0.2.4:1", "a.b.c", false}, // not a key: only the address counts (1 before)
	} {
		if got := g.Fail(tc.addr, tc.credential); got != tc.want {
			t.Errorf("failure %d from %s: limited = %v; want %v", i+1, tc.addr, got, tc.want)
		}
	}
	now = now.Add(time.Minute)
	if g.Fail("192.0.2.1:4", key) {
		t.Error("limited after the window ended")
	}
}
