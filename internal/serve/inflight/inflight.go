// Package inflight tracks work in flight, so that a server can wait for
// it, cancel it, and refuse more while it stops. It is the one tracker
// toolroute's transports and shutdown share: the server's tool calls
// (keyed by request), a stateful HTTP handler's requests, and a stdio
// connection's calls (keyed by JSON-RPC id, with the client's
// cancellations). Nothing here is API.
package inflight

import (
	"context"
	"sync"
)

// A Tracker follows work in flight, one entry per key, each entry marked
// once cancelled. It must be created with [New]. Its methods may be called
// concurrently.
type Tracker[K comparable] struct {
	abort context.Context
	stop  context.CancelFunc

	mu        sync.Mutex
	m         map[K]bool    // in flight; true once cancelled
	cancelled int           // entries of m marked cancelled
	closed    bool          // Close was called: Add refuses
	changed   chan struct{} // if non-nil, closed at the next Cancel or Done
}

// New returns an empty tracker.
func New[K comparable]() *Tracker[K] {
	abort, stop := context.WithCancel(context.Background())
	return &Tracker[K]{abort: abort, stop: stop, m: map[K]bool{}}
}

// Add records k in flight and reports true; it reports false, recording
// nothing, after [Tracker.Close] or when k is in flight already.
func (t *Tracker[K]) Add(k K) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if _, dup := t.m[k]; dup || t.closed {
		return false
	}
	t.m[k] = false
	return true
}

// AddAll records every key of ks in flight and reports true; or reports
// false, recording nothing, when one of them is in flight already or
// after Close.
func (t *Tracker[K]) AddAll(ks []K) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return false
	}
	for _, k := range ks {
		if _, dup := t.m[k]; dup {
			return false
		}
	}
	for _, k := range ks {
		t.m[k] = false
	}
	return true
}

// Has reports whether k is in flight.
func (t *Tracker[K]) Has(k K) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	_, ok := t.m[k]
	return ok
}

// Cancel marks k cancelled, if it is in flight.
func (t *Tracker[K]) Cancel(k K) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if c, ok := t.m[k]; ok && !c {
		t.m[k] = true
		t.cancelled++
		t.changedLocked()
	}
}

// changedLocked wakes the waiters; t.mu must be held.
func (t *Tracker[K]) changedLocked() {
	if t.changed != nil {
		close(t.changed)
		t.changed = nil
	}
}

// Cancelled reports whether k is in flight and marked cancelled.
func (t *Tracker[K]) Cancelled(k K) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.m[k]
}

// Done removes k. It is a no-op for a key not in flight.
func (t *Tracker[K]) Done(k K) {
	t.mu.Lock()
	defer t.mu.Unlock()
	c, ok := t.m[k]
	if !ok {
		return
	}
	if c {
		t.cancelled--
	}
	delete(t.m, k)
	t.changedLocked()
}

// AnyCancelled reports whether an entry in flight is marked cancelled.
func (t *Tracker[K]) AnyCancelled() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.cancelled > 0
}

// Len returns the number of entries in flight.
func (t *Tracker[K]) Len() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.m)
}

// Close makes Add refuse from now on; what is in flight stays.
func (t *Tracker[K]) Close() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.closed = true
}

// Wait waits until nothing is in flight, or ctx is done (it then returns
// ctx's error). It does not close the tracker: entries added meanwhile
// are waited for too.
func (t *Tracker[K]) Wait(ctx context.Context) error {
	return t.waitUntil(ctx, func(cancelled bool) bool { return false })
}

// WaitCancelled waits until every entry in flight is marked cancelled
// (or none is in flight), or ctx is done (it then returns ctx's error).
func (t *Tracker[K]) WaitCancelled(ctx context.Context) error {
	return t.waitUntil(ctx, func(cancelled bool) bool { return cancelled })
}

// waitUntil waits until ok holds for every entry's mark, or ctx is done.
func (t *Tracker[K]) waitUntil(ctx context.Context, ok func(cancelled bool) bool) error {
	for {
		t.mu.Lock()
		done := true
		for _, c := range t.m {
			if !ok(c) {
				done = false
				break
			}
		}
		if done {
			t.mu.Unlock()
			return nil
		}
		if t.changed == nil {
			t.changed = make(chan struct{})
		}
		changed := t.changed
		t.mu.Unlock()
		select {
		case <-changed:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// Abort ends [Tracker.Aborted]'s context: whoever runs work in flight
// stops it.
func (t *Tracker[K]) Abort() { t.stop() }

// Aborted returns a context that ends at [Tracker.Abort].
func (t *Tracker[K]) Aborted() context.Context { return t.abort }
