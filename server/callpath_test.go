package server_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolroute/toolroute/authz"
	"github.com/toolroute/toolroute/behaviour"
	"github.com/toolroute/toolroute/registry"
	"github.com/toolroute/toolroute/server"
	"github.com/toolroute/toolroute/server/servertest"
	"github.com/toolroute/toolroute/tool"
)

// orderRecorder records the layers a call passes, in order.
type orderRecorder struct {
	mu    sync.Mutex
	steps []string
}

func (o *orderRecorder) add(step string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.steps = append(o.steps, step)
}

func (o *orderRecorder) take() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	s := o.steps
	o.steps = nil
	return s
}

// recordingAuthorizer allows everything and records that it was asked.
type recordingAuthorizer struct{ o *orderRecorder }

func (a recordingAuthorizer) Allow(context.Context, authz.Caller, tool.Route) error {
	a.o.add("authz")
	return nil
}

func (a recordingAuthorizer) AllowMany(_ context.Context, _ authz.Caller, rs []tool.Route) ([]bool, error) {
	a.o.add("authz")
	out := make([]bool, len(rs))
	for i := range out {
		out[i] = true
	}
	return out, nil
}

// TestCallPathOrder checks the documented order of server.New's call
// path: recovery, caller, deadline and log record (the call begun once),
// authz, hooks, the typed handler. A panicking hook and a panicking
// handler are both recovered and logged, with the caller and the stack,
// by the server's logger.
func TestCallPathOrder(t *testing.T) {
	o := &orderRecorder{}
	hook := func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			cr, ok := req.(*mcp.CallToolRequest)
			if method != "tools/call" || !ok {
				return next(ctx, method, req)
			}
			caller, _ := authz.CallerFromContext(ctx)
			_, hasDeadline := ctx.Deadline()
			c := tool.CallFromContext(ctx)
			o.add("hook caller=" + caller.Subject + " call=" + callName(c) + " deadline=" + boolText(hasDeadline))
			if cr.Params.Name == "echo" && strings.Contains(string(cr.Params.Arguments), "hook-panic") {
				panic("hook bug")
			}
			return next(ctx, method, req)
		}
	}
	r := testRegistry()
	sink, logger := newLogSink()
	s, err := server.New(server.Options{
		Authorizer: recordingAuthorizer{o}, Logger: logger,
		Middleware: []mcp.Middleware{hook},
	}, server.Install(r, newDeps("a")))
	if err != nil {
		t.Fatal(err)
	}
	cs := servertest.Connect(t, s, &authz.Caller{Subject: "alice", Roles: []string{"admin"}}, servertest.Options{})

	// A mapped tool: authz before the hook, the hook before the handler,
	// and the hook already sees the caller, the deadline and the call.
	if res := call(t, cs, "get_thing", map[string]any{"id": "7"}); res.IsError {
		t.Fatalf("get_thing: %v", res.Content)
	}
	o.add("after")
	want := []string{"authz", "hook caller=alice call=get_thing deadline=true", "after"}
	if diff := cmp.Diff(want, o.take()); diff != "" {
		t.Errorf("order (-want +got):\n%s", diff)
	}

	// A panicking handler: an isError result, logged with the caller and
	// the handler's stack.
	res := call(t, cs, "boom", nil)
	if !res.IsError || !strings.Contains(text(res), "internal error") {
		t.Errorf("boom: isError %v, %q", res.IsError, text(res))
	}
	// A panicking hook: a protocol error, logged the same way.
	if _, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "hook-panic"}}); err == nil {
		t.Error("a call through a panicking hook succeeded")
	}
	o.take()

	recs := sink.calls(t)
	var panics []map[string]any
	for _, rec := range recs {
		if rec["outcome"] == "panic" {
			panics = append(panics, rec)
		}
	}
	if len(panics) != 2 {
		t.Fatalf("panic records = %v, want 2", panics)
	}
	for i, want := range []struct{ tool, value, frame string }{
		{"boom", "boom", "server_test.testRegistry"},
		{"echo", "hook bug", "server_test.TestCallPathOrder"},
	} {
		rec := panics[i]
		stack, _ := rec["stack"].(string)
		if rec["tool"] != want.tool || rec["subject"] != "alice" || rec["panic"] != want.value || !strings.Contains(stack, want.frame) {
			t.Errorf("panic record %d = tool %v, subject %v, panic %v, stack has %s: %v", i, rec["tool"], rec["subject"], rec["panic"], want.frame, strings.Contains(stack, want.frame))
		}
	}
}

