package server

import (
	"context"
	"testing"
	"time"
)

// TestStopContextAfterDrainDelay: under fx, an HTTP server's in-flight
// calls get ShutdownTimeout counted from when the listener closes, after
// HTTPServerOptions.DrainDelay; the delay does not eat into it (a DrainDelay
// longer than ShutdownTimeout used to leave the calls no time at all).
// The deadline is read, not waited for.
func TestFxStopDeadlineCountsFromDrainDelay(t *testing.T) {
	a := &appServer{opts: Options{ShutdownTimeout: time.Minute}}
	for _, tt := range []struct {
		delay, want time.Duration
	}{
		{0, time.Minute},
		{-time.Second, time.Minute},
		{time.Hour, time.Hour + time.Minute},
	} {
		start := time.Now()
		ctx, cancel := a.stopContext(context.Background(), tt.delay)
		deadline, ok := ctx.Deadline()
		cancel()
		if got := deadline.Sub(start); !ok || got < tt.want || got > tt.want+time.Minute {
			t.Errorf("delay %v: the stop deadline is %v after stop, want %v", tt.delay, got, tt.want)
		}
	}
	// fx's own stop deadline still bounds it.
	fxCtx, fxCancel := context.WithTimeout(context.Background(), time.Second)
	defer fxCancel()
	ctx, cancel := a.stopContext(fxCtx, time.Hour)
	defer cancel()
	if d, _ := ctx.Deadline(); time.Until(d) > time.Second {
		t.Errorf("the stop deadline %v exceeds fx's", time.Until(d))
	}
}
