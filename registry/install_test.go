package registry_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolroute/toolroute/behaviour"
	"github.com/toolroute/toolroute/internal/testing/mcptest"
	"github.com/toolroute/toolroute/internal/testing/syncbuf"
	"github.com/toolroute/toolroute/registry"
	"github.com/toolroute/toolroute/tool"
)

func jsonIndent(v any) ([]byte, error) {
	data, err := json.MarshalIndent(v, "", "  ")
	return append(data, '\n'), err
}

// serve installs r on a new server with deps and connects a client to it.
func serve(t *testing.T, r *registry.Registry[*Deps], deps *Deps) *mcp.ClientSession {
	t.Helper()
	s := mcp.NewServer(&mcp.Implementation{Name: "test-server", Version: "v0.0.1"}, nil)
	r.Install(s, deps)
	return connect(t, s)
}

func connect(t *testing.T, s *mcp.Server) *mcp.ClientSession {
	t.Helper()
	return mcptest.Connect(t, s, nil)
}

func call(t *testing.T, cs *mcp.ClientSession, name string, args any) *mcp.CallToolResult {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("call %s(%v): %v", name, args, err)
	}
	return res
}

func text(res *mcp.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			parts = append(parts, tc.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// TestInstallList checks the tools/list a client sees: every tool with
// its name, title, dedented description, derived annotations and both
// schemas.
func TestInstallList(t *testing.T) {
	r := registry.New[*Deps]()
	r.Register(tool.Tool[*Deps]{
		Name:  "get_item",
		Title: "Get item",
		Description: `
			Fetch one catalog item by its id.

			Use it when the id is known.
		`,
		ServiceKey:       "catalog",
		VisibilityRoutes: []tool.Route{catalog("GET", "/api/v1/items/{id}")},
		Behaviour:        behaviour.ReadOnly,
		Handler:          tool.Handle(getItem),
	})
	r.Register(tool.Tool[*Deps]{
		Name:        "render",
		Description: "Render an item.",
		Local:       true,
		Behaviour:   behaviour.Destructive,
		Idempotent:  true,
		OpenWorld:   true,
		Handler: tool.HandleResult(func(context.Context, *Deps, *mcp.CallToolRequest, getItemArgs) (*mcp.CallToolResult, error) {
			return nil, nil
		}),
	})
	cs := serve(t, r, &Deps{})
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	got, err := json.Marshal(res.Tools)
	if err != nil {
		t.Fatal(err)
	}
	want := `[
	{
		"name": "get_item",
		"title": "Get item",
		"description": "Fetch one catalog item by its id.\n\nUse it when the id is known.",
		"annotations": {"title": "Get item", "readOnlyHint": true, "destructiveHint": false, "idempotentHint": true, "openWorldHint": false},
		"inputSchema": {
			"type": "object",
			"properties": {"id": {"type": "string", "description": "the item's id", "minLength": 1}},
			"required": ["id"],
			"additionalProperties": false
		},
		"outputSchema": {
			"type": "object",
			"properties": {"id": {"type": "string"}, "name": {"type": "string"}},
			"required": ["id", "name"],
			"additionalProperties": false
		}
	},
	{
		"name": "render",
		"description": "Render an item.",
		"annotations": {"readOnlyHint": false, "destructiveHint": true, "idempotentHint": true, "openWorldHint": true},
		"inputSchema": {
			"type": "object",
			"properties": {"id": {"type": "string", "description": "the item's id", "minLength": 1}},
			"required": ["id"],
			"additionalProperties": false
		}
	}
]`
	if diff := cmp.Diff(decode(t, want), decode(t, string(got))); diff != "" {
		t.Errorf("tools/list mismatch (-want +got):\n%s", diff)
	}
	// The listed schemas are the handlers'.
	tl, _ := r.Lookup("get_item")
	if diff := cmp.Diff(decode(t, marshal(t, tl.Handler.InputSchema())), decode(t, marshal(t, res.Tools[0].InputSchema))); diff != "" {
		t.Errorf("input schema differs from the handler's (-want +got):\n%s", diff)
	}
}

func decode(t *testing.T, s string) any {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatalf("%v: %s", err, s)
	}
	return v
}

func marshal(t *testing.T, v any) string {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// TestInstallCall checks that a call reaches the handler with the
// installed deps and the call's tool.Call in its context.
func TestInstallCall(t *testing.T) {
	r := registry.New[*Deps]()
	var got []*tool.Call
	var mu sync.Mutex
	record := func(ctx context.Context) {
		mu.Lock()
		defer mu.Unlock()
		got = append(got, tool.CallFromContext(ctx))
	}
	r.Register(tool.Tool[*Deps]{
		Name:        "get_item",
		Description: "Fetch one item.",
		ServiceKey:  "catalog",
		VisibilityRoutes: []tool.Route{
			catalog("GET", "/api/v1/items/{id}"),
			catalog("HEAD", "/api/v1/items/{id}"),
		},
		Behaviour: behaviour.ReadOnly,
		Handler: tool.Handle(func(ctx context.Context, d *Deps, req *mcp.CallToolRequest, in getItemArgs) (Item, error) {
			record(ctx)
			return getItem(ctx, d, req, in)
		}),
	})
	r.Register(tool.Tool[*Deps]{
		Name:        "server_info",
		Description: "Describe the server.",
		Local:       true,
		Behaviour:   behaviour.ReadOnly,
		Handler: tool.Handle(func(ctx context.Context, d *Deps, req *mcp.CallToolRequest, in struct{}) (Item, error) {
			record(ctx)
			return Item{ID: "server", Name: req.Params.Name}, nil
		}),
	})
	cs := serve(t, r, &Deps{Items: map[string]string{"42": "towel"}})

	res := call(t, cs, "get_item", map[string]any{"id": "42"})
	if res.IsError {
		t.Fatalf("isError: %s", text(res))
	}
	if diff := cmp.Diff(map[string]any{"id": "42", "name": "towel"}, res.StructuredContent); diff != "" {
		t.Errorf("structured content mismatch (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(`{"id":"42","name":"towel"}`, text(res)); diff != "" {
		t.Errorf("text content mismatch (-want +got):\n%s", diff)
	}

	// A handler's plain error is a tool error.
	res = call(t, cs, "get_item", map[string]any{"id": "7"})
	if !res.IsError || text(res) != `no item "7"` {
		t.Errorf("missing item: isError %v, %q", res.IsError, text(res))
	}

	res = call(t, cs, "server_info", map[string]any{})
	if res.IsError || res.StructuredContent.(map[string]any)["name"] != "server_info" {
		t.Errorf("server_info: %v %q", res.IsError, text(res))
	}

	want := []*tool.Call{
		{Tool: "get_item", ServiceKey: "catalog", Routes: []tool.Route{
			{URI: "/catalog/api/v1/items/{id}", Method: "GET"},
			{URI: "/catalog/api/v1/items/{id}", Method: "HEAD"},
		}},
		{Tool: "get_item", ServiceKey: "catalog", Routes: []tool.Route{
			{URI: "/catalog/api/v1/items/{id}", Method: "GET"},
			{URI: "/catalog/api/v1/items/{id}", Method: "HEAD"},
		}},
		{Tool: "server_info", Local: true},
	}
	if diff := cmp.Diff(want, got, cmpopts.IgnoreFields(tool.Call{}, "InputSchema")); diff != "" {
		t.Errorf("CallFromContext mismatch (-want +got):\n%s", diff)
	}
	// The context carries the registry's own view of the tool.
	if calls := r.Calls(); got[0] != calls[0] || got[2] != calls[1] {
		t.Errorf("CallFromContext = %p %p, want the registry's Calls %p %p", got[0], got[2], calls[0], calls[1])
	}
}

type createArgs struct {
	Name     string   `json:"name" jsonschema:"minLength=3"`
	Quantity int      `json:"quantity" jsonschema:"minimum=1,maximum=10"`
	Tags     []string `json:"tags,omitempty"`
	Kind     string   `json:"kind,omitempty" jsonschema:"enum=book,enum=toy"`
}

// TestInstallValidation checks that the SDK validates arguments against
// the schemas Install set: bad ones come back as isError results, and the
// handler never sees them.
func TestInstallValidation(t *testing.T) {
	r := registry.New[*Deps]()
	var calls []createArgs
	r.Register(tool.Tool[*Deps]{
		Name:             "create_item",
		Description:      "Create an item.",
		ServiceKey:       "catalog",
		VisibilityRoutes: []tool.Route{catalog("POST", "/api/v1/items")},
		Behaviour:        behaviour.Additive,
		Handler: tool.Handle(func(ctx context.Context, d *Deps, req *mcp.CallToolRequest, in createArgs) (Item, error) {
			calls = append(calls, in)
			return Item{ID: "1", Name: in.Name}, nil
		}),
	})
	cs := serve(t, r, &Deps{})
	tests := []struct {
		name string
		args any
		ok   bool
	}{
		{"valid", map[string]any{"name": "towel", "quantity": 2}, true},
		{"valid with options", map[string]any{"name": "towel", "quantity": 10, "tags": []string{"a"}, "kind": "toy"}, true},
		{"wrong type", map[string]any{"name": "towel", "quantity": "2"}, false},
		{"wrong type of name", map[string]any{"name": 3, "quantity": 2}, false},
		{"fractional integer", map[string]any{"name": "towel", "quantity": 2.5}, false},
		{"missing required", map[string]any{"name": "towel"}, false},
		{"no arguments", map[string]any{}, false},
		{"minLength", map[string]any{"name": "to", "quantity": 2}, false},
		{"maximum", map[string]any{"name": "towel", "quantity": 11}, false},
		{"minimum", map[string]any{"name": "towel", "quantity": 0}, false},
		{"enum", map[string]any{"name": "towel", "quantity": 1, "kind": "car"}, false},
		{"extra property", map[string]any{"name": "towel", "quantity": 2, "admin": true}, false},
		{"null list", map[string]any{"name": "towel", "quantity": 2, "tags": nil}, false},
		{"not an object", []any{"towel", 2}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := len(calls)
			res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "create_item", Arguments: tt.args})
			if err != nil {
				t.Fatalf("protocol error: %v", err)
			}
			if res.IsError == tt.ok {
				t.Errorf("isError = %v, want %v (%s)", res.IsError, !tt.ok, text(res))
			}
			if ran := len(calls) > before; ran != tt.ok {
				t.Errorf("handler ran: %v, want %v", ran, tt.ok)
			}
			if !tt.ok && text(res) == "" {
				t.Error("isError result without a message")
			}
		})
	}
}

