package server_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolroute/toolroute/authz"
	"github.com/toolroute/toolroute/internal/testing/await"
	"github.com/toolroute/toolroute/registry"
	"github.com/toolroute/toolroute/server"
	"github.com/toolroute/toolroute/server/servertest"
)

func TestNewRequiresAuthorizer(t *testing.T) {
	_, err := server.New(server.Options{}, server.Install(testRegistry(), newDeps("a")))
	if err == nil || !strings.Contains(err.Error(), "Authorizer is nil") || !strings.Contains(err.Error(), "authz.AllowAll()") {
		t.Fatalf("New without an authorizer: err = %v, want one telling to set an Authorizer or authz.AllowAll()", err)
	}
}

func TestNewDuplicateToolNames(t *testing.T) {
	_, err := server.New(server.Options{Authorizer: authz.AllowAll()},
		server.Install(testRegistry(), newDeps("a")),
		server.Install(otherRegistry("other", "echo"), otherDeps{}),
	)
	if err == nil || !strings.Contains(err.Error(), `duplicate tool name "echo"`) {
		t.Fatalf("err = %v, want a duplicate tool name error naming echo", err)
	}
}

func TestSeveralRegistriesShareAServer(t *testing.T) {
	s, err := server.New(server.Options{Authorizer: authz.AllowAll(), Caller: &authz.Caller{Subject: "local"}},
		server.Install(testRegistry(), newDeps("a")),
		server.Install(otherRegistry("shout"), otherDeps{prefix: "> "}),
	)
	if err != nil {
		t.Fatal(err)
	}
	cs := servertest.Connect(t, s, nil, servertest.Options{})
	want := []string{"boom", "echo", "fail", "get_thing", "shout", "wait", "whoami"}
	if diff := cmp.Diff(want, servertest.ToolNames(t, cs)); diff != "" {
		t.Errorf("tools (-want +got):\n%s", diff)
	}
	if got := structured[echoOut](t, call(t, cs, "shout", map[string]any{"text": "hi"})).Text; got != "> hi" {
		t.Errorf("shout = %q, want %q", got, "> hi")
	}
	if got := structured[echoOut](t, call(t, cs, "echo", map[string]any{"text": "hi"})).Text; got != "hi" {
		t.Errorf("echo = %q, want %q", got, "hi")
	}
}

func TestCallerInMemory(t *testing.T) {
	configured := &authz.Caller{Subject: "local-user", Roles: []string{"viewer"}}
	s, err := server.New(server.Options{Authorizer: authz.AllowAll(), Caller: configured}, server.Install(testRegistry(), newDeps("a")))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		caller *authz.Caller
		want   whoamiOut
	}{
		{"configured", nil, whoamiOut{Subject: "local-user", Roles: []string{"viewer"}, Server: "a"}},
		{"connect context", &authz.Caller{Subject: "bob", Roles: []string{"admin"}, Bearer: "b0b"}, whoamiOut{Subject: "bob", Roles: []string{"admin"}, BearerSHA256: digest("b0b"), Server: "a"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cs := servertest.Connect(t, s, tt.caller, servertest.Options{})
			got := structured[whoamiOut](t, call(t, cs, "whoami", nil))
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("whoami (-want +got):\n%s", diff)
			}
		})
	}
}

func TestNoCallerFailsClosed(t *testing.T) {
	// No configured caller: authz sees none, lists nothing and calls
	// nothing, even with AllowAll.
	s, err := server.New(server.Options{Authorizer: authz.AllowAll()}, server.Install(testRegistry(), newDeps("a")))
	if err != nil {
		t.Fatal(err)
	}
	cs := servertest.Connect(t, s, nil, servertest.Options{})
	if _, err := cs.ListTools(context.Background(), nil); err == nil {
		t.Error("tools/list without a caller succeeded")
	}
	if _, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "whoami"}); err == nil || !strings.Contains(err.Error(), `unknown tool "whoami"`) {
		t.Errorf("tools/call without a caller: err = %v, want unknown tool", err)
	}
}

