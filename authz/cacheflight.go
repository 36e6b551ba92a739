package authz

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/toolroute/toolroute/tool"
)

// Concurrent misses of one decision (one credential and route, or one
// credential and batch of routes) are collapsed into one question to the
// inner Authorizer (golang.org/x/sync/singleflight): a caller's first
// burst of calls costs one round trip to the RBAC proxy, not one per
// call. The question runs without the first asker's cancellation (each
// asker still stops waiting when its own context ends), so that one
// client giving up does not fail the others; the inner Authorizer's own
// timeouts bound it. It re-reads the cache first: an asker that missed
// just before the previous question's answer was stored asks nothing.

// flightKey is the singleflight key of a question: a kind byte, the
// credential digest, the generation and each route, length-prefixed.
// Questions of different generations are never shared.
func flightKey(kind byte, cred *[32]byte, gen uint64, rs ...tool.Route) string {
	b := make([]byte, 0, 1+len(cred)+binary.MaxVarintLen64+len(rs)*48)
	b = append(b, kind)
	b = append(b, cred[:]...)
	b = binary.AppendUvarint(b, gen)
	for _, r := range rs {
		b = binary.AppendUvarint(b, uint64(len(r.Method)))
		b = append(b, r.Method...)
		b = binary.AppendUvarint(b, uint64(len(r.URI)))
		b = append(b, r.URI...)
	}
	return string(b)
}

// shared runs fn once for all concurrent callers with the same key, and
// returns its result, or ctx's error if ctx ends first.
func (c *cache) shared(ctx context.Context, key string, fn func(context.Context) (any, error)) (any, error) {
	detached := context.WithoutCancel(ctx)
	ch := c.flight.DoChan(key, func() (any, error) { return fn(detached) })
	select {
	case res := <-ch:
		return res.Val, res.Err
	case <-ctx.Done():
		return nil, &OutageError{Err: fmt.Errorf("authz: waiting for a decision: %w", ctx.Err())}
	}
}

// allowShared answers a missed Allow: once for all concurrent askers of
// k, caching the decision.
func (c *cache) allowShared(ctx context.Context, k cacheKey, caller Caller) error {
	_, err := c.shared(ctx, flightKey(0, &k.cred, k.gen, k.route), func(ctx context.Context) (any, error) {
		c.mu.Lock()
		allow, ok := c.lookup(k, time.Now())
		c.mu.Unlock()
		if ok {
			if allow {
				return nil, nil
			}
			return nil, &DeniedError{Route: k.route, Subject: caller.Subject, Reason: "denied (cached decision)"}
		}
		err := c.a.Allow(ctx, caller, k.route)
		var denied *DeniedError
		switch {
		case err == nil:
			allow = true
		case errors.As(err, &denied):
			allow = false
		default:
			return nil, err // outages and unauthenticated answers are not cached
		}
		c.mu.Lock()
		c.store(k, allow, time.Now())
		c.mu.Unlock()
		return nil, err
	})
	return err
}

// allowManyShared answers a batch of missed routes (distinct): once for
// all concurrent askers of the same batch, caching the decisions.
func (c *cache) allowManyShared(ctx context.Context, cred [32]byte, gen uint64, caller Caller, ask []tool.Route) ([]bool, error) {
	v, err := c.shared(ctx, flightKey(1, &cred, gen, ask...), func(ctx context.Context) (any, error) {
		got := make([]bool, len(ask))
		c.mu.Lock()
		hits, now := 0, time.Now()
		for j, r := range ask {
			allow, ok := c.lookup(cacheKey{cred: cred, gen: gen, route: r}, now)
			if ok {
				got[j] = allow
				hits++
			}
		}
		c.mu.Unlock()
		if hits == len(ask) {
			return got, nil
		}
		got, err := c.a.AllowMany(ctx, caller, ask)
		if err != nil {
			return nil, err
		}
		if len(got) != len(ask) {
			return nil, &OutageError{Err: fmt.Errorf("authz: AllowMany answered %d decisions for %d routes", len(got), len(ask))}
		}
		c.mu.Lock()
		now = time.Now()
		for j, r := range ask {
			c.store(cacheKey{cred: cred, gen: gen, route: r}, got[j], now)
		}
		c.mu.Unlock()
		return got, nil
	})
	if err != nil {
		return nil, err
	}
	return v.([]bool), nil
}
