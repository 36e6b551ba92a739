package server

import (
	"context"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolroute/toolroute/internal/sdkfix/schemamsg"
)

// plainSchemaErrors is the receiving middleware that rewrites the SDK's
// texts for arguments a tool's schema refuses, in tools/call results,
// into plain text naming the argument (see [schemamsg.Plain]).
func plainSchemaErrors(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		res, err := next(ctx, method, req)
		if method != "tools/call" || err != nil {
			return res, err
		}
		cr, ok := res.(*mcp.CallToolResult)
		if !ok || cr == nil || !cr.IsError || len(cr.Content) != 1 {
			return res, err
		}
		tc, ok := cr.Content[0].(*mcp.TextContent)
		if !ok {
			return res, err
		}
		if plain, ok := schemamsg.Plain(tc.Text); ok {
			out := *cr
			text := *tc
			text.Text = plain
			out.Content = []mcp.Content{&text}
			return &out, nil
		}
		return res, err
	}
}
