package tasks_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolroute/toolroute/authz"
	"github.com/toolroute/toolroute/authz/permission"
	"github.com/toolroute/toolroute/behaviour"
	"github.com/toolroute/toolroute/internal/testing/await"
	"github.com/toolroute/toolroute/internal/testing/tasktest"
	"github.com/toolroute/toolroute/registry"
	"github.com/toolroute/toolroute/server"
	"github.com/toolroute/toolroute/server/tasks"
	"github.com/toolroute/toolroute/tool"
)

// deps is the tools' container: the gates the tests open, and what the
// handlers report.
type deps struct {
	release chan struct{}       // closing it lets "slow", "maybe" and "hold" finish
	maybe   chan struct{}       // closing it lets "maybe" alone finish
	started chan string         // each run of "slow", "maybe" and "hold" sends its tool
	ended   chan error          // a run whose context ended sends its cause
	confirm *permission.Checker // "confirm"'s question
	runs    atomic.Int32        // runs of "confirm"
	big     int                 // the size of "big"'s text
}

type noArgs struct{}

type text struct {
	Text string `json:"text"`
}

// wait blocks until release or own (if not nil) is closed, or its
// context ends.
func wait(ctx context.Context, d *deps, name string, own chan struct{}) (text, error) {
	d.started <- name
	select {
	case <-d.release:
		return text{Text: name + " done"}, nil
	case <-own:
		return text{Text: name + " done"}, nil
	case <-ctx.Done():
		d.ended <- context.Cause(ctx)
		return text{}, ctx.Err()
	}
}

var svcReport = tool.ServiceRoute("svc", http.MethodGet, "/report")

// newRegistry is the tools of these tests.
func newRegistry() *registry.Registry[*deps] {
	r := registry.New[*deps]()
	r.Register(tool.Tool[*deps]{
		Name: "slow", Description: "Waits for the test.", Local: true, Behaviour: behaviour.ReadOnly, Task: tool.TaskAlways,
		Handler: tool.Handle(func(ctx context.Context, d *deps, _ *mcp.CallToolRequest, _ noArgs) (text, error) {
			return wait(ctx, d, "slow", nil)
		}),
	})
	r.Register(tool.Tool[*deps]{
		Name: "maybe", Description: "Waits for the test; a task once it ran a nanosecond.", Local: true, Behaviour: behaviour.ReadOnly,
		Task: tool.TaskAllowed, TaskAfter: time.Nanosecond,
		Handler: tool.Handle(func(ctx context.Context, d *deps, _ *mcp.CallToolRequest, _ noArgs) (text, error) {
			return wait(ctx, d, "maybe", d.maybe)
		}),
	})
	r.Register(tool.Tool[*deps]{
		Name: "hold", Description: "Waits for the test; a task only after an hour.", Local: true, Behaviour: behaviour.ReadOnly,
		Task: tool.TaskAllowed, TaskAfter: time.Hour,
		Handler: tool.Handle(func(ctx context.Context, d *deps, _ *mcp.CallToolRequest, _ noArgs) (text, error) {
			return wait(ctx, d, "hold", nil)
		}),
	})
	r.Register(tool.Tool[*deps]{
		Name: "fast", Description: "Answers at once; a task only after an hour.", Local: true, Behaviour: behaviour.ReadOnly,
		Task: tool.TaskAllowed, TaskAfter: time.Hour,
		Handler: tool.Handle(func(context.Context, *deps, *mcp.CallToolRequest, noArgs) (text, error) {
			return text{Text: "fast"}, nil
		}),
	})
	r.Register(tool.Tool[*deps]{
		Name: "plain", Description: "No task setting.", Local: true, Behaviour: behaviour.ReadOnly,
		Handler: tool.Handle(func(context.Context, *deps, *mcp.CallToolRequest, noArgs) (text, error) {
			return text{Text: "plain"}, nil
		}),
	})
	r.Register(tool.Tool[*deps]{
		Name: "report", Description: "A mapped tool.", ServiceKey: "svc", VisibilityRoutes: []tool.Route{svcReport},
		Behaviour: behaviour.ReadOnly, Task: tool.TaskAlways,
		Handler: tool.Handle(func(context.Context, *deps, *mcp.CallToolRequest, noArgs) (text, error) {
			return text{Text: "report"}, nil
		}),
	})
	r.Register(tool.Tool[*deps]{
		Name: "confirm", Description: "Asks first.", Local: true, Behaviour: behaviour.Destructive, Task: tool.TaskAlways,
		Handler: tool.Handle(func(ctx context.Context, d *deps, req *mcp.CallToolRequest, _ noArgs) (text, error) {
			d.runs.Add(1)
			if _, err := d.confirm.Check(ctx, req, permission.Request{Subjects: []string{"item:1"}, Capabilities: []string{"delete"}, Reason: "Delete item 1?", NoRemember: true}); err != nil {
				return text{}, err
			}
			return text{Text: "deleted"}, nil
		}),
	})
	r.Register(tool.Tool[*deps]{
		Name: "boom", Description: "Fails with a protocol error.", Local: true, Behaviour: behaviour.ReadOnly, Task: tool.TaskAlways,
		Handler: tool.Handle(func(context.Context, *deps, *mcp.CallToolRequest, noArgs) (text, error) {
			return text{}, &jsonrpc.Error{Code: -32001, Message: "rate limit of the upstream exceeded"}
		}),
	})
	r.Register(tool.Tool[*deps]{
		Name: "oops", Description: "Fails with a tool error.", Local: true, Behaviour: behaviour.ReadOnly, Task: tool.TaskAlways,
		Handler: tool.Handle(func(context.Context, *deps, *mcp.CallToolRequest, noArgs) (text, error) {
			return text{}, errors.New("invalid input")
		}),
	})
	r.Register(tool.Tool[*deps]{
		Name: "big", Description: "A large result.", Local: true, Behaviour: behaviour.ReadOnly, Task: tool.TaskAlways,
		Handler: tool.Handle(func(_ context.Context, d *deps, _ *mcp.CallToolRequest, _ noArgs) (text, error) {
			return text{Text: strings.Repeat("x", d.big)}, nil
		}),
	})
	return r
}

