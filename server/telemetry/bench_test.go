package telemetry_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/metric"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"

	"github.com/toolroute/toolroute/authz"
	icall "github.com/toolroute/toolroute/internal/core/call"
	"github.com/toolroute/toolroute/internal/testing/benchtools"
	"github.com/toolroute/toolroute/server"
	"github.com/toolroute/toolroute/server/servertest"
	"github.com/toolroute/toolroute/server/telemetry"
	"github.com/toolroute/toolroute/tool"
)

// discard is a span exporter that drops everything: the benchmark
// measures making and batching spans, not a collector.
type discard struct{}

func (discard) ExportSpans(context.Context, []sdktrace.ReadOnlySpan) error { return nil }
func (discard) Shutdown(context.Context) error                             { return nil }

// benchTelemetry returns telemetry over real SDK providers: a batch
// span processor with a no-op exporter, a meter provider with a reader.
func benchTelemetry(b testing.TB) *telemetry.Telemetry { return benchTelemetryOf(b, "sdk") }

// benchProviders are the providers the paired benchmarks measure
// telemetry over, to tell where its cost lies: "sdk" (real SDK
// providers, every span sampled: the worst case), "unsampled" (the same,
// with a sampler that samples nothing: spans are made but not recorded,
// metrics are) and "noop" (OpenTelemetry's no-op providers: toolroute's
// own work around a call alone).
var benchProviders = []string{"sdk", "unsampled", "noop"}

func benchTelemetryOf(b testing.TB, providers string) *telemetry.Telemetry {
	tp, mp := benchProvidersOf(b, providers)
	tel, err := telemetry.New(telemetry.Options{TracerProvider: tp, MeterProvider: mp})
	if err != nil {
		b.Fatal(err)
	}
	return tel
}

// benchProvidersOf returns the providers named providers (one of
// benchProviders, or "metrics": the SDK's meter provider and no-op
// spans), shut down when b ends.
func benchProvidersOf(b testing.TB, providers string) (tp trace.TracerProvider, mp metric.MeterProvider) {
	switch providers {
	case "sdk", "unsampled":
		sampler := sdktrace.ParentBased(sdktrace.AlwaysSample())
		if providers == "unsampled" {
			sampler = sdktrace.NeverSample()
		}
		stp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(discard{}), sdktrace.WithSampler(sampler))
		smp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
		b.Cleanup(func() { stp.Shutdown(context.Background()); smp.Shutdown(context.Background()) })
		tp, mp = stp, smp
	case "noop":
		tp, mp = tracenoop.NewTracerProvider(), metricnoop.NewMeterProvider()
	case "metrics":
		// Metrics alone: the SDK's meter provider, no spans.
		smp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
		b.Cleanup(func() { smp.Shutdown(context.Background()) })
		tp, mp = tracenoop.NewTracerProvider(), smp
	default:
		b.Fatalf("providers %q", providers)
	}
	return tp, mp
}

// benchServer returns a server over a real upstream, with telemetry on
// (real SDK providers: a batch span processor with a no-op exporter, a
// meter provider with a reader) or off.
func benchServer(b *testing.B, up *upstream, on bool) *mcp.Server {
	if !on {
		return benchServerWith(b, up, nil)
	}
	return benchServerWith(b, up, benchTelemetry(b))
}

// benchServerWith returns a server over a real upstream, with tel's
// middleware, authorizer and transport, or none if tel is nil.
func benchServerWith(b testing.TB, up *upstream, tel *telemetry.Telemetry) *mcp.Server {
	if tel == nil {
		return instrumentedServer(b, up, testPolicy(b), nil, nil)
	}
	return instrumentedServer(b, up, tel.Authorizer(testPolicy(b), telemetry.SourcePolicy), tel.Middleware(),
		func(rt http.RoundTripper) http.RoundTripper { return tel.Transport(rt, "items") })
}

// instrumentedServer returns a server over a real upstream that
// authorizes with a, observes requests with observe (if not nil) and
// sends upstream requests through wrap's decoration of authz's transport
// (if wrap is not nil).
func instrumentedServer(b testing.TB, up *upstream, a authz.Authorizer, observe mcp.Middleware, wrap func(http.RoundTripper) http.RoundTripper) *mcp.Server {
	opts := server.Options{Authorizer: a}
	if observe != nil {
		opts.Observers = []mcp.Middleware{observe}
	}
	transport := authz.Transport(http.DefaultTransport, "items", up.URL, a, authz.Options{})
	if wrap != nil {
		transport = wrap(transport)
	}
	s, err := server.New(opts, server.Install(testRegistry(), &deps{client: &http.Client{Transport: transport}, base: up.URL}))
	if err != nil {
		b.Fatal(err)
	}
	return s
}

// benchParams returns the parameters of a call of name.
func benchParams(name string) *mcp.CallToolParams {
	if name == "whoami" {
		return &mcp.CallToolParams{Name: name, Arguments: map[string]any{}}
	}
	return &mcp.CallToolParams{Name: name, Arguments: map[string]any{"id": itemID}}
}

