package statelesscancel_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestCanarySDKIgnoresStateless2025Cancellation demonstrates go-sdk issue
// #1093's 2025 half against the raw SDK, with the most the SDK offers
// (Stateless, PropagateRequestCancellation): a stateless 2025-11-25
// tools/call runs on when its POST ends, and runs on when a
// notifications/cancelled naming it comes in another POST. When this
// test fails, the SDK ends such calls itself: delete
// internal/sdkfix/statelesscancel and the server's bindCalls.
func TestCanarySDKIgnoresStateless2025Cancellation(t *testing.T) {
	s := mcp.NewServer(&mcp.Implementation{Name: "raw", Version: "1"}, nil)
	started := make(chan string, 2)
	ended := make(chan string, 2)
	release := make(chan struct{})
	var once sync.Once
	stop := func() { once.Do(func() { close(release) }) }
	s.AddTool(&mcp.Tool{Name: "wait", InputSchema: map[string]any{"type": "object", "properties": map[string]any{"n": map[string]any{"type": "string"}}}},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			name := string(req.Params.Arguments)
			started <- name
			select {
			case <-ctx.Done():
				ended <- name
			case <-release:
			}
			return &mcp.CallToolResult{}, nil
		})
	srv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s },
		&mcp.StreamableHTTPOptions{Stateless: true, PropagateRequestCancellation: true}))
	defer srv.Close()
	defer stop() // before srv.Close, which waits for the handlers
	post := func(ctx context.Context, body string) (*http.Response, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
		return http.DefaultClient.Do(req)
	}
	call := func(ctx context.Context, id, arg string) {
		go func() {
			if resp, err := post(ctx, `{"jsonrpc":"2.0","id":`+id+`,"method":"tools/call","params":{"name":"wait","arguments":{"n":"`+arg+`"}}}`); err == nil {
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		}()
		select {
		case <-started:
		case <-time.After(10 * time.Second):
			t.Fatalf("the stateless call %s did not start within 10s", arg)
		}
	}

	// A call whose POST the client abandons.
	leave, abandon := context.WithCancel(context.Background())
	call(leave, "1", "abandoned")
	abandon()
	// A call that the client cancels in another POST.
	call(context.Background(), "2", "cancelled")
	resp, err := post(context.Background(), `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":2,"reason":"test"}}`)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()

	select {
	case name := <-ended:
		t.Fatalf("go-sdk ended the stateless 2025 call %s itself (go-sdk #1093 fixed for 2025 too): delete internal/sdkfix/statelesscancel and the server's bindCalls", name)
	case <-time.After(time.Second):
	}
}
