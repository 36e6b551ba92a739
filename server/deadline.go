package server

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/toolroute/toolroute/internal/core/call"
	"github.com/toolroute/toolroute/tool"
)

// A call's context ends at its deadline ([Options.CallTimeout]), at a
// hard shutdown, or when its stateless HTTP request ends, each with its
// own cause. One cancelable context serves all three: [withCallDeadline]
// arms a pooled timer that cancels it at the deadline, and reports the
// deadline as a context made by context.WithDeadline would (Deadline,
// and DeadlineExceeded from Err). This costs a call about half the
// allocations of context.WithTimeoutCause stacked on a cancelable
// context.

// callContext is a call's cancelable context that knows its deadline.
type callContext struct {
	context.Context // a context.WithCancelCause context
	cancel          context.CancelCauseFunc
	deadline        time.Time             // zero: none
	timer           *callTimer            // nil: none
	call            *call.Tool[tool.Call] // what it carries under call.Key (nil: nothing)
}

// Value answers call.Key itself, sparing a call one context.
func (c *callContext) Value(key any) any {
	if _, ok := key.(call.Key); ok && c.call != nil {
		return c.call
	}
	return c.Context.Value(key)
}

func (c *callContext) Deadline() (time.Time, bool) {
	if c.deadline.IsZero() {
		return c.Context.Deadline()
	}
	return c.deadline, true
}

// Err reports DeadlineExceeded for a call that ended at its deadline, as
// a context of context.WithDeadline does.
func (c *callContext) Err() error {
	err := c.Context.Err()
	if err != nil && errors.Is(context.Cause(c.Context), ErrCallTimeout) {
		return context.DeadlineExceeded
	}
	return err
}

// end releases the call's context; call it when the call is over.
func (c *callContext) end() {
	if c.timer != nil {
		c.timer.stop()
	}
	c.cancel(nil)
}

// callTimer cancels a call at its deadline. Timers are pooled: a call
// takes one, arms it, and gives it back if it stopped it in time.
type callTimer struct {
	t      *time.Timer
	mu     sync.Mutex
	cancel context.CancelCauseFunc
}

// callTimers holds stopped timers for reuse. Unlike a sync.Pool, which
// a garbage collection empties (every few calls, at the allocation rate
// of the SDK's JSON layer), it keeps them: up to its capacity, the most
// calls in flight that reuse timers.
var callTimers = make(chan *callTimer, 1024)

// getTimer returns a stopped timer, from callTimers or new.
func getTimer() *callTimer {
	select {
	case ct := <-callTimers:
		return ct
	default:
	}
	ct := &callTimer{}
	ct.t = time.AfterFunc(time.Hour, ct.fire)
	ct.t.Stop()
	return ct
}

func (ct *callTimer) fire() {
	ct.mu.Lock()
	cancel := ct.cancel
	ct.mu.Unlock()
	if cancel != nil {
		cancel(ErrCallTimeout)
	}
}

// stop disarms ct. Only a timer stopped before it fired goes back to the
// pool: one that fired (or is firing) may still cancel its old call.
func (ct *callTimer) stop() {
	if ct.t.Stop() {
		ct.mu.Lock()
		ct.cancel = nil
		ct.mu.Unlock()
		select {
		case callTimers <- ct:
		default: // full: let it go
		}
	}
}

// withCallDeadline returns the call's context: cancelable with a cause
// (its cancel), ended at timeout (0: no deadline) with cause
// [ErrCallTimeout], unless ctx ends first. Call its end when the call is
// over.
func withCallDeadline(ctx context.Context, timeout time.Duration) *callContext {
	cctx, cancel := context.WithCancelCause(ctx)
	c := &callContext{Context: cctx, cancel: cancel}
	if timeout <= 0 {
		return c
	}
	deadline := time.Now().Add(timeout)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		return c // the parent ends first: as context.WithDeadline, keep its
	}
	c.deadline = deadline
	c.timer = getTimer()
	c.timer.mu.Lock()
	c.timer.cancel = cancel
	c.timer.mu.Unlock()
	c.timer.t.Reset(timeout)
	return c
}
