package server_test

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolroute/toolroute/authz"
	"github.com/toolroute/toolroute/server"
	"github.com/toolroute/toolroute/server/servertest"
)

// TestObservers: observers run in order around every request, with the
// caller in the context and before authorization: they see the call of a
// tool hidden from the caller, which Options.Middleware never sees.
func TestObservers(t *testing.T) {
	var (
		mu   sync.Mutex
		seen []string
	)
	note := func(name string) mcp.Middleware {
		return func(next mcp.MethodHandler) mcp.MethodHandler {
			return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
				if method == "tools/call" {
					c, _ := authz.CallerFromContext(ctx)
					mu.Lock()
					seen = append(seen, name+" "+req.(*mcp.CallToolRequest).Params.Name+" "+c.Subject)
					mu.Unlock()
				}
				return next(ctx, method, req)
			}
		}
	}
	s, err := server.New(server.Options{
		Authorizer: adminOnly{},
		Observers:  []mcp.Middleware{note("first"), note("second")},
		Middleware: []mcp.Middleware{note("late")},
	}, server.Install(testRegistry(), newDeps("a")))
	if err != nil {
		t.Fatal(err)
	}
	cs := servertest.Connect(t, s, &authz.Caller{Subject: "bob", Roles: []string{"user"}}, servertest.Options{})
	if _, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "get_thing", Arguments: map[string]any{"id": "x"}}); err == nil {
		t.Fatal("a hidden tool was called")
	}
	if _, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "hi"}}); err != nil {
		t.Fatal(err)
	}
	want := []string{"first get_thing bob", "second get_thing bob", "first echo bob", "second echo bob", "late echo bob"}
	mu.Lock()
	defer mu.Unlock()
	if !slices.Equal(seen, want) {
		t.Errorf("seen %q, want %q", seen, want)
	}
}

// TestObserverPanicRecovered: an observer that panics answers its request
// with an internal error, logged with the stack, and the server goes on.
func TestObserverPanicRecovered(t *testing.T) {
	sink, log := newLogSink()
	boom := func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if method == "tools/call" && req.(*mcp.CallToolRequest).Params.Name == "echo" {
				panic("observer bug")
			}
			return next(ctx, method, req)
		}
	}
	opts := serverOptions(&authz.Caller{Subject: "bob", Roles: []string{"admin"}})
	opts.Logger = log
	opts.Observers = []mcp.Middleware{boom}
	s, err := server.New(opts, server.Install(testRegistry(), newDeps("a")))
	if err != nil {
		t.Fatal(err)
	}
	cs := servertest.Connect(t, s, nil, servertest.Options{})
	_, err = cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "hi"}})
	if err == nil || !strings.Contains(err.Error(), "internal error") {
		t.Fatalf("call through a panicking observer: err = %v, want an internal error", err)
	}
	if !strings.Contains(sink.String(), "observer bug") {
		t.Errorf("the panic was not logged:\n%s", sink.String())
	}
	if names := servertest.ToolNames(t, cs); len(names) == 0 {
		t.Error("the server stopped serving after an observer's panic")
	}
}
