package oauth

import (
	"crypto/sha256"
	"slices"
	"sync"
	"time"

	"github.com/toolroute/toolroute/authz"
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

// callers caches verified callers by their token's SHA-256 digest, with
// the key the token is bound to (its "cnf" claim's "jkt", "" if none).
// The bearer is not kept: it is the token, given back on a hit.
type callers struct {
	c *cache[[sha256.Size]byte, verified]
}

// verified is what a verification found of a token.
type verified struct {
	caller authz.Caller
	jkt    string
}

func newCallers(max int) callers {
	return callers{newCache[[sha256.Size]byte, verified](max)}
}

// get returns the caller of token and the key it is bound to, if cached
// and not ended at now.
func (cs callers) get(token string, now time.Time) (authz.Caller, string, bool) {
	e, ok := cs.c.get(sha256.Sum256([]byte(token)), now)
	if ok {
		e.caller.Roles = slices.Clone(e.caller.Roles)
		e.caller.Scopes = slices.Clone(e.caller.Scopes)
		e.caller.Bearer = token
	}
	return e.caller, e.jkt, ok
}

// put caches c as the caller of token, bound to jkt, until until.
func (cs callers) put(token string, c authz.Caller, jkt string, until time.Time) {
	c.Bearer = ""
	c.Roles = slices.Clone(c.Roles)
	c.Scopes = slices.Clone(c.Scopes)
	cs.c.put(sha256.Sum256([]byte(token)), verified{c, jkt}, until)
}