func callName(c *tool.Call) string {
	if c == nil {
		return "<none>"
	}
	return c.Tool
}

func boolText(b bool) string {
	if b {
		return "true"
	}
	return "false"
}

// routeAuthorizer allows exactly the routes in allow.
type routeAuthorizer struct{ allow map[tool.Route]bool }

func (a routeAuthorizer) Allow(_ context.Context, c authz.Caller, r tool.Route) error {
	if !a.allow[r] {
		return &authz.DeniedError{Route: r, Subject: c.Subject, Reason: "not in the test's list"}
	}
	return nil
}

func (a routeAuthorizer) AllowMany(_ context.Context, _ authz.Caller, rs []tool.Route) ([]bool, error) {
	out := make([]bool, len(rs))
	for i, r := range rs {
		out[i] = a.allow[r]
	}
	return out, nil
}

// TestUpstreamErrorsShownFixed: whatever a handler returns, a client sees
// an upstream refusal as authz's fixed text and never an upstream URL.
func TestUpstreamErrorsShownFixed(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "{}") }))
	defer up.Close()
	dead := httptest.NewServer(http.NotFoundHandler())
	dead.Close() // nothing listens there any more
	list := tool.ServiceRoute("things", "GET", "/api/v1/things")
	one := tool.ServiceRoute("things", "GET", "/api/v1/things/{id}")
	a := routeAuthorizer{map[tool.Route]bool{list: true}}
	get := func(ctx context.Context, base, path string) error {
		client := &http.Client{Transport: authz.Transport(nil, "things", base, a, authz.Options{})}
		req, _ := http.NewRequestWithContext(ctx, "GET", base+path, nil)
		resp, err := client.Do(req)
		if err != nil {
			return fmt.Errorf("get %s: %w", path, err) // what tool code does
		}
		resp.Body.Close()
		return nil
	}
	r := registry.New[struct{}]()
	for name, target := range map[string]string{"denied": up.URL + "/api/v1/things/7", "down": dead.URL + "/api/v1/things"} {
		r.Register(tool.Tool[struct{}]{
			Name: name, Description: "Fetch.", ServiceKey: "things", Behaviour: behaviour.ReadOnly,
			VisibilityRoutes: []tool.Route{list, one},
			Handler: tool.Handle(func(ctx context.Context, _ struct{}, _ *mcp.CallToolRequest, _ noArgs) (echoOut, error) {
				base, path, _ := strings.Cut(strings.TrimPrefix(target, "http://"), "/")
				return echoOut{}, get(ctx, "http://"+base, "/"+path)
			}),
		})
	}
	sink, logger := newLogSink()
	s, err := server.New(server.Options{Authorizer: a, Logger: logger}, server.Install(r, struct{}{}))
	if err != nil {
		t.Fatal(err)
	}
	cs := servertest.Connect(t, s, &authz.Caller{Subject: "alice"}, servertest.Options{})
	for _, c := range []struct{ name, want string }{{"denied", "not authorized (insufficient_scope)"}, {"down", "upstream request failed"}} {
		res := call(t, cs, c.name, nil)
		if !res.IsError || text(res) != c.want {
			t.Errorf("%s: isError %v, text %q; want %q", c.name, res.IsError, text(res), c.want)
		}
	}

	// The log record classifies the call by the refusal it wraps: an
	// upstream request authz.Transport denied is "denied", not a
	// "tool_error" like an upstream that is down.
	var got []string
	for _, rec := range sink.calls(t) {
		got = append(got, fmt.Sprint(rec["tool"], "=", rec["outcome"]))
	}
	if diff := cmp.Diff([]string{"denied=denied", "down=tool_error"}, got); diff != "" {
		t.Errorf("call records (-want +got):\n%s", diff)
	}
}
