package permission_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolroute/toolroute/authz"
	"github.com/toolroute/toolroute/authz/permission"
)

// BenchmarkRequireByRule measures a decision the rules make (no question).
func BenchmarkRequireByRule(b *testing.B) {
	c := permission.New(permission.Options{
		Implies: map[string][]string{"admin": {"write"}, "write": {"read"}},
		Rules: []permission.Rule{
			{Effect: authz.Deny, Subject: "item:secret*"},
			{Effect: authz.Allow, Principal: "alice", Subject: "item:*", Capability: "admin"},
		},
		Principal: func(context.Context, *mcp.CallToolRequest) string { return "alice" },
	})
	req := &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{Name: "act", Arguments: json.RawMessage(`{"id":"42"}`)}}
	r := permission.Request{Subjects: []string{"item:42"}, Capabilities: []string{"write"}}
	ctx := context.Background()
	for b.Loop() {
		if g, ask, err := c.Require(ctx, req, r); err != nil || ask != nil || !g.Has("read") {
			b.Fatal(g, ask, err)
		}
	}
}

// BenchmarkRetry measures verifying an answer: the state's MAC, expiry,
// single use, and the answer (each iteration asks first, untimed work
// included, since a state cannot be used twice).
func BenchmarkRetry(b *testing.B) {
	c := permission.New(permission.Options{})
	ctx := context.Background()
	r := permission.Request{Subjects: []string{"item:42"}, Capabilities: []string{"delete"}}
	args := json.RawMessage(`{"id":"42"}`)
	answer := mcp.InputResponseMap{permission.InputKey: &mcp.ElicitResult{Action: "accept", Content: map[string]any{"decision": permission.AllowOnce}}}
	// Asking needs a client that can answer: a 2026-07-28 request carries
	// its protocol version and capabilities in _meta (without the
	// version, the request reads as a 2025 one without a session, which
	// cannot be asked).
	meta := mcp.Meta{
		mcp.MetaKeyProtocolVersion:    "2026-07-28",
		mcp.MetaKeyClientCapabilities: map[string]any{"elicitation": map[string]any{"form": map[string]any{}}},
	}
	for b.Loop() {
		_, ask, err := c.Require(ctx, &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{Meta: meta, Name: "act", Arguments: args}}, r)
		if err != nil || ask == nil {
			b.Fatal(ask, err)
		}
		retry := &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{Meta: meta, Name: "act", Arguments: args, InputResponses: answer, RequestState: ask.RequestState}}
		if g, _, err := c.Require(ctx, retry, r); err != nil || !g.Has("delete") {
			b.Fatal(g, err)
		}
	}
}
