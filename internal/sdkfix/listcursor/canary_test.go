package listcursor_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolroute/toolroute/internal/sdkfix/listcursor"
)

// TestCanarySDKCursorFormat pins go-sdk's private cursor format against
// the raw SDK: a raw SDK server resumes after the tool a cursor of
// listcursor.After names, and its own cursors are read as naming the last
// tool of their page. When this test fails, go-sdk changed its cursors:
// update internal/sdkfix/listcursor, or use the SDK's cursor API if it
// has one now and delete internal/sdkfix/listcursor.
func TestCanarySDKCursorFormat(t *testing.T) {
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

	cursor, err := listcursor.After("a")
	if err != nil {
		t.Fatal(err)
	}
	res, err := cs.ListTools(ctx, &mcp.ListToolsParams{Cursor: cursor})
	if err != nil {
		t.Fatalf("the SDK refused our cursor (go-sdk changed its cursor format: update or delete internal/sdkfix/listcursor): %v", err)
	}
	if len(res.Tools) != 1 || res.Tools[0].Name != "b" {
		t.Fatalf("after listcursor.After(\"a\") the SDK listed %v, want [b] (go-sdk changed its cursor format: update or delete internal/sdkfix/listcursor)", res.Tools)
	}
	if !listcursor.Names(res.NextCursor, "b") {
		t.Fatalf("the SDK's cursor %q after page [b] does not read as naming b (go-sdk changed its cursor format: update or delete internal/sdkfix/listcursor)", res.NextCursor)
	}
	if listcursor.Names(res.NextCursor, "a") || listcursor.Names("not base64!", "b") {
		t.Fatal("listcursor.Names names what the cursor does not")
	}
}