// TestInstallPanic checks that a panicking handler answers with an
// isError result with a generic text, is logged with its stack through
// the registry's logger, and leaves the session serving.
func TestInstallPanic(t *testing.T) {
	r := registry.New[*Deps]()
	logs := defaultLogs(t)
	r.Register(tool.Tool[*Deps]{
		Name:        "explode",
		Description: "Panic.",
		Local:       true,
		Behaviour:   behaviour.ReadOnly,
		Handler: tool.Handle(func(ctx context.Context, d *Deps, req *mcp.CallToolRequest, in getItemArgs) (Item, error) {
			if in.ID == "nil" {
				var m map[string]int
				m["boom"]++ // a runtime error, not a panic call
			}
			panic("secret detail " + in.ID)
		}),
	})
	r.Register(local())
	cs := serve(t, r, &Deps{Items: map[string]string{"42": "towel"}})

	for i, id := range []string{"x1", "nil"} {
		res := call(t, cs, "explode", map[string]any{"id": id})
		if !res.IsError {
			t.Fatalf("panic gave a successful result: %v", res.StructuredContent)
		}
		if want := "internal error: the tool failed unexpectedly; the failure was logged"; text(res) != want {
			t.Errorf("panic result text = %q, want %q", text(res), want)
		}
		if strings.Contains(text(res), "secret") || res.StructuredContent != nil {
			t.Errorf("the panic leaked to the client: %q %v", text(res), res.StructuredContent)
		}

		// The session keeps serving.
		res = call(t, cs, "server_info", map[string]any{"id": "42"})
		if res.IsError || text(res) != `{"id":"42","name":"towel"}` {
			t.Errorf("call %d after a panic: %v %q", i, res.IsError, text(res))
		}
	}

	var records []map[string]any
	for line := range strings.SplitSeq(strings.TrimSpace(logs.String()), "\n") {
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		records = append(records, rec)
	}
	if len(records) != 2 {
		t.Fatalf("logged %d records, want 2:\n%s", len(records), logs.String())
	}
	for i, rec := range records {
		if rec["level"] != "ERROR" || rec["tool"] != "explode" {
			t.Errorf("record %d: level %v, tool %v", i, rec["level"], rec["tool"])
		}
		stack, _ := rec["stack"].(string)
		if !strings.Contains(stack, "goroutine ") || !strings.Contains(stack, "registry_test.TestInstallPanic") {
			t.Errorf("record %d: stack does not show the handler:\n%s", i, stack)
		}
	}
	if p, _ := records[0]["panic"].(string); p != "secret detail x1" {
		t.Errorf("record 0: panic = %q", p)
	}
	if p, _ := records[1]["panic"].(string); !strings.Contains(p, "assignment to entry in nil map") {
		t.Errorf("record 1: panic = %q", p)
	}
}

