package server_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/fx"
	"go.uber.org/fx/fxtest"

	"github.com/toolroute/toolroute/authz"
	"github.com/toolroute/toolroute/internal/testing/await"
	"github.com/toolroute/toolroute/server"
	"github.com/toolroute/toolroute/server/servertest"
)

// thingsService provides the "things" service the test registry needs.
func thingsService(warm func(context.Context) error) fx.Option {
	return server.ProvideService(func() server.Service { return server.Service{Key: "things", Warm: warm} })
}

func TestFxHTTP(t *testing.T) {
	sink, logger := newLogSink()
	d := newDeps("fx")
	warming, warmed := make(chan struct{}), make(chan struct{})
	var hs *server.HTTPServer
	app := fxtest.New(t,
		fx.NopLogger,
		server.Module,
		fx.Supply(server.Options{Authorizer: adminOnly{}, Logger: logger}, d, otherDeps{prefix: "+"}),
		server.Tools(testRegistry()),
		server.Tools(otherRegistry("plus")),
		thingsService(func(context.Context) error { close(warming); <-warmed; return nil }),
		server.HTTP("127.0.0.1:0", server.HTTPServerOptions{Endpoint: server.HTTPOptions{Verifier: server.StaticTokens(testTokens)}}),
		fx.Populate(&hs),
	)
	// Before start: built, not listening, not ready.
	if hs.Addr() != "" {
		t.Errorf("listening before start on %s", hs.Addr())
	}
	waitStatus(t, hs.Handler(), "/readyz", http.StatusServiceUnavailable)
	started := make(chan struct{})
	go func() { defer close(started); app.RequireStart() }()
	// While the services warm: listening, live, not ready.
	await.Recv(t, warming, "the warm-up's start")
	get := func(path string) int {
		resp, err := http.Get("http://" + hs.Addr() + path)
		if err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if got := get("/healthz"); got != http.StatusOK {
		t.Errorf("/healthz while warming = %d, want 200", got)
	}
	if got := get("/readyz"); got != http.StatusServiceUnavailable {
		t.Errorf("/readyz while warming = %d, want 503", got)
	}
	close(warmed)
	await.Recv(t, started, "the call's start")
	if got := get("/readyz"); got != http.StatusOK {
		t.Errorf("/readyz after start = %d, want 200", got)
	}

	cs := servertest.ConnectHTTP(t, hs.URL(), secretToken, servertest.Options{})
	if diff := cmp.Diff([]string{"boom", "echo", "fail", "get_thing", "plus", "wait", "whoami"}, servertest.ToolNames(t, cs)); diff != "" {
		t.Errorf("tools (-want +got):\n%s", diff)
	}
	if got := structured[echoOut](t, call(t, cs, "plus", map[string]any{"text": "1"})).Text; got != "+1" {
		t.Errorf("plus = %q", got)
	}
	if got := structured[whoamiOut](t, call(t, cs, "whoami", nil)); got.Subject != "alice" || got.Server != "fx" {
		t.Errorf("whoami = %+v", got)
	}
	app.RequireStop()
	if recs := sink.calls(t); len(recs) != 2 {
		t.Errorf("%d call records, want 2", len(recs))
	}
	if strings.Contains(sink.String(), secretToken) {
		t.Errorf("the bearer appears in the log:\n%s", sink)
	}
}

// newApp builds an fx app without failing the test on errors.
func newApp(opts ...fx.Option) *fx.App {
	return fx.New(append([]fx.Option{fx.NopLogger, server.Module}, opts...)...)
}

func TestFxStartFailures(t *testing.T) {
	base := fx.Supply(server.Options{Authorizer: authz.AllowAll()}, newDeps("fx"), otherDeps{})
	tests := []struct {
		name string
		opts []fx.Option
		want []string
	}{
		{
			name: "missing service",
			opts: []fx.Option{base, server.Tools(testRegistry())},
			want: []string{`tool "get_thing"`, `service "things"`},
		},
		{
			name: "warm failure",
			opts: []fx.Option{base, server.Tools(testRegistry()), thingsService(func(context.Context) error { return errors.New("things is down") })},
			want: []string{`warming service "things"`, "things is down"},
		},
		{
			// Warm runs in a goroutine of its own, where a panic would end
			// the process.
			name: "warm panic",
			opts: []fx.Option{base, server.Tools(testRegistry()), thingsService(func(context.Context) error { panic("driver not registered") })},
			want: []string{`warming service "things" panicked: driver not registered`},
		},
		{
			name: "duplicate tool names across registries",
			opts: []fx.Option{base, server.Tools(testRegistry()), server.Tools(otherRegistry("whoami")), thingsService(nil)},
			want: []string{`duplicate tool name "whoami"`},
		},
		{
			name: "same registry twice",
			opts: []fx.Option{base, server.Tools(otherRegistry("x")), server.Tools(otherRegistry("x"))},
			want: []string{`duplicate tool name "x"`},
		},
		{
			name: "duplicate service keys",
			opts: []fx.Option{base, server.Tools(testRegistry()), thingsService(nil), thingsService(nil)},
			want: []string{`two server.Services have the key "things"`},
		},
		{
			name: "no authorizer",
			opts: []fx.Option{fx.Supply(server.Options{}, otherDeps{}), server.Tools(otherRegistry("x"))},
			want: []string{"Authorizer is nil"},
		},
		{
			name: "no verifier",
			opts: []fx.Option{base, server.Tools(otherRegistry("x")), server.HTTP("127.0.0.1:0", server.HTTPServerOptions{Endpoint: server.HTTPOptions{}})},
			want: []string{"Verifier is nil"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			app := newApp(tt.opts...)
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

// TestFxGracefulShutdown: stopping the app lets an in-flight call finish;
// /readyz answers 503 meanwhile.
func TestFxGracefulShutdown(t *testing.T) {
	d := newDeps("fx")
	var hs *server.HTTPServer
	app := fxtest.New(t, fx.NopLogger, server.Module,
		fx.Supply(server.Options{Authorizer: authz.AllowAll()}, d),
		server.Tools(testRegistry()),
		thingsService(nil),
		server.HTTP("127.0.0.1:0", server.HTTPServerOptions{Endpoint: server.HTTPOptions{Verifier: server.StaticTokens(testTokens)}}),
		fx.Populate(&hs),
	)
	app.RequireStart()
	stopWithCallInFlight(t, hs, d, servertest.ConnectHTTP(t, hs.URL(), secretToken, servertest.Options{}), func() error { return app.Stop(context.Background()) })
}

// TestFxShutdownTimeout: calls still running after ShutdownTimeout are
// cancelled.
func TestFxShutdownTimeout(t *testing.T) {
	d := newDeps("fx")
	var hs *server.HTTPServer
	app := fxtest.New(t, fx.NopLogger, server.Module,
		fx.Supply(server.Options{Authorizer: authz.AllowAll(), ShutdownTimeout: 1}, d),
		server.Tools(testRegistry()),
		thingsService(nil),
		server.HTTP("127.0.0.1:0", server.HTTPServerOptions{Endpoint: server.HTTPOptions{Verifier: server.StaticTokens(testTokens)}}),
		fx.Populate(&hs),
	)
	app.RequireStart()
	cs := servertest.ConnectHTTP(t, hs.URL(), secretToken, servertest.Options{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "wait"})
	}()
	await.Recv(t, d.started, "the call's start")
	app.RequireStop()
	if cause := await.Recv(t, d.causes, "the handler's cause"); cause == nil {
		t.Error("the in-flight call was not cancelled")
	}
	await.Recv(t, done, "the call's end")
}

func TestFxStdio(t *testing.T) {
	d := newDeps("stdio")
	sr, sw, ct := pipes()
	app := fxtest.New(t, fx.NopLogger, server.Module,
		fx.Supply(server.Options{Authorizer: adminOnly{}, Caller: &authz.Caller{Subject: "local", Roles: []string{"admin"}}}, d),
		server.Tools(testRegistry()),
		thingsService(nil),
		server.Stdio(sr, sw),
	)
	app.RequireStart()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, nil).Connect(context.Background(), ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := structured[whoamiOut](t, call(t, cs, "whoami", nil)); got.Subject != "local" || got.Server != "stdio" {
		t.Errorf("whoami = %+v", got)
	}
	if got := structured[echoOut](t, call(t, cs, "get_thing", map[string]any{"id": "3"})).Text; got != "3" {
		t.Errorf("get_thing = %q", got)
	}
	// The client leaving shuts the application down.
	cs.Close()
	await.Recv(t, app.Wait(), "the application's end")
	app.RequireStop()
}

func TestFxStdioStopWaitsForCalls(t *testing.T) {
	d := newDeps("stdio")
	sr, sw, ct := pipes()
	app := fxtest.New(t, fx.NopLogger, server.Module,
		fx.Supply(server.Options{Authorizer: authz.AllowAll(), Caller: &authz.Caller{Subject: "local"}}, d),
		server.Tools(testRegistry()),
		thingsService(nil),
		server.Stdio(sr, sw),
	)
	app.RequireStart()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, nil).Connect(context.Background(), ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	result := make(chan *mcp.CallToolResult, 1)
	go func() {
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "wait"})
		if err != nil {
			t.Errorf("in-flight call: %v", err)
		}
		result <- res
	}()
	await.Recv(t, d.started, "the call's start")
	stopped := make(chan error, 1)
	go func() { stopped <- app.Stop(context.Background()) }()
	close(d.release)
	if res := await.Recv(t, result, "the call's result"); res == nil || structured[waitOut](t, res) != (waitOut{Done: true}) {
		t.Errorf("in-flight call result = %v", res)
	}
	if err := await.Recv(t, stopped, "the stop's return"); err != nil {
		t.Errorf("Stop = %v", err)
	}
}

// TestFxHTTPOptionReused: one server.HTTP option value builds two apps
// (tests in a loop, an in-process restart); each app's /readyz follows
// its own warm-up only. The option must not keep what one app set in it.
func TestFxHTTPOptionReused(t *testing.T) {
	httpOpt := server.HTTP("127.0.0.1:0", server.HTTPServerOptions{Endpoint: server.HTTPOptions{Verifier: server.StaticTokens(testTokens)}})
	build := func(hs **server.HTTPServer) *fxtest.App {
		return fxtest.New(t, fx.NopLogger, server.Module,
			fx.Supply(server.Options{Authorizer: authz.AllowAll()}, newDeps("fx")),
			server.Tools(testRegistry()), thingsService(nil), httpOpt, fx.Populate(hs))
	}
	var first, second *server.HTTPServer
	build(&first) // built, never started: never ready
	app := build(&second)
	app.RequireStart()
	defer app.RequireStop()
	resp, err := http.Get("http://" + second.Addr() + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("/readyz of the started, warm app = %d, want 200", resp.StatusCode)
	}
}

// TestFxStdioStopAfterReusedID: a client reuses the id of a call in
// flight (the SDK drops that request, unanswered). Once every call is
// answered, stopping the app does not wait for the dropped request until
// ShutdownTimeout (an hour here).
func TestFxStdioStopAfterReusedID(t *testing.T) {
	d := newDeps("stdio")
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	app := fxtest.New(t, fx.NopLogger, server.Module,
		fx.Supply(server.Options{Authorizer: authz.AllowAll(), Caller: &authz.Caller{Subject: "local"}, ShutdownTimeout: time.Hour}, d),
		server.Tools(testRegistry()), thingsService(nil), server.Stdio(inR, outW))
	app.RequireStart()
	lines := scanLines(outR)
	io.WriteString(inW, initLine)
	await.Recv(t, lines, "the next line") // initialize's answer
	io.WriteString(inW, `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"wait","arguments":{}}}`+"\n")
	await.Recv(t, d.started, "the call's start")
	io.WriteString(inW, `{"jsonrpc":"2.0","id":5,"method":"ping"}`+"\n") // the id of the call in flight: dropped
	io.WriteString(inW, `{"jsonrpc":"2.0","id":6,"method":"ping"}`+"\n")
	await.Recv(t, lines, "the next line") // ping 6's answer: the reused id was read
	close(d.release)
	await.Recv(t, lines, "the next line") // the call's answer: nothing is in flight any more
	stopped := make(chan error, 1)
	go func() { stopped <- app.Stop(context.Background()) }()
	select {
	case err := <-stopped:
		if err != nil {
			t.Errorf("Stop = %v", err)
		}
	case <-time.After(hangGuard):
		t.Errorf("Stop waits for a request that was never answered")
		inW.Close() // the client leaves: Stop returns
		await.Recv(t, stopped, "the stop's return")
	}
	inW.Close()
	for range lines {
	}
}

// TestFxStdioRefusesBatchesFrom20250618: under fx stdio, a client of
// protocol 2025-06-18 or later (which has no JSON-RPC batches) gets a
// -32600 answer to a batch, and the session goes on; the batch's call is
// never run. A client of 2025-03-26 still has its batches served.
func TestFxStdioRefusesBatchesFrom20250618(t *testing.T) {
	for _, tt := range []struct {
		version string
		batches bool
	}{
		{"2025-06-18", false},
		{"2025-11-25", false},
		{"2025-03-26", true},
	} {
		t.Run(tt.version, func(t *testing.T) {
			inR, inW := io.Pipe()
			outR, outW := io.Pipe()
			app := fxtest.New(t, fx.NopLogger, server.Module,
				fx.Supply(server.Options{Authorizer: authz.AllowAll(), Caller: &authz.Caller{Subject: "local"}}, newDeps("stdio")),
				server.Tools(testRegistry()), thingsService(nil), server.Stdio(inR, outW))
			app.RequireStart()
			lines := scanLines(outR)
			io.WriteString(inW, `{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":"`+tt.version+`","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`+"\n")
			await.Recv(t, lines, "the next line")
			io.WriteString(inW, `{"jsonrpc":"2.0","method":"notifications/initialized"}`+"\n")
			io.WriteString(inW, `[{"jsonrpc":"2.0","id":7,"method":"ping"}]`+"\n")
			io.WriteString(inW, `{"jsonrpc":"2.0","id":8,"method":"ping"}`+"\n")
			var got []string
			for len(got) < 2 {
				var l string
				var ok bool
				select {
				case l, ok = <-lines:
				case <-time.After(await.Timeout):
					t.Fatalf("no answer within %v; answers: %q", await.Timeout, got)
				}
				if !ok {
					t.Fatalf("the session ended; answers: %q", got)
				}
				got = append(got, l)
			}
			all := strings.Join(got, "\n")
			if !strings.Contains(all, `"id":8`) {
				t.Errorf("ping 8 after the batch unanswered: %q", got)
			}
			refused := strings.Contains(all, `"code":-32600`) && strings.Contains(all, `"id":null`)
			answered := strings.Contains(all, `"id":7`)
			if tt.batches && (refused || !answered) {
				t.Errorf("a %s client's batch: %q, want it served", tt.version, got)
			}
			if !tt.batches && (!refused || answered) {
				t.Errorf("a %s client's batch: %q, want a -32600 answer with a null id, and no ping 7 result", tt.version, got)
			}
			inW.Close()
			app.RequireStop()
			for range lines {
			}
		})
	}
}
