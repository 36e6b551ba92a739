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
// When a reports a generation — a method Generation(ctx) uint64, as an
// authz/reload Authorizer has — decisions are keyed by it as well: once a
// new generation (a reloaded policy) is current, no decision of an older
// one is answered, even within ttl; those entries are never asked for
// again and leave as the least recently used.
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
	c := &cache{a: a, ttl: ttl, max: max, entries: map[cacheKey]*list.Element{}}
	c.gen, _ = a.(generational)
	return c
}

// generational is an Authorizer whose decisions come from a generation
// that can change (authz/reload's): Pin fixes the generation of the
// decisions made with the context it returns, Generation tells it.
type generational interface {
	Pin(ctx context.Context) context.Context
	Generation(ctx context.Context) uint64
}

// generation pins ctx to a's current generation, if a has generations,
// and returns it with that generation (0 without): the decision asked
// with it is of the generation it is cached under.
func (c *cache) generation(ctx context.Context) (context.Context, uint64) {
	if c.gen == nil {
		return ctx, 0
	}
	ctx = c.gen.Pin(ctx)
	return ctx, c.gen.Generation(ctx)
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
	gen generational // a, if it has generations; else nil

	flight singleflight.Group // concurrent misses, asked once (cacheflight.go)

	mu      sync.Mutex
	entries map[cacheKey]*list.Element // of *cacheEntry
	lru     list.List                  // front: most recently used
}

type cacheKey struct {
	cred  [sha256.Size]byte
	gen   uint64 // the generation of a's decision (see generational)
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
	ctx, gen := c.generation(ctx)
	k := cacheKey{cred: credential(caller), gen: gen, route: r}
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
	ctx, gen := c.generation(ctx)
	cred := credential(caller)
	out := make([]bool, len(rs))
	var miss []int // indexes into rs of the first occurrence of each missing route
	var missAt map[tool.Route]int
	c.mu.Lock()
	now := time.Now()
	for i, r := range rs {
		allow, ok := c.lookup(cacheKey{cred: cred, gen: gen, route: r}, now)
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
	got, err := c.allowManyShared(ctx, cred, gen, caller, ask)
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