// The callers: ada and bob may see report; "ada-revoked" is ada without
// that right.
var callers = map[string]authz.Caller{
	"tok-ada":         {Subject: "ada", Roles: []string{"reader"}},
	"tok-bob":         {Subject: "bob", Roles: []string{"reader"}},
	"tok-ada-revoked": {Subject: "ada", Roles: []string{"none"}},
	"tok-carol":       {Subject: "carol", Roles: []string{"reader"}},
}

func policy(t *testing.T) authz.Authorizer {
	t.Helper()
	p, err := authz.NewPolicy([]authz.RolePolicy{
		authz.RolePolicyFor("reader", []tool.Route{svcReport}),
		authz.RolePolicyFor("none", []tool.Route{tool.ServiceRoute("svc", http.MethodGet, "/nothing")}),
	})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// env is one replica: a server with tasks over real HTTP on loopback.
type env struct {
	t     *testing.T
	url   string
	tasks *tasks.Tasks
	deps  *deps
}

// newEnv starts a replica with opts (Authorizer set here when nil).
func newEnv(t *testing.T, opts tasks.Options) *env {
	t.Helper()
	return newEnvWith(t, opts, newRegistry())
}

// newEnvWith starts a replica serving reg's tools.
func newEnvWith(t *testing.T, opts tasks.Options, reg *registry.Registry[*deps]) *env {
	t.Helper()
	a := policy(t)
	if opts.Authorizer == nil {
		opts.Authorizer = a
	}
	tk, err := tasks.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	d := &deps{
		release: make(chan struct{}), maybe: make(chan struct{}), started: make(chan string, 16), ended: make(chan error, 16), big: 10,
		confirm: permission.New(permission.Options{Principal: func(ctx context.Context, _ *mcp.CallToolRequest) string {
			c, _ := authz.CallerFromContext(ctx)
			return c.Subject
		}}),
	}
	s, err := server.New(server.Options{Authorizer: a}, server.Install(reg, d), tk)
	if err != nil {
		t.Fatal(err)
	}
	h, err := server.HTTPHandler(s, server.HTTPOptions{Verifier: server.StaticTokens(callers)})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(h)
	t.Cleanup(func() {
		ctx, cancel := context.WithCancel(context.Background())
		cancel() // fail whatever still runs: the test is over
		tk.Shutdown(ctx)
		hs.Close()
	})
	return &env{t: t, url: hs.URL, tasks: tk, deps: d}
}

// rpcError is a JSON-RPC error answer.
type rpcError = tasktest.Error

// client is how a request is made: its token and whether it declares
// the extension.
type client struct {
	token    string
	declares bool
	version  string // "" selects 2026-07-28
}

var (
	ada      = client{token: "tok-ada", declares: true}
	bob      = client{token: "tok-bob", declares: true}
	adaPlain = client{token: "tok-ada"}
)

// at is c at e.
func (e *env) at(c client) tasktest.Client {
	return tasktest.Client{URL: e.url, Token: c.token, Declares: c.declares, Version: c.version}
}

// rpc sends one request as a raw HTTP client following the SEP would, and
// returns its result or error.
func (e *env) rpc(c client, method string, params map[string]any) (map[string]any, *rpcError) {
	e.t.Helper()
	return e.at(c).RPC(e.t, method, params, "")
}

// rpcHeader is rpc with Mcp-Name set to name.
func (e *env) rpcHeader(c client, method string, params map[string]any, name string) (map[string]any, *rpcError) {
	e.t.Helper()
	return e.at(c).RPC(e.t, method, params, name)
}

// call calls tool name with no arguments.
func (e *env) call(c client, name string) (map[string]any, *rpcError) {
	e.t.Helper()
	return e.at(c).Call(e.t, name, nil)
}

// create calls tool name as c and returns the task it became.
func (e *env) create(c client, name string) string {
	e.t.Helper()
	return e.at(c).Create(e.t, name, nil)
}

// get returns tasks/get's answer.
func (e *env) get(c client, id string) (map[string]any, *rpcError) {
	e.t.Helper()
	return e.at(c).Get(e.t, id)
}

// until polls tasks/get as c until the task has status, and returns
// it; it fails the test after await.Timeout.
func (e *env) until(c client, id, status string) map[string]any {
	e.t.Helper()
	return e.at(c).Until(e.t, id, status, await.Timeout)
}

// resultText is the first text content of a CallToolResult object.
func resultText(res any) string { return tasktest.Text(res) }

// idle returns a channel closed once no task runs on e (polled).
func (e *env) idle() <-chan struct{} {
	ch := make(chan struct{})
	go func() {
		for deadline := time.Now().Add(await.Timeout); time.Now().Before(deadline); time.Sleep(2 * time.Millisecond) {
			if e.tasks.Running() == 0 {
				close(ch)
				return
			}
		}
	}()
	return ch
}
