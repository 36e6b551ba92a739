package oauth

import (
	"math/rand/v2"
	"sync"
	"time"
)

// Retries of an authorization server that does not answer (discovery, a
// first key set) back off from firstRetry, doubling up to maxRetry: a
// server that comes back is used again within seconds (the first retries
// come 1, 2, 4 s after the failures), and one that stays down is asked
// at most once per maxRetry, never flooded.
const (
	firstRetry = time.Second
	maxRetry   = 8 * time.Second
)

// backoff says when a failed fetch may be tried again. Its zero value
// allows a try at once. It is safe for concurrent use.
type backoff struct {
	max time.Duration // 0: maxRetry

	mu       sync.Mutex
	failures int
	next     time.Time
}

// wait is how long to wait from now before the next try (0: try now).
func (b *backoff) wait(now time.Time) time.Duration {
	b.mu.Lock()
	defer b.mu.Unlock()
	return max(b.next.Sub(now), 0)
}

// failed records a failed try at now, and returns how long until the next
// one: firstRetry doubled per failure in a row, at most max, less a random
// tenth (so that replicas that failed together do not retry together).
func (b *backoff) failed(now time.Time) time.Duration {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.failures++
	limit := b.max
	if limit <= 0 {
		limit = maxRetry
	}
	d := limit
	if b.failures < 16 {
		d = min(firstRetry<<(b.failures-1), limit)
	}
	d -= rand.N(d/10 + 1)
	b.next = now.Add(d)
	return d
}

// succeeded forgets the failures.
func (b *backoff) succeeded() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.failures, b.next = 0, time.Time{}
}
