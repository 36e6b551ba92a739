package server_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/fx"
	"go.uber.org/fx/fxtest"

	"github.com/toolroute/toolroute/authz"
	"github.com/toolroute/toolroute/authz/permission"
	"github.com/toolroute/toolroute/behaviour"
	"github.com/toolroute/toolroute/internal/testing/await"
	"github.com/toolroute/toolroute/registry"
	"github.com/toolroute/toolroute/server"
	"github.com/toolroute/toolroute/server/servertest"
	"github.com/toolroute/toolroute/tool"
)

// The server features of the request-lifecycle issue over the four
// combinations it asks for: a client of MCP 2026-07-28 and one of
// 2025-11-25, each over in-memory transports and over stateless HTTP
// (server.NewHTTPServer on 127.0.0.1). Progress, liveness, cancellation
// and argument decoding have their own tables (lifecycle_test.go,
// args_test.go); these tests cover instructions, several registries,
// hooks, permission asking and anonymous HTTP callers.

const (
	v2026 = "2026-07-28"
	v2025 = "2025-11-25"
)

// A mCombo is a transport and a protocol version.
type mCombo struct {
	name    string
	http    bool
	version string
}

var mCombos = []mCombo{
	{"in-memory/" + v2026, false, v2026},
	{"in-memory/" + v2025, false, v2025},
	{"http/" + v2026, true, v2026},
	{"http/" + v2025, true, v2025},
}

// connect connects c (nil: a plain client) to s as the caller of token, a
// key of testTokens: over in-memory transports with that caller in the
// connection's context, or as the bearer of requests to a stateless HTTP
// server on a loopback port. wire, if set, receives every message the
// client reads ("read: JSON" lines).
func (m mCombo) connect(t *testing.T, s *mcp.Server, c *mcp.Client, token string, wire io.Writer) *mcp.ClientSession {
	t.Helper()
	opts := servertest.Options{ProtocolVersion: m.version, Client: c}
	caller := testTokens[token]
	caller.Bearer = token
	var url string
	if m.http {
		url = startHTTP(t, s, server.HTTPOptions{}).URL()
		// See connectHTTP: idle connections would hold Shutdown.
		t.Cleanup(http.DefaultTransport.(*http.Transport).CloseIdleConnections)
	}
	switch {
	case wire == nil && m.http:
		return servertest.ConnectHTTP(t, url, token, opts)
	case wire == nil:
		return servertest.Connect(t, s, &caller, opts)
	}
	// servertest's helpers cannot log the wire: connect as they do.
	var ct mcp.Transport
	if m.http {
		ct = &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: servertest.BearerClient(token), MaxRetries: -1}
	} else {
		st, mct := mcp.NewInMemoryTransports()
		ss, err := s.Connect(authz.WithCaller(context.Background(), caller), st, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { ss.Wait() })
		ct = mct
	}
	if c == nil {
		c = mcp.NewClient(&mcp.Implementation{Name: "matrix", Version: "v0"}, nil)
	}
	cs, err := c.Connect(context.Background(), &mcp.LoggingTransport{Transport: ct, Writer: wire}, &mcp.ClientSessionOptions{ProtocolVersion: m.version})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// wireInstructions returns the instructions of the initialize (2025) or
// server/discover (2026) result the client read, and whether the result
// has the field at all.
func wireInstructions(t *testing.T, lines []string) (string, bool) {
	t.Helper()
	for _, l := range lines {
		data, ok := strings.CutPrefix(l, "read: ")
		if !ok {
			continue
		}
		var msg struct {
			Result map[string]json.RawMessage `json:"result"`
		}
		if err := json.Unmarshal([]byte(data), &msg); err != nil {
			t.Fatalf("wire line %q: %v", l, err)
		}
		if _, ok := msg.Result["capabilities"]; !ok {
			continue
		}
		raw, ok := msg.Result["instructions"]
		if !ok {
			return "", false
		}
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			t.Fatalf("instructions %s: %v", raw, err)
		}
		return s, true
	}
	t.Fatalf("no initialize or discover result on the wire:\n%s", strings.Join(lines, "\n"))
	return "", false
}

var testToolNames = []string{"boom", "echo", "fail", "get_thing", "wait", "whoami"}

