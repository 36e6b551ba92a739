package server

import (
	"context"
	"sync"
)

// drain tracks a transport's in-flight tool calls so that shutdown can
// stop accepting calls, wait for the running ones, and then cancel them
// (and every other request still running: see [chain.middleware]).
// A transport puts it in the context its sessions are connected with; the
// call middleware finds it there (context values reach every handler,
// whatever the transport does with cancellation).
type drain struct {
	hard   context.Context // done: cancel every in-flight request
	cancel context.CancelFunc

	mu     sync.Mutex
	closed bool          // no new calls
	n      int           // in-flight calls
	idle   chan struct{} // closed when closed && n == 0
}

type drainKey struct{}

func newDrain() *drain {
	hard, cancel := context.WithCancel(context.Background())
	return &drain{hard: hard, cancel: cancel, idle: make(chan struct{})}
}

func withDrain(ctx context.Context, d *drain) context.Context {
	return context.WithValue(ctx, drainKey{}, d)
}

func drainFrom(ctx context.Context) *drain {
	d, _ := ctx.Value(drainKey{}).(*drain)
	return d
}

// begin admits a call; it reports false once the drain has begun.
func (d *drain) begin() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return false
	}
	d.n++
	return true
}

func (d *drain) end() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.n--
	if d.closed && d.n == 0 {
		close(d.idle)
	}
}

// close stops admitting calls.
func (d *drain) close() {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return
	}
	d.closed = true
	if d.n == 0 {
		close(d.idle)
	}
}

// wait stops admitting calls and waits until none is in flight or ctx is
// done. When ctx is done first, it cancels whatever still runs (every
// request, not only calls), and reports ctx's error. Otherwise other
// requests still running are left to finish: the caller cancels them
// when it gives up on them.
func (d *drain) wait(ctx context.Context) error {
	d.close()
	select {
	case <-d.idle:
		return nil
	case <-ctx.Done():
		d.cancel()
		return ctx.Err()
	}
}
