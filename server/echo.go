package server

import (
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolroute/toolroute/internal/core/truncate"
)

// shortenError returns res with the text of its error shortened, if res
// is an isError result made from an error (CallToolResult.SetError: an
// argument validation, a handler's plain error) whose text echoes a
// long value, as the SDK's `maxLength: "…" contains N Unicode code
// points` does with the caller's argument: every quoted value is cut at
// 128 bytes and the whole text at 1 KiB (internal/core/truncate.Quoted). The
// result's error keeps the original in its chain, for the log's
// classification; the log shows the short text too.
func shortenError(res mcp.Result) mcp.Result {
	r, _ := res.(*mcp.CallToolResult)
	if r == nil || !r.IsError || len(r.Content) != 1 {
		return res
	}
	err := r.GetError()
	tc, _ := r.Content[0].(*mcp.TextContent)
	if err == nil || tc == nil || tc.Text != err.Error() {
		return res
	}
	short := truncate.Quoted(tc.Text)
	if short == tc.Text {
		return res
	}
	out := *r
	out.Content = []mcp.Content{&mcp.TextContent{Text: short, Meta: tc.Meta, Annotations: tc.Annotations}}
	out.SetError(&shortError{text: short, err: err})
	return &out
}

// shortError is an error whose text is shortened.
type shortError struct {
	text string
	err  error
}

func (e *shortError) Error() string { return e.text }
func (e *shortError) Unwrap() error { return e.err }