func TestMatrixInstructions(t *testing.T) {
	const (
		full   = "Use `whoami` to learn who you are, then `echo` to repeat yourself."
		short  = "A test server; start with `whoami`."
		custom = "This instance serves the staging catalog."
	)
	pointer := func(name string) string {
		return "Call the `" + name + "` tool for this server's full instructions before using its other tools."
	}
	tests := []struct {
		name       string
		opts       server.Options
		advertised string // "": omitted from the wire
		tool       string // the instructions tool, if any
		toolText   string // its result, and part of its description
	}{
		{name: "none"},
		{
			name: "blank texts are omitted",
			opts: server.Options{Instructions: " \n", ShortInstructions: "\t", CustomInstructions: "  ", AutoInstructions: true},
		},
		{name: "full", opts: server.Options{Instructions: "\n" + full + "\n"}, advertised: full},
		{
			name:       "custom prepended, short unused",
			opts:       server.Options{Instructions: full, ShortInstructions: short, CustomInstructions: custom},
			advertised: custom + "\n\n" + full,
		},
		{name: "custom alone", opts: server.Options{CustomInstructions: custom}, advertised: custom},
		{
			name:       "auto",
			opts:       server.Options{Instructions: full, ShortInstructions: short, CustomInstructions: custom, AutoInstructions: true},
			advertised: custom + "\n\n" + short + "\n\n" + pointer("instructions"),
			tool:       "instructions",
			toolText:   custom + "\n\n" + full,
		},
		{
			name:       "auto, no short text, named tool",
			opts:       server.Options{Instructions: full, AutoInstructions: true, InstructionsTool: "read_me_first"},
			advertised: pointer("read_me_first"),
			tool:       "read_me_first",
			toolText:   full,
		},
	}
	for _, m := range mCombos {
		for _, tt := range tests {
			t.Run(m.name+"/"+tt.name, func(t *testing.T) {
				opts := tt.opts
				opts.Authorizer = authz.AllowAll()
				s, err := server.New(opts, server.Install(testRegistry(), newDeps("a")))
				if err != nil {
					t.Fatal(err)
				}
				wire := &lineLog{}
				cs := m.connect(t, s, nil, secretToken, lockedWriter{wire})

				if got := cs.InitializeResult().Instructions; got != tt.advertised {
					t.Errorf("advertised instructions:\n%q\nwant\n%q", got, tt.advertised)
				}
				got, present := wireInstructions(t, wire.lines())
				if present != (tt.advertised != "") || got != tt.advertised {
					t.Errorf("instructions on the wire: %q (field present: %v), want %q (present: %v)", got, present, tt.advertised, tt.advertised != "")
				}

				res, err := cs.ListTools(context.Background(), nil)
				if err != nil {
					t.Fatal(err)
				}
				var names []string
				var meta *mcp.Tool
				for _, tl := range res.Tools {
					names = append(names, tl.Name)
					if tl.Name == tt.tool {
						meta = tl
					}
				}
				want := slices.Clone(testToolNames)
				if tt.tool != "" {
					want = append(want, tt.tool)
					slices.Sort(want)
				}
				if diff := cmp.Diff(want, names); diff != "" {
					t.Fatalf("tools (-want +got):\n%s", diff)
				}
				if tt.tool == "" {
					return
				}
				// The instructions tool carries the full text in its
				// description and its result, and only reads.
				if !strings.Contains(meta.Description, tt.toolText) {
					t.Errorf("the %s tool's description %q lacks the full text %q", tt.tool, meta.Description, tt.toolText)
				}
				if meta.Annotations == nil || !meta.Annotations.ReadOnlyHint {
					t.Errorf("the %s tool's annotations %+v are not read-only", tt.tool, meta.Annotations)
				}
				if got := text(call(t, cs, tt.tool, nil)); got != tt.toolText {
					t.Errorf("the %s tool's result:\n%q\nwant\n%q", tt.tool, got, tt.toolText)
				}
			})
		}
	}
}

