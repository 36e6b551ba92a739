package tool

import (
	"context"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolroute/toolroute/internal/core/call"
)

// This file gives the package's external tests the plumbing the
// registry and the server reach through internal/core/call.

// Wrap runs one invocation of a tool added by [Handler.AddWrapped]: it must
// call run (at most once) with the context the handler should see.
type Wrap func(ctx context.Context, req *mcp.CallToolRequest, run func(context.Context) error) error

// AddWrapped adds t to s, served by h with deps, every call run through
// wrap (nil: none), as a receiving middleware.
func (h Handler[C]) AddWrapped(s *mcp.Server, t *mcp.Tool, deps C, wrap Wrap) {
	h.AddTo(s, t, deps)
	if wrap == nil {
		return
	}
	s.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (res mcp.Result, err error) {
			cr, ok := req.(*mcp.CallToolRequest)
			if method != "tools/call" || !ok || cr.Params.Name != t.Name {
				return next(ctx, method, req)
			}
			err = wrap(ctx, cr, func(ctx context.Context) error {
				res, err = next(ctx, method, req)
				return err
			})
			return res, err
		}
	})
}

// BeginCall begins a call of c (nil: none) with progress state, as the
// server does for a request with a progress token.
func BeginCall(ctx context.Context, c *Call) (context.Context, func()) {
	req := &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{}}
	req.Params.SetProgressToken("test")
	return call.Begin(ctx, &call.Tool[Call]{Info: c}, req)
}

// WithCall returns ctx carrying c, without progress state.
func WithCall(ctx context.Context, c *Call) context.Context {
	return call.With(ctx, &call.Tool[Call]{Info: c})
}

// Heartbeat is the server's liveness report.
var Heartbeat = call.Heartbeat

// SegmentProblem exposes the value rule to the external tests.
var SegmentProblem = segmentProblem
