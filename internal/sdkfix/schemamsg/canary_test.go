package schemamsg_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolroute/toolroute/internal/sdkfix/schemamsg"
)

// TestCanarySDKValidationTexts pins, against the raw SDK, the two
// validator texts that schemamsg rewrites: a null where an integer is
// wanted, and a number above a maximum (google/jsonschema-go #20). When
// this test fails, the SDK's texts changed: if they are plain now, delete
// internal/sdkfix/schemamsg; otherwise update its patterns.
func TestCanarySDKValidationTexts(t *testing.T) {
	s := mcp.NewServer(&mcp.Implementation{Name: "raw", Version: "1"}, nil)
	type args struct {
		Count *int `json:"count"`
	}
	mcp.AddTool(s, &mcp.Tool{
		Name:         "count",
		InputSchema:  json.RawMessage(`{"type":"object","properties":{"count":{"type":"integer","maximum":1000000}}}`),
		OutputSchema: json.RawMessage(`{"type":"object"}`),
	}, func(context.Context, *mcp.CallToolRequest, args) (*mcp.CallToolResult, struct{}, error) {
		return nil, struct{}{}, nil
	})
	ctx := context.Background()
	ct, st := mcp.NewInMemoryTransports()
	ss, err := s.Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ss.Close()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()

	for _, tt := range []struct {
		args      string
		sdk, want string
	}{
		{`{"count":null}`,
			`validating "arguments": validating root: validating /properties/count: type: <invalid reflect.Value> has type "null", want "integer"`,
			`validating "arguments": argument "count": null is not allowed (want integer)`},
		{`{"count":1e20}`,
			`validating "arguments": validating root: validating /properties/count: maximum: 100000000000000000000/1 is greater than 1000000.000000`,
			`validating "arguments": argument "count": maximum: 1e+20 is greater than 1000000`},
	} {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "count", Arguments: json.RawMessage(tt.args)})
		if err != nil {
			t.Fatalf("arguments %s: %v", tt.args, err)
		}
		var text string
		if res.IsError && len(res.Content) == 1 {
			if c, ok := res.Content[0].(*mcp.TextContent); ok {
				text = c.Text
			}
		}
		if text != tt.sdk {
			hint := "update internal/sdkfix/schemamsg's patterns"
			if !strings.Contains(text, "<invalid reflect.Value>") && !strings.Contains(text, "/1 is greater") {
				hint = "if this is plain text now, delete internal/sdkfix/schemamsg"
			}
			t.Errorf("arguments %s: the SDK answers %q (isError %v), want %q: the SDK's validation text changed; %s", tt.args, text, res.IsError, tt.sdk, hint)
			continue
		}
		if got, ok := schemamsg.Plain(text); !ok || got != tt.want {
			t.Errorf("Plain(%q) = %q, %v; want %q, true", text, got, ok, tt.want)
		}
	}
}