// TestFxInstructionsFailStart: under fx, a backticked name that is no
// tool, and an instructions tool whose name is taken, fail the start,
// naming them.
func TestFxInstructionsFailStart(t *testing.T) {
	tests := []struct {
		name string
		opts server.Options
		want []string
	}{
		{"unknown tool in backticks", server.Options{Instructions: "Use `whoami`, then `list_things`."}, []string{"Options.Instructions", "`list_things`"}},
		{"unknown tool in the short text", server.Options{Instructions: "x", ShortInstructions: "See `nope`.", AutoInstructions: true}, []string{"Options.ShortInstructions", "`nope`"}},
		{"instructions tool name taken", server.Options{Instructions: "x", AutoInstructions: true, InstructionsTool: "whoami"}, []string{`instructions tool "whoami"`, "conflicts"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts := tt.opts
			opts.Authorizer = authz.AllowAll()
			app := newApp(fx.Supply(opts, newDeps("fx")), server.Tools(testRegistry()), thingsService(nil))
			err := app.Start(context.Background())
			if err == nil {
				app.Stop(context.Background())
				t.Fatal("the app started")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("start error %q does not contain %q", err, w)
				}
			}
		})
	}
}

// TestMatrixRegistries: registries of different container types share a
// server; one registry serves two servers at once, each with its own
// container.
func TestMatrixRegistries(t *testing.T) {
	for _, m := range mCombos {
		t.Run(m.name, func(t *testing.T) {
			shared, err := server.New(serverOptions(&authz.Caller{Subject: "local"}),
				server.Install(testRegistry(), newDeps("a")),
				server.Install(otherRegistry("shout", "whisper"), otherDeps{prefix: "> "}),
			)
			if err != nil {
				t.Fatal(err)
			}
			cs := m.connect(t, shared, nil, secretToken, nil)
			want := []string{"boom", "echo", "fail", "get_thing", "shout", "wait", "whisper", "whoami"}
			if diff := cmp.Diff(want, servertest.ToolNames(t, cs)); diff != "" {
				t.Errorf("tools of two registries (-want +got):\n%s", diff)
			}
			if got := structured[echoOut](t, call(t, cs, "shout", map[string]any{"text": "hi"})).Text; got != "> hi" {
				t.Errorf("shout = %q, want %q", got, "> hi")
			}
			if got := structured[whoamiOut](t, call(t, cs, "whoami", nil)); got.Subject != "alice" || got.Server != "a" {
				t.Errorf("whoami = %+v, want alice on a", got)
			}

			reg := testRegistry()
			d1, d2 := newDeps("one"), newDeps("two")
			var sessions []*mcp.ClientSession
			for _, d := range []*deps{d1, d2} {
				s, err := server.New(serverOptions(&authz.Caller{Subject: "local"}), server.Install(reg, d))
				if err != nil {
					t.Fatal(err)
				}
				sessions = append(sessions, m.connect(t, s, nil, secretToken, nil))
			}
			for i, name := range []string{"one", "two"} {
				if got := structured[whoamiOut](t, call(t, sessions[i], "whoami", nil)).Server; got != name {
					t.Errorf("server %d serves container %q, want %q", i, got, name)
				}
			}
			if d1.calls.Load() != 1 || d2.calls.Load() != 1 {
				t.Errorf("calls per container: %d, %d; want 1, 1", d1.calls.Load(), d2.calls.Load())
			}
		})
	}
}

// hookRecord collects what the hooks see, and what OnError receives.
type hookRecord struct {
	mu      sync.Mutex
	seen    []string
	errs    []error
	listBug atomic.Bool // the fx hook panics on tools/list
}

func (h *hookRecord) add(s string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.seen = append(h.seen, s)
}

func (h *hookRecord) onError(err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.errs = append(h.errs, err)
}

func (h *hookRecord) take() ([]string, []error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	seen, errs := h.seen, h.errs
	h.seen, h.errs = nil, nil
	return seen, errs
}

// hook returns a middleware that records the tools/* requests it sees
// ("NAME:METHOD[:TOOL]:SUBJECT:deadline?"), and panics on tools/call of
// "fail" and, while listBug is set, on tools/list.
func (h *hookRecord) hook(name string, panics bool) mcp.Middleware {
	return func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if !strings.HasPrefix(method, "tools/") {
				return next(ctx, method, req)
			}
			entry := name + ":" + method
			if cr, ok := req.(*mcp.CallToolRequest); ok {
				entry += ":" + cr.Params.Name
				if panics && cr.Params.Name == "fail" {
					panic("hook bug")
				}
			}
			if panics && method == "tools/list" && h.listBug.Load() {
				panic("list bug")
			}
			c, _ := authz.CallerFromContext(ctx)
			entry += ":" + c.Subject
			if _, ok := ctx.Deadline(); ok && method == "tools/call" {
				entry += ":deadline"
			}
			h.add(entry)
			return next(ctx, method, req)
		}
	}
}