func TestVisibility(t *testing.T) {
	s, err := server.New(server.Options{Authorizer: adminOnly{}}, server.Install(testRegistry(), newDeps("a")))
	if err != nil {
		t.Fatal(err)
	}
	viewer := servertest.Connect(t, s, &authz.Caller{Subject: "v", Roles: []string{"viewer"}}, servertest.Options{})
	admin := servertest.Connect(t, s, &authz.Caller{Subject: "a", Roles: []string{"admin"}}, servertest.Options{})
	if diff := cmp.Diff([]string{"boom", "echo", "fail", "wait", "whoami"}, servertest.ToolNames(t, viewer)); diff != "" {
		t.Errorf("viewer's tools (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"boom", "echo", "fail", "get_thing", "wait", "whoami"}, servertest.ToolNames(t, admin)); diff != "" {
		t.Errorf("admin's tools (-want +got):\n%s", diff)
	}
	_, err = viewer.CallTool(context.Background(), &mcp.CallToolParams{Name: "get_thing", Arguments: map[string]any{"id": "1"}})
	_, unknown := viewer.CallTool(context.Background(), &mcp.CallToolParams{Name: "no_such_tool"})
	if err == nil || unknown == nil || strings.ReplaceAll(err.Error(), "get_thing", "X") != strings.ReplaceAll(unknown.Error(), "no_such_tool", "X") {
		t.Errorf("hidden tool: err = %v; unknown tool: err = %v; want the same answer", err, unknown)
	}
	if got := structured[echoOut](t, call(t, admin, "get_thing", map[string]any{"id": "7"})).Text; got != "7" {
		t.Errorf("admin get_thing = %q", got)
	}
}

func TestCallLog(t *testing.T) {
	sink, logger := newLogSink()
	var (
		mu     sync.Mutex
		errs   []error
		onErr  = func(err error) { mu.Lock(); errs = append(errs, err); mu.Unlock() }
		caller = &authz.Caller{Subject: "carol", Roles: []string{"viewer"}, Bearer: "bearer-SECRET-91c2"}
	)
	d := newDeps("a")
	close(d.release)
	s, err := server.New(server.Options{Authorizer: adminOnly{}, Logger: logger, OnError: onErr}, server.Install(testRegistry(), d))
	if err != nil {
		t.Fatal(err)
	}
	cs := servertest.Connect(t, s, caller, servertest.Options{})
	tests := []struct {
		tool    string
		args    any
		outcome string
		isError bool
		rpcErr  bool
	}{
		{"echo", map[string]any{"text": "x"}, "ok", false, false},
		{"wait", nil, "ok", false, false},
		{"fail", nil, "tool_error", true, false},
		{"echo", map[string]any{"text": 1}, "tool_error", true, false}, // schema validation
		{"boom", nil, "panic", true, false},
		{"get_thing", map[string]any{"id": "1"}, "denied", false, true}, // hidden from carol
		{"no_such_tool", nil, "unknown_tool", false, true},
	}
	for _, tt := range tests {
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: tt.tool, Arguments: tt.args})
		if (err != nil) != tt.rpcErr {
			t.Fatalf("%s: err = %v, want protocol error %v", tt.tool, err, tt.rpcErr)
		}
		if err == nil && res.IsError != tt.isError {
			t.Fatalf("%s: isError = %v, want %v (%s)", tt.tool, res.IsError, tt.isError, text(res))
		}
	}
	recs := sink.calls(t)
	if len(recs) != len(tests) {
		t.Fatalf("%d call records, want %d:\n%s", len(recs), len(tests), sink)
	}
	for i, tt := range tests {
		rec := recs[i]
		got := map[string]any{"tool": rec["tool"], "subject": rec["subject"], "outcome": rec["outcome"]}
		want := map[string]any{"tool": tt.tool, "subject": "carol", "outcome": tt.outcome}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("record %d (-want +got):\n%s", i, diff)
		}
		if _, ok := rec["duration"].(float64); !ok {
			t.Errorf("record %d has no numeric duration: %v", i, rec)
		}
	}
	if strings.Contains(sink.String(), caller.Bearer) {
		t.Errorf("the bearer appears in the log:\n%s", sink)
	}
	mu.Lock()
	defer mu.Unlock()
	var pe *registry.PanicError
	if len(errs) != 1 || !errors.As(errs[0], &pe) || pe.Tool != "boom" || pe.Value != "boom" {
		t.Errorf("OnError got %v, want one *registry.PanicError of boom", errs)
	}
}

