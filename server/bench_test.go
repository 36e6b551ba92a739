package server_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"reflect"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolroute/toolroute/authz"
	"github.com/toolroute/toolroute/behaviour"
	"github.com/toolroute/toolroute/internal/core/schema"
	"github.com/toolroute/toolroute/internal/testing/benchtools"
	"github.com/toolroute/toolroute/registry"
	"github.com/toolroute/toolroute/server"
	"github.com/toolroute/toolroute/server/servertest"
	"github.com/toolroute/toolroute/tool"
)

type benchArgs struct {
	Text  string `json:"text"`
	Count int    `json:"count"`
}

type benchOut struct {
	Text  string `json:"text"`
	Count int    `json:"count"`
}

func benchEcho(_ context.Context, in benchArgs) benchOut { return benchOut(in) }

// BenchmarkCallHTTP compares one typed tools/call over stateless HTTP
// through server.New's whole chain (caller from a verified token, call
// log, deadline, authz guard, the registry's middleware) with a raw go-sdk server
// (mcp.AddTool) behind the same streamable HTTP handler options. Both
// clients send the same bearer token (raw ignores it), so that the
// difference is the server's alone.
func BenchmarkCallHTTP(b *testing.B) {
	args := map[string]any{"text": "hello", "count": 3}

	b.Run("raw", func(b *testing.B) {
		runCalls(b, rawHandler(), "bench-token", args)
	})
	b.Run("toolroute", func(b *testing.B) {
		runCalls(b, toolrouteHandler(b), "bench-token", args)
	})
	// toolroute-sdk is toolroute on go-sdk's stateless handler
	// (HTTPOptions.SDKTransport) instead of its own transport.
	b.Run("toolroute-sdk", func(b *testing.B) {
		runCalls(b, toolrouteHandlerOn(b, true), "bench-token", args)
	})
	// paired alternates the two, call by call, so that both see the same
	// machine load; it reports each one's median call time and their
	// ratio (robust to the pauses of a shared machine).
	b.Run("paired", func(b *testing.B) {
		raw := httptest.NewServer(rawHandler())
		defer raw.Close()
		tr := httptest.NewServer(toolrouteHandler(b))
		defer tr.Close()
		rawCS := servertest.ConnectHTTP(b, raw.URL+"/mcp", "bench-token", servertest.Options{})
		trCS := servertest.ConnectHTTP(b, tr.URL+"/mcp", "bench-token", servertest.Options{})
		pairedCalls(b, rawCS, trCS, args)
	})
}

// pairedCalls alternates calls of "echo" by raw's client and toolroute's,
// call by call (benchtools.Paired), and reports each one's median call
// time and their ratio.
func pairedCalls(b *testing.B, rawCS, trCS *mcp.ClientSession, args map[string]any) {
	params := &mcp.CallToolParams{Name: "echo", Arguments: args}
	benchtools.Paired(b, "call", "raw", benchtools.TimedCall(b, rawCS, params), "toolroute", benchtools.TimedCall(b, trCS, params))
}

// rawServer is a raw go-sdk server of the echo tool.
func rawServer() *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "raw", Version: "1"}, nil)
	in, _ := schema.For(reflect.TypeFor[benchArgs]())
	out, _ := schema.For(reflect.TypeFor[benchOut]())
	mcp.AddTool(s, &mcp.Tool{Name: "echo", Description: "Echo.", InputSchema: in, OutputSchema: out},
		func(ctx context.Context, _ *mcp.CallToolRequest, a benchArgs) (*mcp.CallToolResult, benchOut, error) {
			return nil, benchEcho(ctx, a), nil
		})
	return s
}

// rawHandler serves the echo tool from a raw go-sdk server at /mcp.
func rawHandler() http.Handler { return benchtools.RawHTTP(rawServer()) }

// toolrouteServer serves the echo tool, declared as a mapped tool, from
// server.New.
func toolrouteServer(b *testing.B) *mcp.Server {
	r := registry.New[struct{}]()
	r.Register(tool.Tool[struct{}]{
		Name: "echo", Description: "Echo.", Behaviour: behaviour.ReadOnly,
		ServiceKey: "bench", VisibilityRoutes: []tool.Route{tool.ServiceRoute("bench", "GET", "/echo")},
		Handler: tool.Handle(func(ctx context.Context, _ struct{}, _ *mcp.CallToolRequest, a benchArgs) (benchOut, error) {
			return benchEcho(ctx, a), nil
		}),
	})
	s, err := server.New(server.Options{Authorizer: authz.AllowAll(), Logger: discardLogger}, server.Install(r, struct{}{}))
	if err != nil {
		b.Fatal(err)
	}
	return s
}