// TestMiddlewareOrderAndPanics: Options.Middleware run, in their order,
// before every dispatch of a visible tool's call (after the caller
// is known and authorization checked); OnError receives every recovered
// panic: a tool's, a hook's on tools/call, a hook's on another method.
func TestMiddlewareOrderAndPanics(t *testing.T) {
	for _, m := range mCombos {
		t.Run(m.name, func(t *testing.T) {
			rec := &hookRecord{}
			var s *mcp.Server
			app := fxtest.New(t, fx.NopLogger, server.Module,
				fx.Supply(server.Options{
					Authorizer: adminOnly{},
					Middleware: []mcp.Middleware{rec.hook("opt", false), rec.hook("fx", true)},
					OnError:    rec.onError,
				}, newDeps("fx")),
				server.Tools(testRegistry()),
				thingsService(nil),
				fx.Populate(&s),
			)
			app.RequireStart()
			defer app.RequireStop()
			cs := m.connect(t, s, nil, "viewer-token", nil)

			// tools/list passes both hooks, in order.
			if diff := cmp.Diff([]string{"boom", "echo", "fail", "wait", "whoami"}, servertest.ToolNames(t, cs)); diff != "" {
				t.Errorf("viewer's tools (-want +got):\n%s", diff)
			}
			seen, _ := rec.take()
			if i := slices.Index(seen, "opt:tools/list:victor"); i < 0 || i+1 >= len(seen) || seen[i+1] != "fx:tools/list:victor" {
				t.Errorf("hooks on tools/list saw %q, want opt then fx", seen)
			}

			// A visible tool's call passes both, with the caller and the
			// deadline; a hidden tool's call reaches neither.
			call(t, cs, "echo", map[string]any{"text": "x"})
			if _, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "get_thing", Arguments: map[string]any{"id": "1"}}); err == nil {
				t.Error("the viewer called a hidden tool")
			}
			seen, errs := rec.take()
			want := []string{"opt:tools/call:echo:victor:deadline", "fx:tools/call:echo:victor:deadline"}
			if diff := cmp.Diff(want, seen); diff != "" {
				t.Errorf("hooks on tools/call saw (-want +got):\n%s", diff)
			}
			if len(errs) != 0 {
				t.Errorf("OnError got %v, want nothing", errs)
			}

			// A tool's panic: an isError result, reported.
			if res := call(t, cs, "boom", nil); !res.IsError {
				t.Errorf("boom = %s, want an isError result", text(res))
			}
			// A hook's panic on tools/call: a protocol error, reported.
			if _, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "fail"}); err == nil {
				t.Error("a call through a panicking hook succeeded")
			}
			// A hook's panic on tools/list: a protocol error, reported.
			rec.listBug.Store(true)
			if _, err := cs.ListTools(context.Background(), nil); err == nil {
				t.Error("tools/list through a panicking hook succeeded")
			}
			rec.listBug.Store(false)
			// The server keeps serving.
			if got := structured[echoOut](t, call(t, cs, "echo", map[string]any{"text": "still"})).Text; got != "still" {
				t.Errorf("echo after the panics = %q", got)
			}
			_, errs = rec.take()
			var got []string
			for _, err := range errs {
				var pe *registry.PanicError
				if !errors.As(err, &pe) {
					t.Errorf("OnError got %v (%T), want a *registry.PanicError", err, err)
					continue
				}
				got = append(got, pe.Tool+":"+pe.Value.(string))
			}
			if diff := cmp.Diff([]string{"boom:boom", "fail:hook bug", ":list bug"}, got); diff != "" {
				t.Errorf("OnError received (-want +got):\n%s", diff)
			}
		})
	}
}

