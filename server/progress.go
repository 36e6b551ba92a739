package server

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolroute/toolroute/internal/call"
)

// beginCall begins req's call of t, once for the whole call (the SDK may
// run the handler twice in it: an input round converted for an older
// client). Its context carries t; when the client gave a progress token,
// also the call's progress state: the handler's tool.Progress reports
// and the server's liveness reports then share one increasing sequence
// and end together when the call does. Every [Options.ProgressInterval],
// a heartbeat tells the client the call is still running. The returned
// end stops the heartbeats and ends the call; call it before the result
// is sent.
func (c *chain) beginCall(ctx context.Context, t *call.Tool, req *mcp.CallToolRequest, start time.Time) (context.Context, func()) {
	ctx, endCall := call.Begin(ctx, t, req)
	if _, st := call.From(ctx); st == nil || c.interval <= 0 {
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
				if err := call.Heartbeat(ctx, req, msg); err != nil {
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
