package auth

import (
	"container/list"
	"net"
	"net/netip"
	"sync"
	"time"
)

// Defaults of NewFailureLimiter.
const (
	defaultFailWindow   = time.Minute
	defaultFailMaxAddrs = 10000
)

// FailureLimiter counts failed authentications per source address in a fixed
// window and refuses an address that reached the limit until its window
// ends. Successes are never counted. Memory is bounded: past maxAddrs
// addresses the least recently failing one is forgotten (an attacker with
// that many addresses gains nothing from per-address limits anyway, and
// refusing new addresses instead would lock out real users).
type FailureLimiter struct {
	limit    int
	window   time.Duration
	maxAddrs int
	now      func() time.Time

	mu      sync.Mutex
	entries map[string]*list.Element // of *failEntry
	lru     *list.List               // front = most recent failure
}

type failEntry struct {
	key      string
	start    time.Time // start of the current window
	last     time.Time // time of the latest failure; orders the LRU
	failures int
}

// NewFailureLimiter refuses an address after limit failures within window
// (one minute when 0), tracking at most maxAddrs addresses (10,000 when 0).
// A limit of 0 or less never refuses.
func NewFailureLimiter(limit int, window time.Duration, maxAddrs int) *FailureLimiter {
	if window <= 0 {
		window = defaultFailWindow
	}
	if maxAddrs <= 0 {
		maxAddrs = defaultFailMaxAddrs
	}
	return &FailureLimiter{
		limit:    limit,
		window:   window,
		maxAddrs: maxAddrs,
		now:      time.Now,
		entries:  make(map[string]*list.Element),
		lru:      list.New(),
	}
}

// Allow reports whether addr may try to authenticate now.
func (l *FailureLimiter) Allow(addr string) bool {
	if l.limit <= 0 {
		return true
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	el, ok := l.entries[addrKey(addr)]
	if !ok {
		return true
	}
	e := el.Value.(*failEntry)
	return l.now().Sub(e.start) >= l.window || e.failures < l.limit
}

// Fail records one failed authentication from addr.
func (l *FailureLimiter) Fail(addr string) {
	key := addrKey(addr)
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	l.sweep(now)
	if el, ok := l.entries[key]; ok {
		e := el.Value.(*failEntry)
		if now.Sub(e.start) >= l.window {
			e.start, e.failures = now, 0
		}
		e.failures++
		e.last = now
		l.lru.MoveToFront(el)
		return
	}
	for len(l.entries) >= l.maxAddrs {
		l.remove(l.lru.Back())
	}
	l.entries[key] = l.lru.PushFront(&failEntry{key: key, start: now, last: now, failures: 1})
}

// Len is the number of addresses tracked, for tests and metrics.
func (l *FailureLimiter) Len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.entries)
}

// sweep forgets addresses whose latest failure is older than a window: their
// window has ended, so they would be allowed anyway. The LRU is ordered by
// latest failure, so only the back needs looking at.
func (l *FailureLimiter) sweep(now time.Time) {
	for el := l.lru.Back(); el != nil; el = l.lru.Back() {
		if now.Sub(el.Value.(*failEntry).last) < l.window {
			return
		}
		l.remove(el)
	}
}

func (l *FailureLimiter) remove(el *list.Element) {
	delete(l.entries, el.Value.(*failEntry).key)
	l.lru.Remove(el)
}

// addrKey normalises a source address: the port is dropped, an IPv4-mapped
// IPv6 address counts as IPv4, and an IPv6 address counts as its /64 (one
// host usually owns the whole /64, so per-address counting would be free to
// evade). Anything unparsable is used as given.
func addrKey(addr string) string {
	host := addr
	if h, _, err := net.SplitHostPort(addr); err == nil {
		host = h
	}
	ip, err := netip.ParseAddr(host)
	if err != nil {
		return host
	}
	ip = ip.Unmap().WithZone("")
	if ip.Is6() {
		if pfx, err := ip.Prefix(64); err == nil {
			return pfx.String()
		}
	}
	return ip.String()
}