func TestCallDeadline(t *testing.T) {
	sink, logger := newLogSink()
	d := newDeps("a")
	s, err := server.New(server.Options{
		Authorizer: authz.AllowAll(), Caller: &authz.Caller{Subject: "u"}, Logger: logger,
		CallTimeout: 10 * time.Millisecond,
	}, server.Install(testRegistry(), d))
	if err != nil {
		t.Fatal(err)
	}
	cs := servertest.Connect(t, s, nil, servertest.Options{})
	res := call(t, cs, "wait", nil)
	if !res.IsError {
		t.Errorf("wait past its deadline: want an isError result, got %v", text(res))
	}
	if cause := await.Recv(t, d.causes, "the handler's cause"); !errors.Is(cause, server.ErrCallTimeout) {
		t.Errorf("handler's context cause = %v, want ErrCallTimeout", cause)
	}
	recs := sink.calls(t)
	if len(recs) != 1 || recs[0]["outcome"] != "cancelled" {
		t.Errorf("records = %v, want one cancelled", recs)
	}
}

func TestMiddlewareOrder(t *testing.T) {
	// User middleware runs inside authz (sees only visible calls) and sees
	// the caller and the deadline.
	var (
		mu   sync.Mutex
		seen []string
	)
	mw := func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if method == "tools/call" {
				c, _ := authz.CallerFromContext(ctx)
				_, hasDeadline := ctx.Deadline()
				mu.Lock()
				seen = append(seen, req.(*mcp.CallToolRequest).Params.Name+":"+c.Subject+":"+map[bool]string{true: "deadline", false: "none"}[hasDeadline])
				mu.Unlock()
			}
			return next(ctx, method, req)
		}
	}
	s, err := server.New(server.Options{Authorizer: adminOnly{}, Middleware: []mcp.Middleware{mw}}, server.Install(testRegistry(), newDeps("a")))
	if err != nil {
		t.Fatal(err)
	}
	cs := servertest.Connect(t, s, &authz.Caller{Subject: "v"}, servertest.Options{})
	call(t, cs, "echo", map[string]any{"text": "x"})
	cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "get_thing", Arguments: map[string]any{"id": "1"}})
	mu.Lock()
	defer mu.Unlock()
	if diff := cmp.Diff([]string{"echo:v:deadline"}, seen); diff != "" {
		t.Errorf("middleware saw (-want +got):\n%s", diff)
	}
}

func TestMiddlewarePanic(t *testing.T) {
	sink, logger := newLogSink()
	var got []error
	mw := func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if method == "tools/call" {
				panic("middleware bug")
			}
			return next(ctx, method, req)
		}
	}
	s, err := server.New(server.Options{
		Authorizer: authz.AllowAll(), Caller: &authz.Caller{Subject: "u"}, Logger: logger,
		Middleware: []mcp.Middleware{mw}, OnError: func(err error) { got = append(got, err) },
	}, server.Install(testRegistry(), newDeps("a")))
	if err != nil {
		t.Fatal(err)
	}
	cs := servertest.Connect(t, s, nil, servertest.Options{})
	if _, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "x"}}); err == nil {
		t.Error("call through a panicking middleware succeeded")
	}
	// The server survives.
	if names := servertest.ToolNames(t, cs); len(names) == 0 {
		t.Error("no tools after a middleware panic")
	}
	recs := sink.calls(t)
	if len(recs) != 1 || recs[0]["outcome"] != "panic" {
		t.Errorf("records = %v, want one panic", recs)
	}
	var pe *registry.PanicError
	if len(got) != 1 || !errors.As(got[0], &pe) || pe.Value != "middleware bug" {
		t.Errorf("OnError got %v", got)
	}
}

func TestOldProtocolInMemory(t *testing.T) {
	s, err := server.New(server.Options{Authorizer: authz.AllowAll(), Caller: &authz.Caller{Subject: "old"}}, server.Install(testRegistry(), newDeps("a")))
	if err != nil {
		t.Fatal(err)
	}
	cs := servertest.Connect(t, s, nil, servertest.Options{ProtocolVersion: "2025-11-25"})
	if got := structured[whoamiOut](t, call(t, cs, "whoami", nil)).Subject; got != "old" {
		t.Errorf("subject = %q", got)
	}
}