// toolrouteHandler serves toolrouteServer through an HTTPServer's handler.
func toolrouteHandler(b *testing.B) http.Handler { return toolrouteHandlerOn(b, false) }

// toolrouteHandlerOn is toolrouteHandler, on go-sdk's stateless handler
// if sdk (HTTPOptions.SDKTransport).
func toolrouteHandlerOn(b *testing.B, sdk bool) http.Handler {
	s := toolrouteServer(b)
	hs, err := server.NewHTTPServer(s, server.HTTPServerOptions{Endpoint: server.HTTPOptions{Verifier: server.StaticTokens(map[string]authz.Caller{"bench-token": {Subject: "bench"}}), SDKTransport: sdk}})
	if err != nil {
		b.Fatal(err)
	}
	return hs.Handler()
}

// runCalls serves h (which answers at /mcp) on a loopback server and
// times calls of "echo" by one client.
func runCalls(b *testing.B, h http.Handler, token string, args map[string]any) {
	ts := httptest.NewServer(h)
	defer ts.Close()
	loopCalls(b, servertest.ConnectHTTP(b, ts.URL+"/mcp", token, servertest.Options{}), args)
}

// BenchmarkCallInMemory compares one typed tools/call over in-memory
// transports through server.New's whole chain with a raw go-sdk server
// serving the same tool with the same schemas. allocs/op of "toolroute"
// minus "raw" is what toolroute adds to a call.
func BenchmarkCallInMemory(b *testing.B) {
	args := map[string]any{"text": "hello", "count": 3}
	b.Run("raw", func(b *testing.B) {
		loopCalls(b, connectMem(b, rawServer()), args)
	})
	b.Run("toolroute", func(b *testing.B) {
		loopCalls(b, connectMem(b, toolrouteServer(b)), args)
	})
	// paired alternates the two, call by call (see BenchmarkCallHTTP).
	b.Run("paired", func(b *testing.B) {
		rawCS, trCS := connectMem(b, rawServer()), connectMem(b, toolrouteServer(b))
		pairedCalls(b, rawCS, trCS, args)
	})
}

// connectMem connects a client to s over in-memory transports.
func connectMem(b *testing.B, s *mcp.Server) *mcp.ClientSession {
	return connectMemAs(b, s, authz.Caller{Subject: "bench"})
}

// connectMemAs connects a client to s over in-memory transports, as
// caller.
func connectMemAs(b testing.TB, s *mcp.Server, caller authz.Caller) *mcp.ClientSession {
	ctx := context.Background()
	ct, st := mcp.NewInMemoryTransports()
	ss, err := s.Connect(authz.WithCaller(ctx, caller), st, nil)
	if err != nil {
		b.Fatal(err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		cs.Close()
		ss.Wait()
	})
	return cs
}

// loopCalls times calls of "echo" by cs.
func loopCalls(b *testing.B, cs *mcp.ClientSession, args map[string]any) {
	ctx := context.Background()
	params := &mcp.CallToolParams{Name: "echo", Arguments: args}
	b.ReportAllocs()
	for b.Loop() {
		res, err := cs.CallTool(ctx, params)
		if err != nil || res.IsError {
			b.Fatalf("call: %v %v", err, res)
		}
	}
}

