package authz

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestCursorAfterResumesTheSDK is the canary of cursorAfter, which writes
// go-sdk's private cursor format: a raw SDK server resumes after the tool
// a cursor of ours names, and its own cursors are read as naming the last
// tool of their page. It fails when go-sdk changes its cursors.
func TestCursorAfterResumesTheSDK(t *testing.T) {
	s := mcp.NewServer(&mcp.Implementation{Name: "raw", Version: "v0"}, &mcp.ServerOptions{PageSize: 1})
	for _, name := range []string{"a", "b", "c"} {
		s.AddTool(&mcp.Tool{Name: name, InputSchema: json.RawMessage(`{"type":"object"}`)},
			func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return &mcp.CallToolResult{}, nil
			})
	}
	ct, st := mcp.NewInMemoryTransports()
	ctx := context.Background()
	ss, err := s.Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ss.Close()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "v0"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()

	cursor, err := cursorAfter("a")
	if err != nil {
		t.Fatal(err)
	}
	res, err := cs.ListTools(ctx, &mcp.ListToolsParams{Cursor: cursor})
	if err != nil {
		t.Fatalf("the SDK refused our cursor: %v", err)
	}
	if len(res.Tools) != 1 || res.Tools[0].Name != "b" {
		t.Fatalf("after cursorAfter(\"a\") the SDK listed %v, want [b]", res.Tools)
	}
	if !cursorNames(res.NextCursor, "b") {
		t.Fatalf("the SDK's cursor %q after page [b] does not read as naming b", res.NextCursor)
	}
	if cursorNames(res.NextCursor, "a") || cursorNames("not base64!", "b") {
		t.Fatal("cursorNames names what the cursor does not")
	}
}