// touchy is a field type that marshals as text and panics on the input
// "boom" (decoding) or when its value is "boom" (encoding): code the SDK
// runs outside the handler.
type touchy string

func (t touchy) MarshalText() ([]byte, error) {
	if t == "boom" {
		panic("touchy: cannot encode boom")
	}
	return []byte(t), nil
}

func (t *touchy) UnmarshalText(b []byte) error {
	if string(b) == "boom" {
		panic("touchy: cannot decode boom")
	}
	*t = touchy(b)
	return nil
}

// TestInstallPanicOutsideHandler: a panic in the SDK's decoding of the
// arguments or encoding of the result (a field type's UnmarshalText or
// MarshalText) gets the same generic isError result and log record as a
// panicking handler, and the session keeps serving. Without Install's
// middleware it killed the process.
func TestInstallPanicOutsideHandler(t *testing.T) {
	type echo struct {
		V touchy `json:"v"`
	}
	r := registry.New[*Deps]()
	logs := defaultLogs(t)
	r.Register(tool.Tool[*Deps]{
		Name:        "echo",
		Description: "Echo, upper-cased.",
		Local:       true,
		Behaviour:   behaviour.ReadOnly,
		Handler: tool.Handle(func(_ context.Context, _ *Deps, _ *mcp.CallToolRequest, in echo) (echo, error) {
			if in.V == "in" {
				return echo{V: "boom"}, nil
			}
			return echo{V: touchy(strings.ToUpper(string(in.V)))}, nil
		}),
	})
	cs := serve(t, r, &Deps{})
	for _, in := range []string{"boom", "in"} {
		res := call(t, cs, "echo", map[string]any{"v": in})
		if want := "internal error: the tool failed unexpectedly; the failure was logged"; !res.IsError || text(res) != want {
			t.Errorf("input %q: IsError %v, text %q; want the error %q", in, res.IsError, text(res), want)
		}
		if res := call(t, cs, "echo", map[string]any{"v": "ok"}); res.IsError || !strings.Contains(text(res), "OK") {
			t.Errorf("after the panic on %q: IsError %v, text %q", in, res.IsError, text(res))
		}
	}
	for _, want := range []string{"cannot decode boom", "cannot encode boom"} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("no log record of %q:\n%s", want, logs.String())
		}
	}
}

