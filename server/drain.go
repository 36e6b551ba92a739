package server

import (
	"context"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolroute/toolroute/internal/serve/inflight"
)

// drain is a transport's tool calls in flight, so that shutdown can stop
// admitting calls (Close), wait for the running ones (Wait), and then
// cancel them and every other request still running (Abort: see
// [chain.middleware]). A transport puts it in the context its sessions
// are connected with; the call middleware finds it there (context values
// reach every handler, whatever the transport does with cancellation).
type drain = inflight.Tracker[*mcp.CallToolRequest]

type drainKey struct{}

func newDrain() *drain { return inflight.New[*mcp.CallToolRequest]() }

func withDrain(ctx context.Context, d *drain) context.Context {
	return context.WithValue(ctx, drainKey{}, d)
}

func drainFrom(ctx context.Context) *drain {
	d, _ := ctx.Value(drainKey{}).(*drain)
	return d
}
