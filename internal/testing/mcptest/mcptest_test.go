package mcptest_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolroute/toolroute/internal/testing/mcptest"
)

type ctxKey struct{}

// TestConnect: the client reaches the server, whose handlers see the
// server context's values, speaking the protocol version asked for.
func TestConnect(t *testing.T) {
	s := mcp.NewServer(&mcp.Implementation{Name: "s", Version: "v0"}, nil)
	s.AddTool(&mcp.Tool{Name: "value", InputSchema: map[string]any{"type": "object"}},
		func(ctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			v, _ := ctx.Value(ctxKey{}).(string)
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: v}}}, nil
		})
	cs := mcptest.Connect(t, s, &mcptest.Options{
		ServerContext: context.WithValue(context.Background(), ctxKey{}, "from the server context"),
		Session:       &mcp.ClientSessionOptions{ProtocolVersion: "2025-06-18"},
	})
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "value"})
	if err != nil {
		t.Fatal(err)
	}
	if got := res.Content[0].(*mcp.TextContent).Text; got != "from the server context" {
		t.Errorf("the handler saw %q", got)
	}
	if v := cs.InitializeResult().ProtocolVersion; v != "2025-06-18" {
		t.Errorf("protocol version %q, want 2025-06-18", v)
	}
}

// TestPost: a POST carries the streamable HTTP headers and those given.
func TestPost(t *testing.T) {
	var got http.Header
	var body string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = r.Header
		b, _ := io.ReadAll(r.Body)
		body = string(b)
	}))
	defer srv.Close()
	resp := mcptest.Post(t, srv.URL, mcptest.Header("Bearer x", "2025-11-25"), `{"jsonrpc":"2.0","id":1,"method":"ping"}`)
	if resp.StatusCode != http.StatusOK || body != `{"jsonrpc":"2.0","id":1,"method":"ping"}` {
		t.Errorf("status %d, body %q", resp.StatusCode, body)
	}
	for k, want := range map[string]string{
		"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
		"Authorization": "Bearer x", "Mcp-Protocol-Version": "2025-11-25",
	} {
		if g := got.Get(k); !strings.EqualFold(g, want) {
			t.Errorf("%s = %q, want %q", k, g, want)
		}
	}
}
