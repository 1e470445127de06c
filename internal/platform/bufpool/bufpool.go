// Package bufpool reuses large byte buffers: the OTLP door's request
// bodies, canonical events and joined rows are hundreds of kilobytes an
// export, and allocating them anew was much of what the garbage collector
// reclaimed.
package bufpool

import "sync"

// Pool holds *[]byte buffers of at most Max bytes of capacity.
type Pool struct {
	Max  int
	pool sync.Pool
}

// Get returns a buffer of length 0 and capacity at least n.
func (p *Pool) Get(n int) *[]byte {
	if b, ok := p.pool.Get().(*[]byte); ok && cap(*b) >= n {
		*b = (*b)[:0]
		return b
	}
	b := make([]byte, 0, n)
	return &b
}

// Put gives b back, holding buf (b's storage, perhaps grown since Get);
// nothing may read buf after. A buffer past Max is left to the collector.
func (p *Pool) Put(b *[]byte, buf []byte) {
	if b == nil || cap(buf) > p.Max {
		return
	}
	*b = buf[:0]
	p.pool.Put(b)
}