// TestFxOnErrorInternal: under fx, an internal error of the HTTP
// transport (a failing token verifier) reaches Options.OnError, for
// clients of both protocol versions, without the token.
func TestFxOnErrorInternal(t *testing.T) {
	for _, version := range []string{v2026, v2025} {
		t.Run(version, func(t *testing.T) {
			rec := &hookRecord{}
			var hs *server.HTTPServer
			app := fxtest.New(t, fx.NopLogger, server.Module,
				fx.Supply(server.Options{Authorizer: authz.AllowAll(), OnError: rec.onError}, otherDeps{}),
				server.Tools(otherRegistry("x")),
				server.HTTP("127.0.0.1:0", server.HTTPServerOptions{Endpoint: server.HTTPOptions{
					Verifier: func(_ context.Context, token string, _ *http.Request) (authz.Caller, error) {
						return authz.Caller{}, errors.New("identity provider down for " + token)
					},
				}}),
				fx.Populate(&hs),
			)
			app.RequireStart()
			defer app.RequireStop()
			defer http.DefaultTransport.(*http.Transport).CloseIdleConnections()
			c := mcp.NewClient(&mcp.Implementation{Name: "matrix", Version: "v0"}, nil)
			ct := &mcp.StreamableClientTransport{Endpoint: hs.URL(), HTTPClient: servertest.BearerClient(secretToken), MaxRetries: -1}
			if cs, err := c.Connect(context.Background(), ct, &mcp.ClientSessionOptions{ProtocolVersion: version}); err == nil {
				cs.Close()
				t.Fatal("connected through a failing verifier")
			}
			_, errs := rec.take()
			if len(errs) == 0 {
				t.Fatal("OnError received nothing")
			}
			for _, err := range errs {
				if !strings.Contains(err.Error(), "identity provider down") || strings.Contains(err.Error(), secretToken) {
					t.Errorf("OnError got %q, want the verifier's error without the token", err)
				}
			}
		})
	}
}

// permDeps is the container of the permission tests' tool.
type permDeps struct {
	perms   *permission.Checker
	effects atomic.Int32
}

// permServer serves "remove", which asks to delete a thing before it
// "deletes" it (counts a side effect).
func permServer(t *testing.T) (*mcp.Server, *permDeps) {
	t.Helper()
	d := &permDeps{perms: permission.New(permission.Options{
		Principal: func(ctx context.Context, _ *mcp.CallToolRequest) string {
			c, _ := authz.CallerFromContext(ctx)
			return c.Subject
		},
	})}
	r := registry.New[*permDeps]()
	r.Register(tool.Tool[*permDeps]{
		Name: "remove", Description: "Remove a thing, once the user agrees.", Local: true, Behaviour: behaviour.Destructive,
		Handler: tool.Handle(func(ctx context.Context, d *permDeps, req *mcp.CallToolRequest, in thingArgs) (echoOut, error) {
			if _, err := d.perms.Check(ctx, req, permission.Request{
				Subjects: []string{"thing:" + in.ID}, Capabilities: []string{"delete"}, Reason: "Remove thing " + in.ID + "?", NoRemember: true,
			}); err != nil {
				return echoOut{}, err
			}
			d.effects.Add(1)
			return echoOut{Text: "removed " + in.ID}, nil
		}),
	})
	s, err := server.New(server.Options{Authorizer: authz.AllowAll()}, server.Install(r, d))
	if err != nil {
		t.Fatal(err)
	}
	return s, d
}

