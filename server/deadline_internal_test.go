package server

import (
	"context"
	"errors"
	"testing"
	"time"
)

func TestCallDeadline(t *testing.T) {
	ctx := withCallDeadline(context.Background(), 20*time.Millisecond)
	defer ctx.end()
	if d, ok := ctx.Deadline(); !ok || time.Until(d) > 20*time.Millisecond {
		t.Errorf("Deadline = %v, %v", d, ok)
	}
	child, cancel := context.WithCancel(ctx) // as an http.Request's
	defer cancel()
	select {
	case <-child.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("the deadline did not end the call")
	}
	if !errors.Is(ctx.Err(), context.DeadlineExceeded) || !errors.Is(context.Cause(ctx), ErrCallTimeout) || !errors.Is(context.Cause(child), ErrCallTimeout) {
		t.Errorf("Err %v, Cause %v, child's Cause %v", ctx.Err(), context.Cause(ctx), context.Cause(child))
	}
}

// TestCallDeadlineReuse: a timer given back after a call ended in time
// never ends a later call early.
func TestCallDeadlineReuse(t *testing.T) {
	for range 100 {
		withCallDeadline(context.Background(), time.Hour).end()
	}
	ctx := withCallDeadline(context.Background(), time.Hour)
	defer ctx.end()
	ctx.cancel(ErrShuttingDown)
	if ctx.Err() != context.Canceled || context.Cause(ctx) != ErrShuttingDown {
		t.Errorf("Err %v, Cause %v", ctx.Err(), context.Cause(ctx))
	}
	ctx2 := withCallDeadline(context.Background(), time.Hour)
	defer ctx2.end()
	time.Sleep(10 * time.Millisecond)
	if ctx2.Err() != nil {
		t.Errorf("a later call ended: %v", context.Cause(ctx2))
	}
}

func TestCallDeadlineParentFirst(t *testing.T) {
	parent, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ctx := withCallDeadline(parent, time.Hour)
	defer ctx.end()
	pd, _ := parent.Deadline()
	if d, ok := ctx.Deadline(); !ok || !d.Equal(pd) {
		t.Errorf("Deadline = %v, want the parent's %v", d, pd)
	}
}