// defaultLogs makes slog.Default log JSON to the returned buffer for the
// rest of the test (which must not run in parallel): a bare server's
// panics are logged there.
func defaultLogs(t *testing.T) *syncbuf.Buffer {
	logs := &syncbuf.Buffer{}
	prev := slog.Default()
	slog.SetDefault(slog.New(slog.NewJSONHandler(logs, nil)))
	t.Cleanup(func() { slog.SetDefault(prev) })
	return logs
}

// TestInstallPanicDefaultLogger checks that on a bare server the panic
// goes to slog.Default.
func TestInstallPanicDefaultLogger(t *testing.T) {
	var logs bytes.Buffer
	prev := slog.Default()
	slog.SetDefault(slog.New(slog.NewTextHandler(&logs, nil)))
	t.Cleanup(func() { slog.SetDefault(prev) })

	r := registry.New[*Deps]()
	r.Register(tool.Tool[*Deps]{
		Name: "explode", Description: "Panic.", Local: true, Behaviour: behaviour.ReadOnly,
		Handler: tool.Handle(func(context.Context, *Deps, *mcp.CallToolRequest, struct{}) (Item, error) {
			panic(errors.New("kaboom"))
		}),
	})
	cs := serve(t, r, &Deps{})
	if res := call(t, cs, "explode", nil); !res.IsError {
		t.Fatal("no isError result")
	}
	if s := logs.String(); !strings.Contains(s, "tool=explode") || !strings.Contains(s, "kaboom") || !strings.Contains(s, "stack=") {
		t.Errorf("default logger got:\n%s", s)
	}
}