// TestMatrixPermission asks through the server's own transports: a 2026
// client gets input_required, a 2025 session elicitation/create; a 2025
// client over stateless HTTP cannot be asked and is refused cleanly,
// while over stateful HTTP it is asked. Nothing happens without a yes.
func TestMatrixPermission(t *testing.T) {
	type combo struct {
		name    string
		connect func(t *testing.T, s *mcp.Server, c *mcp.Client) *mcp.ClientSession
		canAsk  bool
	}
	var combos []combo
	for _, m := range mCombos {
		combos = append(combos, combo{m.name, func(t *testing.T, s *mcp.Server, c *mcp.Client) *mcp.ClientSession {
			return m.connect(t, s, c, secretToken, nil)
		}, !m.http || m.version >= v2026})
	}
	combos = append(combos, combo{"stateful-http/" + v2025, func(t *testing.T, s *mcp.Server, c *mcp.Client) *mcp.ClientSession {
		return connectHTTP(t, s, c, v2025, server.HTTPOptions{Stateful: true})
	}, true})
	allow := &mcp.ElicitResult{Action: "accept", Content: map[string]any{"decision": permission.AllowOnce}}
	deny := &mcp.ElicitResult{Action: "accept", Content: map[string]any{"decision": permission.DenyOnce}}
	tests := []struct {
		name   string
		answer *mcp.ElicitResult // nil: the client cannot elicit
		want   string            // the result's text
	}{
		{"allowed", allow, "removed 7"},
		{"denied", deny, "permission denied by the user: delete on thing:7"},
		{"declined", &mcp.ElicitResult{Action: "decline"}, "permission denied by the user: delete on thing:7"},
		{"no elicitation", nil, permission.ErrCannotAsk.Error()},
	}
	for _, cb := range combos {
		for _, tt := range tests {
			t.Run(cb.name+"/"+tt.name, func(t *testing.T) {
				s, d := permServer(t)
				var (
					mu    sync.Mutex
					asked []string
				)
				copts := &mcp.ClientOptions{}
				if tt.answer != nil {
					copts.ElicitationHandler = func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
						mu.Lock()
						defer mu.Unlock()
						asked = append(asked, req.Params.Message)
						return tt.answer, nil
					}
				}
				cs := cb.connect(t, s, mcp.NewClient(&mcp.Implementation{Name: "matrix", Version: "v0"}, copts))
				res := call(t, cs, "remove", map[string]any{"id": "7"})
				want, wantAsked, wantEffects := tt.want, 1, int32(0)
				switch {
				case tt.answer == nil:
					wantAsked = 0
				case !cb.canAsk:
					want, wantAsked = permission.ErrCannotAsk.Error(), 0
				case tt.answer == allow:
					wantEffects = 1
				}
				if got := text(res); !strings.Contains(got, want) || res.IsError != (wantEffects == 0) {
					t.Errorf("result %q (isError %v), want %q", got, res.IsError, want)
				}
				mu.Lock()
				defer mu.Unlock()
				if len(asked) != wantAsked || (wantAsked == 1 && !strings.HasPrefix(asked[0], "Remove thing 7?")) {
					t.Errorf("questions %q, want %d starting %q", asked, wantAsked, "Remove thing 7?")
				}
				if got := d.effects.Load(); got != wantEffects {
					t.Errorf("side effects = %d, want %d", got, wantEffects)
				}
			})
		}
	}
}

// TestMatrixAnonymous: over HTTP (the only transport with tokens),
// requests without a token act as HTTPOptions.Anonymous, for clients of
// both versions; a token still counts.
func TestMatrixAnonymous(t *testing.T) {
	for _, version := range []string{v2026, v2025} {
		t.Run(version, func(t *testing.T) {
			s := newTestServer(t, server.Options{}, newDeps("a"))
			hs := startHTTP(t, s, server.HTTPOptions{Anonymous: &authz.Caller{Subject: "anonymous", Roles: []string{"viewer"}}})
			t.Cleanup(http.DefaultTransport.(*http.Transport).CloseIdleConnections)
			opts := servertest.Options{ProtocolVersion: version}
			anon := servertest.ConnectHTTP(t, hs.URL(), "", opts)
			got := structured[whoamiOut](t, call(t, anon, "whoami", nil))
			if diff := cmp.Diff(whoamiOut{Subject: "anonymous", Roles: []string{"viewer"}, Server: "a"}, got); diff != "" {
				t.Errorf("anonymous whoami (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff([]string{"boom", "echo", "fail", "wait", "whoami"}, servertest.ToolNames(t, anon)); diff != "" {
				t.Errorf("anonymous tools (-want +got):\n%s", diff)
			}
			if _, err := anon.CallTool(context.Background(), &mcp.CallToolParams{Name: "get_thing", Arguments: map[string]any{"id": "1"}}); err == nil {
				t.Error("the anonymous caller called a viewer-hidden tool")
			}
			admin := servertest.ConnectHTTP(t, hs.URL(), secretToken, opts)
			if got := structured[whoamiOut](t, call(t, admin, "whoami", nil)).Subject; got != "alice" {
				t.Errorf("subject with a token = %q, want alice", got)
			}
		})
	}
}

// TestFxOnErrorStdio: under fx, a broken stdio session (standard input
// fails) is an internal error: it reaches Options.OnError, and the
// application shuts down.
func TestFxOnErrorStdio(t *testing.T) {
	rec := &hookRecord{}
	sr, sw, ct := pipes()
	app := fxtest.New(t, fx.NopLogger, server.Module,
		fx.Supply(server.Options{Authorizer: authz.AllowAll(), Caller: &authz.Caller{Subject: "local"}, OnError: rec.onError}, otherDeps{}),
		server.Tools(otherRegistry("x")),
		server.Stdio(sr, sw),
	)
	app.RequireStart()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "matrix", Version: "v0"}, nil).Connect(context.Background(), ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	call(t, cs, "x", map[string]any{"text": "before"})
	// The server's standard input breaks.
	ct.Writer.(*io.PipeWriter).CloseWithError(errors.New("stdin is on fire"))
	await.Recv(t, app.Wait(), "the application's end")
	app.RequireStop()
	cs.Close()
	_, errs := rec.take()
	if len(errs) != 1 || !strings.Contains(errs[0].Error(), "stdin is on fire") {
		t.Errorf("OnError got %v, want the broken input's error", errs)
	}
}

