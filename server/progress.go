package server

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolroute/toolroute/tool"
)

// beginProgress begins req's call for progress reporting when its client
// gave a progress token: the handler's tool.Progress reports and the
// server's liveness reports then share one increasing sequence, across
// every run of the handler in this call, and end together when the call
// does. Every [Options.ProgressInterval], a heartbeat tells the client
// the call is still running. The returned end stops the heartbeats and
// ends the call; call it before the result is sent.
func (c *chain) beginProgress(ctx context.Context, req *mcp.CallToolRequest, start time.Time) (context.Context, func()) {
	if req.Params.GetProgressToken() == nil {
		return ctx, func() {}
	}
	ctx, endCall := tool.BeginCall(ctx, nil)
	if c.interval <= 0 {
		return ctx, endCall
	}
	stop := make(chan struct{})
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		t := time.NewTicker(c.interval)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-ctx.Done():
				return
			case <-t.C:
				msg := fmt.Sprintf("still working: %s elapsed", roundElapsed(time.Since(start)))
				if err := tool.Heartbeat(ctx, req, msg); err != nil {
					c.log.DebugContext(ctx, "toolroute: liveness report failed",
						slog.String("tool", req.Params.Name), slog.Any("error", err))
				}
			}
		}
	}()
	return ctx, func() {
		close(stop)
		<-stopped
		endCall()
	}
}

// roundElapsed rounds d for a message: to seconds from a second on, else
// to milliseconds.
func roundElapsed(d time.Duration) time.Duration {
	if d >= time.Second {
		return d.Round(time.Second)
	}
	return d.Round(time.Millisecond)
}
