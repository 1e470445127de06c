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

// FailureLimiter counts failed authentications per source address (or, in a
// FailureGuard, per key prefix) in a fixed window and reports a source that
// reached the limit as not allowed until its window ends. Successes are
// never counted. Memory is bounded: past maxAddrs
// addresses the least recently failing one is forgotten (an attacker with
// that many addresses gains nothing from per-address limits anyway, and
// refusing new addresses instead would lock out real users).
type FailureLimiter struct {
	limit    int
	window   time.Duration
	maxAddrs int
	now      func() time.Time
	keyOf    func(string) string // normalises what is counted; addrKey

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
		keyOf:    addrKey,
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
	el, ok := l.entries[l.keyOf(addr)]
	if !ok {
		return true
	}
	e := el.Value.(*failEntry)
	return l.now().Sub(e.start) >= l.window || e.failures < l.limit
}

// Fail records one failed authentication from addr.
func (l *FailureLimiter) Fail(addr string) {
	key := l.keyOf(addr)
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

// FailureGuard applies the failed-authentication limit (SVC_AUTH_FAIL_LIMIT)
// without ever refusing a valid credential: every credential is verified,
// and only an attempt that fails is answered 429 instead of 401 once its
// source address, or the key prefix it presented, has reached the limit in
// the window. A guesser behind a NAT or a proxy therefore cannot lock the
// people who share its address out, and guesses at one key's prefix are
// limited however many addresses they come from. (Keys and invite tokens
// carry 256 random bits and OIDC tokens are signed, so guessing is hopeless
// anyway; the limit keeps failures cheap to refuse and tells clients to
// back off.)
type FailureGuard struct {
	addrs    *FailureLimiter
	prefixes *FailureLimiter
}

// NewFailureGuard limits failures to limit per address and per key prefix
// per minute; a limit of 0 or less returns nil, which never limits.
func NewFailureGuard(limit int) *FailureGuard {
	if limit <= 0 {
		return nil
	}
	g := &FailureGuard{
		addrs:    NewFailureLimiter(limit, 0, 0),
		prefixes: NewFailureLimiter(limit, 0, 0),
	}
	// Separate tables, so churning through random prefixes cannot evict
	// the addresses being counted.
	g.prefixes.keyOf = func(s string) string { return s }
	return g
}

// Fail records a failed authentication from addr that presented credential
// (the bearer token, or "" when the credential was not a key) and reports
// whether the attempt is over the limit: true when addr, or the credential's
// key prefix (KeyDisplayPrefix), had already reached it in this window.
func (g *FailureGuard) Fail(addr, credential string) (limited bool) {
	if g == nil {
		return false
	}
	limited = !g.addrs.Allow(addr)
	g.addrs.Fail(addr)
	if p := KeyDisplayPrefix(credential); p != "" {
		limited = !g.prefixes.Allow(p) || limited
		g.prefixes.Fail(p)
	}
	return limited
}
