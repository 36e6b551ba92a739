package ratelimit

import (
	"context"
	"testing"
	"time"
)

// TestMemoryForgetsIdleBuckets: a bucket idle until full again is
// forgotten, without changing any decision.
func TestMemoryForgetsIdleBuckets(t *testing.T) {
	now := time.Unix(1000, 0)
	m := NewLimiter(Limit{Rate: 2, Period: time.Second, Burst: 2}).(*memory)
	m.now = func() time.Time { return now }
	ctx := context.Background()
	allow := func(key string) bool {
		r, _ := m.Allow(ctx, key)
		return r.Allowed
	}
	if !allow("a") || !allow("a") || allow("a") {
		t.Fatal("burst of 2 not enforced")
	}
	allow("b")
	now = now.Add(500 * time.Millisecond) // one token back for a
	if !allow("a") || allow("a") {
		t.Error("refill of one token per 500ms not enforced")
	}
	now = now.Add(900 * time.Millisecond) // b idle 1.4s ≥ 1s to fill; a 0.9s
	allow("c")
	m.mu.Lock()
	_, hasB := m.buckets["b"]
	n := len(m.buckets)
	m.mu.Unlock()
	if hasB || n != 2 {
		t.Errorf("after a sweep: b kept %v, %d buckets; want b forgotten, 2 left (a, c)", hasB, n)
	}
}