// BenchmarkCallPaired alternates tools/call with telemetry off and on,
// call by call, in one loop, and reports each one's median and their
// ratio, and each one's CPU time and allocations per call
// (benchtools.Paired): "get_item" reaches the upstream (an
// authorization, an upstream request), "whoami" is local; each over the
// providers of benchProviders. The process runs client, server and
// upstream, so both sides' figures hold all three; their difference is
// telemetry's.
func BenchmarkCallPaired(b *testing.B) {
	up := newUpstream(b)
	up.norecord = true
	for _, name := range []string{"get_item", "whoami"} {
		for _, providers := range benchProviders {
			b.Run(name+"/"+providers, func(b *testing.B) {
				off := servertest.Connect(b, benchServerWith(b, up, nil), &viewer, servertest.Options{})
				on := servertest.Connect(b, benchServerWith(b, up, benchTelemetryOf(b, providers)), &viewer, servertest.Options{})
				params := benchParams(name)
				benchtools.Paired(b, "call", "off", benchtools.TimedCall(b, off, params), "on", benchtools.TimedCall(b, on, params))
			})
		}
	}
}

// BenchmarkCallPairedHTTP is BenchmarkCallPaired over stateless
// streamable HTTP, the way a service is called: each server behind
// server.NewHTTPServer (a bearer token, toolroute's own transport), a
// go-sdk client for each (MCP 2026-07-28), on 127.0.0.1.
func BenchmarkCallPairedHTTP(b *testing.B) {
	up := newUpstream(b)
	up.norecord = true
	for _, name := range []string{"get_item", "whoami"} {
		for _, providers := range benchProviders {
			b.Run(name+"/"+providers, func(b *testing.B) {
				off := connectHTTP(b, benchServerWith(b, up, nil))
				on := connectHTTP(b, benchServerWith(b, up, benchTelemetryOf(b, providers)))
				params := benchParams(name)
				benchtools.Paired(b, "call", "off", benchtools.TimedCall(b, off, params), "on", benchtools.TimedCall(b, on, params))
			})
		}
	}
}

// connectHTTP serves s behind server.NewHTTPServer (a bearer token,
// toolroute's own transport) on 127.0.0.1 until b ends, and returns a
// go-sdk client's session with it (MCP 2026-07-28).
func connectHTTP(b *testing.B, s *mcp.Server) *mcp.ClientSession {
	hs, err := server.NewHTTPServer(s, server.HTTPServerOptions{Endpoint: server.HTTPOptions{
		Verifier: server.StaticTokens(map[string]authz.Caller{"bench-token": viewer}),
	}})
	if err != nil {
		b.Fatal(err)
	}
	ts := httptest.NewServer(hs.Handler())
	b.Cleanup(ts.Close)
	return servertest.ConnectHTTP(b, ts.URL+"/mcp", "bench-token", servertest.Options{})
}

// BenchmarkCall measures tools/call of get_item with telemetry off and
// on, separately (for -benchmem's allocation counts).
func BenchmarkCall(b *testing.B) {
	up := newUpstream(b)
	up.norecord = true
	for _, on := range []bool{false, true} {
		b.Run(map[bool]string{false: "off", true: "on"}[on], func(b *testing.B) {
			cs := servertest.Connect(b, benchServer(b, up, on), &viewer, servertest.Options{})
			params := benchParams("get_item")
			for b.Loop() {
				if res, err := cs.CallTool(context.Background(), params); err != nil || res.IsError {
					b.Fatalf("call: %v %+v", err, res)
				}
			}
		})
	}
}

// okTransport answers every request 200 without a network.
type okTransport struct{}

func (okTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	return &http.Response{StatusCode: http.StatusOK, Body: http.NoBody, Request: r, Header: http.Header{}}, nil
}

// BenchmarkOverhead measures what telemetry adds to one tools/call of a
// mapped tool, without the MCP and HTTP work around it: the server span
// and metrics (Middleware), two authorization decisions (the guard's and
// the upstream request's) and one upstream request (Transport), with real
// SDK providers (a batch span processor, a no-op exporter). "off" runs the
// same decisions and request undecorated.
func BenchmarkOverhead(b *testing.B) {
	tel := benchTelemetry(b)
	policy := testPolicy(b)
	routes := []tool.Route{getRoute}
	bound, _ := getRoute.Bind(map[string]string{"id": itemID})
	call := &tool.Call{Tool: "get_item", ServiceKey: "items", Routes: routes}
	req := &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{Name: "get_item", Arguments: []byte(`{"id":"` + itemID + `"}`)}}
	ctx := authz.WithCaller(context.Background(), viewer)
	handler := func(a authz.Authorizer, rt http.RoundTripper) mcp.MethodHandler {
		return func(ctx context.Context, _ string, _ mcp.Request) (mcp.Result, error) {
			if _, err := a.AllowMany(ctx, viewer, routes); err != nil {
				return nil, err
			}
			r, _ := http.NewRequestWithContext(icall.With(ctx, &icall.Tool[tool.Call]{Info: call}), http.MethodGet, "http://upstream"+strings.TrimPrefix(bound.URI, "/items"), nil)
			if _, err := rt.RoundTrip(r); err != nil {
				return nil, err
			}
			return &mcp.CallToolResult{}, nil
		}
	}
	b.Run("off", func(b *testing.B) {
		h := handler(policy, authz.Transport(okTransport{}, "items", "http://upstream", policy, authz.Options{}))
		b.ReportAllocs()
		for b.Loop() {
			if _, err := h(ctx, "tools/call", req); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("on", func(b *testing.B) {
		a := tel.Authorizer(policy, telemetry.SourcePolicy)
		h := tel.Middleware()(handler(a, tel.Transport(authz.Transport(okTransport{}, "items", "http://upstream", a, authz.Options{}), "items")))
		b.ReportAllocs()
		for b.Loop() {
			if _, err := h(ctx, "tools/call", req); err != nil {
				b.Fatal(err)
			}
		}
	})
}