// BenchmarkListHTTP times the server side of a tools/list of 1,000 tools
// over stateless HTTP (MCP 2025-11-25): raw JSON-RPC POSTs whose
// responses are read as bytes, not decoded. toolroute filters the list
// for its caller (an authz.Policy asked about each tool's route; the
// caller may see them all) and encodes it from definitions encoded once;
// raw go-sdk encodes every definition and schema for every list.
func BenchmarkListHTTP(b *testing.B) {
	const n = 1000
	b.Run("raw", func(b *testing.B) {
		loopPosts(b, benchtools.RawHTTP(benchtools.Raw(n, nil)), "", benchtools.ListBody)
	})
	b.Run("toolroute", func(b *testing.B) {
		loopPosts(b, benchtools.ToolrouteHTTP(benchtools.Toolroute(n)), benchtools.Token, benchtools.ListBody)
	})
	// paired alternates the two, list by list, and reports each one's
	// median time and their ratio.
	b.Run("paired", func(b *testing.B) {
		raw := httptest.NewServer(benchtools.RawHTTP(benchtools.Raw(n, nil)))
		defer raw.Close()
		tr := httptest.NewServer(benchtools.ToolrouteHTTP(benchtools.Toolroute(n)))
		defer tr.Close()
		c := &benchtools.Client{}
		timed := func(url, token string) func() time.Duration {
			return func() time.Duration {
				start := time.Now()
				if _, err := c.Post(url+"/mcp", token, benchtools.ListBody); err != nil {
					b.Fatal(err)
				}
				return time.Since(start)
			}
		}
		benchtools.Paired(b, "list", "raw", timed(raw.URL, ""), "toolroute", timed(tr.URL, benchtools.Token))
	})
}

// loopPosts serves h (which answers at /mcp) on a loopback server and
// times raw POSTs of body with bearer token.
func loopPosts(b *testing.B, h http.Handler, token string, body []byte) {
	ts := httptest.NewServer(h)
	defer ts.Close()
	c := &benchtools.Client{}
	if _, err := c.Post(ts.URL+"/mcp", token, body); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := c.Post(ts.URL+"/mcp", token, body); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkListInMemory is a tools/list of 1,000 tools end to end, with
// go-sdk's client over in-memory transports (its decoding included).
func BenchmarkListInMemory(b *testing.B) {
	const n = 1000
	caller := authz.Caller{Subject: "bench", Roles: []string{"bench"}}
	list := func(b *testing.B, cs *mcp.ClientSession) time.Duration {
		start := time.Now()
		res, err := cs.ListTools(context.Background(), nil)
		if err != nil || len(res.Tools) != n {
			b.Fatalf("list: %v (%d tools)", err, len(res.Tools))
		}
		return time.Since(start)
	}
	b.Run("raw", func(b *testing.B) {
		cs := connectMemAs(b, benchtools.Raw(n, nil), caller)
		b.ReportAllocs()
		for b.Loop() {
			list(b, cs)
		}
	})
	b.Run("toolroute", func(b *testing.B) {
		cs := connectMemAs(b, benchtools.Toolroute(n), caller)
		b.ReportAllocs()
		for b.Loop() {
			list(b, cs)
		}
	})
	b.Run("paired", func(b *testing.B) {
		rawCS, trCS := connectMemAs(b, benchtools.Raw(n, nil), caller), connectMemAs(b, benchtools.Toolroute(n), caller)
		benchtools.Paired(b, "list", "raw", func() time.Duration { return list(b, rawCS) }, "toolroute", func() time.Duration { return list(b, trCS) })
	})
}

// BenchmarkCallTransports times the server side of one tools/call over
// stateless HTTP (raw JSON-RPC POSTs of MCP 2025-11-25, responses read
// as bytes) through server.New's whole chain, on toolroute's own
// transport ("own", the default) and on go-sdk's handler
// (HTTPOptions.SDKTransport: "sdk"); paired alternates them call by call
// and reports the ratio own / sdk.
func BenchmarkCallTransports(b *testing.B) {
	body := benchtools.CallBody(benchtools.Name(3))
	b.Run("own", func(b *testing.B) {
		loopPosts(b, benchtools.ToolrouteHTTP(benchtools.Toolroute(10)), benchtools.Token, body)
	})
	b.Run("sdk", func(b *testing.B) {
		loopPosts(b, benchtools.ToolrouteSDKHTTP(benchtools.Toolroute(10)), benchtools.Token, body)
	})
	b.Run("paired", func(b *testing.B) {
		sdk := httptest.NewServer(benchtools.ToolrouteSDKHTTP(benchtools.Toolroute(10)))
		defer sdk.Close()
		own := httptest.NewServer(benchtools.ToolrouteHTTP(benchtools.Toolroute(10)))
		defer own.Close()
		c := &benchtools.Client{}
		timed := func(url string) func() time.Duration {
			return func() time.Duration {
				start := time.Now()
				if _, err := c.Post(url+"/mcp", benchtools.Token, body); err != nil {
					b.Fatal(err)
				}
				return time.Since(start)
			}
		}
		benchtools.Paired(b, "call", "sdk", timed(sdk.URL), "own", timed(own.URL))
	})
}
