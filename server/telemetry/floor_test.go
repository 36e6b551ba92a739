package telemetry_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/propagation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/semconv/v1.41.0/mcpconv"
	"go.opentelemetry.io/otel/trace"

	"github.com/toolroute/toolroute/internal/testing/benchtools"
	"github.com/toolroute/toolroute/server/servertest"
	"github.com/toolroute/toolroute/server/telemetry"
)

// floor is the least instrumentation of a get_item call that keeps the
// semantic conventions telemetry's tests hold it to, with nothing of
// toolroute's own: a server span and one mcp.server.operation.duration
// measurement per request, a client span with the W3C trace context in
// the upstream request's headers and one duration measurement per
// upstream request. Every name, attribute set and option is made once,
// before the first call; no decision is observed, no audit record made,
// no outcome classified. It is what any instrumentation over the same
// OpenTelemetry providers pays at least, so BenchmarkCallPairedFloor
// tells the providers' cost (off against floor) from telemetry's own
// (floor against telemetry).
type floor struct {
	tracer  trace.Tracer
	prop    propagation.TextMapPropagator
	op      metric.Float64Histogram
	up      metric.Float64Histogram
	opName  string
	opStart []trace.SpanStartOption
	opRec   []metric.RecordOption
	upName  string
	upStart []trace.SpanStartOption
	upEnd   []attribute.KeyValue
	upRec   []metric.RecordOption
}

func newFloor(b testing.TB, tp trace.TracerProvider, mp metric.MeterProvider) *floor {
	f := &floor{
		tracer: tp.Tracer("floor"),
		prop:   propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{}),
		opName: "tools/call get_item",
		upName: "GET /v1/items/{id}",
	}
	m := mp.Meter("floor")
	var err error
	if f.op, err = m.Float64Histogram("mcp.server.operation.duration", metric.WithUnit("s")); err != nil {
		b.Fatal(err)
	}
	if f.up, err = m.Float64Histogram(telemetry.MetricUpstreamDuration, metric.WithUnit("s")); err != nil {
		b.Fatal(err)
	}
	opAttrs := []attribute.KeyValue{
		semconv.McpMethodNameKey.String(string(mcpconv.MethodNameToolsCall)),
		semconv.GenAIOperationNameExecuteTool, semconv.GenAIToolName("get_item"),
	}
	f.opStart = []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindServer), trace.WithAttributes(opAttrs...)}
	f.opRec = []metric.RecordOption{metric.WithAttributeSet(attribute.NewSet(opAttrs...))}
	upAttrs := []attribute.KeyValue{
		semconv.HTTPRequestMethodKey.String(http.MethodGet), semconv.URLTemplateKey.String("/v1/items/{id}"),
		telemetry.AttrService.String("items"),
	}
	f.upStart = []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(upAttrs...)}
	f.upEnd = []attribute.KeyValue{semconv.HTTPResponseStatusCodeKey.Int(http.StatusOK)}
	f.upRec = []metric.RecordOption{metric.WithAttributeSet(attribute.NewSet(append(upAttrs, f.upEnd...)...))}
	return f
}

// middleware is the floor's server span and operation duration, of
// tools/call alone (the one request the benchmark measures; the
// session's others pass).
func (f *floor) middleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if method != "tools/call" {
			return next(ctx, method, req)
		}
		start := time.Now()
		ctx, span := f.tracer.Start(ctx, f.opName, f.opStart...)
		res, err := next(ctx, method, req)
		span.End()
		f.op.Record(ctx, time.Since(start).Seconds(), f.opRec...)
		return res, err
	}
}

// floorTransport is the floor's client span and upstream duration.
type floorTransport struct {
	f    *floor
	base http.RoundTripper
}

func (t floorTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	start := time.Now()
	ctx, span := t.f.tracer.Start(r.Context(), t.f.upName, t.f.upStart...)
	defer span.End()
	out := r.WithContext(ctx)
	out.Header = r.Header.Clone()
	if out.Header == nil {
		out.Header = http.Header{}
	}
	t.f.prop.Inject(ctx, propagation.HeaderCarrier(out.Header))
	resp, err := t.base.RoundTrip(out)
	if err == nil && span.IsRecording() {
		span.SetAttributes(t.f.upEnd...)
	}
	t.f.up.Record(ctx, time.Since(start).Seconds(), t.f.upRec...)
	return resp, err
}

// floorServer is benchServerWith's server under the floor's
// instrumentation instead of telemetry's.
func floorServer(b testing.TB, up *upstream, f *floor) *mcp.Server {
	return instrumentedServer(b, up, testPolicy(b), f.middleware,
		func(rt http.RoundTripper) http.RoundTripper { return floorTransport{f: f, base: rt} })
}

