package server

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolroute/toolroute/internal/core/call"
)

// heartbeats tells the client of req's call, begun with progress state
// in ctx, that the call is still running, every [Options.ProgressInterval]:
// the handler's tool.Progress reports and these liveness reports share
// one increasing sequence (the SDK may run the handler twice in one
// call: an input round converted for an older client) and end together
// when the call does. The returned stop stops them; call it before the
// call ends.
func (c *chain) heartbeats(ctx context.Context, req *mcp.CallToolRequest, start time.Time) func() {
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
				if err := call.Heartbeat(ctx, req, msg); err != nil {
					c.log.DebugContext(ctx, "toolroute: liveness report failed",
						slog.String("tool", req.Params.Name), slog.Any("error", err))
				}
			}
		}
	}()
	return func() {
		close(stop)
		<-stopped
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
