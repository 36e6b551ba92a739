package telemetry_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/codes"

	"github.com/toolroute/toolroute/ratelimit"
	"github.com/toolroute/toolroute/server/servertest"
	"github.com/toolroute/toolroute/server/telemetry"
)

// TestRateLimitedOutcome: a call over its caller's rate limit is told
// apart from other protocol errors as the server's log record tells it:
// its span's status is "rate_limited", so is its audit record's outcome,
// and its metric point and span carry the JSON-RPC code -32010 as
// error.type and rpc.response.status_code (the conventions' attributes;
// no caller can add series through them).
func TestRateLimitedOutcome(t *testing.T) {
	lim := ratelimit.NewLimiter(ratelimit.Limit{Rate: 1, Period: time.Hour, Burst: 1})
	e := newEnv(t, envOptions{middleware: []mcp.Middleware{ratelimit.Middleware(lim, ratelimit.Options{})}})
	cs := servertest.Connect(t, e.server, &viewer, servertest.Options{})
	ctx := context.Background()
	if res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "whoami"}); err != nil || res.IsError {
		t.Fatalf("first call: %v %+v", err, res)
	}
	var je *jsonrpc.Error
	if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "whoami"}); !errors.As(err, &je) || je.Code != ratelimit.CodeRateLimited {
		t.Fatalf("second call: %v, want the rate-limit error", err)
	}

	var statuses []string
	for _, s := range e.spans.Ended() {
		if s.Name() != "tools/call whoami" {
			continue
		}
		statuses = append(statuses, s.Status().Code.String()+" "+s.Status().Description)
		if s.Status().Code == codes.Error {
			if a := attrs(s); a["error.type"] != "-32010" || a["rpc.response.status_code"] != "-32010" {
				t.Errorf("the rate-limited call's span attributes: %v", a)
			}
		}
	}
	if want := []string{"Unset ", "Error rate_limited"}; !slices.Equal(statuses, want) {
		t.Errorf("span statuses = %q, want %q", statuses, want)
	}

	var outcomes []string
	for _, r := range e.records(t) {
		if r.Event == telemetry.EventCall {
			outcomes = append(outcomes, r.Outcome+" "+r.ErrorType)
		}
	}
	if want := []string{"ok ", "rate_limited -32010"}; !slices.Equal(outcomes, want) {
		t.Errorf("audit outcomes (outcome error_type) = %q, want %q", outcomes, want)
	}

	v := mcp.SupportedProtocolVersions()[0]
	ops := points(e.collect(t)["mcp.server.operation.duration"])
	k := "error.type=-32010,gen_ai.tool.name=whoami,mcp.method.name=tools/call,mcp.protocol.version=" + v + ",rpc.response.status_code=-32010"
	if ops[k] != 1 {
		t.Errorf("operation duration %s: count %d, want 1 (have %v)", k, ops[k], ops)
	}
}
