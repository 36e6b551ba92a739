package oauth

import (
	"sync"
	"time"
)

// cache is a bounded map whose entries end at a time of their own. The
// zero value is not usable: create it with newCache.
type cache[K comparable, V any] struct {
	max int
	mu  sync.Mutex
	m   map[K]cached[V]
}

type cached[V any] struct {
	v     V
	until time.Time
}

func newCache[K comparable, V any](max int) *cache[K, V] {
	return &cache[K, V]{max: max, m: map[K]cached[V]{}}
}

// get returns k's value if it has one that has not ended at now.
func (c *cache[K, V]) get(k K, now time.Time) (V, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.m[k]
	if ok && !now.Before(e.until) {
		delete(c.m, k)
		ok = false
	}
	return e.v, ok
}

// put sets k's value until until. When the cache is full, the ended
// entries go or, if none has, an arbitrary half.
func (c *cache[K, V]) put(k K, v V, until time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.m[k]; !ok && len(c.m) >= c.max {
		now := time.Now()
		for k, e := range c.m {
			if !now.Before(e.until) {
				delete(c.m, k)
			}
		}
		for k := range c.m {
			if len(c.m) < c.max/2 {
				break
			}
			delete(c.m, k)
		}
	}
	c.m[k] = cached[V]{v: v, until: until}
}
