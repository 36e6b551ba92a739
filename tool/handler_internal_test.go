package tool

import (
	"errors"
	"fmt"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// askError is an error that carries a multi-round-trip question.
type askError struct{ res *mcp.CallToolResult }

func (e *askError) Error() string                            { return "input required" }
func (e *askError) InputRequiredResult() *mcp.CallToolResult { return e.res }

func TestInputRequired(t *testing.T) {
	question := func() *mcp.CallToolResult {
		return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{"q1": &mcp.ElicitParams{Message: "Delete it?"}}}
	}
	withContent := question()
	withContent.Content = []mcp.Content{&mcp.TextContent{Text: "x"}}
	withStructured := question()
	withStructured.StructuredContent = map[string]any{"a": 1}
	isError := question()
	isError.IsError = true
	q := question()
	tests := []struct {
		name string
		err  error
		want *mcp.CallToolResult
	}{
		{"question", &askError{q}, q},
		{"wrapped question", fmt.Errorf("asking: %w", &askError{q}), q},
		{"plain error", errors.New("boom"), nil},
		{"nil result", &askError{nil}, nil},
		{"no input requests", &askError{&mcp.CallToolResult{}}, nil},
		{"with content", &askError{withContent}, nil},
		{"with structured content", &askError{withStructured}, nil},
		{"is an error", &askError{isError}, nil},
	}
	for _, tt := range tests {
		if got := inputRequired(tt.err); got != tt.want {
			t.Errorf("%s: inputRequired = %v, want %v", tt.name, got, tt.want)
		}
	}
}
