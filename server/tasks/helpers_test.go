package tasks_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
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
	"github.com/toolroute/toolroute/registry"
	"github.com/toolroute/toolroute/server"
	"github.com/toolroute/toolroute/server/tasks"
	"github.com/toolroute/toolroute/tool"
)

// deps is the tools' container: the gates the tests open, and what the
// handlers report.
type deps struct {
	release chan struct{}       // closing it lets "slow" and "maybe" finish
	started chan string         // each run of "slow" and "maybe" sends its tool
	ended   chan error          // a run whose context ended sends its cause
	confirm *permission.Checker // "confirm"'s question
	runs    atomic.Int32        // runs of "confirm"
	big     int                 // the size of "big"'s text
}

type noArgs struct{}

type text struct {
	Text string `json:"text"`
}

// wait blocks until release is closed or its context ends.
func wait(ctx context.Context, d *deps, name string) (text, error) {
	d.started <- name
	select {
	case <-d.release:
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
			return wait(ctx, d, "slow")
		}),
	})
	r.Register(tool.Tool[*deps]{
		Name: "maybe", Description: "Waits for the test; a task once it ran a nanosecond.", Local: true, Behaviour: behaviour.ReadOnly,
		Task: tool.TaskAllowed, TaskAfter: time.Nanosecond,
		Handler: tool.Handle(func(ctx context.Context, d *deps, _ *mcp.CallToolRequest, _ noArgs) (text, error) {
			return wait(ctx, d, "maybe")
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
	id    atomic.Int64
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
		release: make(chan struct{}), started: make(chan string, 16), ended: make(chan error, 16), big: 10,
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
type rpcError struct {
	Code    int64           `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data"`
}

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

// rpc sends one request as a raw HTTP client following the SEP would, and
// returns its result or error.
func (e *env) rpc(c client, method string, params map[string]any) (map[string]any, *rpcError) {
	e.t.Helper()
	return e.rpcHeader(c, method, params, "")
}

// rpcHeader is rpc with Mcp-Name set to name ("" selects the SEP's: the
// tool's name, or the task id).
func (e *env) rpcHeader(c client, method string, params map[string]any, name string) (map[string]any, *rpcError) {
	e.t.Helper()
	version := c.version
	if version == "" {
		version = "2026-07-28"
	}
	if params == nil {
		params = map[string]any{}
	}
	caps := map[string]any{"elicitation": map[string]any{"form": map[string]any{}}}
	if c.declares {
		caps["extensions"] = map[string]any{tasks.Extension: map[string]any{}}
	}
	if version >= "2026-07-28" {
		params["_meta"] = map[string]any{
			"io.modelcontextprotocol/protocolVersion":    version,
			"io.modelcontextprotocol/clientCapabilities": caps,
		}
	}
	if name == "" {
		if n, ok := params["name"].(string); ok {
			name = n
		} else if n, ok := params["taskId"].(string); ok {
			name = n
		}
	}
	id := e.id.Add(1)
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
	req, _ := http.NewRequest(http.MethodPost, e.url, strings.NewReader(string(body)))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer "+c.token)
	req.Header.Set("Mcp-Protocol-Version", version)
	if version >= "2026-07-28" {
		req.Header.Set("Mcp-Method", method)
		if name != "" {
			req.Header.Set("Mcp-Name", name)
		}
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatalf("POST %s: %v", method, err)
	}
	defer resp.Body.Close()
	var msg struct {
		Result map[string]any `json:"result"`
		Error  *rpcError      `json:"error"`
	}
	data := ""
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(nil, 8<<20)
		for sc.Scan() {
			if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
				data = d
			}
		}
	} else {
		var b strings.Builder
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(nil, 8<<20)
		for sc.Scan() {
			b.WriteString(sc.Text())
		}
		data = b.String()
	}
	if err := json.Unmarshal([]byte(data), &msg); err != nil {
		e.t.Fatalf("%s: HTTP %d, answer %q: %v", method, resp.StatusCode, data, err)
	}
	return msg.Result, msg.Error
}

// call calls tool name with no arguments.
func (e *env) call(c client, name string) (map[string]any, *rpcError) {
	e.t.Helper()
	return e.rpc(c, "tools/call", map[string]any{"name": name, "arguments": map[string]any{}})
}

// create calls tool name as c and returns the task it became.
func (e *env) create(c client, name string) string {
	e.t.Helper()
	res, rerr := e.call(c, name)
	if rerr != nil {
		e.t.Fatalf("tools/call %s: error %+v", name, rerr)
	}
	if res["resultType"] != "task" {
		e.t.Fatalf("tools/call %s = %v, want a CreateTaskResult", name, res)
	}
	return res["taskId"].(string)
}

// get returns tasks/get's answer.
func (e *env) get(c client, id string) (map[string]any, *rpcError) {
	e.t.Helper()
	return e.rpc(c, "tasks/get", map[string]any{"taskId": id})
}

// until polls tasks/get as ada until the task has status, and returns
// it; it fails the test after await.Timeout.
func (e *env) until(c client, id, status string) map[string]any {
	e.t.Helper()
	deadline := time.Now().Add(await.Timeout)
	var last map[string]any
	for time.Now().Before(deadline) {
		res, rerr := e.get(c, id)
		if rerr != nil {
			e.t.Fatalf("tasks/get %s: %+v", id, rerr)
		}
		if res["status"] == status {
			return res
		}
		last = res
		time.Sleep(5 * time.Millisecond)
	}
	e.t.Fatalf("task %s did not become %s within %v; last %v", id, status, await.Timeout, last)
	return nil
}

// text is the first text content of a CallToolResult object.
func resultText(res any) string {
	m, _ := res.(map[string]any)
	c, _ := m["content"].([]any)
	if len(c) == 0 {
		return fmt.Sprintf("no content in %v", res)
	}
	first, _ := c[0].(map[string]any)
	s, _ := first["text"].(string)
	return s
}

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
