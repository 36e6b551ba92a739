package authz

import (
	"container/list"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"sync"
	"time"

	"golang.org/x/sync/singleflight"

	"github.com/toolroute/toolroute/tool"
)

// Cached returns an Authorizer that remembers a's decisions for ttl, at
// most max of them (the least recently used go first).
//
// A decision is keyed by a SHA-256 digest of the caller's subject, roles
// and bearer (the bearer itself is never stored) and by the route. Only
// answers are cached, allowed or denied: outages, unauthenticated answers
// and any other error are passed on and asked again next time. A
// revocation therefore takes effect within ttl. Concurrent misses of
// the same decision are asked once: a caller's first burst of calls costs
// one question to a, not one per call.
//
// The Authorizer returned is a [ReadyChecker] asking a's Ready, when a
// has one (and ready when it has none): a cache in front of a proxy is
// as ready as the proxy.
//
// Cached panics if a is nil, ttl is not positive or max is less than 1.
func Cached(a Authorizer, ttl time.Duration, max int) Authorizer {
	switch {
	case a == nil:
		panic("authz: Cached: nil Authorizer")
	case ttl <= 0:
		panic(fmt.Sprintf("authz: Cached: ttl is %v, want a positive duration", ttl))
	case max < 1:
		panic(fmt.Sprintf("authz: Cached: max is %d, want at least 1", max))
	}
	return &cache{a: a, ttl: ttl, max: max, entries: map[cacheKey]*list.Element{}}
}

// Ready asks the cached Authorizer's Ready, if it has one.
func (c *cache) Ready(ctx context.Context) error {
	if rc, ok := c.a.(ReadyChecker); ok {
		return rc.Ready(ctx)
	}
	return nil
}

type cache struct {
	a   Authorizer
	ttl time.Duration
	max int

	flight singleflight.Group // concurrent misses, asked once (cacheflight.go)

	mu      sync.Mutex
	entries map[cacheKey]*list.Element // of *cacheEntry
	lru     list.List                  // front: most recently used
}

type cacheKey struct {
	cred  [sha256.Size]byte
	route tool.Route
}

type cacheEntry struct {
	key     cacheKey
	allow   bool
	expires time.Time
}

// credential returns the digest of everything about c a decision may
// depend on: subject, bearer and roles, each length-prefixed.
func credential(c Caller) [sha256.Size]byte {
	var stack [256]byte
	b := stack[:0]
	b = binary.AppendUvarint(b, uint64(len(c.Subject)))
	b = append(b, c.Subject...)
	b = binary.AppendUvarint(b, uint64(len(c.Bearer)))
	b = append(b, c.Bearer...)
	b = binary.AppendUvarint(b, uint64(len(c.Roles)))
	for _, r := range c.Roles {
		b = binary.AppendUvarint(b, uint64(len(r)))
		b = append(b, r...)
	}
	return sha256.Sum256(b)
}

// lookup returns the cached decision for k; c.mu must be held.
func (c *cache) lookup(k cacheKey, now time.Time) (allow, ok bool) {
	el, ok := c.entries[k]
	if !ok {
		return false, false
	}
	e := el.Value.(*cacheEntry)
	if !now.Before(e.expires) {
		c.lru.Remove(el)
		delete(c.entries, k)
		return false, false
	}
	c.lru.MoveToFront(el)
	return e.allow, true
}

// store caches a decision; c.mu must be held.
func (c *cache) store(k cacheKey, allow bool, now time.Time) {
	if el, ok := c.entries[k]; ok {
		e := el.Value.(*cacheEntry)
		e.allow, e.expires = allow, now.Add(c.ttl)
		c.lru.MoveToFront(el)
		return
	}
	for c.lru.Len() >= c.max {
		old := c.lru.Back()
		c.lru.Remove(old)
		delete(c.entries, old.Value.(*cacheEntry).key)
	}
	c.entries[k] = c.lru.PushFront(&cacheEntry{key: k, allow: allow, expires: now.Add(c.ttl)})
}

func (c *cache) Allow(ctx context.Context, caller Caller, r tool.Route) error {
	k := cacheKey{cred: credential(caller), route: r}
	c.mu.Lock()
	allow, ok := c.lookup(k, time.Now())
	c.mu.Unlock()
	if ok {
		if allow {
			return nil
		}
		return &DeniedError{Route: r, Subject: caller.Subject, Reason: "denied (cached decision)"}
	}
	return c.allowShared(ctx, k, caller)
}

func (c *cache) AllowMany(ctx context.Context, caller Caller, rs []tool.Route) ([]bool, error) {
	cred := credential(caller)
	out := make([]bool, len(rs))
	var miss []int // indexes into rs of the first occurrence of each missing route
	var missAt map[tool.Route]int
	c.mu.Lock()
	now := time.Now()
	for i, r := range rs {
		allow, ok := c.lookup(cacheKey{cred: cred, route: r}, now)
		if ok {
			out[i] = allow
			continue
		}
		if missAt == nil {
			missAt = map[tool.Route]int{}
		}
		if _, dup := missAt[r]; !dup {
			missAt[r] = len(miss)
			miss = append(miss, i)
		}
	}
	c.mu.Unlock()
	if len(miss) == 0 {
		return out, nil
	}
	ask := make([]tool.Route, len(miss))
	for j, i := range miss {
		ask[j] = rs[i]
	}
	got, err := c.allowManyShared(ctx, cred, caller, ask)
	if err != nil {
		return nil, err
	}
	for i, r := range rs {
		if j, ok := missAt[r]; ok {
			out[i] = got[j]
		}
	}
	return out, nil
}
