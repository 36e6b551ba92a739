package quietcancel_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolroute/toolroute/internal/testing/await"
	"github.com/toolroute/toolroute/internal/testing/rawstdio"
)

// TestCanarySDKAnswersCancelledCall demonstrates go-sdk issues #1235 and
// #1259 against the raw SDK: a call the client cancelled
// (notifications/cancelled) still gets a response. When this test fails
// (go-sdk PR #1267 or an equivalent landed), delete internal/sdkfix/quietcancel.
func TestCanarySDKAnswersCancelledCall(t *testing.T) {
	s := mcp.NewServer(&mcp.Implementation{Name: "raw", Version: "1"}, nil)
	started := make(chan struct{})
	s.AddTool(&mcp.Tool{Name: "wait", InputSchema: map[string]any{"type": "object"}},
		func(ctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			close(started)
			<-ctx.Done()
			return nil, ctx.Err()
		})
	c := rawstdio.Connect(t, s)
	c.Send(`{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	await.Recv(t, c.Lines, "initialize's answer")
	c.Send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	c.Send(`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"wait","arguments":{}}}`)
	await.Recv(t, started, "the call's start")
	c.Send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":5}}`)
	timeout := time.After(10 * time.Second)
	for {
		select {
		case l := <-c.Lines:
			if strings.Contains(l, `"id":5`) {
				return // the SDK answered the cancelled call: the defect is there
			}
		case <-timeout:
			t.Fatal("go-sdk #1235/#1259 are fixed: a cancelled call gets no response; delete internal/sdkfix/quietcancel")
		}
	}
}