// TestInstallProtocolError checks that a handler returning a
// *jsonrpc.Error ends the call with that protocol error.
func TestInstallProtocolError(t *testing.T) {
	r := registry.New[*Deps]()
	r.Register(tool.Tool[*Deps]{
		Name: "refuse", Description: "Refuse.", Local: true, Behaviour: behaviour.ReadOnly,
		Handler: tool.Handle(func(context.Context, *Deps, *mcp.CallToolRequest, struct{}) (Item, error) {
			return Item{}, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "go away"}
		}),
	})
	r.Register(local())
	cs := serve(t, r, &Deps{})
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "refuse", Arguments: map[string]any{}})
	if err == nil {
		t.Fatalf("got a result, want a protocol error: %v %q", res.IsError, text(res))
	}
	var wire *jsonrpc.Error
	if !errors.As(err, &wire) || wire.Code != jsonrpc.CodeInvalidParams || wire.Message != "go away" {
		t.Errorf("error = %v, want the handler's *jsonrpc.Error", err)
	}
	// The session still serves.
	if res := call(t, cs, "server_info", map[string]any{"id": "x"}); !res.IsError || text(res) != `no item "x"` {
		t.Errorf("after a protocol error: %v %q", res.IsError, text(res))
	}
	// An unknown tool is a protocol error too.
	if _, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "nope"}); err == nil {
		t.Error("calling an unknown tool succeeded")
	}
}

// TestInstallResult checks that a HandleResult tool's result reaches the
// client as it was returned.
func TestInstallResult(t *testing.T) {
	r := registry.New[*Deps]()
	r.Register(tool.Tool[*Deps]{
		Name: "describe", Description: "Describe an item.", ServiceKey: "catalog",
		VisibilityRoutes: []tool.Route{catalog("GET", "/api/v1/items/{id}")},
		Behaviour:        behaviour.ReadOnly,
		Handler: tool.HandleResult(func(ctx context.Context, d *Deps, req *mcp.CallToolRequest, in getItemArgs) (*mcp.CallToolResult, error) {
			if in.ID == "bad" {
				return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "bad id, try 42"}}}, nil
			}
			return &mcp.CallToolResult{Content: []mcp.Content{
				&mcp.TextContent{Text: "item " + in.ID},
				&mcp.ImageContent{Data: []byte{0x89, 'P', 'N', 'G'}, MIMEType: "image/png"},
			}}, nil
		}),
	})
	cs := serve(t, r, &Deps{})
	res := call(t, cs, "describe", map[string]any{"id": "42"})
	if res.IsError || len(res.Content) != 2 || res.StructuredContent != nil {
		t.Fatalf("result = %+v", res)
	}
	if tc, ok := res.Content[0].(*mcp.TextContent); !ok || tc.Text != "item 42" {
		t.Errorf("content[0] = %#v", res.Content[0])
	}
	if ic, ok := res.Content[1].(*mcp.ImageContent); !ok || ic.MIMEType != "image/png" || string(ic.Data) != "\x89PNG" {
		t.Errorf("content[1] = %#v", res.Content[1])
	}
	res = call(t, cs, "describe", map[string]any{"id": "bad"})
	if !res.IsError || text(res) != "bad id, try 42" {
		t.Errorf("own error result = %v %q", res.IsError, text(res))
	}
}

// TestInstallTwice checks that one registry serves two servers, each with
// its own deps.
func TestInstallTwice(t *testing.T) {
	r := registry.New[*Deps]()
	r.Register(mapped())
	r.Register(local())
	a := serve(t, r, &Deps{Items: map[string]string{"1": "from a"}})
	b := serve(t, r, &Deps{Items: map[string]string{"1": "from b"}})
	for _, c := range []struct {
		cs   *mcp.ClientSession
		want string
	}{{a, "from a"}, {b, "from b"}, {a, "from a"}} {
		res := call(t, c.cs, "get_item", map[string]any{"id": "1"})
		if res.IsError || res.StructuredContent.(map[string]any)["name"] != c.want {
			t.Errorf("got %v %q, want %q", res.IsError, text(res), c.want)
		}
		lt, err := c.cs.ListTools(context.Background(), nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(lt.Tools) != 2 {
			t.Errorf("listed %d tools, want 2", len(lt.Tools))
		}
	}
}

// TestConcurrent exercises the registry from several goroutines (run
// with -race).
func TestConcurrent(t *testing.T) {
	r := registry.New[*Deps]()
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			tl := local()
			tl.Name = fmt.Sprintf("tool_%d", i)
			r.Register(tl)
			_ = r.All()
			_ = r.Table()
			_ = r.AnnotationsFor(tl.Name)
			_ = r.Check(tl)
		})
	}
	wg.Wait()
	if n := len(r.All()); n != 8 {
		t.Fatalf("len(All) = %d", n)
	}
	cs := serve(t, r, &Deps{Items: map[string]string{"1": "x"}})
	for i := range 8 {
		wg.Go(func() {
			res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: fmt.Sprintf("tool_%d", i), Arguments: map[string]any{"id": "1"}})
			if err != nil || res.IsError {
				t.Errorf("call %d: %v", i, err)
			}
		})
	}
	wg.Wait()
}