// TestMatrixOnErrorInternalError: OnError receives the internal errors
// (JSON-RPC -32603) requests are answered with: the SDK's refusal of a
// tool's result that both answers and asks, a failing tools/list; and
// nothing for a tool's own error or an unknown tool.
func TestMatrixOnErrorInternalError(t *testing.T) {
	r := registry.New[struct{}]()
	r.Register(tool.Tool[struct{}]{
		Name: "confused", Description: "Answer and ask at once.", Local: true, Behaviour: behaviour.ReadOnly,
		Handler: tool.HandleResult(func(context.Context, struct{}, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{
				Content:       []mcp.Content{&mcp.TextContent{Text: "done"}},
				InputRequests: mcp.InputRequestMap{"q": &mcp.ElicitParams{Message: "Sure?"}},
			}, nil
		}),
	})
	r.Register(tool.Tool[struct{}]{
		Name: "refuse", Description: "Fail as tools do.", Local: true, Behaviour: behaviour.ReadOnly,
		Handler: tool.Handle(func(context.Context, struct{}, *mcp.CallToolRequest, struct{}) (echoOut, error) {
			return echoOut{}, errors.New("no, thanks")
		}),
	})
	for _, m := range mCombos {
		t.Run(m.name, func(t *testing.T) {
			rec := &hookRecord{}
			// A store behind tools/list fails, once asked to.
			listFails := func(next mcp.MethodHandler) mcp.MethodHandler {
				return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
					if method == "tools/list" && rec.listBug.Load() {
						return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "tool store down"}
					}
					return next(ctx, method, req)
				}
			}
			s, err := server.New(server.Options{Authorizer: authz.AllowAll(), OnError: rec.onError, Middleware: []mcp.Middleware{listFails}}, server.Install(r, struct{}{}))
			if err != nil {
				t.Fatal(err)
			}
			cs := m.connect(t, s, nil, secretToken, nil)
			if res := call(t, cs, "refuse", nil); !res.IsError {
				t.Errorf("refuse = %s, want an isError result", text(res))
			}
			if _, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "nope"}); err == nil {
				t.Error("an unknown tool answered")
			}
			if _, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "confused"}); err == nil {
				t.Error("confused answered")
			}
			rec.listBug.Store(true)
			if _, err := cs.ListTools(context.Background(), nil); err == nil {
				t.Error("tools/list answered")
			}
			_, errs := rec.take()
			var got []string
			for _, err := range errs {
				var rpc *jsonrpc.Error
				if !errors.As(err, &rpc) || rpc.Code != jsonrpc.CodeInternalError {
					t.Errorf("OnError got %v, want a JSON-RPC internal error", err)
					continue
				}
				got = append(got, rpc.Message)
			}
			if diff := cmp.Diff([]string{"server bug: result has both content and inputRequests", "tool store down"}, got); diff != "" {
				t.Errorf("internal errors OnError received (-want +got):\n%s", diff)
			}
		})
	}
}
