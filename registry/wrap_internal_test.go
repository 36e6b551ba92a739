package registry

import (
	"context"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolroute/toolroute/behaviour"
	"github.com/toolroute/toolroute/tool"
)

// BenchmarkWrap is what Install's wrapper adds to every call, without the
// SDK around it: compare with BenchmarkCall's few hundred microseconds.
func BenchmarkWrap(b *testing.B) {
	r := New[struct{}]()
	r.Register(tool.Tool[struct{}]{
		Name: "t", Description: "d", Local: true, Behaviour: behaviour.ReadOnly,
		Handler: tool.Handle(func(context.Context, struct{}, *mcp.CallToolRequest, struct{}) (struct{}, error) {
			return struct{}{}, nil
		}),
	})
	wrap := r.wrap(r.entries["t"])
	ctx := context.Background()
	req := &mcp.CallToolRequest{}
	run := func(ctx context.Context) error {
		if tool.CallFromContext(ctx) == nil {
			b.Fatal("no call in the context")
		}
		return nil
	}
	b.ReportAllocs()
	for b.Loop() {
		if err := wrap(ctx, req, run); err != nil {
			b.Fatal(err)
		}
	}
}