// askOnce is a handler error that asks the client a question.
type askOnce struct{}

func (askOnce) Error() string { return "a question" }

func (askOnce) InputRequiredResult() *mcp.CallToolResult {
	return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{"q": &mcp.ElicitParams{Message: "Sure?"}}}
}

// TestInstallProgressAcrossInputRounds: for a 2025-11-25 client the SDK
// turns a question into elicitation/create and runs the handler again in
// the same call. On a bare *mcp.Server with Install (no server.New), the
// progress values of the two runs still form one increasing sequence:
// the second run's report of 1 (below the first run's 5) is dropped.
func TestInstallProgressAcrossInputRounds(t *testing.T) {
	r := registry.New[*Deps]()
	r.Register(tool.Tool[*Deps]{
		Name:        "ask",
		Description: "Ask, then report.",
		Local:       true,
		Behaviour:   behaviour.ReadOnly,
		Handler: tool.Handle(func(ctx context.Context, _ *Deps, req *mcp.CallToolRequest, _ struct{}) (struct{}, error) {
			if req.Params.InputResponses == nil {
				tool.Progress(ctx, req, 5, 10, "before asking")
				return struct{}{}, askOnce{}
			}
			tool.Progress(ctx, req, 1, 10, "after the answer")
			tool.Progress(ctx, req, 7, 10, "done")
			return struct{}{}, nil
		}),
	})
	s := mcp.NewServer(&mcp.Implementation{Name: "s"}, nil)
	r.Install(s, &Deps{})
	got := make(chan string, 8)
	c := mcp.NewClient(&mcp.Implementation{Name: "c"}, &mcp.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) { got <- req.Params.Message },
		ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{}}, nil
		},
	})
	cs := mcptest.Connect(t, s, &mcptest.Options{Client: c, Session: &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"}})
	p := &mcp.CallToolParams{Name: "ask", Arguments: map[string]any{}}
	p.SetProgressToken("tok")
	if res, err := cs.CallTool(context.Background(), p); err != nil || res.IsError {
		t.Fatalf("CallTool = %v, %v", res, err)
	}
	// The notifications precede the result on the connection; the client
	// handles them in order.
	var msgs []string
	for len(msgs) < 2 {
		select {
		case m := <-got:
			msgs = append(msgs, m)
		case <-time.After(10 * time.Second):
			t.Fatalf("only %d of 2 progress notifications arrived within 10s: %q", len(msgs), msgs)
		}
	}
	if diff := cmp.Diff([]string{"before asking", "done"}, msgs); diff != "" {
		t.Errorf("progress notifications (-want +got):\n%s", diff)
	}
	select {
	case m := <-got:
		t.Errorf("another notification: %q", m)
	default:
	}
}

// TestInstallBeginsCallsAddToolsDoesNot pins who begins a call: Install
// (for a bare server) adds the middleware that puts the tool's call in
// the handler's context; AddTools adds the tools alone, for a server
// whose own chain begins calls (server.New's), so a call is never begun
// twice.
func TestInstallBeginsCallsAddToolsDoesNot(t *testing.T) {
	r := registry.New[*Deps]()
	r.Register(tool.Tool[*Deps]{
		Name: "which", Description: "Name the call.", Local: true, Behaviour: behaviour.ReadOnly,
		Handler: tool.Handle(func(ctx context.Context, _ *Deps, _ *mcp.CallToolRequest, _ struct{}) (Item, error) {
			if c := tool.CallFromContext(ctx); c != nil {
				return Item{ID: c.Tool}, nil
			}
			return Item{ID: "none"}, nil
		}),
	})
	installed := mcp.NewServer(&mcp.Implementation{Name: "installed"}, nil)
	r.Install(installed, &Deps{})
	added := mcp.NewServer(&mcp.Implementation{Name: "added"}, nil)
	r.AddTools(added, &Deps{})
	for _, c := range []struct {
		name string
		s    *mcp.Server
		want string
	}{{"Install", installed, `{"id":"which","name":""}`}, {"AddTools", added, `{"id":"none","name":""}`}} {
		if got := text(call(t, connect(t, c.s), "which", map[string]any{})); got != c.want {
			t.Errorf("%s: %s, want %s", c.name, got, c.want)
		}
	}
}
