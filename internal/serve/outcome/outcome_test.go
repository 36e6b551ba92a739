package outcome_test

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolroute/toolroute/authz"
	"github.com/toolroute/toolroute/internal/core/call"
	"github.com/toolroute/toolroute/internal/serve/outcome"
	"github.com/toolroute/toolroute/ratelimit"
)

func errResult(err error) *mcp.CallToolResult {
	var r mcp.CallToolResult
	r.SetError(err)
	return &r
}

// TestOf pins the rules of the one classifier of a call's outcome.
func TestOf(t *testing.T) {
	denied := &authz.DeniedError{Reason: "r"}
	upstreamDenied := call.ClientError(fmt.Errorf("get: %w", &url.Error{Op: "Get", URL: "http://up/x", Err: denied}))
	down := &url.Error{Op: "Get", URL: "http://up/x", Err: errors.New("refused")}
	ended, cancel := context.WithCancel(context.Background())
	cancel()
	tests := []struct {
		name string
		ctx  context.Context
		res  mcp.Result
		err  error
		want outcome.Outcome
	}{
		{"result", nil, &mcp.CallToolResult{}, nil, outcome.OK},
		{"no result", nil, nil, nil, outcome.OK},
		{"tool error", nil, errResult(errors.New("no such item")), nil, outcome.ToolError},
		{"error result without error", nil, &mcp.CallToolResult{IsError: true}, nil, outcome.ToolError},
		{"upstream down", nil, errResult(call.ClientError(down)), nil, outcome.ToolError},
		{"upstream denied", nil, errResult(upstreamDenied), nil, outcome.Denied},
		{"unauthenticated", nil, errResult(&authz.UnauthenticatedError{}), nil, outcome.Denied},
		{"outage", nil, errResult(&authz.OutageError{Err: errors.New("x")}), nil, outcome.Outage},
		{"panic", nil, errResult(&call.PanicError{Value: "boom"}), nil, outcome.Panic},
		{"panic after the end", ended, errResult(&call.PanicError{Value: "boom"}), nil, outcome.Panic},
		{"cancelled", ended, errResult(errors.New("context canceled")), nil, outcome.Cancelled},
		{"hidden", nil, nil, &authz.HiddenToolError{Tool: "t", Exists: true}, outcome.Denied},
		{"unknown", nil, nil, &authz.HiddenToolError{Tool: "t"}, outcome.UnknownTool},
		{"sdk unknown", nil, nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: `unknown tool "t"`}, outcome.UnknownTool},
		{"protocol error", nil, nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "internal error"}, outcome.Error},
		{"rate limited", nil, nil, ratelimit.Exceeded(time.Second), outcome.RateLimited},
		{"rate limited, cancelled", ended, nil, ratelimit.Exceeded(time.Second), outcome.Cancelled},
		{"rate limited, wrapped", nil, nil, fmt.Errorf("middleware: %w", ratelimit.Exceeded(time.Second)), outcome.RateLimited},
		{"code -32010 in a tool error", nil, errResult(&jsonrpc.Error{Code: ratelimit.CodeRateLimited}), nil, outcome.ToolError},
	}
	for _, tt := range tests {
		ctx := tt.ctx
		if ctx == nil {
			ctx = context.Background()
		}
		if got, _ := outcome.Of(ctx, tt.res, tt.err); got != tt.want {
			t.Errorf("%s: Of = %v, want %v", tt.name, got, tt.want)
		}
	}
	// The log may show an upstream URL the client is not shown.
	if _, cause := outcome.Of(context.Background(), errResult(call.ClientError(down)), nil); cause != down {
		t.Errorf("upstream down: cause %v, want the handler's error", cause)
	}
}

// TestRecord: a Record carries the server's classification to the
// observers outside it.
func TestRecord(t *testing.T) {
	if outcome.From(context.Background()) != nil {
		t.Fatal("a Record outside WithRecord")
	}
	ctx, r := outcome.WithRecord(context.Background())
	if _, ok := outcome.From(ctx).Get(); ok {
		t.Error("a fresh Record has an outcome")
	}
	r.Set(outcome.Denied)
	if o, ok := outcome.From(context.WithoutCancel(ctx)).Get(); !ok || o != outcome.Denied {
		t.Errorf("Get = %v, %v", o, ok)
	}
}