// TestFloorInstrumentsACall holds BenchmarkCallPairedFloor's floor to
// what it stands for: a get_item call under it makes a server span and a
// client span under it whose trace context reaches the upstream, and one
// measurement in each duration histogram.
func TestFloorInstrumentsACall(t *testing.T) {
	up := newUpstream(t)
	spans, reader := tracetest.NewSpanRecorder(), sdkmetric.NewManualReader()
	tp, mp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans)), sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	cs := servertest.Connect(t, floorServer(t, up, newFloor(t, tp, mp)), &viewer, servertest.Options{})
	if res, err := cs.CallTool(context.Background(), benchParams("get_item")); err != nil || res.IsError {
		t.Fatalf("call: %v %+v", err, res)
	}
	ended := spans.Ended()
	if len(ended) != 2 {
		t.Fatalf("%d spans ended, want 2", len(ended))
	}
	client, srv := ended[0], ended[1]
	if srv.Name() != "tools/call get_item" || srv.SpanKind() != trace.SpanKindServer {
		t.Errorf("server span %q, kind %v", srv.Name(), srv.SpanKind())
	}
	if client.Name() != "GET /v1/items/{id}" || client.SpanKind() != trace.SpanKindClient || client.Parent().SpanID() != srv.SpanContext().SpanID() {
		t.Errorf("client span %q, kind %v, parent %v; want a child of %v", client.Name(), client.SpanKind(), client.Parent().SpanID(), srv.SpanContext().SpanID())
	}
	if got := up.received(); len(got) != 1 || !strings.Contains(got[0], client.SpanContext().SpanID().String()) {
		t.Errorf("upstream received traceparents %q, want the client span's %v", got, client.SpanContext().SpanID())
	}
	metrics := collect(t, reader)
	for _, name := range []string{"mcp.server.operation.duration", telemetry.MetricUpstreamDuration} {
		h, ok := metrics[name].Data.(metricdata.Histogram[float64])
		if !ok || len(h.DataPoints) != 1 || h.DataPoints[0].Count != 1 {
			t.Errorf("%s: %+v, want one measurement", name, metrics[name].Data)
		}
	}
}

// BenchmarkCallPairedFloor pairs a get_item call under the floor's
// instrumentation with the same call uninstrumented ("off-floor": what
// the OpenTelemetry providers cost at least) and with the same call
// under telemetry ("floor-on": what telemetry adds to that), over the
// same providers (benchProvidersOf's "sdk" and "unsampled"), in memory
// and over stateless HTTP (as BenchmarkCallPairedHTTP). In memory, the
// floor is also paired over "metrics" (its spans no-ops) and "noop"
// (its spans and measurements no-ops: the wrapping and the request's
// copy alone), which tells where the floor's cost lies.
func BenchmarkCallPairedFloor(b *testing.B) {
	up := newUpstream(b)
	up.norecord = true
	params := benchParams("get_item")
	connect := map[string]func(*testing.B, *mcp.Server) *mcp.ClientSession{
		"memory": func(b *testing.B, s *mcp.Server) *mcp.ClientSession {
			return servertest.Connect(b, s, &viewer, servertest.Options{})
		},
		"http": connectHTTP,
	}
	// The providers the floor is paired over: "sdk" and "unsampled" with
	// telemetry too; in memory, "metrics" and "noop" for its parts.
	floorProviders := map[string][]string{"memory": {"sdk", "unsampled", "metrics", "noop"}, "http": {"sdk", "unsampled"}}
	for _, via := range []string{"memory", "http"} {
		for _, providers := range floorProviders[via] {
			b.Run(via+"/off-floor/"+providers, func(b *testing.B) {
				tp, mp := benchProvidersOf(b, providers)
				off := connect[via](b, benchServerWith(b, up, nil))
				fl := connect[via](b, floorServer(b, up, newFloor(b, tp, mp)))
				benchtools.Paired(b, "call", "off", benchtools.TimedCall(b, off, params), "floor", benchtools.TimedCall(b, fl, params))
			})
			if providers == "metrics" || providers == "noop" {
				continue
			}
			b.Run(via+"/floor-on/"+providers, func(b *testing.B) {
				tp, mp := benchProvidersOf(b, providers)
				tel, err := telemetry.New(telemetry.Options{TracerProvider: tp, MeterProvider: mp})
				if err != nil {
					b.Fatal(err)
				}
				fl := connect[via](b, floorServer(b, up, newFloor(b, tp, mp)))
				on := connect[via](b, benchServerWith(b, up, tel))
				benchtools.Paired(b, "call", "floor", benchtools.TimedCall(b, fl, params), "on", benchtools.TimedCall(b, on, params))
			})
		}
	}
}
