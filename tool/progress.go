package tool

import (
	"context"
	"math"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolroute/toolroute/internal/core/call"
)

// Progress reports a tool call's progress to its client: done of total
// units (total 0, negative or not finite: unknown), with an optional
// human-readable message. It sends a notifications/progress only when the
// client asked for progress (gave a progress token in the request's
// _meta); otherwise it does nothing.
//
// Progress values must increase, as MCP requires: a done that is not
// greater than the last value sent for the call (by Progress or the
// server's liveness reports), or not finite, is dropped. So is every report after the
// call has ended: a handler's goroutine that outlives its call sends
// nothing. Reports are sent in order, one at a time.
//
// ctx must be the handler's context (or derived from it): it carries the
// call's state, put there when the call began (by the server's chain, or
// by the registry's middleware on a bare server), and the request it
// belongs to, which the HTTP transport needs to route the notification.
// Outside a tool call, Progress sends nothing and returns an error.
//
// Progress returns only a failure to send (a closed connection, an
// ended request); a report dropped by the rules above returns nil. A
// failure to report progress need not fail the call.
func Progress(ctx context.Context, req *mcp.CallToolRequest, done, total float64, message string) error {
	if math.IsNaN(total) || math.IsInf(total, 0) || total < 0 {
		total = 0
	}
	return call.Notify(ctx, req, message, func(sent bool, last, _ float64) (float64, float64, bool) {
		if math.IsNaN(done) || math.IsInf(done, 0) || (sent && done <= last) {
			return 0, 0, false
		}
		return done, total, true
	})
}
