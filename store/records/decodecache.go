package records

import (
	"hash/fnv"
	"sync"
	"time"

	"svc/internal/domain/eval"
	"svc/store"
)

// DecodeCache remembers decoded runs, so that a read rebuilding a batch
// of thousands of child runs (GET /scorecards/:id, polled while the batch
// runs) decodes only the children that changed since the last read. A
// run is reused only when its id, update time, length and FNV-64a digest
// of its stored document all match; the runs it returns are shared and
// must not be modified.
type DecodeCache struct {
	mu  sync.Mutex
	max int
	m   map[string]cachedRun
}

type cachedRun struct {
	updated time.Time
	size    int
	sum     uint64
	run     eval.Run
}

// NewDecodeCache returns a cache of at most max runs; when it is full it
// starts afresh (a batch larger than max is simply decoded every time).
func NewDecodeCache(max int) *DecodeCache {
	return &DecodeCache{max: max, m: make(map[string]cachedRun)}
}

// FromRow is FromRow through the cache.
func (c *DecodeCache) FromRow(r store.Run) (eval.Run, error) {
	h := fnv.New64a()
	_, _ = h.Write(r.Doc)
	sum := h.Sum64()
	c.mu.Lock()
	e, ok := c.m[r.ID]
	c.mu.Unlock()
	if ok && e.updated.Equal(r.UpdatedAt) && e.size == len(r.Doc) && e.sum == sum {
		return e.run, nil
	}
	run, err := FromRow(r)
	if err != nil {
		return eval.Run{}, err
	}
	c.mu.Lock()
	if len(c.m) >= c.max {
		c.m = make(map[string]cachedRun)
	}
	c.m[r.ID] = cachedRun{updated: r.UpdatedAt, size: len(r.Doc), sum: sum, run: run}
	c.mu.Unlock()
	return run, nil
}
